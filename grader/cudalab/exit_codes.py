"""Exit codes: the lab binaries' (mirrored from common/labkit/exit_codes.hpp) and the CLI's.

Each code means one thing. A test parses the C++ header and checks that `Harness` agrees
with it, so the two sides can never drift apart.
"""
from __future__ import annotations

from enum import IntEnum


class Harness(IntEnum):
    """What a lab binary or checker exits with (docs/architecture.md, "Exit codes")."""

    PASSED = 0       # a lab binary: every case ran; a checker: every case passed
    FAILED = 1       # a checker: some output was wrong or missing
    USAGE = 2        # bad command line or bad input file
    CUDA_ERROR = 3   # a CUDA call or kernel launch failed
    NO_DEVICE = 4    # no CUDA device here: nothing ran; never a student failure
    TIMEOUT = 5      # set by the grader when it had to kill the process
    INTERNAL = 6     # the harness or checker itself could not do its job

    @property
    def status(self) -> str:
        """The word the run and verdict JSON use: 'passed', 'cuda_error', ..."""
        return self.name.lower()


class Cli(IntEnum):
    """What `cudalab build|run|grade` exit with."""

    DONE = 0                # finished; for grade: whatever the score
    USAGE = 2               # bad command line
    UNKNOWN_LAB = 20        # no labs/<lab>/lab.toml
    SUBMISSION_INVALID = 21  # folder missing, a required file missing, a symlink, too big
    COMPILE_ERROR = 22      # the submission did not compile against the official harness
    NO_DEVICE = 23          # built only: no CUDA device here, so nothing was run or graded
    INTERNAL = 24           # the grader (or the official build) could not do its job
    NOT_ISOLATED = 25       # grade refused: no sandbox here (--allow-unisolated grades anyway)
    FORBIDDEN = 26          # the submission uses a library its lab forbids
    REJECTED = 27           # check: the hand-in would not be accepted (the receipt says why)
    SERVICE_UNREACHABLE = 28  # submit: no answer from the course service (refused, timed out, not cudalab)
    SERVICE_REFUSED = 29    # submit: the course service said no (token, deadline, try budget)


def harness_status(code: int) -> str | None:
    """The status word for a harness exit code, or None when the harness never uses it."""
    try:
        return Harness(code).status
    except ValueError:
        return None
