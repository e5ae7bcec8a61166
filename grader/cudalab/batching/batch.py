"""What `cudalab batch` does (the verb and its help are commands/batch.py): the hand-ins
of a class and who handed each in, the records that make a batch crash-safe and
resumable, the plan of what to grade, and the class outputs written from the records.
"""
from __future__ import annotations

import contextlib
import dataclasses
import csv
import fcntl
import io
import json
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from .. import __version__, console
from ..grading import grade, scoring
from ..intake import handin
from ..outputs import publish, report
from ..config import Config
from ..errors import SubmissionError, UsageError
from ..intake.handin import manifest_of
from ..lab.labspec import LabSpec
from ..exit_codes import Cli
from ..isolation.runner import fresh_dir
from ..status import Status, has_grade

SCHEMA = "cudalab.batch/1"
RECORD_SCHEMA = "cudalab.batch-record/1"
BATCH_FILE = "batch.json"
RECORDS = "records"
SCHEDULER_FAILURE = publish.SCHEDULER_FAILURE  # in a result: the cluster stopped the grade (what and why)
GRADER_FAILURE = "grader_failure"        # in a result: the grader failed on this hand-in (where and why)
_ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".zip")
# How Canvas names each file of a submissions download: the student's sortable name, LATE
# for a late one, the student's Canvas user id, the submission's id, the file's own name.
_LMS_DOWNLOAD = re.compile(r"[^_]+_(?:LATE_)?(?P<lms_id>\d+)_\d+_.+")
_ROSTER_COLUMNS = ("id", "name", "lms_id", "section", "email")
_MANIFEST_ID_SHOWN = 100  # characters of a manifest's claimed id kept in the record and the flag


# --- the hand-ins ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Job:
    """One hand-in to grade."""
    key: str        # the grader's name for this hand-in's files (publish.safe_id): records/<key>.json, students/<key>/
    student: str    # the id, as data
    handin: Path    # the folder or archive
    sha256: str     # of the archive, or of the folder's files
    id_from: str    # 'name' (the hand-in's name) or 'roster' (the roster's student for that name)
    # What an instructor should look at about who handed it in, or its size (publish.FLAG_WORDS
    # kind -> the sentence): manifest_mismatch, not_on_roster, over_caps.
    flags: dict[str, str] = field(default_factory=dict)
    manifest_student: str | None = None  # what its manifest claims, as data
    name: str = ""      # the roster's
    lms_id: str = ""
    section: str = ""
    # The course's late policy for this hand-in (record.Late as JSON: `batch --from-course`),
    # written into its grade; None for a batch of a folder, which knows no deadline.
    late: dict | None = None

    def to_json(self) -> dict:
        return {"key": self.key, "student": self.student, "handin": self.handin.name,
                "handin_path": str(self.handin), "sha256": self.sha256, "id_from": self.id_from,
                "flags": dict(self.flags), "manifest_student": self.manifest_student, "name": self.name,
                "lms_id": self.lms_id, "section": self.section, "late": self.late}

    @classmethod
    def from_json(cls, data: dict) -> "Job":
        return cls(data["key"], data["student"], Path(data["handin_path"]), data["sha256"], data["id_from"],
                   dict(data.get("flags") or {}), data.get("manifest_student"), data.get("name") or "",
                   data.get("lms_id") or "", data.get("section") or "", data.get("late"))


@dataclass(frozen=True)
class RosterStudent:
    id: str
    name: str = ""
    lms_id: str = ""
    section: str = ""
    email: str = ""     # where the course service's token is sent (course/tokens.py)


