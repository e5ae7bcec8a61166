"""The course service's records: one relational schema (SQLAlchemy) over SQLite in the course
folder by default, or PostgreSQL (`--database postgresql://...`), and the uploaded files
themselves, content-addressed under <course>/uploads/.

Everything a student was told is kept here before they are told it: an upload's file is
written and fsynced, then its row committed, then the receipt sent. A service killed at any
moment (SIGKILL included) therefore either never acknowledged a hand-in or has it whole; a
job that was running when it died is queued again on the next start (jobs.state 'running'
at start-up means the service died under it).

The schema is created and upgraded by the migrations in course/migrations (Alembic), never
by `create_all`, so that a course's database made by one version is carried to the next.
Times are the service's own clock (UTC, timezone-aware), never a client's.
"""
from __future__ import annotations

import datetime as dt
import enum

from sqlalchemy import (JSON, BigInteger, Boolean, DateTime, Enum, Float, ForeignKey, Integer, String, Text,
                        UniqueConstraint)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship


def now() -> dt.datetime:
    """The service's clock: every time the course records or compares against a deadline."""
    return dt.datetime.now(dt.timezone.utc)


class Base(DeclarativeBase):
    type_annotation_map = {dt.datetime: DateTime(timezone=True), dict: JSON}


class SecretKind(str, enum.Enum):
    INSTRUCTOR = "instructor"    # the instructor's pages and API
    COURSE_KEY = "course_key"    # what a Gradescope bundle forwards submissions with


class JobKind(str, enum.Enum):
    TRY = "try"                  # `cudalab submit`: run the cases (and --bench) on a course GPU
    GRADE = "grade"              # an official grade of a counted hand-in (batch --from-course)


class JobState(str, enum.Enum):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"                # finished: its verdict is the student's (passed or failed)
    GRADER_FAILED = "grader_failed"  # failed through no fault of the code: refunded, may be retried


class Student(Base):
    __tablename__ = "students"
    id: Mapped[str] = mapped_column(String(128), primary_key=True)   # the roster's student id
    name: Mapped[str] = mapped_column(String(256), default="")
    lms_id: Mapped[str] = mapped_column(String(128), default="")
    email: Mapped[str] = mapped_column(String(256), default="")
    token_hash: Mapped[str | None] = mapped_column(String(256))       # argon2 hash; None: no token issued yet
    token_lookup: Mapped[str | None] = mapped_column(String(64), unique=True)  # the token's public part
    pseudonym: Mapped[str | None] = mapped_column(String(64), unique=True)    # chosen by the student
    created_at: Mapped[dt.datetime] = mapped_column(default=now)


class Secret(Base):
    """The instructor's token and the course key, hashed like the students'."""
    __tablename__ = "secrets"
    kind: Mapped[SecretKind] = mapped_column(Enum(SecretKind, native_enum=False), primary_key=True)
    lookup: Mapped[str] = mapped_column(String(64), unique=True)
    hash: Mapped[str] = mapped_column(String(256))
    created_at: Mapped[dt.datetime] = mapped_column(default=now)


class Upload(Base):
    """A file a student sent, stored once under uploads/<sha256[:2]>/<sha256> (a repeated
    upload of the same content is recognised by its hash)."""
    __tablename__ = "uploads"
    sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    size: Mapped[int] = mapped_column(BigInteger)
    stored_at: Mapped[dt.datetime] = mapped_column(default=now)


class Job(Base):
    """A try, or an official grade, waiting for or run on a course GPU."""
    __tablename__ = "jobs"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    kind: Mapped[JobKind] = mapped_column(Enum(JobKind, native_enum=False))
    student_id: Mapped[str] = mapped_column(ForeignKey("students.id"), index=True)
    lab: Mapped[str] = mapped_column(String(64), index=True)
    upload_sha256: Mapped[str] = mapped_column(ForeignKey("uploads.sha256"))
    bench: Mapped[bool] = mapped_column(Boolean, default=False)
    # The student's how-many-th job (1, 2, ...): the queue runs every student's first job
    # before anyone's second (course/queue.py), then by arrival.
    ordinal: Mapped[int] = mapped_column(Integer)
    state: Mapped[JobState] = mapped_column(Enum(JobState, native_enum=False), index=True, default=JobState.QUEUED)
    charged: Mapped[bool] = mapped_column(Boolean, default=True)  # spent a try (refunded: False)
    attempts: Mapped[int] = mapped_column(Integer, default=0)     # starts, restarts after a crash included
    created_at: Mapped[dt.datetime] = mapped_column(default=now, index=True)
    started_at: Mapped[dt.datetime | None] = mapped_column()
    finished_at: Mapped[dt.datetime | None] = mapped_column()
    exit_code: Mapped[int | None] = mapped_column(Integer)
    verdict: Mapped[dict | None] = mapped_column()   # the run's (or grade's) --json, as the grader wrote it
    summary: Mapped[str] = mapped_column(Text, default="")  # one sentence for lists and pages
    ratio: Mapped[float | None] = mapped_column(Float)      # time over the reference's, when fully correct
    noise: Mapped[float | None] = mapped_column(Float)      # the measured relative noise of that ratio
    lines: Mapped[list["JobLine"]] = relationship(order_by="JobLine.seq", cascade="all, delete-orphan")


class JobLine(Base):
    """What the job printed, line by line, as `cudalab run` would show it: streamed to the client."""
    __tablename__ = "job_lines"
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id"), primary_key=True)
    seq: Mapped[int] = mapped_column(Integer, primary_key=True)
    text: Mapped[str] = mapped_column(Text)
    at: Mapped[dt.datetime] = mapped_column(default=now)


class HandIn(Base):
    """A hand-in the service accepted (its checks passed) and acknowledged with a receipt."""
    __tablename__ = "handins"
    __table_args__ = (UniqueConstraint("student_id", "lab", "upload_sha256", name="one_handin_per_content"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    student_id: Mapped[str] = mapped_column(ForeignKey("students.id"), index=True)
    lab: Mapped[str] = mapped_column(String(64), index=True)
    upload_sha256: Mapped[str] = mapped_column(ForeignKey("uploads.sha256"))
    received_at: Mapped[dt.datetime] = mapped_column(default=now)   # the service's clock
    lateness: Mapped[dict] = mapped_column()  # course/policy.py's assessment at received_at, as JSON
    checks: Mapped[dict] = mapped_column()    # the hand-in checks' receipt (as `cudalab check --receipt`)
    receipt: Mapped[dict] = mapped_column()   # what the student was given, exactly
