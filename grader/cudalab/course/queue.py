"""The course's queue of jobs (tries and grades), kept in the database so that nothing in it
is lost when the service dies.

Fair order: every student's n-th job runs before anyone's (n+1)-th, then by arrival, so that
a student who sends ten tries in the last minute does not push the rest of the class back
(Job.ordinal is the student's how-many-th job). A job is claimed by one conditional UPDATE
(queued -> running) whose row count says who won, so no job runs twice, with SQLite as with
PostgreSQL. A job still 'running' when the service starts was running when it died: it goes
back to the queue, and one that has already been started MAX_ATTEMPTS times is given up as
the grader's failure (refunded) rather than allowed to kill the service forever.
"""
from __future__ import annotations

from sqlalchemy import and_, func, or_, select, update
from sqlalchemy.orm import Session, sessionmaker

from .store import Job, JobKind, JobLine, JobState, now

MAX_ATTEMPTS = 3


def _fair_order():
    return (Job.ordinal, Job.id)


def enqueue(session: Session, *, kind: JobKind, student_id: str, lab: str, upload_sha256: str,
            bench: bool = False, charged: bool = True) -> Job:
    """Add a job at its fair place (the caller commits)."""
    earlier = session.scalar(select(func.count()).select_from(Job).where(Job.student_id == student_id)) or 0
    job = Job(kind=kind, student_id=student_id, lab=lab, upload_sha256=upload_sha256, bench=bench,
              ordinal=earlier + 1, state=JobState.QUEUED, charged=charged, attempts=0, created_at=now(),
              summary="waiting in the queue")
    session.add(job)
    session.flush()
    return job


def claim(sessions: sessionmaker) -> Job | None:
    """Take the next job in fair order and mark it running; None when the queue is empty."""
    while True:
        with sessions() as session:
            job_id = session.scalar(select(Job.id).where(Job.state == JobState.QUEUED)
                                    .order_by(*_fair_order()).limit(1))
            if job_id is None:
                return None
            won = session.execute(update(Job).where(Job.id == job_id, Job.state == JobState.QUEUED)
                                  .values(state=JobState.RUNNING, started_at=now(), attempts=Job.attempts + 1))
            session.commit()
            if won.rowcount == 1:
                return session.get(Job, job_id, populate_existing=True)
        # another worker took it between the select and the update: look again


def position(session: Session, job_id: int) -> int | None:
    """Where a queued job stands (1: it runs next); None when it is not waiting."""
    job = session.get(Job, job_id)
    if job is None or job.state != JobState.QUEUED:
        return None
    ahead = session.scalar(select(func.count()).select_from(Job).where(
        Job.state == JobState.QUEUED,
        or_(Job.ordinal < job.ordinal, and_(Job.ordinal == job.ordinal, Job.id < job.id)))) or 0
    return ahead + 1


def waiting(session: Session, limit: int = 500) -> list[Job]:
    """The queued jobs in the order they will run."""
    return list(session.scalars(select(Job).where(Job.state == JobState.QUEUED).order_by(*_fair_order())
                                .limit(limit)))


def recover(sessions: sessionmaker) -> tuple[int, int]:
    """At start: the jobs the service died under go back to the queue. Their lines so far are
    kept and a line says the job runs again, so that a client that reconnects after the
    last line it saw misses nothing. Returns (re-queued, given up)."""
    requeued = given_up = 0
    with sessions() as session:
        for job in session.scalars(select(Job).where(Job.state == JobState.RUNNING)):
            last = max((line.seq for line in job.lines), default=0)
            if job.attempts >= MAX_ATTEMPTS:
                job.state, job.charged, job.finished_at = JobState.GRADER_FAILED, False, now()
                job.summary = (f"the service stopped while running this job {job.attempts} times, so it was "
                               "given up; it did not cost a try, and the course staff can look at why")
                job.lines.append(JobLine(job_id=job.id, seq=last + 1, text="--- given up: " + job.summary, at=now()))
                given_up += 1
            else:
                job.state, job.started_at = JobState.QUEUED, None
                job.summary = "queued again: the service restarted while it ran"
                job.lines.append(JobLine(job_id=job.id, seq=last + 1, at=now(),
                                         text="--- the service restarted while this job ran: it runs again "
                                              "from the start ---"))
                requeued += 1
        session.commit()
    return requeued, given_up