def read_roster(path: Path) -> list[RosterStudent]:
    """The instructor's roster: a CSV whose header names the columns id (required), name,
    lms_id, section and email (each optional, in any order). UsageError, in a sentence, for a file
    that is not one."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as err:
        raise UsageError(f"The roster {path} cannot be read ({err}); give a UTF-8 CSV file with the "
                         "columns id, name, lms_id.") from None
    rows = list(csv.reader(io.StringIO(text, newline="")))
    header = [cell.strip().lower().replace(" ", "_") for cell in rows[0]] if rows else []
    if "id" not in header:
        raise UsageError(f"The roster {path} has no id column: its first line must name the columns, "
                         "such as: id,name,lms_id")
    where = {column: header.index(column) for column in _ROSTER_COLUMNS if column in header}
    students: list[RosterStudent] = []
    seen: dict[tuple[str, str], int] = {}
    for number, row in enumerate(rows[1:], 2):
        if not any(cell.strip() for cell in row):
            continue
        values = {column: row[index].strip() if index < len(row) else "" for column, index in where.items()}
        if not values["id"]:
            raise UsageError(f"The roster {path}, line {number}, has no id; every student needs one.")
        for column in ("id", "lms_id"):
            value = values.get(column)
            if value and (column, value) in seen:
                raise UsageError(f"The roster {path} gives {column} {value!r} twice (lines "
                                 f"{seen[column, value]} and {number}); each student needs their own.")
            if value:
                seen[column, value] = number
        students.append(RosterStudent(**values))
    return students


def _name_id(lab: str, name: str) -> str:
    for suffix in _ARCHIVE_SUFFIXES:
        if name.lower().endswith(suffix):
            name = name[: -len(suffix)]
            break
    return name[len(lab) + 1:] if name.startswith(f"{lab}-") and len(name) > len(lab) + 1 else name


def _is_handin(path: Path) -> str | None:
    """Why `path` is not a hand-in, or None when it is one."""
    if path.is_symlink():
        return "it is a symbolic link (hand-ins are folders or archives)"
    if path.is_dir():
        return None
    if path.is_file() and path.name.lower().endswith(_ARCHIVE_SUFFIXES):
        return None
    return "it is neither a folder nor a .tar.gz, .tgz, .tar or .zip archive"


def identify(lab: str, name: str, roster: list[RosterStudent] | None) -> tuple[str, RosterStudent | None]:
    """Whose a hand-in is, from its name alone: (id, the roster's student or None). With a
    roster: the student whose LMS id an LMS download's name carries, else the student whose
    id the name is; else (no roster, or nobody on it) the id the name gives."""
    from_name = _name_id(lab, name)
    if roster is not None:
        download = _LMS_DOWNLOAD.fullmatch(name)
        by_lms = {s.lms_id: s for s in roster if s.lms_id}
        if download and download["lms_id"] in by_lms:
            student = by_lms[download["lms_id"]]
            return student.id, student
        by_id = {s.id: s for s in roster}
        if from_name in by_id:
            return from_name, by_id[from_name]
    return from_name, None


def handin_key(student: str, handin_name: str, shared: bool) -> str:
    """The grader's name for a hand-in's records and folder: the student's (publish.safe_id),
    or where several hand-ins are one student's, one per hand-in."""
    return publish.safe_id(f"{student}/{handin_name}" if shared else student)


def discover(config: Config, spec: LabSpec, folder: Path,
             roster: list[RosterStudent] | None = None, results: Path | None = None) -> tuple[list[Job], list[dict]]:
    """The hand-ins in `folder`, one job each, and the entries that were skipped (with why).
    The id comes from the name (and the roster): see identify(). A manifest that names
    another student, two hand-ins of one student, a hand-in of nobody on the roster and one
    over the intake's caps are graded and flagged (Job.flags; publish flags the hand-ins that
    share a student). `results`, the batch's own results folder, is never taken for a hand-in."""
    if not folder.is_dir():
        raise UsageError(f"{folder} is not a folder. Give the folder that holds one hand-in per student "
                         "(folders, .tar.gz or .zip archives).")
    found: list[dict] = []
    skipped: list[dict] = []
    for path in sorted(folder.iterdir(), key=lambda p: p.name):
        if path.name.startswith("."):
            continue
        why = ("it is this batch's results folder (--out)" if results is not None and path.resolve() == results
               else _is_handin(path))
        if why:
            skipped.append({"name": path.name, "reason": why})
            continue
        try:
            hashed = handin.digest(path, config)
        except OSError as err:
            skipped.append({"name": path.name, "reason": f"it cannot be read ({err.strerror or err})"})
            continue
        student, on_roster = identify(spec.name, path.name, roster)
        flags: dict[str, str] = {}
        try:
            said = (manifest_of(handin.read_hand_in(path, spec, config)) or {}).get("student")
        except Exception:  # its grade says what is wrong with it; the id comes from its name anyway
            said = None
        said = said[:_MANIFEST_ID_SHOWN] if isinstance(said, str) else None  # what it claims, as data
        if said is not None and said != student:
            by = "the roster's student for its name" if on_roster else "the id its name gives"
            flags["manifest_mismatch"] = (f"its manifest (cudalab-manifest.json) names student {said!r}; it was "
                                          f"graded as {student!r}, {by}. A manifest is written by the student "
                                          "and decides nothing: check who handed it in.")
        if roster is not None and on_roster is None:
            flags["not_on_roster"] = (f"{student!r} (from the name {path.name!r}) is nobody on the roster: "
                                      "add the student to it, or rename the hand-in to their id.")
        if hashed.over:
            flags["over_caps"] = hashed.over
        found.append({"path": path, "student": student, "roster": on_roster, "flags": flags,
                      "sha256": hashed.sha256, "manifest_student": said})
    per_student = Counter(item["student"] for item in found)
    jobs: dict[str, Job] = {}
    for item in found:
        student, path = item["student"], item["path"]
        key = handin_key(student, path.name, per_student[student] > 1)  # publish flags them
        if key in jobs:  # two ids of one cleaned form and hash: never seen, but never a silent overwrite
            skipped.append({"name": path.name, "reason": f"its records would share a folder with "
                            f"{jobs[key].handin.name}'s; rename one of them"})
            continue
        person = item["roster"] or RosterStudent(student)
        jobs[key] = Job(key, student, path.resolve(), item["sha256"], "roster" if item["roster"] else "name",
                        item["flags"], item["manifest_student"], person.name, person.lms_id, person.section)
    return list(jobs.values()), skipped


# --- the results folder ---------------------------------------------------------------------

class Store:
    """DIR: batch.json (which lab, which hand-ins), records/<key>.json (one per graded
    hand-in, written atomically: the commit point of a grade) and the outputs."""

    def __init__(self, out: Path):
        self.out = out
        self.records = out / RECORDS
        self._lock_handle = None

    @contextlib.contextmanager
    def locked(self):
        """One batch at a time per results folder; the lock goes with the process, however
        it ends."""
        self.out.mkdir(parents=True, exist_ok=True)
        handle = open(self.out / ".lock", "a+", encoding="utf-8")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.seek(0)
            holder = handle.read().strip()
            handle.close()
            raise UsageError(f"Another batch is writing to {self.out} now ({holder or 'another process'}). "
                             "Wait for it to finish, or give another --out.") from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()} on {os.uname().nodename}\n")
        handle.flush()
        try:
            yield self
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
            handle.close()

    def open(self, lab: str, handins: Path) -> dict:
        """batch.json: written the first time, checked every time after."""
        path = self.out / BATCH_FILE
        if path.is_file():
            try:
                info = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as err:
                raise UsageError(f"{path} is unreadable ({err}); it is not a batch results folder, "
                                 "or it was damaged. Give another --out.") from None
            if info.get("lab") != lab:
                raise UsageError(f"{self.out} holds a batch of the {info.get('lab')!r} lab, not {lab!r}: "
                                 "give another --out.")
            return info
        if self.out.is_dir() and any(p.name != ".lock" for p in self.out.iterdir()):
            raise UsageError(f"{self.out} is not empty and is not a batch results folder: give a new or "
                             "empty folder as --out.")
        info = {"schema": SCHEMA, "lab": lab, "handins": str(handins.resolve()), "created_at": report.timestamp(),
                "cudalab_version": __version__}
        report.atomic_write_text(path, json.dumps(info, indent=2) + "\n")
        return info

    def record(self, key: str) -> dict | None:
        path = self.records / f"{key}.json"
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            return None  # damaged (it cannot be half-written): graded again
        return data if isinstance(data, dict) and data.get("schema") == RECORD_SCHEMA else None

    def commit(self, job: Job, result: dict) -> None:
        record = {"schema": RECORD_SCHEMA, "job": job.to_json(), "graded_at": report.timestamp(), "result": result}
        report.atomic_write_text(self.records / f"{job.key}.json", json.dumps(record, indent=2) + "\n")

    def student_dir(self, job: Job) -> Path:
        """Where a hand-in's feedback goes (publish.write_student writes there too)."""
        return publish.student_dir(self.out, job.key)  # a key is its own safe_id


