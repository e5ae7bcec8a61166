"""The course service's jobs on a Slurm cluster (`cudalab serve --executor slurm`).

Each try and each grade is one Slurm job, submitted through the batch's Slurm adapter
(batching/slurm.py: the same sbatch options, --partition, --gpus-per-task and --sbatch-arg,
the same reading of squeue, scontrol and sacct), that runs `python -m cudalab run|grade`
on the upload as the local executor does: the grader's own safe reader unpacks the upload
into the job's folder under DIR/.slurm (DIR, the course's folder, must be on storage the
nodes share), the job's standard error (the lines a student reads) goes to its Slurm log,
which the service tails and stores line by line as it grows, and its standard output (the
verdict's JSON) to a file of its own.

A job that Slurm ends otherwise than by its command's own exit (cancelled, out of time,
out of memory, its node lost, killed by a signal) is the grader's failure: refunded, with
Slurm's words for it. When the service stops, it cancels its jobs, and the next start
queues them again; a start also cancels the jobs a killed service left behind (their ids
are in their folders). The hand-in checks compile without running anything: they run on
the service's machine, as the local executor runs them, so that a student's upload is
answered at once, without waiting in the cluster's queue.
"""
from __future__ import annotations

import itertools
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable

from .. import console
from ..batching import remote
from ..batching.remote import Array, SchedulerUnavailable, Task
from ..batching.slurm import Slurm, poll_s_from_args, scheduler_from_args
from ..errors import CudalabError
from ..isolation.runner import read_untrusted_bytes
from ..isolation.trees import remove_tree
from .work import (MAX_LINE_CHARS, MAX_LINES, Executor, JobInterrupted, LocalExecutor, Order, Outcome, commands_for,
                   run_steps, unpack)

DEFAULT_SLOTS = 16           # jobs in Slurm at once, without --max-parallel
TIME_LIMIT_S = 900.0         # a job's --time, as the local executor's limit on its process
TAIL_EVERY_S = 0.25          # how often the job's log is read for new lines
JOB_ID_FILE = "slurm-job"    # in a job's folder: its Slurm id, for the next start to cancel
MAX_LOG_BYTES = MAX_LINES * MAX_LINE_CHARS  # past this, a log's lines would not be kept anyway
MAX_VERDICT_BYTES = 16 * 1024 * 1024
UNANSWERED = "UNANSWERED"    # the state of a job given up because Slurm stopped answering about it


