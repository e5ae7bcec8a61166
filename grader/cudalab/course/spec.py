"""A course's `course.toml`: the labs it offers, each with its opening, deadline, late policy,
which hand-in counts and the try budget, and the roster of its students. Read and checked
whole by load_course, which refuses a file it cannot trust with a sentence naming the file,
the key and what to write instead; written, commented, by `cudalab course init`
(course_toml_text).

Times are TOML offset datetimes (`2026-03-01T23:59:00-06:00` or `...Z`): a deadline without a
time zone means a different instant on every machine that reads it, so it is refused.
"""
from __future__ import annotations

import datetime as dt
import tomllib
from dataclasses import dataclass
from pathlib import Path

from ..batching.batch import RosterStudent, read_roster
from ..config import Config
from ..errors import UnknownLabError, UsageError
from ..lab import labs

COURSE_FILE = "course.toml"
DEFAULT_ROSTER = "roster.csv"
DEFAULT_MAX_UPLOAD_MIB = 16
COUNTS = ("last", "best")
_TOP_KEYS = ("name", "roster", "max_upload_mib", "labs")
_LAB_KEYS = ("opens", "deadline", "counts", "late", "tries")
_LATE_KEYS = ("grace_minutes", "penalty_per_day", "cutoff")
_TRY_KEYS = ("capacity", "refill_per_hour")


@dataclass(frozen=True)
class LatePolicy:
    grace_minutes: int          # hand-ins within this after the deadline are on time
    penalty_per_day: float      # fraction of the grade off per started day late after the grace (0.1 = 10 %)
    cutoff: dt.datetime | None  # after it nothing is accepted (None: the deadline + grace, i.e. no late hand-ins)


@dataclass(frozen=True)
class TryBudget:
    capacity: int               # tries a student can have in hand (bucket size)
    refill_per_hour: float      # tries that come back per hour


@dataclass(frozen=True)
class LabOffer:
    lab: str
    opens: dt.datetime
    deadline: dt.datetime
    late: LatePolicy
    counts: str                 # "last" | "best"
    tries: TryBudget

    @property
    def on_time_until(self) -> dt.datetime:
        """The last instant a hand-in is on time: the deadline plus the grace period."""
        return self.deadline + dt.timedelta(minutes=self.late.grace_minutes)

    @property
    def closes(self) -> dt.datetime:
        """The last instant a hand-in is accepted at all."""
        return self.late.cutoff if self.late.cutoff is not None else self.on_time_until


@dataclass(frozen=True)
class CourseSpec:
    folder: Path
    name: str
    labs: dict[str, LabOffer]
    roster_file: Path
    max_upload_bytes: int

    def offer(self, lab: str) -> LabOffer:
        try:
            return self.labs[lab]
        except KeyError:
            raise UsageError(f"The course {self.name!r} offers no lab {lab!r}; it offers "
                             f"{', '.join(sorted(self.labs))}. Add a [labs.{lab}] table to "
                             f"{self.folder / COURSE_FILE} to offer it.") from None

    def roster(self) -> list[RosterStudent]:
        """The roster's students (batching.batch.read_roster: id, name, lms_id, section, email)."""
        return read_roster(self.roster_file)


