"""The statuses of a grade (the "status" of a cudalab.grade/1 result), each said once.

A grade's status decides its CLI exit code, the words people read for it, whether its score
is the student's grade (a zero included), whether the hand-in was refused (rejected: a zero
the student earned), whether the grade has no score at all, and the reason summary.html
files it under. Every module that writes or reads a status takes these from here:
grade.py (exit codes, scores), errors.py (the status each error reports), publish.py
(grade cells, counts, failure reasons, Gradescope's tests), report.py and the templates
(words and verdicts). The JSON value of each is the member's string value.

The statuses inside a grade are here too, each an enum whose members equal their JSON
words: a case's verdict (CaseStatus), how the student's program ended (RunStatus: the
harness's exit codes' words, exit_codes.Harness, and two the grader adds), the performance
section's (PerformanceStatus) and compute-sanitizer's (SanitizerStatus). record.py reads a
grade into them; publish.py, report.py and the templates compare against them, never against
a spelled-out word (tests/test_status.py greps for one).

Not statuses of a grade: the batch's states of a row ("pending", "failed_to_grade",
publish.STATE_WORDS) and the checks of `cudalab check` (handin_checks.CheckName).
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from .exit_codes import Cli


@dataclass(frozen=True)
class Verdict:
    """The first line of a student's feedback for a status other than graded: `head` in bold,
    then `text`; `kind` is the HTML class ("zero" for a rejected hand-in, "none" for no grade)."""
    head: str
    text: str
    kind: str


class Status(str, Enum):
    """One grade status. Members are listed in the order summary.html counts them.

    A member equals its string ("graded" == Status.GRADED), but sets and dict keys hash by
    name: put `.value` into collections and documents."""

    def __new__(cls, value: str, exit_code: Cli, words: str, is_grade: bool, rejects: bool,
                scoreless: bool, reason_key: str | None, reason: str | None, reason_rank: int,
                verdict: Verdict | None):
        member = str.__new__(cls, value)
        member._value_ = value
        member.exit_code = exit_code        # what `cudalab grade` exits with
        member.words = words                # for people: feedback, summaries, Gradescope
        member.is_grade = is_grade          # its score is the student's grade (a zero included)
        member.rejects = rejects            # the hand-in was refused: a zero, never run
        member.scoreless = scoreless        # no score at all: nothing was graded, not even a zero
        member.reason_key = reason_key      # its key among publish.FAILURE_REASONS (None: the run says)
        member.reason = reason              # that reason in summary.html's words
        member.reason_rank = reason_rank    # where summary.html lists it (publish.RUN_REASONS rank 10-19)
        member.verdict = verdict            # feedback's first line (None: graded, or the words)
        return member

    GRADED = ("graded", Cli.DONE, "graded", True, False, False, None, None, 0, None)
    COMPILE_ERROR = (
        "compile_error", Cli.COMPILE_ERROR, "did not compile", True, True, False,
        "compile_error", "did not compile", 1,
        Verdict("Score: 0.", "Your code did not compile against the official harness.", "zero"))
    SUBMISSION_ERROR = (
        "submission_error", Cli.SUBMISSION_INVALID, "hand-in rejected", True, True, False,
        "submission_error", "hand-in rejected", 2,
        Verdict("Score: 0.", "Your hand-in could not be used.", "zero"))
    FORBIDDEN = (
        "forbidden", Cli.FORBIDDEN, "uses a library the lab does not allow", True, True, False,
        "forbidden", "uses a forbidden library", 3,
        Verdict("Score: 0.", "Your code uses a library this lab does not allow (it would do the lab's "
                "work for you).", "zero"))
    NOT_RUN = (
        "not_run", Cli.NO_DEVICE, "not run: no CUDA device here (built only, no grade given)",
        False, False, True, "not_run", "not graded: no GPU on the grading machine", 21,
        Verdict("Not graded.", "Your submission compiled, but this machine has no CUDA device, so "
                "nothing was run and no score was given. This says nothing about your code.", "none"))
    NOT_ISOLATED = (
        "not_isolated", Cli.NOT_ISOLATED, "not graded: no sandbox for the student's code here",
        False, False, True, "not_isolated", "not graded: no sandbox on the grading machine", 20,
        Verdict("Not graded.", "This machine cannot run your code in the grader's sandbox, so no grade "
                "was given. This says nothing about your code.", "none"))
    UNKNOWN_LAB = ("unknown_lab", Cli.UNKNOWN_LAB, "unknown lab", False, False, False,
                   "unknown_lab", "unknown lab", 22, None)
    ERROR = (
        "error", Cli.INTERNAL, "grader error (not the student's fault)", False, False, False,
        "grader_error", "grader error (not the student's fault)", 30,
        Verdict("Not graded: the grader failed.", "This is not your fault; your instructor has the "
                "details.", "none"))

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    @property
    def why_ungraded(self) -> str | None:
        """Why a hand-in with this status has no grade, in a few words for a batch's lines and
        summary.html's banner ("no GPU on the grading machine"); None where its score is the grade."""
        if self.is_grade:
            return None
        return (self.reason or self.words).removeprefix("not graded: ")

    @classmethod
    def of(cls, word) -> Status | None:
        """The status a result's "status" says, or None for a word that is no grade status."""
        try:
            return cls(word)
        except ValueError:
            return None

    @classmethod
    def reported(cls, word) -> Status:
        """The status a result gets for an error's status word: ERROR for one that is no
        grade status (a usage error, say)."""
        return cls.of(word) or cls.ERROR


