"""What a batch of grades becomes for students and instructors.

Per student, under students/<safe id>/: feedback.md and feedback.html (the same feedback, from
the grade's result document, cudalab.grade/1) and results.json in Gradescope's autograder
format (schemas/gradescope_results.schema.json). Per class: gradebook.csv (one row per
student), canvas.csv (what Canvas's gradebook import takes), cases.csv (each hand-in's
verdict per case) and summary.html (one self-contained page: counts, plots, per-case pass
rates, failure reasons, the fastest correct hand-ins and the hand-ins an instructor should
look at).

A batch may be partial: hand-ins not graded yet are "pending". No class output gives them a
zero: their grade cells stay blank, and summary.html says at the top how many of how many
have a grade, and why the others have none (why_no_grade). Only a grade the student's
hand-in earned reaches canvas.csv (a score, or the zero of a hand-in that did not compile,
was rejected or used a forbidden library); a hand-in the grader could not grade (no GPU, no
sandbox, a grader error) stays blank too, and its results.json has no score.

Student ids and hand-in names are data: they name a folder only through safe_id(), every
page escapes them, and no cell of any CSV can be read by a spreadsheet as a formula.

Who handed a hand-in in is the batch's word (from how the hand-ins were collected), never the
hand-in's: rows whose ids agree are each published and flagged, never merged, and Canvas gets
no grade for that student until the instructor decides; the batch's own flags (a manifest
naming someone else, a hand-in of nobody on the roster) are shown with the others.
"""
from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import re
import statistics
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import jinja2

from .. import __version__
from ..isolation import gpu
from . import report
from ..errors import GraderError
from ..record import SCHEMA, Build, Clock, GradeResult, Late, Provenance, RecordError, Score, Submission
from ..status import GRADE_STATUSES, CaseStatus, PerformanceStatus, RunStatus, SanitizerStatus, Status
STATES = ("done", "pending", "failed_to_grade")
STUDENTS_DIR = "students"
GRADEBOOK_FILE = "gradebook.csv"
CANVAS_FILE = "canvas.csv"
CASES_FILE = "cases.csv"
SUMMARY_FILE = "summary.html"
GRADESCOPE_FILE = "results.json"

# GRADE_STATUSES (status.Status.is_grade): the statuses whose score is the student's grade (a
# zero included); any other outcome says nothing about the hand-in and leaves its grade cells
# blank. Status.rejects: the hand-in was refused before it ran, a zero.

LATE_COLUMNS = ("total_before_late", "late")  # gradebook.csv's, where a course's late policy applies
GRADEBOOK_COLUMNS = ("student", "handin", "sha256", "status", "correctness", "performance", "total",
                     "total_max", "ratio", "flags", "message")
CANVAS_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
CANVAS_POINTS_POSSIBLE = "    Points Possible"  # the first cell of the row, as Canvas's export writes it

# The plots' bar colours: distinct from everything else on the page, so that a screenshot
# shows whether the bars were drawn.
SCORE_COLOUR = "#2f6fbe"
RATIO_COLOUR = "#d9731f"
_SVG_HASH_SALT = "cudalab-summary"  # fixed ids in the SVG: the same page for the same grades

STATE_WORDS = {"pending": "not graded yet", "failed_to_grade": "the grader failed on it (no result)"}
# In a result: the cluster's scheduler stopped its grade (what and why); batch.py writes it
# (record.GradeResult.scheduler_failure).
SCHEDULER_FAILURE = "scheduler_failure"
SCHEDULER_STOPPED = "the cluster's scheduler stopped the grade"
COUNT_ORDER = tuple(s.value for s in Status) + ("failed_to_grade", "pending")

# Why a graded hand-in lost points, from its run (the statuses' own reasons are Status.reason),
# each with its place among them in summary.html (Status.reason_rank). A run that timed out
# files under its own word, one that stopped short of a verdict (RunStatus.crashed) under
# "crashed".
RUN_REASONS = {
    RunStatus.TIMEOUT.value: (10, "time-out"),
    RunStatus.CRASHED.value: (11, "crashed or stopped on a CUDA error"),
    "wrong": (12, "wrong results"),
    "no_performance": (13, "correct, but no performance points"),
}
GRADER_ERROR = Status.ERROR.reason_key  # also the reason of a row the grader failed on (no result)

# Why a hand-in lost points or got none, in the order summary.html lists them.
FAILURE_REASONS = {key: words for _, key, words in sorted(
    [(s.reason_rank, s.reason_key, s.reason) for s in Status if s.reason_key is not None]
    + [(rank, key, words) for key, (rank, words) in RUN_REASONS.items()])}

# What an instructor should look at, in the order summary.html lists them.
FLAG_WORDS = {
    "duplicate": "several hand-ins of one student",
    "manifest_mismatch": "manifest names another student",
    "not_on_roster": "not on the roster",
    "over_caps": "hand-in over the size limits",
    "sanitizer": "compute-sanitizer errors",
    "forbidden": "forbidden library",
    "timing": "timing rules broken",
    "isolation": "graded without the sandbox",
    "gpu_shared": "GPU shared while timing",
    "changed": "hand-in changed since it was graded",
}

# The flags a batch gives a row itself (from the hand-ins, not from a result).
BATCH_FLAGS = ("manifest_mismatch", "not_on_roster", "over_caps")

_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_FASTEST = 10
_RATIO_TICKS = (0.1, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 3, 5, 7.5, 10, 20, 30, 50, 100, 200, 500, 1000)


class PublishError(GraderError):
    """A batch's rows cannot be published as they are; the message says which and why."""


# --- one row of a batch --------------------------------------------------------------------

