"""the first schema: students, secrets, uploads, jobs, job lines and hand-ins

Revision ID: 0001
Revises: 
Create Date: 2026-11-26
"""
from alembic import op
import sqlalchemy as sa


revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('secrets',
    sa.Column('kind', sa.Enum('INSTRUCTOR', 'COURSE_KEY', name='secretkind', native_enum=False), nullable=False),
    sa.Column('lookup', sa.String(length=64), nullable=False),
    sa.Column('hash', sa.String(length=256), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('kind'),
    sa.UniqueConstraint('lookup')
    )
    op.create_table('students',
    sa.Column('id', sa.String(length=128), nullable=False),
    sa.Column('name', sa.String(length=256), nullable=False),
    sa.Column('lms_id', sa.String(length=128), nullable=False),
    sa.Column('email', sa.String(length=256), nullable=False),
    sa.Column('token_hash', sa.String(length=256), nullable=True),
    sa.Column('token_lookup', sa.String(length=64), nullable=True),
    sa.Column('pseudonym', sa.String(length=64), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('pseudonym'),
    sa.UniqueConstraint('token_lookup')
    )
    op.create_table('uploads',
    sa.Column('sha256', sa.String(length=64), nullable=False),
    sa.Column('size', sa.BigInteger(), nullable=False),
    sa.Column('stored_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('sha256')
    )
    op.create_table('handins',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('student_id', sa.String(length=128), nullable=False),
    sa.Column('lab', sa.String(length=64), nullable=False),
    sa.Column('upload_sha256', sa.String(length=64), nullable=False),
    sa.Column('received_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('lateness', sa.JSON(), nullable=False),
    sa.Column('checks', sa.JSON(), nullable=False),
    sa.Column('receipt', sa.JSON(), nullable=False),
    sa.ForeignKeyConstraint(['student_id'], ['students.id'], ),
    sa.ForeignKeyConstraint(['upload_sha256'], ['uploads.sha256'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('student_id', 'lab', 'upload_sha256', name='one_handin_per_content')
    )
    with op.batch_alter_table('handins', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_handins_lab'), ['lab'], unique=False)
        batch_op.create_index(batch_op.f('ix_handins_student_id'), ['student_id'], unique=False)

    op.create_table('jobs',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('kind', sa.Enum('TRY', 'GRADE', name='jobkind', native_enum=False), nullable=False),
    sa.Column('student_id', sa.String(length=128), nullable=False),
    sa.Column('lab', sa.String(length=64), nullable=False),
    sa.Column('upload_sha256', sa.String(length=64), nullable=False),
    sa.Column('bench', sa.Boolean(), nullable=False),
    sa.Column('ordinal', sa.Integer(), nullable=False),
    sa.Column('state', sa.Enum('QUEUED', 'RUNNING', 'DONE', 'GRADER_FAILED', name='jobstate', native_enum=False), nullable=False),
    sa.Column('charged', sa.Boolean(), nullable=False),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('started_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('finished_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('exit_code', sa.Integer(), nullable=True),
    sa.Column('verdict', sa.JSON(), nullable=True),
    sa.Column('summary', sa.Text(), nullable=False),
    sa.Column('ratio', sa.Float(), nullable=True),
    sa.Column('noise', sa.Float(), nullable=True),
    sa.ForeignKeyConstraint(['student_id'], ['students.id'], ),
    sa.ForeignKeyConstraint(['upload_sha256'], ['uploads.sha256'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_jobs_created_at'), ['created_at'], unique=False)
        batch_op.create_index(batch_op.f('ix_jobs_lab'), ['lab'], unique=False)
        batch_op.create_index(batch_op.f('ix_jobs_state'), ['state'], unique=False)
        batch_op.create_index(batch_op.f('ix_jobs_student_id'), ['student_id'], unique=False)

    op.create_table('job_lines',
    sa.Column('job_id', sa.Integer(), nullable=False),
    sa.Column('seq', sa.Integer(), nullable=False),
    sa.Column('text', sa.Text(), nullable=False),
    sa.Column('at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['job_id'], ['jobs.id'], ),
    sa.PrimaryKeyConstraint('job_id', 'seq')
    )


def downgrade() -> None:
    op.drop_table('job_lines')
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_jobs_student_id'))
        batch_op.drop_index(batch_op.f('ix_jobs_state'))
        batch_op.drop_index(batch_op.f('ix_jobs_lab'))
        batch_op.drop_index(batch_op.f('ix_jobs_created_at'))

    op.drop_table('jobs')
    with op.batch_alter_table('handins', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_handins_student_id'))
        batch_op.drop_index(batch_op.f('ix_handins_lab'))

    op.drop_table('handins')
    op.drop_table('uploads')
    op.drop_table('students')
    op.drop_table('secrets')
