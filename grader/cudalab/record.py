"""The grade record (`cudalab.grade/1`, schemas/grade.schema.json) as typed values: a
GradeResult of small dataclasses (submission, build, cases, performance, sanitizer,
provenance) with `from_json` and `to_json`.

`from_json` checks what it reads and refuses a record it cannot trust with a sentence
(RecordError); `to_json(from_json(r)) == r` for every record the grader writes, so a record
read, changed and written back loses nothing: each section keeps the keys it does not name
(a round's timings, a lab's own details) in `extra`, in order.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from .status import CaseStatus, PerformanceStatus, RunStatus, SanitizerStatus, Status

SCHEMA = "cudalab.grade/1"


class RecordError(ValueError):
    """A grade record that is not one this grader can read: the message says what and where."""


def _take(body: dict, key: str, kinds: tuple[type, ...], where: str, default: Any = dataclasses.MISSING,
          nullable: bool = False) -> Any:
    """body[key], checked to be one of `kinds` (or None where `nullable`)."""
    if key not in body:
        if default is dataclasses.MISSING:
            raise RecordError(f"{where} has no '{key}'")
        return default
    value = body[key]
    if value is None and nullable:
        return None
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        raise RecordError(f"{where}.{key} is {json.dumps(value)[:40]}, not {_KIND_WORDS[kinds[0]]}")
    return value


_KIND_WORDS = {str: "text", int: "a number", float: "a number", bool: "true or false", dict: "an object",
               list: "a list"}


def _object(body: Any, where: str) -> dict:
    if not isinstance(body, dict):
        raise RecordError(f"{where} is {type(body).__name__}, not an object")
    return body


def _strings(body: dict, key: str, where: str) -> list[str]:
    values = _take(body, key, (list,), where, default=[])
    if not all(isinstance(v, str) for v in values):
        raise RecordError(f"{where}.{key} holds something other than text")
    return list(values)


def _objects(body: dict, key: str, where: str, default: Any = dataclasses.MISSING,
             nullable: bool = False) -> list[dict] | None:
    """body[key], a list of objects (None where `nullable`)."""
    values = _take(body, key, (list,), where, default, nullable)
    if values is not None and not all(isinstance(v, dict) for v in values):
        raise RecordError(f"{where}.{key} holds something other than objects")
    return values


def _word(body: dict, key: str, kind: type[Enum], where: str) -> Any:
    """body[key] as a member of the status enum `kind`, refused with the words it may be."""
    word = _take(body, key, (str,), where)
    try:
        return kind(word)
    except ValueError:
        raise RecordError(f"{where}.{key} is {word!r}, not one of "
                          f"{', '.join(member.value for member in kind)}") from None


def _optional(section: type, body: dict, key: str, where: str, inside: str | None = None) -> Any:
    """The section `section` at body[key], or None where the record has none there; `inside`
    names it in a RecordError (default: <where>.<key>)."""
    value = _take(body, key, (dict,), where, None, nullable=True)
    return None if value is None else section.from_json(value, inside or f"{where}.{key}")


NUMBER = (int, float)


class _Section:
    """A section of the record: its named fields, then `extra`, the keys it does not name.
    One read from JSON remembers which of its fields the record had and the keys' order, so
    that writing it back changes nothing; one made in code writes every field."""

    FIELDS: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        self._present, self._order = frozenset(self.FIELDS), self.FIELDS

    def to_json(self) -> dict:
        named = {name: _plain(getattr(self, name)) for name in self.FIELDS if name in self._present}
        return _merged(named, self.extra, self._order)


def _plain(value: Any) -> Any:
    if isinstance(value, _Section):
        return value.to_json()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, Enum):
        return value.value
    return value


def _merged(named: dict, extra: dict, order: tuple) -> dict:
    both = {**named, **extra}
    ordered = {key: both[key] for key in order if key in both}
    ordered.update((key, value) for key, value in both.items() if key not in ordered)
    return ordered


def _section(cls, body: dict, values: dict) -> Any:
    """An instance of `cls` from `values` (its named fields), remembering `body`'s other keys and order."""
    made = cls(**values, extra={key: value for key, value in body.items() if key not in cls.FIELDS})
    made._present = frozenset(key for key in cls.FIELDS if key in body)
    made._order = tuple(body)
    return made