# --- one job --------------------------------------------------------------------------------

def set_submission(result: dict, job: Job) -> None:
    result["submission"] = {"name": job.student, "folder": str(job.handin), "student": job.student,
                            "handin": job.handin.name, "sha256": job.sha256, "id_from": job.id_from}
    if job.flags:
        result["submission"]["flags"] = dict(job.flags)
    if job.late is not None:
        result["late"] = dict(job.late)


def begin_job(config: Config, spec: LabSpec, job: Job, scratch: Path, allow_unisolated: bool):
    """The CPU half of a job (grade.begin on the hand-in's accepted files): read the hand-in
    as data, write its lab files to a fresh folder, stage and build them."""
    hand_in = handin.read_hand_in(job.handin, spec, config)
    problems = handin.missing_file_problems(hand_in, spec)  # check's words, not the staging folder's
    folder = fresh_dir(scratch, "handin")
    if problems:
        pending = grade.Pending(grade.new_result(spec.name, folder, 0, config), config, spec=spec,
                                error=SubmissionError(" ".join(problems)))
    else:
        hand_in.write_accepted(spec, folder)
        pending = grade.begin(config, spec.name, folder, allow_unisolated=allow_unisolated,
                              bring_official_up_to_date=False, spec=spec)
    set_submission(pending.result, job)
    answers = handin.written_answers(hand_in, spec)
    if answers is not None:
        pending.result["written_answers"] = answers  # read by the instructor, pointed by hand
    return pending, folder


