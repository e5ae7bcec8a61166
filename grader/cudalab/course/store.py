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
import hashlib
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import (JSON, BigInteger, Boolean, DateTime, Engine, Enum, Float, ForeignKey, Integer, String, Text,
                        UniqueConstraint, create_engine, event)
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship, sessionmaker

from ..errors import UsageError
from ..outputs.report import atomic_write_bytes

if TYPE_CHECKING:
    from .spec import CourseSpec


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


# --- the database and the uploads' files -------------------------------------------------------

DEFAULT_DATABASE = "course.db"
UPLOADS = "uploads"
_MIGRATIONS = Path(__file__).with_name("migrations")


def database_url(course: "CourseSpec | Path", url: str | None) -> str:
    """The database a course uses: `url` when given, else SQLite in the course folder."""
    if url:
        return url
    folder = Path(getattr(course, "folder", course))
    return f"sqlite:///{folder.resolve() / DEFAULT_DATABASE}"


def _alembic_config(url: str):
    from alembic.config import Config as AlembicConfig
    config = AlembicConfig()
    config.set_main_option("script_location", str(_MIGRATIONS))
    config.attributes["url"] = url
    return config


def upgrade(url: str) -> None:
    """Carry the database at `url` to the newest schema (an empty one is created whole)."""
    from alembic import command
    command.upgrade(_alembic_config(url), "head")


def _durable_sqlite(dbapi_connection, _record) -> None:
    # WAL lets the pages read while a job's lines are written; synchronous=FULL makes a
    # committed hand-in survive a power cut, not only a killed process. busy_timeout makes
    # concurrent writers wait for each other instead of failing.
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=FULL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def make_engine(url: str) -> Engine:
    """An engine for `url`, SQLite made durable and safe for the service's threads."""
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})
        event.listen(engine, "connect", _durable_sqlite)
        return engine
    return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20)


def open_database(url: str) -> sessionmaker:
    """The course's database at `url`, migrated to the newest schema first, as a session
    factory whose objects stay readable after commit."""
    try:
        upgrade(url)
        engine = make_engine(url)
        with engine.connect():
            pass
    except (SQLAlchemyError, OSError) as err:
        raise UsageError(f"Could not open the course database {without_password(url)}: "
                         f"{str(err).splitlines()[0]}. Check that it exists and this user may write it "
                         "(or give another with --database).") from err
    return sessionmaker(engine, expire_on_commit=False)


def without_password(url: str) -> str:
    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # a URL SQLAlchemy cannot parse is said as given, minus nothing to hide
        return url


def upload_path(course_folder: Path, sha256: str) -> Path:
    """Where the upload with this content hash is stored (uploads/<first two>/<hash>)."""
    if not re.fullmatch(r"[0-9a-f]{64}", sha256):
        raise ValueError(f"{sha256!r} is not a sha256 in hex")
    return Path(course_folder) / UPLOADS / sha256[:2] / sha256


def store_upload(course_folder: Path, data: bytes) -> str:
    """Keep `data` under its sha256 and return the hash. The file is written under a temporary
    name, fsynced, renamed into place and its folder fsynced, so that once this returns a
    killed service (or a power cut) still has it whole; the same content again is kept once."""
    sha256 = hashlib.sha256(data).hexdigest()
    target = upload_path(course_folder, sha256)
    if target.is_file() and target.stat().st_size == len(data):
        return sha256
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    atomic_write_bytes(target, data)  # fsynced under a temporary name, then renamed
    for folder in (target.parent, target.parent.parent):
        _fsync_folder(folder)
    return sha256


def _fsync_folder(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