@dataclass(frozen=True)
class Entry:
    """One student's row of a batch, checked."""
    student: str
    handin_name: str
    sha256: str
    state: str
    result: GradeResult | None
    changed: bool = False
    name: str = ""       # the student's name where the batch knows it
    section: str = ""
    graded_sha256: str = ""  # the hand-in the result is of, where the batch says
    key: str = ""        # the folder of this row's files under students/ (safe_id of the student by default)
    lms_id: str = ""     # the student's id in the LMS (Canvas's ID column), where the roster gives it
    batch_flags: tuple[tuple[str, str], ...] = ()  # (kind in BATCH_FLAGS, sentence)

    @property
    def status(self) -> str:
        """pending, failed_to_grade, or the result's status (its JSON word)."""
        if self.state != "done" or self.result is None:
            return self.state
        return self.result.status.value

    @property
    def counts(self) -> bool:
        """Whether the result's score is the student's grade."""
        return self.state == "done" and self.result is not None and self.result.has_grade

    @property
    def why_no_grade(self) -> str | None:
        """Why this hand-in has no grade, in a few words; None where it has one."""
        return _why_no_grade(self.state, self.result)

    @property
    def score(self) -> Score | None:
        return self.result.score if self.counts else None

    @property
    def late(self) -> Late | None:
        """The course's late policy applied to this grade (`batch --from-course`), where it has one."""
        return self.result.late if self.counts else None

    @property
    def final_total(self) -> float | None:
        """The grade: the total with any late penalty taken off."""
        return self.result.total_after_late if self.counts else None