class _Word(str, Enum):
    """A status word inside a grade: equal to its JSON word, written as it."""

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


class CaseStatus(_Word):
    """The checker's verdict on one case of a grade."""
    PASSED = "passed"
    FAILED = "failed"


class RunStatus(_Word):
    """How the student's program ended (a grade's run.status, sandbox.ProcessResult.status):
    the word of each harness exit code (exit_codes.Harness), or CRASHED (a signal) or
    UNEXPECTED_EXIT (a code the harness never uses). `finished` says it ended on its own
    with a verdict; `crashed` that it stopped short of one (a crash, an error or a refusal),
    which summary.html files as "crashed or stopped on a CUDA error"."""

    def __new__(cls, value: str, finished: bool, crashed: bool):
        member = str.__new__(cls, value)
        member._value_ = value
        member.finished = finished
        member.crashed = crashed
        return member

    PASSED = ("passed", True, False)
    FAILED = ("failed", True, False)
    USAGE = ("usage", False, True)
    CUDA_ERROR = ("cuda_error", False, True)
    NO_DEVICE = ("no_device", False, True)
    TIMEOUT = ("timeout", False, False)
    INTERNAL = ("internal", False, True)
    CRASHED = ("crashed", False, True)
    UNEXPECTED_EXIT = ("unexpected_exit", False, True)


class PerformanceStatus(_Word):
    """What became of a grade's performance points: SCORED (timed and scored against the
    reference), ZERO (timed, no points: too slow or the timing's rules broken), SKIPPED (not
    timed: a case failed) or NONE (the lab has no performance points)."""
    SCORED = "scored"
    ZERO = "zero"
    SKIPPED = "skipped"
    NONE = "none"


class SanitizerStatus(_Word):
    """What compute-sanitizer made of a grade: SKIPPED (not run), CLEAN or ERRORS (points off)."""
    SKIPPED = "skipped"
    CLEAN = "clean"
    ERRORS = "errors"


def values(**wanted: bool) -> tuple[str, ...]:
    """The JSON values of the statuses whose attributes are as given, in table order:
    values(is_grade=True) -> ("graded", "compile_error", ...)."""
    return tuple(s.value for s in Status if all(getattr(s, key) == want for key, want in wanted.items()))


def has_grade(result) -> bool:
    """Whether a grade result (cudalab.grade/1, as JSON) holds the student's grade: its status is
    one whose score is the grade (a zero included) and it has a score. Any other result, a grader
    error's zero included, says nothing about the hand-in. (record.GradeResult.has_grade says
    the same of a typed one.)"""
    return (isinstance(result, dict) and Status.reported(result.get("status")).is_grade
            and isinstance(result.get("score"), dict))


GRADE_STATUSES = values(is_grade=True)
REJECTING = values(rejects=True)
WORDS = {s.value: s.words for s in Status}