class SlurmExecutor(Executor):
    """Tries and grades as Slurm jobs, `slots` at once; hand-in checks here."""
    name = "slurm"

    def __init__(self, scheduler: Slurm, shared: Path, *, slots: int = DEFAULT_SLOTS,
                 poll_s: float = remote.DEFAULT_POLL_S, time_limit_s: float = TIME_LIMIT_S,
                 cudalab: list[str] | None = None):
        self.scheduler, self.shared, self.slots = scheduler, Path(shared), slots
        self.poll_s, self.time_limit_s = poll_s, time_limit_s
        # How a job starts cudalab: this interpreter and package (the tests put a driver here).
        self.cudalab = cudalab or [sys.executable, "-m", "cudalab"]
        self.checks = LocalExecutor(gpus=[], time_limit_s=time_limit_s)
        self.in_flight: dict[int, str] = {}   # the course's job id -> its Slurm job id
        self.lock = threading.Lock()
        self.stopping = threading.Event()

    # --- the service's start and stop ----------------------------------------------------------

    def start(self) -> None:
        """Cancel and remove what a service killed before it could stop left in the shared
        folder: the jobs it ran are queued again by this start."""
        self.scheduler.check_folder(self.shared / "job")
        self.shared.mkdir(parents=True, exist_ok=True, mode=0o700)
        left = [folder for folder in self.shared.iterdir() if folder.is_dir() and not folder.is_symlink()]
        jobs = [job for job in (_read_job_id(folder) for folder in left) if job]
        if jobs:
            self._cancel(jobs, "left running by the service's last run")
        for folder in left:
            remove_tree(folder)

    def stop(self) -> None:
        self.stopping.set()
        with self.lock:
            jobs = list(self.in_flight.values())
        if jobs:
            self._cancel(jobs, "running when the service stopped")

    def _cancel(self, jobs: list[str], why: str) -> None:
        try:
            self.scheduler.cancel(jobs)
        except CudalabError as err:
            console.warn(f"The Slurm jobs {why} could not be cancelled ({err}): cancel them yourself with "
                         f"`{self.scheduler.cancel_command(jobs)}`.")

    # --- one job ---------------------------------------------------------------------------------

    def run(self, order: Order, slot: int, emit: Callable[[str], None]) -> Outcome:
        self.shared.mkdir(parents=True, exist_ok=True, mode=0o700)
        folder = Path(tempfile.mkdtemp(prefix=f"job-{order.job_id}-", dir=self.shared))
        try:
            submission = unpack(self.checks.config, order, folder / "submission")
            steps = itertools.count(1)
            return run_steps(order, commands_for(order, submission, folder / "grade"),
                             lambda command: self._step(order, folder, next(steps), command, emit), emit)
        finally:
            with self.lock:
                self.in_flight.pop(order.job_id, None)
            remove_tree(folder)

    def _step(self, order: Order, folder: Path, step: int, command: list[str],
              emit: Callable[[str], None]) -> "tuple[int | None, str] | Outcome":
        """One command of a job as a Slurm job of its own: its exit code and standard output,
        or the Outcome that Slurm ended it (the grader's failure)."""
        where = folder / f"step-{step}"
        (where / "logs").mkdir(parents=True)
        array = Array(f"cudalab-course-job-{order.job_id}", "gpu", where, 1, self.time_limit_s,
                      command=(*self.cudalab, *command), stdout=where / "verdict.json")
        with self.lock:  # so that stop() cancels every job submitted before it
            if self.stopping.is_set():
                raise JobInterrupted()
            job = self.scheduler.submit(array)
            self.in_flight[order.job_id] = job
        (folder / JOB_ID_FILE).write_text(job + "\n", encoding="utf-8")
        self.scheduler.release(job)
        emit(f"Slurm job {job} submitted ({order.kind.value} of {order.lab}); its lines follow once it runs.")
        ended = self._follow(job, array.log(0), emit)
        if self.stopping.is_set():
            raise JobInterrupted()
        code = exit_code_of(ended)
        if code is None:
            return self._grader_failed(job, ended, emit)
        return code, _read_bounded(array.stdout, MAX_VERDICT_BYTES)

    def _follow(self, job: str, log: Path, emit: Callable[[str], None]) -> Task | None:
        """The job's log, line by line as it grows, until Slurm says the job ended (or the
        service stops); how it ended, where Slurm can say."""
        tail = LogTail(log)
        next_ask, unreachable_since, last = 0.0, None, None
        while not self.stopping.is_set():
            for line in tail.lines():
                emit(line)
            if time.monotonic() >= next_ask:
                next_ask = time.monotonic() + self.poll_s
                try:
                    last = self.scheduler.tasks([job]).get((job, 0))
                    unreachable_since = None
                except SchedulerUnavailable as err:
                    unreachable_since = unreachable_since or time.monotonic()
                    if time.monotonic() - unreachable_since > remote.UNREACHABLE_LIMIT_S:
                        self._cancel([job], "that Slurm stopped answering about")
                        return Task(UNANSWERED, remote.ENDED, f"{err}")
                    continue
                if last is None or not last.alive:
                    break
            self.stopping.wait(TAIL_EVERY_S)
        else:
            return None
        ended = self.scheduler.details(job, 0) or (last if last is not None and not last.alive else None)
        if ended is not None and ended.phase == remote.COMPLETED:
            # Shared storage may show the end of what a node wrote a little later than Slurm says it ended.
            tail.wait_for_writes(remote.RECORD_LAG_S if not tail.seen_any else 1.0)
        for line in tail.lines(final=True):
            emit(line)
        return ended

    def _grader_failed(self, job: str, ended: Task | None, emit: Callable[[str], None]) -> Outcome:
        if ended is None:
            words = f"ended, and {self.scheduler.forgotten()}"
        elif ended.state == UNANSWERED:
            words = (f"was cancelled: Slurm did not answer about it for {remote.UNREACHABLE_LIMIT_S:.0f} s "
                     f"({ended.reason})")
        else:
            said = self.scheduler.ending(ended)
            words = said[0] if said else f"ended {ended.state}" + (f" ({ended.reason})" if ended.reason else "")
        emit(f"Slurm job {job} {words}: not a fault of your code, and this try did not count.")
        return Outcome(None, f"the cluster's job {words}: not a fault of your code, and this try did not count; "
                             "try again, or tell the course staff if it keeps happening")

    def check_hand_in(self, archive: Path, lab: str, scratch: Path) -> dict:
        return self.checks.check_hand_in(archive, lab, scratch)