def _text(value, what: str, student: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise PublishError(f"The batch entry of {student!r} has a {what} that is not text "
                           f"({type(value).__name__}); the batch's records are damaged.")
    return value


def read_entry(entry) -> Entry:
    """An entry as the batch gives it (see write_student), checked: a sentence, not a
    traceback, when it is not what the batch writes."""
    if not isinstance(entry, dict):
        raise PublishError(f"A batch entry must be a mapping with student, handin, state and result; "
                           f"got {type(entry).__name__}.")
    student = entry.get("student")
    if not isinstance(student, str) or not student.strip():
        raise PublishError(f"A batch entry has no student id (student: {student!r}); every hand-in "
                           "needs the id of the student who handed it in.")
    state = entry.get("state")
    if state not in STATES:
        raise PublishError(f"The batch entry of {student!r} has state {state!r}; it must be one of "
                           f"{', '.join(STATES)}.")
    handin = entry.get("handin") or {}
    if not isinstance(handin, dict):
        raise PublishError(f"The batch entry of {student!r} has a hand-in that is not a mapping "
                           "with name and sha256.")
    texts = {"handin_name": _text(handin.get("name"), "hand-in name", student),
             "sha256": _text(handin.get("sha256"), "hand-in sha256", student),
             "name": _text(entry.get("name"), "name", student),
             "section": _text(entry.get("section"), "section", student),
             "graded_sha256": _text(entry.get("graded_handin"), "graded hand-in sha256", student),
             "lms_id": _text(entry.get("lms_id"), "LMS id", student),
             "key": _text(entry.get("key"), "key", student) or safe_id(student)}
    if not _SAFE_ID.fullmatch(texts["key"]):
        raise PublishError(f"The batch entry of {student!r} has the key {texts['key']!r}, which is not a plain "
                           "folder name; the batch's records are damaged.")
    flags = entry.get("flags") or {}
    if not isinstance(flags, dict) or not all(isinstance(v, str) for v in flags.values()):
        raise PublishError(f"The batch entry of {student!r} has flags that are not a mapping of kinds to "
                           "sentences; the batch's records are damaged.")
    batch_flags = tuple((kind, flags[kind]) for kind in BATCH_FLAGS if kind in flags)
    result = entry.get("result")
    record = None  # pending: a result from before the hand-in was queued again is not this grade
    if state != "pending" and result is not None:
        record = read_result(result, student)
    elif state == "done":
        raise PublishError(f"The batch entry of {student!r} is done but holds no result; grade the "
                           "hand-in again.")
    return Entry(student=student, state=state, result=record, changed=entry.get("changed") is True,
                 batch_flags=batch_flags, **texts)


def read_result(result, student: str) -> GradeResult:
    """A batch row's result (JSON, as the batch's store holds it) read once into the typed
    record every output reads; a sentence, not a traceback, for one that cannot be read (an
    older or damaged file)."""
    schema = result.get("schema") if isinstance(result, dict) else type(result).__name__
    if schema != SCHEMA:
        raise PublishError(f"The result of {student!r} is not a {SCHEMA} document (found {schema!r}); "
                           "grade the hand-in again with this version of cudalab.")
    try:
        return GradeResult.from_json(result, "its record")
    except RecordError as err:
        raise PublishError(f"The result of {student!r} is not a complete {SCHEMA} document ({err}); grade "
                           "the hand-in again.") from None


def safe_id(student: str) -> str:
    """The folder name of a student's files: the id itself when it is a plain name (letters,
    digits, '.', '_', '-', starting with a letter or digit, at most 64 characters), otherwise
    its plain characters and a hash of the whole id, so two ids never share a folder."""
    if _SAFE_ID.fullmatch(student):
        return student
    plain = re.sub(r"[^A-Za-z0-9_.-]+", "_", student).strip("._-")[:48] or "student"
    digest = hashlib.sha256(student.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{plain}-{digest}"


def student_dir(out_dir: Path, student: str) -> Path:
    """Where a student's feedback goes (and the pictures it links, under images/: pass this
    folder as grade.finish's attachments_to)."""
    return Path(out_dir) / STUDENTS_DIR / safe_id(student)


# --- what a result says ----------------------------------------------------------------------

def why_no_grade(state: str, result: dict | None) -> str | None:
    """Why a batch's hand-in in `state` (STATES) with `result` (JSON, as the batch's store
    holds it) has no grade, in a few words shared by every hand-in with the same cause; None
    where the result holds a grade. A result that cannot be read holds none: the grader's."""
    try:
        record = None if result is None else GradeResult.from_json(result)
    except RecordError:
        record = None
    return _why_no_grade(state, record)


def _why_no_grade(state: str, result: GradeResult | None) -> str | None:
    if state == "pending":
        return "not reached (the batch has not finished)"
    if result is None:  # the grader failed before it had a result
        return Status.ERROR.why_ungraded
    if result.has_grade:
        return None
    if result.scheduler_failure is not None:
        return SCHEDULER_STOPPED
    return result.status.why_ungraded or Status.ERROR.why_ungraded  # a grade status without a score: damaged


def no_grade_groups(whys) -> list[tuple[str, int]]:
    """(why, how many) from each hand-in's why_no_grade (None for one with a grade): identical
    causes once, the commonest first."""
    return Counter(why for why in whys if why is not None).most_common()


def _one_line(text, limit: int = 300) -> str:
    words = " ".join(str(text or "").split())
    return words if len(words) <= limit else words[:limit - 3].rstrip() + "..."


def _number(value, places: int = 4) -> str:
    """A number for a CSV cell: rounded, without trailing zeros ('70', '46.6667')."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return ""
    text = f"{value:.{places}f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def _gpu_sharing(result: GradeResult) -> str:
    try:
        parsed = [gpu.GpuWait(**wait) for wait in result.provenance.gpu_sharing or []]
    except TypeError:
        return ""
    if not any(wait.busy_with for wait in parsed):
        return ""
    return gpu.describe(parsed)


def shared_students(entries) -> list[str]:
    """The student ids that more than one row (hand-in) of a batch has, sorted."""
    counted = Counter(e.student if isinstance(e, Entry) else e.get("student") for e in entries)
    return sorted(student for student, rows in counted.items() if rows > 1)


def _sharing(entries: list[Entry]) -> dict[str, list[Entry]]:
    """The rows of each student who has more than one."""
    several = set(shared_students(entries))
    rows: dict[str, list[Entry]] = {}
    for entry in entries:
        if entry.student in several:
            rows.setdefault(entry.student, []).append(entry)
    return rows


def flags_of(entry: Entry, shared: dict[str, list[Entry]] | None = None) -> list[tuple[str, str]]:
    """(kind, what happened) for each thing an instructor should look at, in FLAG_WORDS order.
    `shared`: the rows of each student with more than one (see _sharing)."""
    found: dict[str, str] = dict(entry.batch_flags)
    rows = (shared or {}).get(entry.student)
    if rows:
        others = ", ".join(repr(other.handin_name or other.key) for other in rows if other is not entry)
        found["duplicate"] = (f"Student {entry.student!r} has {len(rows)} hand-ins: this one "
                              f"({entry.handin_name or entry.key!r}) and {others}. Each was graded and none "
                              "replaces another; canvas.csv has no grade for this student until you decide "
                              "which counts.")
    result = entry.result
    if result is not None:
        found.update(_result_flags(result))
    if entry.changed:
        hashes = (f" (graded: sha256 {entry.graded_sha256[:12]}..., now {entry.sha256[:12]}...)"
                  if entry.graded_sha256 and entry.sha256 and entry.graded_sha256 != entry.sha256 else "")
        found["changed"] = f"the hand-in file is no longer the one graded{hashes}: grade it again"
    return [(kind, found[kind]) for kind in FLAG_WORDS if kind in found]


def _result_flags(result: GradeResult) -> dict[str, str]:
    """(kind, what happened) for each thing in a grade an instructor should look at."""
    found = {}
    sanitizer = result.sanitizer
    if sanitizer is not None and sanitizer.status is SanitizerStatus.ERRORS:
        found["sanitizer"] = _one_line(sanitizer.message or "compute-sanitizer found errors")
    if result.status is Status.FORBIDDEN:
        found["forbidden"] = _one_line(" ".join([result.message] + result.build.feedback[:2]))
    perf = result.performance
    if perf is not None and perf.flagged:
        found["timing"] = _one_line(perf.message or "the timed runs broke the rules of the grader's timing")
    isolation = result.provenance.isolation
    # A grade refused for want of a sandbox says so as its status; the flag is for one given without.
    if result.status is not Status.NOT_ISOLATED and isolation is not None and isolation.problem:
        found["isolation"] = _one_line(isolation.problem)
    sharing = _gpu_sharing(result)
    if sharing:
        found["gpu_shared"] = _one_line(sharing)
    return found


def failure_of(entry: Entry) -> tuple[str, str] | None:
    """(reason, what happened) where the hand-in lost points or got no grade; None where it
    earned full correctness and some performance points, or is not graded yet."""
    if entry.state == "pending":
        return None
    result = entry.result
    if result is None or entry.state == "failed_to_grade":
        message = (result.message if result is not None else "") or "the grader stopped before it had a result"
        return GRADER_ERROR, _one_line(message)
    if result.status is not Status.GRADED:
        return result.status.reason_key, _one_line(result.message)
    failing = [case for case in result.cases if not case.passed]
    if failing:
        return _run_reason(result), _one_line(f"{len(failing)} case(s) failed; {failing[0].name}: {failing[0].message}")
    if result.performance is not None and result.performance.status is PerformanceStatus.ZERO:
        return "no_performance", _one_line(result.performance.message)
    return None


def _run_reason(result: GradeResult) -> str:
    """The RUN_REASONS key of a graded hand-in whose cases failed: how its run ended."""
    ended = result.run.status if result.run is not None else None
    if ended is RunStatus.TIMEOUT:
        return RunStatus.TIMEOUT.value
    if ended is not None and ended.crashed:
        return RunStatus.CRASHED.value
    return "wrong"


# --- per student -------------------------------------------------------------------------------

def _stand_in_result(entry: Entry, lab_title: str) -> GradeResult:
    """The record of a hand-in the grader failed on before it had one: status error, no
    score, in words the student can read."""
    return GradeResult(
        cudalab_version=__version__, lab="", lab_title=lab_title,
        submission=Submission(name=entry.handin_name or entry.student, folder=""),
        status=Status.ERROR, exit_code=int(Status.ERROR.exit_code), score=None,
        message="The grader could not grade this hand-in, so no grade was given.",
        build=Build(status="not_built"), cases=[], performance=None, run=None, warnings=[],
        provenance=Provenance(seed=None, started_at=None, finished_at=None))


def _render(template: str, result: GradeResult, student: str) -> str:
    try:
        return report.render(template, result)
    except (jinja2.TemplateError, KeyError, TypeError, AttributeError, ValueError) as err:
        raise PublishError(f"The result of {student!r} is not a complete {SCHEMA} document, so its "
                           f"feedback cannot be written ({err}); grade the hand-in again.") from err


def _seconds_between(started, finished) -> int | None:
    try:
        return max(0, round((datetime.fromisoformat(finished) - datetime.fromisoformat(started)).total_seconds()))
    except (TypeError, ValueError):
        return None


def _overview(result: GradeResult) -> str:
    """The submission-wide text Gradescope shows above the tests."""
    lines = [f"{result.lab_title}: {result.status.words}."]
    if result.has_grade:
        lines.append(f"Score: {report.points_text(result.score.total)} / {report.points_text(result.score.total_max)}.")
    else:
        lines.append(f"Not graded ({_why_no_grade('done', result)}): no score was given, and this says nothing about "
                     "your code.")
    if result.message:
        lines.append(result.message)
    lines += [f"Warning: {w}" for w in result.warnings]
    return "\n".join(lines)


# A Gradescope test's status: Gradescope's own words, not a case's verdict.
_GRADESCOPE_TEST_STATUS = {True: "passed", False: "failed"}


def _gradescope_test(name: str, score: float, max_score: float, passed: bool, output: str) -> dict:
    return {"name": name, "score": score, "max_score": max_score, "status": _GRADESCOPE_TEST_STATUS[passed],
            "output": output, "output_format": "text", "visibility": "visible"}


def gradescope_results(entry: Entry, result: GradeResult) -> dict:
    """The grade as Gradescope's autograder results.json: one test per correctness case and
    one for performance (a build test where the hand-in did not build), the total as the
    score, and the speed ratio for the leaderboard. A hand-in without a grade gets no score
    and no tests (Gradescope's score is optional where no test has one, and a 0 there would
    read as the student's grade): its output says it was not graded, and why."""
    counts = result.has_grade
    tests: list[dict] = []
    if result.status.rejects:
        output = "\n".join([result.message] + result.build.feedback)
        tests.append(_gradescope_test("build", 0.0, 0.0, False, output.strip()))
    for case in result.cases:
        images = "".join(f"\n(difference image of {output} beside feedback.html: {picture})"
                         for output, picture in case.difference_images.items())
        tests.append(_gradescope_test(f"correctness: {case.name}", float(case.points or 0.0),
                                      float(case.max_points or 0.0), case.passed,
                                      case.status.value if case.passed else f"{case.message or 'failed'}{images}"))
    perf = result.performance
    ratio = result.ratio
    if perf is not None and perf.status is not PerformanceStatus.NONE:
        clock = perf.clock or Clock()
        if ratio is not None:
            said = (f"On {perf.timing_case} your code took {report.ms_text(clock.student_ms)} "
                    f"per run against the reference's {report.ms_text(clock.reference_ms)} (medians over the timing "
                    f"rounds); timed beside the reference in each round, it took {ratio:.3g} times as long (the "
                    "median of the rounds).")
        else:
            said = f"{report.points_text(perf.points)} of {report.points_text(perf.max_points)} points."
        output = "\n\n".join(part for part in (said, perf.message) if part)
        tests.append(_gradescope_test("performance", float(perf.points or 0.0), float(perf.max_points or 0.0),
                                      ratio is not None and (perf.points or 0) > 0, output))
    if result.sanitizer is not None and result.sanitizer.status is SanitizerStatus.ERRORS:
        tests.append(_gradescope_test("compute-sanitizer", 0.0, 0.0, False, result.sanitizer.message))
    provenance = result.provenance
    body = {"output": _overview(result), "output_format": "text", "test_output_format": "text",
            "test_name_format": "text", "visibility": "visible", "stdout_visibility": "hidden",
            "extra_data": {"cudalab_status": result.status.value, "graded": counts, "lab": result.lab,
                           "student": entry.student, "handin_sha256": entry.sha256 or None,
                           "seed": provenance.seed, "cudalab_version": result.cudalab_version},
            "tests": tests if counts else []}
    if counts:
        body = {"score": round(float(result.score.total), 4), **body}
    seconds = _seconds_between(provenance.started_at, provenance.finished_at)
    if seconds is not None:
        body["execution_time"] = seconds
    if ratio is not None and counts:
        body["leaderboard"] = [{"name": "speed ratio", "value": float(f"{ratio:.4g}"), "order": "asc"}]
    return body


def write_student(out_dir: Path, entry: dict, lab_title: str, outputs: Sequence[str] | None = None) -> dict[str, Path]:
    """Write one student's feedback.md, feedback.html and Gradescope results.json under
    out_dir/students/<safe id>/ (each atomically) and return their paths.

    entry: {"student": id, "handin": {"name", "sha256"}, "state": "done" | "pending" |
    "failed_to_grade", "result": the cudalab.grade/1 document or None}; optionally "changed"
    (the hand-in changed since it was graded), "graded_handin" (the sha256 that was graded),
    "name", "lms_id" and "section" (for canvas.csv), "key" (the folder under students/, where
    one student has several hand-ins) and "flags" (BATCH_FLAGS kind -> sentence). Other keys
    are the batch's own and are ignored.
    A pending hand-in has no feedback yet: asking for it is an error. `outputs`: the names of
    STUDENT_OUTPUTS to write (None: all of them)."""
    checked = read_entry(entry)
    if checked.state == "pending":
        raise PublishError(f"{checked.student!r} has not been graded yet, so there is no feedback to write.")
    result = checked.result if checked.result is not None else _stand_in_result(checked, lab_title)
    folder = student_dir(out_dir, checked.key)
    texts = {name: (output.file, output.render(checked, result)) for name, output in chosen(STUDENT_OUTPUTS, outputs)}
    paths = {}
    for key, (name, text) in texts.items():
        paths[key] = folder / name
        report.atomic_write_text(paths[key], text)
    return paths


def _gradescope_text(entry: Entry, result: GradeResult) -> str:
    try:
        return json.dumps(gradescope_results(entry, result), indent=2) + "\n"
    except (KeyError, TypeError, AttributeError, ValueError) as err:
        raise PublishError(f"The result of {entry.student!r} is not a complete {SCHEMA} document, so "
                           f"its Gradescope results cannot be written ({err}); grade the hand-in again.") from err


# --- the outputs a batch writes: two small interfaces and their registries ---------------------

@dataclass(frozen=True)
class StudentOutput:
    """A file written for each student, under students/<key>/: `render(entry, result)` gives its text."""
    name: str
    file: str
    what: str
    render: Callable[[Entry, GradeResult], str]


@dataclass(frozen=True)
class ClassContext:
    """What a class output is rendered from: the checked entries (one per hand-in, in id
    order) and the batch's own information."""
    lab: str
    lab_title: str
    entries: list[Entry]
    batch_info: dict
    points_possible: float | None
    questions: tuple
    kept_written: dict[str, dict[str, str]]


@dataclass(frozen=True)
class ClassOutput:
    """A file written once for the class, in the results folder: `render(context)` gives its text."""
    name: str
    file: str
    what: str
    render: Callable[[ClassContext], str]


STUDENT_OUTPUTS: dict[str, StudentOutput] = {o.name: o for o in (
    StudentOutput("feedback", report.FEEDBACK_FILE, "the student's feedback, in Markdown",
                  lambda entry, result: _render("feedback.md.j2", result, entry.student)),
    StudentOutput("feedback_html", report.FEEDBACK_HTML_FILE, "the same feedback as a page",
                  lambda entry, result: _render("feedback.html.j2", result, entry.student)),
    StudentOutput("gradescope", GRADESCOPE_FILE, "Gradescope's results.json", _gradescope_text),
)}
CLASS_OUTPUTS: dict[str, ClassOutput] = {o.name: o for o in (
    ClassOutput("gradebook", GRADEBOOK_FILE, "one row per hand-in: status, points, ratio, flags",
                lambda c: gradebook_csv(c.entries, c.questions, c.kept_written)),
    ClassOutput("canvas", CANVAS_FILE, "Canvas's gradebook import",
                lambda c: canvas_csv(c.entries, c.lab_title, c.points_possible)),
    ClassOutput("cases", CASES_FILE, "each hand-in's verdict per case", lambda c: cases_csv(c.entries)),
    ClassOutput("summary", SUMMARY_FILE, "the class page",
                lambda c: summary_page(c.lab, c.lab_title, c.entries, c.batch_info)),
)}


def chosen(registry: dict, names: Sequence[str] | None) -> list[tuple[str, Any]]:
    """The outputs of `registry` that `names` asks for (None: every one), in the registry's
    order; PublishError for a name it does not hold."""
    unknown = [name for name in names or () if name not in registry]
    if unknown:
        raise PublishError(f"There is no output {', '.join(map(repr, unknown))}; there are: {', '.join(registry)}.")
    return [(name, output) for name, output in registry.items() if names is None or name in names]


# --- per class ----------------------------------------------------------------------------------

def _read_entries(entries) -> list[Entry]:
    if not isinstance(entries, (list, tuple)):
        raise PublishError(f"The batch's entries must be a list, not {type(entries).__name__}.")
    checked = sorted((read_entry(entry) for entry in entries), key=lambda e: (e.student, e.handin_name, e.key))
    folders = Counter(e.key for e in checked)
    clash = sorted({f"{e.student!r} ({e.handin_name or 'no hand-in name'})" for e in checked if folders[e.key] > 1})
    if clash:
        raise PublishError(f"These rows would share a feedback folder: {', '.join(clash)}. A student with "
                           "several hand-ins needs a key per hand-in (`cudalab batch` gives one).")
    return checked


def _spreadsheet_text(text: str) -> str:
    """A cell a spreadsheet shows as text: one starting like a formula (OWASP's list: = + - @,
    tab, carriage return; leading spaces aside, which some spreadsheets drop) gets a leading
    quote."""
    return "'" + text if text.lstrip(" ").startswith(_FORMULA_START) else text


def _csv(rows: list[list[str]]) -> str:
    """Rows as CSV (the csv module quotes what needs quoting), every cell through
    _spreadsheet_text: whichever column a student's text reaches, it is text."""
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\r\n").writerows([[_spreadsheet_text(str(cell)) for cell in row]
                                                         for row in rows])
    return buffer.getvalue()


def _row_message(entry: Entry) -> str:
    if entry.state == "pending":
        return "not graded yet: this batch is partial"
    if entry.result is None:
        return "the grader failed on this hand-in before it had a result: grade it again"
    return _one_line(entry.result.message, 500)


def written_columns(questions) -> list[str]:
    """The gradebook's columns for the instructor's points on each written question
    ([[questions]] of lab.toml): "written <id> (<points>)", blank until the instructor fills
    them in; a later run keeps what is there (kept_written)."""
    return [f"written {q.id} ({q.points:g})" for q in questions]


def kept_written(path: Path, columns: list[str]) -> dict[str, dict[str, str]]:
    """The written-answer cells an instructor filled in an earlier gradebook.csv at `path`:
    student -> column -> cell, for `columns` only; nothing when there is no readable one."""
    try:
        rows = list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))
    except (OSError, UnicodeDecodeError, csv.Error):
        return {}
    return {row["student"]: {c: row[c] for c in columns if row.get(c)} for row in rows
            if isinstance(row.get("student"), str)}