@dataclass
class Submission(_Section):
    name: str
    folder: str
    student: str | None = None
    sha256: str | None = None
    extra: dict = field(default_factory=dict)
    FIELDS = ("name", "folder", "student", "sha256")

    @classmethod
    def from_json(cls, body: Any, where: str = "submission") -> "Submission":
        body = _object(body, where)
        return _section(cls, body, dict(
            name=_take(body, "name", (str,), where), folder=_take(body, "folder", (str,), where),
            student=_take(body, "student", (str,), where, None, nullable=True),
            sha256=_take(body, "sha256", (str,), where, None, nullable=True)))


@dataclass
class Score(_Section):
    correctness: float
    correctness_max: float
    performance: float
    performance_max: float
    total: float
    total_max: float
    extra: dict = field(default_factory=dict)
    FIELDS = ("correctness", "correctness_max", "performance", "performance_max", "total", "total_max")

    @classmethod
    def from_json(cls, body: Any, where: str = "score") -> "Score":
        body = _object(body, where)
        return _section(cls, body, {name: _take(body, name, NUMBER, where) for name in cls.FIELDS})


@dataclass
class Build(_Section):
    status: str
    copied: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    feedback: list[str] = field(default_factory=list)
    extra: dict = field(default_factory=dict)
    FIELDS = ("status", "copied", "ignored", "feedback")

    @classmethod
    def from_json(cls, body: Any, where: str = "build") -> "Build":
        body = _object(body, where)
        return _section(cls, body, dict(status=_take(body, "status", (str,), where),
                                        copied=_strings(body, "copied", where), ignored=_strings(body, "ignored", where),
                                        feedback=_strings(body, "feedback", where)))


@dataclass
class Case(_Section):
    name: str
    status: CaseStatus
    message: str
    points: float | None = None
    max_points: float | None = None
    difference_images: dict[str, str] = field(default_factory=dict)  # output -> picture beside the feedback
    extra: dict = field(default_factory=dict)
    FIELDS = ("name", "status", "message", "points", "max_points", "difference_images")

    @property
    def passed(self) -> bool:
        return self.status is CaseStatus.PASSED

    @classmethod
    def from_json(cls, body: Any, where: str = "case") -> "Case":
        body = _object(body, where)
        pictures = _take(body, "difference_images", (dict,), where, {})
        if not all(isinstance(v, str) for v in pictures.values()):
            raise RecordError(f"{where}.difference_images holds something other than file names")
        return _section(cls, body, dict(
            name=_take(body, "name", (str,), where), status=_word(body, "status", CaseStatus, where),
            message=_take(body, "message", (str,), where),
            points=_take(body, "points", NUMBER, where, None), max_points=_take(body, "max_points", NUMBER, where, None),
            difference_images=pictures))


@dataclass
class Clock(_Section):
    """What the grader's clock said of the timed case (timing.ClockScore.to_json), per run."""
    student_ms: float | None = None
    reference_ms: float | None = None
    extra: dict = field(default_factory=dict)
    FIELDS = ("student_ms", "reference_ms")

    @classmethod
    def from_json(cls, body: Any, where: str = "clock") -> "Clock":
        body = _object(body, where)
        return _section(cls, body, dict(student_ms=_take(body, "student_ms", NUMBER, where, None, nullable=True),
                                        reference_ms=_take(body, "reference_ms", NUMBER, where, None, nullable=True)))