def is_scheduler_failure(result: dict | None) -> bool:
    """Whether a result says the scheduler stopped its grade, rather than being a grade."""
    return isinstance(result, dict) and isinstance(result.get(SCHEDULER_FAILURE), dict)


def is_failed_grade(result: dict | None) -> bool:
    """Whether a result says its hand-in was not graded (the scheduler stopped it, or the
    grader failed on it): shown as failed_to_grade, and graded again by the next run."""
    return is_scheduler_failure(result) or (isinstance(result, dict) and isinstance(result.get(GRADER_FAILURE), dict))


def _failed_grade_result(config: Config, spec: LabSpec, job: Job, message: str) -> dict:
    """An error result as grade.finish writes one: zero points out of the lab's maxima and the
    sentence in `message`."""
    result = grade.new_result(spec.name, job.handin, None, config)
    result.update(lab_title=spec.title, status=Status.ERROR.value, exit_code=int(Status.ERROR.exit_code), message=message,
                  score=scoring.zero(spec.scoring).to_json())
    result["provenance"]["finished_at"] = report.timestamp()
    set_submission(result, job)
    return result


def grader_failure_result(config: Config, spec: LabSpec, job: Job, stage: str, error: BaseException) -> dict:
    """The result of a hand-in the grader itself failed on while `stage` ('staging and
    building', 'grading', ...): an error row that says so and keeps the batch going; the
    next run grades the hand-in again."""
    said = str(error) or type(error).__name__
    result = _failed_grade_result(
        config, spec, job, f"The grader failed while {stage} this hand-in ({type(error).__name__}: {said}). "
        "This is not the student's fault: the other hand-ins were graded, and running the batch again "
        "grades this one again.")
    result[GRADER_FAILURE] = {"stage": stage, "error": type(error).__name__, "message": said}
    return result


def scheduler_failure_result(config: Config, spec: LabSpec, job: Job, message: str, details: dict) -> dict:
    """The result of a hand-in whose grade a cluster scheduler stopped (a task cancelled,
    failed, out of time or memory, or lost with its node): an error as grade.finish writes
    one, with zero points and the lab's maxima, the sentence in `message` and what the
    scheduler said in result[SCHEDULER_FAILURE] (`details`). It is written as a record so
    that the class outputs say what happened, and is graded again by the next run."""
    result = _failed_grade_result(config, spec, job, message)
    result[SCHEDULER_FAILURE] = details
    return result