def gradebook_csv(entries: list[Entry], questions=(), kept: dict[str, dict[str, str]] | None = None) -> str:
    """One row per student (GRADEBOOK_COLUMNS, then a column per written question), sorted by
    id. Grade cells are blank where the outcome is not the student's grade (pending, not run,
    a grader error); written-answer cells are the instructor's, from `kept`."""
    written = written_columns(questions)
    kept = kept or {}
    # A course's batch (--from-course) says, per student, the total before the late penalty and
    # why it was taken off; "total" is then the grade after it. A folder's batch has no such columns.
    with_late = any(entry.late is not None for entry in entries)
    rows = [list(GRADEBOOK_COLUMNS) + (list(LATE_COLUMNS) if with_late else []) + written]
    shared = _sharing(entries)
    for entry in entries:
        score = entry.score
        points = [score.correctness, score.performance, entry.final_total, score.total_max] if score else [None] * 4
        late = [_number(score.total) if score else "", _late_text(entry)] if with_late else []
        ratio = entry.result.ratio if entry.counts else None
        # The hand-in the grade is of: a hand-in changed since then is flagged, never shown
        # with its new hash beside the old grade.
        rows.append([entry.student, entry.handin_name, entry.graded_sha256 or entry.sha256,
                     entry.status, *map(_number, points),
                     "" if ratio is None else f"{ratio:.4g}",
                     ";".join(kind for kind, _ in flags_of(entry, shared)), _row_message(entry)]
                    + late + [kept.get(entry.student, {}).get(column, "") for column in written])
    return _csv(rows)