@dataclass
class RegradeRange(_Section):
    """The lowest and highest of a grade's rounds' ratios and the performance points at each
    (scoring.regrade_range): what a regrade of the same code on the same machine is made of."""
    rounds: int
    low_ratio: float
    high_ratio: float
    points_at_low: float
    points_at_high: float
    extra: dict = field(default_factory=dict)
    FIELDS = ("rounds", "low_ratio", "high_ratio", "points_at_low", "points_at_high")

    @classmethod
    def from_json(cls, body: Any, where: str = "regrade_range") -> "RegradeRange":
        body = _object(body, where)
        return _section(cls, body, dict(rounds=_take(body, "rounds", (int,), where),
                                        **{key: _take(body, key, NUMBER, where) for key in cls.FIELDS[1:]}))


@dataclass
class Performance(_Section):
    status: PerformanceStatus
    message: str = ""
    points: float | None = None
    max_points: float | None = None
    ratio: float | None = None
    flagged: bool = False
    timing_case: str | None = None   # the case timed (absent where none was)
    clock: Clock | None = None       # absent where nothing was timed
    regrade_range: RegradeRange | None = None  # absent where fewer than two rounds were scored
    extra: dict = field(default_factory=dict)
    FIELDS = ("status", "message", "points", "max_points", "ratio", "flagged", "timing_case", "clock",
              "regrade_range")

    @property
    def scored_ratio(self) -> float | None:
        """Student time / reference time, where performance was measured and scored."""
        return float(self.ratio) if self.status is PerformanceStatus.SCORED and self.ratio is not None else None

    @classmethod
    def from_json(cls, body: Any, where: str = "performance") -> "Performance":
        body = _object(body, where)
        return _section(cls, body, dict(
            status=_word(body, "status", PerformanceStatus, where), message=_take(body, "message", (str,), where, ""),
            points=_take(body, "points", NUMBER, where, None), max_points=_take(body, "max_points", NUMBER, where, None),
            ratio=_take(body, "ratio", NUMBER, where, None, nullable=True),
            flagged=_take(body, "flagged", (bool,), where, False),
            timing_case=_take(body, "timing_case", (str,), where, None, nullable=True),
            clock=_optional(Clock, body, "clock", where),
            regrade_range=_optional(RegradeRange, body, "regrade_range", where)))


@dataclass
class Sanitizer(_Section):
    status: SanitizerStatus
    points_off: float = 0.0
    message: str = ""
    findings: list[dict] = field(default_factory=list)  # each with its "sentence" (sanitizer.Finding)
    extra: dict = field(default_factory=dict)
    FIELDS = ("status", "points_off", "message", "findings")

    @classmethod
    def from_json(cls, body: Any, where: str = "sanitizer") -> "Sanitizer":
        body = _object(body, where)
        return _section(cls, body, dict(status=_word(body, "status", SanitizerStatus, where),
                                        points_off=_take(body, "points_off", NUMBER, where, 0.0),
                                        message=_take(body, "message", (str,), where, ""),
                                        findings=_objects(body, "findings", where, [])))


@dataclass
class Run(_Section):
    """How the student's program's correctness run ended."""
    status: RunStatus
    description: str = ""
    stderr_head: str = ""
    extra: dict = field(default_factory=dict)
    FIELDS = ("status", "description", "stderr_head")

    @classmethod
    def from_json(cls, body: Any, where: str = "run") -> "Run":
        body = _object(body, where)
        return _section(cls, body, dict(status=_word(body, "status", RunStatus, where),
                                        description=_take(body, "description", (str,), where, ""),
                                        stderr_head=_take(body, "stderr_head", (str,), where, "")))


@dataclass
class Isolation(_Section):
    """The isolation the student's code ran under (grade's isolation record): `official` False
    or `allowed_without` True where it was not the official sandbox."""
    official: bool | None = None
    allowed_without: bool = False
    summary: str = ""
    missing: list[str] = field(default_factory=list)
    extra: dict = field(default_factory=dict)
    FIELDS = ("official", "allowed_without", "summary", "missing")

    @property
    def problem(self) -> str:
        """What an instructor should know where the grade was not given under the official
        sandbox ("no sandbox (unofficial) (missing: ...)"); "" where it was."""
        if self.official is not False and not self.allowed_without:
            return ""
        missing = "; ".join(self.missing)
        return (self.summary or "not the official sandbox") + (f" (missing: {missing})" if missing else "")

    @classmethod
    def from_json(cls, body: Any, where: str = "isolation") -> "Isolation":
        body = _object(body, where)
        return _section(cls, body, dict(official=_take(body, "official", (bool,), where, None, nullable=True),
                                        allowed_without=_take(body, "allowed_without", (bool,), where, False),
                                        summary=_take(body, "summary", (str,), where, ""),
                                        missing=_strings(body, "missing", where)))