# --- the plan and the class outputs ----------------------------------------------------------

@dataclass
class Plan:
    """What one run of a batch does: the jobs to grade now, and every job's state."""
    config: Config
    spec: LabSpec
    store: Store
    jobs: list[Job]               # every hand-in found
    todo: list[Job]               # to grade in this run
    changed: set[str]             # keys whose hand-in changed since it was graded (kept as graded)
    skipped: list[dict]
    allow_unisolated: bool
    missing: list[RosterStudent] = field(default_factory=list)  # on the roster, with no hand-in
    why: dict[str, str] = field(default_factory=dict)  # key in todo -> why it is graded in this run

    def todo_reasons(self) -> list[tuple[str, int]]:
        """(why, how many) of the hand-ins this run grades, the commonest first: each reads after
        its count ("2 without a grade: no GPU on the grading machine")."""
        return Counter(self.why[job.key] for job in self.todo).most_common()


def make_plan(config: Config, spec: LabSpec, store: Store, handins: Path, regrade: list[str],
              regrade_changed: bool, allow_unisolated: bool, roster: list[RosterStudent] | None = None,
              late: dict[str, dict] | None = None) -> Plan:
    """What this run grades. `late`: student id -> the late policy's record.Late JSON for
    their hand-in (`batch --from-course`), given to the job and so to its grade; a grade
    whose late record differs (the policy or the counted hand-in changed) is graded again."""
    results = store.out.resolve()
    inside = results.relative_to(handins.resolve()) if results.is_relative_to(handins.resolve()) else None
    if inside is not None and len(inside.parts) > 1:
        raise UsageError(f"--out {store.out} is inside the hand-in {inside.parts[0]} of {handins}: the results "
                         "would be read as part of that student's hand-in. Give a results folder outside "
                         f"{handins}.")
    jobs, skipped = discover(config, spec, handins, roster, results)
    if late is not None:
        jobs = [dataclasses.replace(job, late=late.get(job.student)) for job in jobs]
    if not jobs:
        raise UsageError(no_handins_sentence(handins, skipped))
    by_student = {job.student: job for job in jobs}
    unknown = [s for s in regrade if s not in by_student]
    if unknown:
        raise UsageError(f"--regrade names no hand-in in {handins}: {', '.join(map(repr, unknown))}. "
                         f"The students there are: {', '.join(sorted(by_student)[:20]) or 'none'}.")
    todo, changed, why = [], set(), {}
    for job in jobs:
        record = store.record(job.key)
        result = (record or {}).get("result")
        if record is None:
            why[job.key] = "new"
        elif job.student in regrade:
            why[job.key] = "asked for by --regrade"
        elif late is not None and isinstance(result, dict) and has_grade(result) and result.get("late") != job.late:
            why[job.key] = "the late policy's assessment changed"
        elif not has_grade(result):  # no GPU, no sandbox, a grader or scheduler failure: not a grade to keep
            why[job.key] = f"without a grade: {publish.why_no_grade('done', result)}"
        elif record.get("job", {}).get("sha256") != job.sha256:
            if regrade_changed:
                why[job.key] = "changed since graded (--regrade-changed)"
            else:
                changed.add(job.key)
        if job.key in why:
            todo.append(job)
    missing = [student for student in roster or [] if student.id not in by_student]
    return Plan(config, spec, store, jobs, todo, changed, skipped, allow_unisolated, missing, why)


def no_handins_sentence(handins: Path, skipped: list[dict]) -> str:
    """What a batch says of a hand-ins folder in which it found nothing to grade."""
    said = f"Found no hand-ins in {handins}: a batch grades one folder, or one .tar.gz, .tgz, .tar or .zip " \
        "archive, per student there (names that start with '.' are ignored)."
    if skipped:
        shown = "; ".join(f"{console.printable(item['name'], one_line=True)} ({item['reason']})"
                          for item in skipped[:5])
        said += f" Skipped: {shown}{'; ...' if len(skipped) > 5 else ''}."
    return said + " Give the folder that holds the class's hand-ins."