def _late_text(entry: Entry) -> str:
    late = entry.late
    if late is None:
        return ""
    if not late.penalty:
        return late.sentence or "on time"
    return f"{late.sentence} ({_number(late.penalty * float(entry.score.total))} points off)"


def _points_possible(entries: list[Entry]) -> float | None:
    maxima = sorted({float(e.score.total_max) for e in entries if e.score is not None})
    if len(maxima) > 1:
        raise PublishError("The results disagree on the points possible (" + ", ".join(f"{m:g}" for m in maxima)
                           + "): the lab's scoring changed during the batch. Grade again the hand-ins "
                             "graded under the old scoring.")
    return maxima[0] if maxima else None


def canvas_csv(entries: list[Entry], lab_title: str, points_possible: float | None = None) -> str:
    """Canvas's gradebook import: its export's identity columns, then one assignment column
    "<lab title> (cudalab)", with a Points Possible row second as Canvas's export has it. The
    student id goes to SIS User ID (and is the name where none is known), the LMS id to ID; a
    hand-in without a grade of its own has a blank cell, never a zero. A student with several
    hand-ins has one row and a blank cell: Canvas takes one grade, and which hand-in counts is
    the instructor's decision (summary.html flags them). Points Possible is the results' own
    maximum, else `points_possible` (the lab's, where no hand-in has a grade)."""
    possible = _points_possible(entries)
    possible = points_possible if possible is None else possible
    rows = [list(CANVAS_COLUMNS) + [f"{lab_title} (cudalab)"],
            [CANVAS_POINTS_POSSIBLE] + [""] * (len(CANVAS_COLUMNS) - 1)
            + ["" if possible is None else f"{possible:.2f}"]]
    shared = _sharing(entries)
    for entry in entries:
        if entry.student in shared and entry is not shared[entry.student][0]:
            continue
        score = None if entry.student in shared else entry.score
        rows.append([entry.name or entry.student, entry.lms_id, entry.student, "", entry.section,
                     "" if score is None else f"{entry.final_total:.2f}"])
    return _csv(rows)