@dataclass
class WrittenAnswers(_Section):
    """The lab's written questions and README.md as the student handed it in (None: none)."""
    readme: str | None
    questions: list[dict] = field(default_factory=list)  # id, text, points each
    extra: dict = field(default_factory=dict)
    FIELDS = ("readme", "questions")

    @classmethod
    def from_json(cls, body: Any, where: str = "written_answers") -> "WrittenAnswers":
        body = _object(body, where)
        return _section(cls, body, dict(readme=_take(body, "readme", (str,), where, None, nullable=True),
                                        questions=_objects(body, "questions", where, [])))


@dataclass
class Provenance(_Section):
    seed: int | None
    started_at: str | None
    finished_at: str | None
    gpu: str | None = None
    phases_s: dict = field(default_factory=dict)
    isolation: Isolation | None = None
    gpu_sharing: list[dict] | None = None  # gpu.GpuWait each: who else used the GPU before it was timed
    extra: dict = field(default_factory=dict)
    FIELDS = ("seed", "started_at", "finished_at", "gpu", "phases_s", "isolation", "gpu_sharing")

    @classmethod
    def from_json(cls, body: Any, where: str = "provenance") -> "Provenance":
        body = _object(body, where)
        return _section(cls, body, dict(
            seed=_take(body, "seed", (int,), where, nullable=True),
            started_at=_take(body, "started_at", (str,), where, nullable=True),
            finished_at=_take(body, "finished_at", (str,), where, nullable=True),
            gpu=_take(body, "gpu", (str,), where, None, nullable=True),
            phases_s=_take(body, "phases_s", (dict,), where, {}),
            isolation=_optional(Isolation, body, "isolation", where),
            gpu_sharing=_objects(body, "gpu_sharing", where, None, nullable=True)))


@dataclass
class Late(_Section):
    """The course's late policy applied to the graded hand-in (`batch --from-course`: course/
    policy.py's assessment at the time the service received it): the penalty is a fraction of
    the total taken off in the class outputs; the score itself stays what the code earned."""
    status: str                 # "on_time" or "late"
    days_late: int
    penalty: float              # fraction of the total off (0..1)
    sentence: str               # what the student was told ("late by 1 day: 10 % off")
    received_at: str = ""       # the service's clock, ISO 8601
    extra: dict = field(default_factory=dict)
    FIELDS = ("status", "days_late", "penalty", "sentence", "received_at")

    def total_after(self, total: float) -> float:
        return float(total) * (1.0 - float(self.penalty))

    @classmethod
    def from_json(cls, body: Any, where: str = "late") -> "Late":
        body = _object(body, where)
        status = _take(body, "status", (str,), where)
        if status not in ("on_time", "late"):
            raise RecordError(f"{where}.status is {status!r}, not on_time or late (only accepted hand-ins are graded)")
        penalty = _take(body, "penalty", NUMBER, where)
        if not 0 <= penalty <= 1:
            raise RecordError(f"{where}.penalty is {penalty}, not a fraction from 0 to 1")
        days = _take(body, "days_late", (int,), where)
        if days < 0:
            raise RecordError(f"{where}.days_late is {days}, below 0")
        return _section(cls, body, dict(status=status, days_late=days, penalty=penalty,
                                        sentence=_take(body, "sentence", (str,), where, ""),
                                        received_at=_take(body, "received_at", (str,), where, "")))


