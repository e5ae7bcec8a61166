"""The hand-ins that count, gathered for `cudalab batch LAB --from-course DIR`: from the course
database's accepted hand-ins, each student's counted one (policy.counted) is copied out of the
course's uploads into a hand-ins folder (one archive per student, named by their id) that the
batch grades as any other, with the late policy's assessment of it (the service's own time of
receipt) for its grade record.

The batch's own machinery does the rest (records, resume, outputs): nothing here grades.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import select

from ..batching.batch import RosterStudent
from ..errors import UsageError
from . import policy, store
from .spec import CourseSpec, LabOffer

# A student id that is also a plain file name: the batch takes the id from the archive's name.
_FILE_NAME_ID = re.compile(r"[A-Za-z0-9@+][A-Za-z0-9._@+-]{0,127}")


@dataclass
class Collected:
    """What was laid out for the batch."""
    folder: Path                                       # one <lab>-<id>.tar.gz per student with a counted hand-in
    late: dict[str, dict] = field(default_factory=dict)  # student id -> record.Late JSON of the counted hand-in
    skipped: list[str] = field(default_factory=list)     # sentences: counted hand-ins that could not be laid out
    roster: list[RosterStudent] = field(default_factory=list)


def _grade_fraction(verdict: dict | None) -> float | None:
    """A GRADE job's verdict (the grade's --json) as a fraction of full marks, where it has one."""
    score = (verdict or {}).get("score") if isinstance(verdict, dict) else None
    if not isinstance(score, dict):
        return None
    total, most = score.get("total"), score.get("total_max")
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (total, most)) or most <= 0:
        return None
    return float(total) / float(most)


def _views(session, offer: LabOffer) -> dict[str, list[policy.HandInView]]:
    """Each student's accepted hand-ins of the lab, with the grade the service gave each (for
    counts = "best"), from the database."""
    grades: dict[tuple[str, str], float] = {}
    if offer.counts == "best":
        done = select(store.Job).where(store.Job.lab == offer.lab, store.Job.kind == store.JobKind.GRADE,
                                       store.Job.state == store.JobState.DONE).order_by(store.Job.id)
        for job in session.scalars(done):
            fraction = _grade_fraction(job.verdict)
            if fraction is not None:
                grades[job.student_id, job.upload_sha256] = fraction  # the latest grade of that content
    views: dict[str, list[policy.HandInView]] = {}
    rows = select(store.HandIn).where(store.HandIn.lab == offer.lab).order_by(store.HandIn.id)
    for row in session.scalars(rows):
        try:
            lateness = policy.Lateness.from_json(row.lateness)
        except ValueError:  # the service wrote it; a damaged row is assessed again from its time
            lateness = policy.assess(offer, _aware(row.received_at))
        views.setdefault(row.student_id, []).append(policy.HandInView(
            row.student_id, row.upload_sha256, _aware(row.received_at), lateness,
            grades.get((row.student_id, row.upload_sha256)), row.id))
    return views


def _aware(at: dt.datetime) -> dt.datetime:
    # SQLite gives back the UTC times the service stored without their zone
    return at if at.tzinfo is not None else at.replace(tzinfo=dt.timezone.utc)


def _sha256_of(path: Path) -> str | None:
    try:
        with path.open("rb") as handle:
            return hashlib.file_digest(handle, "sha256").hexdigest()
    except OSError:
        return None


def collect(course: CourseSpec, sessions, lab: str, folder: Path) -> Collected:
    """Lay out in `folder` the hand-in that counts of each student of `lab` (the only files
    there afterwards), and return their late assessments."""
    offer = course.offer(lab)
    with sessions() as session:
        views = _views(session, offer)
    collected = Collected(folder, roster=course.roster())
    folder.mkdir(parents=True, exist_ok=True)
    wanted: set[str] = set()
    for student, handins in sorted(views.items()):
        chosen = policy.counted(offer, handins)
        if chosen is None:
            continue
        if not _FILE_NAME_ID.fullmatch(student):
            collected.skipped.append(f"{student!r}'s hand-in: the id is not a plain file name, which the batch "
                                     "takes ids from; give the student a plain id in the roster")
            continue
        source = store.upload_path(course.folder, chosen.sha256)
        if _sha256_of(source) != chosen.sha256:
            collected.skipped.append(f"{student}'s hand-in {chosen.sha256[:12]}: its upload {source} is missing or "
                                     "damaged; restore the course folder's uploads from a backup")
            continue
        target = folder / f"{lab}-{student}.tar.gz"
        wanted.add(target.name)
        if _sha256_of(target) != chosen.sha256:
            partial = folder / f".{target.name}.partial"
            shutil.copyfile(source, partial)
            partial.replace(target)
        collected.late[student] = {**chosen.lateness.to_json(),
                                   "received_at": chosen.received_at.astimezone(dt.timezone.utc).isoformat()}
    for stale in folder.iterdir():  # a hand-in that no longer counts (a later one does, or none)
        if stale.name not in wanted:
            if stale.is_dir() and not stale.is_symlink():
                shutil.rmtree(stale)
            else:
                stale.unlink()
    if not wanted:
        raise UsageError(f"The course's database has no accepted hand-in of {lab} to grade"
                         + (f" ({'; '.join(collected.skipped)})" if collected.skipped else "")
                         + ". Students hand in with `cudalab submit " + lab + " --hand-in`.")
    return collected


def before_deadline_sentence(offer: LabOffer, now: dt.datetime) -> str | None:
    """Why grading now would not be final, or None: before the deadline (and its grace) hand-ins
    that count are still coming; before the cut-off, late ones may."""
    if now <= offer.on_time_until:
        return (f"the deadline of {offer.lab} ({offer.on_time_until.isoformat()}, grace included) has not passed: "
                "students may still hand in")
    if now <= offer.closes:
        return (f"late hand-ins of {offer.lab} are accepted until {offer.closes.isoformat()}: a student may still "
                "hand in one that would count")
    return None