def case_names(entries: list[Entry]) -> list[str]:
    """The names of the cases the results judged, in the lab's order (as the first result that
    has each lists it)."""
    names: dict[str, None] = {}
    for entry in entries:
        for case in entry.result.cases if entry.counts else []:
            names.setdefault(case.name, None)
    return list(names)


def _case_verdicts(entry: Entry) -> dict[str, CaseStatus]:
    """passed or failed per case the checker judged, for a hand-in with a grade; nothing for
    one without (no verdict of its cases is the student's)."""
    if not entry.counts:
        return {}
    return {case.name: case.status for case in entry.result.cases}


def cases_csv(entries: list[Entry]) -> str:
    """One row per hand-in (student, hand-in), one column per case: passed, failed, or blank
    where the case has no verdict (a hand-in without a grade, or one that never ran)."""
    names = case_names(entries)
    rows = [["student", "handin"] + names]
    for entry in entries:
        verdicts = _case_verdicts(entry)
        rows.append([entry.student, entry.handin_name] + [verdicts.get(name, "") for name in names])
    return _csv(rows)


def case_pass_rates(entries: list[Entry]) -> list[dict]:
    """Per case, among the hand-ins with a grade whose cases were judged: how many passed and
    failed, the most often failed first (ties in the lab's order)."""
    names = case_names(entries)
    tally = {name: Counter() for name in names}
    for entry in entries:
        for name, verdict in _case_verdicts(entry).items():
            tally[name][verdict] += 1
    rates = []
    for order, name in enumerate(names):
        passed, failed = tally[name][CaseStatus.PASSED], tally[name][CaseStatus.FAILED]
        rates.append({"name": name, "passed": passed, "failed": failed, "judged": passed + failed,
                      "rate": f"{100.0 * passed / (passed + failed):.0f}%", "order": order})
    rates.sort(key=lambda rate: (-rate["failed"] / rate["judged"], rate["order"]))
    return rates


