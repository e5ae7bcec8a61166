"""Which CPUs the grader's helper work uses: builds and checkers run on the work CPUs, and
the rest (config.timing_cpus) are left to timing, so that a kept sample's check or a
classmate's build never competes for a core with a timed program and the grader's thread
that times it. A program's CPUs are set by the thread that starts it (Linux gives a new
process its starting thread's affinity), so nothing inside the sandbox needs to know."""
from __future__ import annotations

import contextlib
import functools
import os

from ..config import Config


@functools.cache
def usable() -> frozenset[int]:
    """The CPUs this process may use, as it started (before any thread narrowed its own)."""
    try:
        return frozenset(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return frozenset(range(os.cpu_count() or 1))


def reserved_count(config: Config, cpus: int) -> int:
    if config.timing_cpus >= 0:
        return min(config.timing_cpus, cpus - 1)  # one CPU at least stays for the work
    # A round's five busy processes (three spinning programs, the auditor, the grader's
    # clock) want a CPU each where the machine has them to spare.
    return 3 * cpus // 8 if cpus >= 8 else 0


def work_cpus(config: Config) -> frozenset[int] | None:
    """The CPUs for builds and checkers (the lowest-numbered ones), or None: all of them."""
    cpus = sorted(usable())
    keep = reserved_count(config, len(cpus))
    return frozenset(cpus[:len(cpus) - keep]) if keep > 0 else None


def timing_cpus(config: Config) -> frozenset[int] | None:
    """The CPUs left to timing (the highest-numbered ones), or None: all of them."""
    work = work_cpus(config)
    return None if work is None else usable() - work


def checks_at_once(config: Config, wanted: int) -> int:
    """How many of `wanted` checks (kept samples', each a sandbox of the checker) run at once:
    at most one a work CPU. More would only queue for those CPUs, and every sandbox's
    processes count against one limit where no cgroup limits processes (RLIMIT_NPROC of the
    sandbox's user, which 72 checkers started at once exceeded on an H100 host)."""
    work = work_cpus(config)
    return max(1, min(wanted, len(work if work is not None else usable())))


def keep_to_work_cpus(config: Config) -> None:
    """The calling thread, and every thread and program it starts from now on, on the work
    CPUs: the grader's own threads (a batch's builders and graders, the checks of kept
    samples) never take a CPU from the timed programs. Only a block under on_timing_cpus
    starts programs on the CPUs left to timing."""
    cpus = work_cpus(config)
    if cpus is not None:
        try:
            os.sched_setaffinity(0, cpus)
        except OSError:
            pass  # not allowed here: everything shares every CPU, as without a reservation


@contextlib.contextmanager
def on_work_cpus(config: Config):
    """Programs started by this thread inside the block run on the work CPUs only."""
    with _on(work_cpus(config)):
        yield


@contextlib.contextmanager
def on_timing_cpus(config: Config):
    """Programs started by this thread inside the block run on the CPUs left to timing only:
    the auditor, the programs it times and the grader's clock, away from builds and checks."""
    with _on(timing_cpus(config)):
        yield


@contextlib.contextmanager
def _on(cpus: frozenset[int] | None):
    if cpus is None:
        yield
        return
    before = os.sched_getaffinity(0)  # this thread's own (Linux: pid 0 is the calling thread)
    try:
        os.sched_setaffinity(0, cpus)
    except OSError:
        yield  # not allowed here: the programs share every CPU, as without a reservation
        return
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)