class _Reader:
    """Checks values of one course.toml, each refusal a sentence naming the file and the key."""

    def __init__(self, path: Path):
        self.path = path

    def fail(self, key: str, what: str) -> UsageError:
        return UsageError(f"{self.path}: {key} {what}")

    def keys(self, table: dict, known: tuple[str, ...], where: str) -> None:
        for key in table:
            if key not in known:
                place = f"[{where}]" if where else "the top level"
                raise UsageError(f"{self.path}: {place} has a key {key!r} that a course does not use; the keys "
                                 f"there are {', '.join(known)}. Remove it or fix its spelling.")

    def table(self, body: dict, key: str, where: str, required: bool = False) -> dict:
        value = body.get(key, None)
        if value is None:
            if required:
                raise self.fail(where, "is missing: add it as a table, such as [labs.vector_add].")
            return {}
        if not isinstance(value, dict):
            raise self.fail(where, f"is {value!r}, not a table: write it as a [{where}] section.")
        return value

    def text(self, body: dict, key: str, where: str, default: str | None = None) -> str:
        value = body.get(key, default)
        if value is None:
            raise self.fail(where, f"is missing: add {key} = \"...\".")
        if not isinstance(value, str) or not value.strip():
            raise self.fail(where, f"is {value!r}: write it as text in quotes, such as {key} = \"...\".")
        return value.strip()

    def number(self, body: dict, key: str, where: str, default, whole: bool, low: float,
               high: float | None = None):
        value = body.get(key, default)
        kinds = (int,) if whole else (int, float)
        if isinstance(value, bool) or not isinstance(value, kinds) or value < low or (high is not None and value > high):
            span = f"from {low} to {high}" if high is not None else f"{low} or more"
            kind = "a whole number" if whole else "a number"
            raise self.fail(where, f"is {value!r}: write {kind} {span}, such as {key} = {default}.")
        return value if whole else float(value)

    def instant(self, body: dict, key: str, where: str, required: bool = True) -> dt.datetime | None:
        value = body.get(key)
        if value is None:
            if required:
                raise self.fail(where, f"is missing: add {key} = 2026-03-01T23:59:00-06:00 (a date, a time "
                                "and the time zone's offset, or Z for UTC).")
            return None
        if not isinstance(value, dt.datetime):
            raise self.fail(where, f"is {value!r}, not a date and time: write it unquoted with its time zone, "
                            f"such as {key} = 2026-03-01T23:59:00-06:00.")
        if value.tzinfo is None:
            raise self.fail(where, f"is {value.isoformat()} without a time zone, which means a different "
                            f"instant on each machine: write {value.isoformat()}Z for UTC, or the offset of "
                            f"the course's time zone, such as {value.isoformat()}-06:00.")
        return value


def _read_offer(reader: _Reader, lab: str, body: dict) -> LabOffer:
    where = f"labs.{lab}"
    reader.keys(body, _LAB_KEYS, where)
    opens = reader.instant(body, "opens", f"[{where}] opens")
    deadline = reader.instant(body, "deadline", f"[{where}] deadline")
    if deadline <= opens:
        raise reader.fail(f"[{where}] deadline", f"({deadline.isoformat()}) is not after opens "
                          f"({opens.isoformat()}): the lab must open before its deadline.")
    counts = reader.text(body, "counts", f"[{where}] counts", "last")
    if counts not in COUNTS:
        raise reader.fail(f"[{where}] counts", f"is {counts!r}: write \"last\" (the last hand-in counts) or "
                          "\"best\" (the best graded one counts).")
    late_body = reader.table(body, "late", f"{where}.late")
    reader.keys(late_body, _LATE_KEYS, f"{where}.late")
    grace = reader.number(late_body, "grace_minutes", f"[{where}.late] grace_minutes", 0, True, 0)
    penalty = reader.number(late_body, "penalty_per_day", f"[{where}.late] penalty_per_day", 0, False, 0, 1)
    cutoff = reader.instant(late_body, "cutoff", f"[{where}.late] cutoff", required=False)
    if cutoff is not None and cutoff < deadline:
        raise reader.fail(f"[{where}.late] cutoff", f"({cutoff.isoformat()}) is before the deadline "
                          f"({deadline.isoformat()}): write a cut-off at or after the deadline, or leave it "
                          "out to accept nothing after the deadline and its grace period.")
    tries_body = reader.table(body, "tries", f"{where}.tries")
    reader.keys(tries_body, _TRY_KEYS, f"{where}.tries")
    capacity = reader.number(tries_body, "capacity", f"[{where}.tries] capacity", 10, True, 1)
    refill = reader.number(tries_body, "refill_per_hour", f"[{where}.tries] refill_per_hour", 2, False, 0)
    return LabOffer(lab, opens, deadline, LatePolicy(grace, penalty, cutoff), counts, TryBudget(capacity, refill))