def _plot_uri(draw) -> tuple[str | None, str]:
    """(an SVG data URI of the figure `draw` fills, '') or (None, why there is no plot)."""
    try:
        import matplotlib
        from matplotlib.figure import Figure
    except ImportError:
        return None, "No plot: drawing it needs matplotlib (pip install matplotlib)."
    figure = Figure(figsize=(5.6, 3.3))
    axes = figure.add_subplot()
    draw(axes)
    for side in ("top", "right"):
        axes.spines[side].set_visible(False)
    figure.tight_layout()
    buffer = io.BytesIO()
    with matplotlib.rc_context({"svg.hashsalt": _SVG_HASH_SALT, "svg.fonttype": "path"}):
        figure.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
    return "data:image/svg+xml;base64," + base64.b64encode(buffer.getvalue()).decode("ascii"), ""


def score_histogram(totals: list[float], total_max: float) -> tuple[str | None, str]:
    if not totals:
        return None, "No plot: no hand-in has a grade yet."
    top = total_max if total_max and total_max > 0 else max(max(totals), 1.0)

    def draw(axes):
        from matplotlib.ticker import MaxNLocator
        edges = [top * i / 10 for i in range(11)]
        axes.hist([min(max(t, 0.0), top) for t in totals], bins=edges, color=SCORE_COLOUR,
                  edgecolor="white", linewidth=1.0)
        axes.set_xlim(0, top)
        axes.set_xlabel(f"total points (of {top:g})")
        axes.set_ylabel("hand-ins")
        axes.yaxis.set_major_locator(MaxNLocator(integer=True))
    return _plot_uri(draw)


def ratio_distribution(ratios: list[float]) -> tuple[str | None, str]:
    ratios = [r for r in ratios if r > 0]
    if not ratios:
        return None, "No plot: no hand-in has a measured speed yet (only those whose every case passed are timed)."
    low, high = min(min(ratios), 0.9) / 1.05, max(max(ratios), 1.1) * 1.05

    def draw(axes):
        from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator, NullLocator
        edges = [low * (high / low) ** (i / 16) for i in range(17)]
        axes.hist(ratios, bins=edges, color=RATIO_COLOUR, edgecolor="white", linewidth=1.0)
        axes.set_xscale("log")
        axes.set_xlim(low, high)
        axes.axvline(1.0, color="#555555", linestyle="--", linewidth=1.0)
        axes.annotate("reference", xy=(1.0, 1.0), xycoords=("data", "axes fraction"), xytext=(3, -12),
                      textcoords="offset points", fontsize=8, color="#555555")
        axes.xaxis.set_major_locator(FixedLocator([t for t in _RATIO_TICKS if low <= t <= high]))
        axes.xaxis.set_major_formatter(FuncFormatter(lambda value, _pos: f"{value:g}"))
        axes.xaxis.set_minor_locator(NullLocator())
        axes.set_xlabel("time / reference time (log scale; lower is faster)")
        axes.set_ylabel("hand-ins")
        axes.yaxis.set_major_locator(MaxNLocator(integer=True))
    return _plot_uri(draw)


def _link(entry: Entry) -> str:
    return f"{STUDENTS_DIR}/{entry.key}/{report.FEEDBACK_HTML_FILE}"