def entries(plan: Plan) -> list[dict]:
    """Every student's row for the outputs, from the records: a grade the scheduler stopped or
    the grader failed on is failed_to_grade (no grade, its message said), not done."""
    rows = []
    for job in plan.jobs:
        record = plan.store.record(job.key)
        result = (record or {}).get("result")
        state = ("pending" if not isinstance(result, dict) else
                 "failed_to_grade" if is_failed_grade(result) else "done")
        rows.append({"student": job.student, "key": job.key, "state": state, "result": result,
                     "handin": {"name": job.handin.name, "sha256": job.sha256},
                     "graded_handin": (record or {}).get("job", {}).get("sha256"),
                     "changed": job.key in plan.changed, "flags": dict(job.flags), "name": job.name,
                     "lms_id": job.lms_id, "section": job.section})
    return rows


def publish_outputs(plan: Plan, started_at: str, executor, outputs: list[str] | None = None) -> dict:
    """Every student's outputs and the class's (publish.STUDENT_OUTPUTS, CLASS_OUTPUTS), from
    the records; `outputs`, names of those to write (None: all of them)."""
    rows = entries(plan)
    unwritten = []
    student_outputs = None if outputs is None else [name for name in outputs if name in publish.STUDENT_OUTPUTS]
    class_outputs = None if outputs is None else [name for name in outputs if name in publish.CLASS_OUTPUTS]
    for row in rows:
        if row["state"] != "pending":
            try:
                publish.write_student(plan.store.out, row, plan.spec.title, student_outputs)
            except Exception as err:  # one student's feedback must not cost the class its gradebook
                unwritten.append(row["student"])
                console.warn(f"could not write {row['student']}'s feedback ({type(err).__name__}: {err}); "
                             "their grade is in the gradebook, and the next run writes it again")
    done = sum(r["state"] == "done" for r in rows)
    failed = sum(r["state"] == "failed_to_grade" for r in rows)
    without = publish.no_grade_groups(publish.why_no_grade(r["state"], r["result"]) for r in rows)
    ungraded = sum(count for _, count in without)
    info = {"started_at": started_at, "finished_at": report.timestamp(), "complete": done == len(rows),
            "gpu": (executor.device or {}).get("name"), "gpus": executor.gpus, "executor": executor.name,
            "counts": {"handins": len(rows), "graded": len(rows) - ungraded, "not_graded": ungraded,
                       "pending": len(rows) - done - failed,
                       "failed": failed, "changed": len(plan.changed), "skipped": len(plan.skipped),
                       "shared_ids": len(publish.shared_students(rows)),
                       "missing": len(plan.missing)},
            "not_graded": [{"why": why, "count": count} for why, count in without],
            "skipped": plan.skipped, "feedback_unwritten": unwritten,
            "missing": [{"student": s.id, "name": s.name, "lms_id": s.lms_id, "section": s.section}
                        for s in plan.missing]}
    info["exit_code"] = exit_code(rows, unwritten)
    paths = publish.write_class(plan.store.out, plan.spec.name, plan.spec.title, rows, info,
                                points_possible=scoring.zero(plan.spec.scoring).total_max,
                                questions=plan.spec.questions, outputs=class_outputs)
    return {"info": info, "paths": {k: str(v) for k, v in paths.items()}}


def exit_code(rows: list[dict], feedback_unwritten: list[str]) -> int:
    """What a batch that ran to its end exits with: 0 when every hand-in has a grade and its
    feedback; else the code `cudalab grade` gives the commonest reason a hand-in has none
    (23 no GPU, 25 no sandbox, 24 a grader or scheduler failure or a hand-in not graded yet),
    so that a script sees "not every hand-in has a grade" and why; 24 where only feedback
    could not be written."""
    def code(row: dict) -> Cli:
        status = Status.reported(row["result"].get("status")) if row["state"] == "done" else Status.ERROR
        return Cli.INTERNAL if status.is_grade else status.exit_code  # a grade status without a score: damaged
    reasons = Counter(code(row) for row in rows
                      if publish.why_no_grade(row["state"], row["result"]) is not None)
    if reasons:
        return int(reasons.most_common(1)[0][0])
    return int(Cli.INTERNAL) if feedback_unwritten else int(Cli.DONE)