def load_course(folder: Path, config: Config | None = None) -> CourseSpec:
    """The course in `folder` (its course.toml and roster), checked whole; each lab it offers
    must be one of this repository's labs (`config`'s; default: Config.load())."""
    folder = Path(folder).resolve()
    path = folder / COURSE_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"There is no {COURSE_FILE} in {folder}. Make one with `cudalab course init "
                         f"{folder}`, or give the course's folder.") from None
    except (OSError, UnicodeDecodeError) as err:
        raise UsageError(f"{path} cannot be read ({err}); it must be a UTF-8 TOML file.") from None
    try:
        body = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise UsageError(f"{path} is not valid TOML: {err}. Fix that line.") from None
    reader = _Reader(path)
    reader.keys(body, _TOP_KEYS, "")
    name = reader.text(body, "name", "name")
    roster_file = folder / reader.text(body, "roster", "roster", DEFAULT_ROSTER)
    if not roster_file.is_file():
        raise reader.fail("roster", f"names {roster_file}, which is not a file: copy the roster CSV (columns "
                          "id, name, lms_id, email) there, or write roster = \"<its file name>\".")
    read_roster(roster_file)  # refused now, in its own sentence, rather than at the first request
    max_mib = reader.number(body, "max_upload_mib", "max_upload_mib", DEFAULT_MAX_UPLOAD_MIB, True, 1)
    offered = reader.table(body, "labs", "labs", required=True)
    if not offered:
        raise reader.fail("[labs]", "offers no lab: add a table such as [labs.vector_add] with its opens and "
                          "deadline.")
    config = config or Config.load()
    offers = {}
    for lab, lab_body in offered.items():
        if not isinstance(lab_body, dict):
            raise reader.fail(f"labs.{lab}", f"is {lab_body!r}, not a table: write it as a [labs.{lab}] section.")
        try:
            labs.load_lab(config, lab)
        except UnknownLabError as err:
            raise reader.fail(f"[labs.{lab}]", f"names no lab of this repository. {err}") from None
        offers[lab] = _read_offer(reader, lab, lab_body)
    return CourseSpec(folder, name, offers, roster_file, max_mib * 1024 * 1024)


def course_toml_text(name: str, lab_names: list[str], roster_name: str, opens: dt.datetime) -> str:
    """A commented course.toml that load_course reads: each lab open from `opens`, due 14 days
    later, with the defaults `cudalab course init` offers (each said in its comment)."""
    opens = opens.replace(microsecond=0)
    deadline = opens + dt.timedelta(days=14)
    cutoff = deadline + dt.timedelta(days=3)
    lines = [
        "# The course: read by `cudalab serve --course`, `cudalab course tokens` and",
        "# `cudalab batch LAB --from-course`. Times are date, time and time-zone offset",
        "# (2026-03-01T23:59:00-06:00, or ...Z for UTC); one without a time zone is refused.",
        f"name = {_toml_string(name)}",
        "# The roster: a CSV with the columns id, name, lms_id and email (as the LMS exports it).",
        f"roster = {_toml_string(roster_name)}",
        "# The largest upload (a try or a hand-in) accepted, in MiB.",
        f"max_upload_mib = {DEFAULT_MAX_UPLOAD_MIB}",
    ]
    for lab in lab_names:
        lines += [
            "",
            f"[labs.{lab}]",
            "# When students may start handing in and trying, and the deadline.",
            f"opens = {opens.isoformat()}",
            f"deadline = {deadline.isoformat()}",
            "# Which hand-in is graded: \"last\" (the last one) or \"best\" (the best graded one).",
            "counts = \"last\"",
            "",
            f"[labs.{lab}.late]",
            "# Hand-ins within this many minutes after the deadline are on time.",
            "grace_minutes = 0",
            "# The fraction of the grade taken off per started day late (0.1 = 10 % a day).",
            "penalty_per_day = 0.1",
            "# After this nothing is accepted (leave it out: nothing after the deadline and grace).",
            f"cutoff = {cutoff.isoformat()}",
            "",
            f"[labs.{lab}.tries]",
            "# Tries on the course's GPUs a student can have in hand, and how many come back an hour.",
            "capacity = 10",
            "refill_per_hour = 2",
        ]
    return "\n".join(lines) + "\n"


def _toml_string(text: str) -> str:
    """`text` as a TOML basic string (quotes, backslashes and control characters escaped)."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + "".join(ch if ch.isprintable() else "\\u%04x" % ord(ch) for ch in escaped) + '"'