def summary_page(lab: str, lab_title: str, entries: list[Entry], batch_info: dict) -> str:
    """summary.html: one self-contained page (inline style, plots as data URIs, no script)."""
    graded = [e for e in entries if e.state != "pending"]
    pending = len(entries) - len(graded)
    partial = pending > 0 or batch_info.get("complete") is False
    words = {**report.STATUS_WORDS, **STATE_WORDS}
    counted = Counter(e.status for e in entries)
    counts = [(status, words.get(status, status), counted[status])
              for status in list(COUNT_ORDER) + sorted(set(counted) - set(COUNT_ORDER)) if counted[status]]
    scores = [e.score for e in entries if e.score is not None]
    without = no_grade_groups(e.why_no_grade for e in entries)
    totals = [e.final_total for e in entries if e.score is not None]
    score_max = max([float(s.total_max) for s in scores], default=0.0)
    timed = [(e.result.ratio, e) for e in entries if e.counts and e.result.ratio is not None]
    score_plot, score_note = score_histogram(totals, score_max)
    ratio_plot, ratio_note = ratio_distribution([ratio for ratio, _ in timed])

    # Per reason, each sentence once with every hand-in it was said of: a class that all hit the
    # same wall reads as one line, not thirty.
    failures: dict[str, dict[str, list[dict]]] = {}
    for entry in entries:
        failure = failure_of(entry)
        if failure:
            failures.setdefault(failure[0], {}).setdefault(failure[1], []).append(
                {"student": entry.student, "link": _link(entry)})
    fastest = []
    correct = [(ratio, e) for ratio, e in timed if all(case.passed for case in e.result.cases)]
    correct.sort(key=lambda item: (item[0], item[1].student))
    for rank, (ratio, entry) in enumerate(correct[:_FASTEST], 1):
        perf = entry.result.performance  # timed, so there is one
        clock = perf.clock or Clock()
        fastest.append({"rank": rank, "student": entry.student, "link": _link(entry), "ratio": f"{ratio:.3g}",
                        "student_ms": report.ms_text(clock.student_ms),
                        "reference_ms": report.ms_text(clock.reference_ms),
                        "total": report.points_text(entry.score.total), "flagged": perf.flagged})
    shared = _sharing(entries)
    flagged = [{"student": e.student, "handin": e.handin_name, "link": _link(e),
                "flags": [{"kind": kind, "word": FLAG_WORDS[kind], "detail": detail} for kind, detail in flags]}
               for e in entries for flags in [flags_of(e, shared)] if flags]
    everyone = [{"student": e.student, "handin": e.handin_name, "link": _link(e) if e.state != "pending" else None,
                 "status": words.get(e.status, e.status),
                 "total": report.points_text(e.final_total) if e.score else "",
                 "total_max": report.points_text(e.score.total_max) if e.score else "",
                 "ratio": f"{e.result.ratio:.3g}" if e.counts and e.result.ratio is not None else "",
                 "flags": ", ".join(FLAG_WORDS[kind] for kind, _ in flags_of(e, shared))} for e in entries]
    # Written answers (README.md, where the lab asks questions): who handed them in, with a
    # link to the feedback that shows them; their points are gradebook.csv's written columns.
    answered = [(e, e.result.written_answers) for e in entries
                if e.state != "pending" and e.result is not None and e.result.written_answers is not None]
    written = {"asked": len(answered),
               "with": [{"student": e.student, "link": _link(e)} for e, a in answered if a.readme],
               "without": [e.student for e, a in answered if not a.readme]}
    missing = batch_info.get("missing") or []
    if not isinstance(missing, list) or not all(isinstance(m, dict) for m in missing):
        raise PublishError("batch_info's missing must be a list of roster students (student, name).")
    page = {
        "lab": lab, "lab_title": lab_title, "partial": partial, "graded": len(graded), "total": len(entries),
        "pending": pending, "started_at": batch_info.get("started_at"),
        "finished_at": batch_info.get("finished_at"),
        "gpu": batch_info.get("gpu"), "counts": counts,
        "score_plot": score_plot, "score_note": score_note, "ratio_plot": ratio_plot, "ratio_note": ratio_note,
        "timed": len(timed), "written": written,
        "failures": [{"key": key, "word": FAILURE_REASONS[key], "count": sum(map(len, failures[key].values())),
                      "details": [{"detail": detail, "students": students}
                                  for detail, students in failures[key].items()]}
                     for key in FAILURE_REASONS if key in failures],
        "with_grade": len(scores), "without_grade": [{"why": why, "count": count} for why, count in without],
        "mean": report.points_text(statistics.fmean(totals)) if totals else "",
        "median": report.points_text(statistics.median(totals)) if totals else "",
        "score_max": report.points_text(score_max), "cases": case_pass_rates(entries),
        "fastest": fastest, "flagged": flagged, "everyone": everyone,
        "missing": [{"student": str(m.get("student") or ""), "name": str(m.get("name") or "")} for m in missing],
        "shared": len(shared),
        "late": [{"student": e.student, "link": _link(e), "sentence": e.late.sentence,
                  "before": report.points_text(e.score.total), "after": report.points_text(e.final_total)}
                 for e in entries if e.late is not None and e.late.penalty],
    }
    return report.environment().get_template("summary.html.j2").render(s=page)


def write_class(out_dir: Path, lab: str, lab_title: str, entries: list[dict], batch_info: dict,
                *, points_possible: float | None = None, questions=(),
                outputs: Sequence[str] | None = None) -> dict[str, Path]:
    """Write out_dir/gradebook.csv, canvas.csv, cases.csv and summary.html (each atomically; the
    plots are inside summary.html) and return their paths.

    entries: one per student, as write_student takes them. batch_info: "started_at",
    "finished_at", "gpu" (shown on the page), "complete" (False while hand-ins are pending),
    "counts" (the batch's own tally; the page counts the entries itself), "missing" (the
    roster's students with no hand-in: {"student", "name"} each). points_possible:
    Canvas's Points Possible, where no result says it (no hand-in has a grade): the lab's.
    questions: the lab's written questions, whose points the instructor writes into
    gradebook.csv; what an earlier gradebook.csv holds there is kept. outputs: the names of
    CLASS_OUTPUTS to write (None: all of them)."""
    if not isinstance(batch_info, dict):
        raise PublishError(f"batch_info must be a mapping (started_at, finished_at, gpu, complete), "
                           f"not {type(batch_info).__name__}.")
    checked = _read_entries(entries)
    out_dir = Path(out_dir)
    kept = kept_written(out_dir / GRADEBOOK_FILE, written_columns(questions)) if questions else {}
    context = ClassContext(lab, lab_title, checked, batch_info, points_possible, tuple(questions), kept)
    texts = {name: (out_dir / output.file, output.render(context)) for name, output in chosen(CLASS_OUTPUTS, outputs)}
    for path, text in texts.values():
        report.atomic_write_text(path, text)
    return {name: path for name, (path, _) in texts.items()}