def exit_code_of(ended: Task | None) -> int | None:
    """The job's command's own exit code where it ended by itself (COMPLETED, or FAILED with
    a code and no signal); None where Slurm or a signal ended it, or nobody can say."""
    if ended is None:
        return None
    if ended.phase == remote.COMPLETED:
        return 0
    code, _, signal = ended.exit_code.partition(":")
    if ended.state == "FAILED" and code.isdigit() and int(code) > 0 and signal in ("", "0"):
        return int(code)
    return None


class LogTail:
    """A job's log as it grows: its new complete lines at each call, bounded (a line past
    MAX_LINE_CHARS is cut, and nothing past MAX_LOG_BYTES is read). Opened without following
    a link, as what the job writes is read here."""

    def __init__(self, path: Path):
        self.path, self.offset, self.partial = path, 0, b""
        self.seen_any, self.cut = False, False

    def lines(self, final: bool = False) -> list[str]:
        data = self._read_new()
        self.partial += data
        found = self.partial.split(b"\n")
        self.partial = found.pop()
        if len(self.partial) > MAX_LINE_CHARS * 4:
            found.append(self.partial)
            self.partial = b""
        if final and self.partial:
            found.append(self.partial)
            self.partial = b""
        text = [raw.decode("utf-8", "replace").rstrip("\r")[:MAX_LINE_CHARS] for raw in found]
        if self.offset >= MAX_LOG_BYTES and not self.cut:
            self.cut = True
            text.append(f"... (the job's output passed {MAX_LOG_BYTES // (1024 * 1024)} MiB: the rest was not read)")
        return text

    def _read_new(self) -> bytes:
        if self.offset >= MAX_LOG_BYTES:
            return b""
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            return b""  # not there yet: the job has not started
        try:
            os.lseek(fd, self.offset, os.SEEK_SET)
            data = os.read(fd, MAX_LOG_BYTES - self.offset)
        except OSError:
            return b""
        finally:
            os.close(fd)
        self.offset += len(data)
        self.seen_any = self.seen_any or bool(data)
        return data

    def wait_for_writes(self, seconds: float) -> None:
        """Until the log has stopped growing for a moment, at most `seconds`."""
        deadline, size = time.monotonic() + seconds, -1
        while time.monotonic() < deadline:
            try:
                now_size = os.stat(self.path, follow_symlinks=False).st_size
            except OSError:
                now_size = -1
            if now_size == size and now_size >= 0:
                return
            size = now_size
            time.sleep(0.2)


def _read_job_id(folder: Path) -> str | None:
    text = _read_bounded(folder / JOB_ID_FILE, 64).strip()
    return text if text.isdigit() else None


def _read_bounded(path: Path | None, limit: int) -> str:
    """At most `limit` bytes of a file the job wrote, as text ("" where there is none)."""
    data = read_untrusted_bytes(path, limit) if path is not None else None
    return (data or b"").decode("utf-8", "replace")


def from_args(args, course_folder: Path) -> SlurmExecutor:
    """The executor that serve's Slurm options ask for (batching/slurm.py's, as batch takes
    them): --max-parallel is how many jobs it has in Slurm at once."""
    scheduler = scheduler_from_args(args, throttle=False)
    return SlurmExecutor(scheduler, remote.remote_dir(course_folder, scheduler),
                         slots=args.max_parallel or DEFAULT_SLOTS, poll_s=poll_s_from_args(args))
