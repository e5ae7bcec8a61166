"""Errors that end a verb, each carrying the CLI exit code and the status word it reports."""
from __future__ import annotations

from .exit_codes import Cli
from .status import Status


class CudalabError(Exception):
    """A failure the grader can explain in a sentence. Subclasses fix the exit code."""

    exit_code: Cli = Status.ERROR.exit_code
    status: str = Status.ERROR.value


class UsageError(CudalabError):
    exit_code = Cli.USAGE
    status = "usage"  # no grade status: a grade that stops on it reports Status.ERROR


class UnknownLabError(CudalabError):
    exit_code = Status.UNKNOWN_LAB.exit_code
    status = Status.UNKNOWN_LAB.value


class SubmissionError(CudalabError):
    """The hand-in folder is unusable: missing, a required file missing, a symlink, too big."""

    exit_code = Status.SUBMISSION_ERROR.exit_code
    status = Status.SUBMISSION_ERROR.value


class CompileError(CudalabError):
    """The submission did not compile; `feedback` holds the compiler lines about its files."""

    exit_code = Status.COMPILE_ERROR.exit_code
    status = Status.COMPILE_ERROR.value

    def __init__(self, message: str, feedback: list[str]):
        super().__init__(message)
        self.feedback = feedback


class ForbiddenError(CompileError):
    """The submission uses a library its lab forbids; `feedback` says where, line by line."""

    exit_code = Status.FORBIDDEN.exit_code
    status = Status.FORBIDDEN.value


class NoDeviceError(CudalabError):
    """Nothing could run here; `why` is the device's own reason, without what it means for a grade."""
    exit_code = Status.NOT_RUN.exit_code
    status = Status.NOT_RUN.value

    def __init__(self, message: str, why: str = ""):
        super().__init__(message)
        self.why = why or message


class NotIsolatedError(CudalabError):
    """grade refused: this machine cannot sandbox the student's code (--allow-unisolated)."""

    exit_code = Status.NOT_ISOLATED.exit_code
    status = Status.NOT_ISOLATED.value


class GraderError(CudalabError):
    """The grader, the official build or an instructor binary failed: not the student's fault."""

    exit_code = Status.ERROR.exit_code
    status = Status.ERROR.value
