"""Errors that end a verb, each carrying the CLI exit code and the status word it reports."""
from __future__ import annotations

from .exit_codes import Cli


class CudalabError(Exception):
    """A failure the grader can explain in a sentence. Subclasses fix the exit code."""

    exit_code: Cli = Cli.INTERNAL
    status: str = "error"


class UsageError(CudalabError):
    exit_code = Cli.USAGE
    status = "usage"


class UnknownLabError(CudalabError):
    exit_code = Cli.UNKNOWN_LAB
    status = "unknown_lab"


class SubmissionError(CudalabError):
    """The hand-in folder is unusable: missing, a required file missing, a symlink, too big."""

    exit_code = Cli.SUBMISSION_INVALID
    status = "submission_error"


class CompileError(CudalabError):
    """The submission did not compile; `feedback` holds the compiler lines about its files."""

    exit_code = Cli.COMPILE_ERROR
    status = "compile_error"

    def __init__(self, message: str, feedback: list[str]):
        super().__init__(message)
        self.feedback = feedback


class ForbiddenError(CompileError):
    """The submission uses a library its lab forbids; `feedback` says where, line by line."""

    exit_code = Cli.FORBIDDEN
    status = "forbidden"


class NoDeviceError(CudalabError):
    exit_code = Cli.NO_DEVICE
    status = "not_run"


class NotIsolatedError(CudalabError):
    """grade refused: this machine cannot sandbox the student's code (--allow-unisolated)."""

    exit_code = Cli.NOT_ISOLATED
    status = "not_isolated"


class GraderError(CudalabError):
    """The grader, the official build or an instructor binary failed: not the student's fault."""

    exit_code = Cli.INTERNAL
    status = "error"