@dataclass
class GradeResult(_Section):
    """One grade, as `cudalab grade` and a batch write it."""
    cudalab_version: str
    lab: str
    lab_title: str
    submission: Submission
    status: Status
    exit_code: int
    message: str
    score: Score | None
    build: Build
    cases: list[Case]
    performance: Performance | None
    run: Run | None
    warnings: list[str]
    provenance: Provenance
    sanitizer: Sanitizer | None = None
    written_answers: WrittenAnswers | None = None  # where the lab asks written questions
    scheduler_failure: dict | None = None          # what a cluster's scheduler said when it stopped the grade
    late: Late | None = None                       # the course's late policy, where the batch applied one
    schema: str = SCHEMA
    extra: dict = field(default_factory=dict)
    FIELDS = ("schema", "cudalab_version", "lab", "lab_title", "submission", "status", "exit_code", "message",
              "score", "build", "cases", "performance", "run", "sanitizer", "warnings", "provenance",
              "written_answers", "scheduler_failure", "late")

    @property
    def is_grade(self) -> bool:
        """Its status is one whose score is the student's grade (a zero included); see Status."""
        return self.status.is_grade

    @property
    def has_grade(self) -> bool:
        """It holds the student's grade: a status whose score is the grade, and a score
        (status.has_grade of the record as JSON). Any other record says nothing of the hand-in."""
        return self.status.is_grade and self.score is not None

    @property
    def ratio(self) -> float | None:
        """Student time / reference time, where performance was measured and scored."""
        return self.performance.scored_ratio if self.performance is not None else None

    @property
    def total(self) -> float | None:
        return self.score.total if self.score is not None else None

    @property
    def total_after_late(self) -> float | None:
        """The total with the late policy's penalty taken off (the total where none applies)."""
        if self.score is None:
            return None
        return self.late.total_after(self.score.total) if self.late is not None else float(self.score.total)

    @classmethod
    def from_json(cls, body: Any, where: str = "the grade record") -> "GradeResult":
        body = _object(body, where)
        if body.get("schema") != SCHEMA:
            raise RecordError(f"{where} is not a {SCHEMA} record (its schema is {body.get('schema')!r}): "
                              "it was written by another tool or another version of it")
        word = _take(body, "status", (str,), where)
        try:
            status = Status(word)
        except ValueError:
            raise RecordError(f"{where}.status is {word!r}, a status this grader does not know") from None
        exit_code = _take(body, "exit_code", (int,), where)
        if exit_code != int(status.exit_code):
            raise RecordError(f"{where} says {word!r} with exit code {exit_code}, where that status is "
                              f"{int(status.exit_code)}")
        score = _take(body, "score", (dict,), where, nullable=True)
        performance = _take(body, "performance", (dict,), where, nullable=True)
        cases = _take(body, "cases", (list,), where)
        run = _take(body, "run", (dict,), where, nullable=True)
        return _section(cls, body, dict(
            schema=SCHEMA, cudalab_version=_take(body, "cudalab_version", (str,), where),
            lab=_take(body, "lab", (str,), where), lab_title=_take(body, "lab_title", (str,), where),
            submission=Submission.from_json(body.get("submission"), f"{where}: submission"),
            status=status, exit_code=exit_code, message=_take(body, "message", (str,), where),
            score=None if score is None else Score.from_json(score, f"{where}: score"),
            build=Build.from_json(body.get("build"), f"{where}: build"),
            cases=[Case.from_json(c, f"{where}: case {i + 1}") for i, c in enumerate(cases)],
            performance=None if performance is None else Performance.from_json(performance, f"{where}: performance"),
            run=None if run is None else Run.from_json(run, f"{where}: run"),
            sanitizer=_optional(Sanitizer, body, "sanitizer", where, f"{where}: sanitizer"),
            warnings=_strings(body, "warnings", where),
            provenance=Provenance.from_json(body.get("provenance"), f"{where}: provenance"),
            written_answers=_optional(WrittenAnswers, body, "written_answers", where, f"{where}: written answers"),
            scheduler_failure=_take(body, "scheduler_failure", (dict,), where, None, nullable=True),
            late=_optional(Late, body, "late", where, f"{where}: late")))
