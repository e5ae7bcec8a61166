"""The jobs' runner and its executors: what runs a try, a grade and a hand-in's checks.

The service never runs a student's code in its own process. The local executor runs
`python -m cudalab run|grade|check` as a subprocess, one job per GPU at a time, so every try
goes through the same sandboxed build, run, trusted checker and paced timing as the commands
themselves; each line it prints is stored (JobLine) as it comes, so that a client streaming
the job sees it at once and a client that reconnects misses nothing. The stand-in executor
runs nothing: it waits a set time and answers from the archive's content, so that the tests
and the deadline rush can drive every outcome on a machine without a GPU.

A job's exit code decides who it counts against: the student's code for 0, 1 and the lab
binary's own codes; the grader's (refunded, never charged) for no device, a grader error, no
sandbox, or a runner killed from outside.
"""
from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from sqlalchemy import func, select

from ..config import Config
from ..exit_codes import Cli
from ..intake import handin
from ..lab import labs
from . import queue
from .store import Job, JobKind, JobLine, JobState, now, upload_path

# What a job may print: beyond these, the rest is cut with a line saying so (the database
# holds every line, so a student's program must not fill it).
MAX_LINES = 4000
MAX_LINE_CHARS = 2000
# The codes that mean the grader, not the student's code, failed: such a try is refunded.
GRADER_FAILURES = frozenset({int(Cli.NO_DEVICE), int(Cli.INTERNAL), int(Cli.NOT_ISOLATED)})


@dataclass
class Order:
    """One job as an executor sees it."""
    job_id: int
    kind: JobKind
    lab: str
    archive: Path
    bench: bool
    scratch: Path


@dataclass
class Outcome:
    exit_code: int | None               # None: the runner itself died (killed, could not start)
    summary: str
    verdict: dict | None = None
    ratio: float | None = None
    noise: float | None = None

    @property
    def grader_failed(self) -> bool:
        return self.exit_code is None or self.exit_code in GRADER_FAILURES or self.exit_code < 0


def summary_for(exit_code: int | None) -> str:
    """One sentence for a finished job, from its exit code."""
    if exit_code == 0:
        return "every case passed"
    if exit_code == 1:
        return "some cases failed: the lines above say which and where"
    if exit_code is None or exit_code < 0:
        return "the grader's process was stopped before it finished; this try did not count"
    if exit_code in GRADER_FAILURES:
        return (f"the grader could not run this job (exit {exit_code}): not a fault of your code, and this try "
                "did not count; try again, or tell the course staff if it keeps happening")
    if exit_code in (int(Cli.SUBMISSION_INVALID), int(Cli.COMPILE_ERROR), int(Cli.FORBIDDEN)):
        return f"your hand-in could not be built or was refused (exit {exit_code}): the lines above say why"
    return f"your program stopped early (exit {exit_code}): the lines above say why"


class Executor:
    """Runs jobs and hand-in checks. `slots` jobs run at once."""
    name = ""
    slots = 1

    def run(self, order: Order, slot: int, emit: Callable[[str], None]) -> Outcome:
        raise NotImplementedError

    def check_hand_in(self, archive: Path, lab: str, scratch: Path) -> dict:
        """The hand-in checks' receipt (the `cudalab check --no-run` receipt's JSON)."""
        raise NotImplementedError

    def start(self) -> None:
        """Before the first job (the runner starts)."""

    def stop(self) -> None:
        """The service is stopping: end what runs elsewhere on its behalf. A run() cut short
        by it raises JobInterrupted, so that its job is run again at the next start."""


class JobInterrupted(Exception):
    """The service stopped while the job ran: the job is left running in the database, and
    the next start queues it again (queue.recover), as after a crash."""


# --- the local executor: this machine's GPUs ------------------------------------------------------

def visible_gpus() -> list[str]:
    """The GPUs this service may use, as CUDA_VISIBLE_DEVICES names them: those it was given
    in CUDA_VISIBLE_DEVICES, else every GPU nvidia-smi lists."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return [d.strip() for d in visible.split(",") if d.strip()]
    try:
        listed = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return []
    count = sum(1 for line in listed.stdout.splitlines() if line.startswith("GPU ")) if listed.returncode == 0 else 0
    return [str(index) for index in range(count)]


class LocalExecutor(Executor):
    """`python -m cudalab run|grade` on this machine, one job per GPU at a time (a job sees
    only its GPU, through CUDA_VISIBLE_DEVICES), on the upload unpacked by the grader's own
    safe reader."""
    name = "local"

    def __init__(self, config: Config | None = None, gpus: list[str] | None = None, time_limit_s: float = 900.0,
                 cudalab: list[str] | None = None):
        self.config = config if config is not None else Config.load()
        self.devices = visible_gpus() if gpus is None else list(gpus)
        self.gpus = len(self.devices)
        self.slots = max(1, self.gpus)
        self.time_limit_s = time_limit_s
        # The grader's command line before its verb: this interpreter's cudalab, unless a
        # test gives a driver that runs the same CLI with its fake build.
        self.cudalab = list(cudalab) if cudalab else [sys.executable, "-m", "cudalab"]

    def _cudalab(self, args: list[str], slot: int | None, emit: Callable[[str], None] | None,
                 cwd: Path) -> tuple[int | None, str]:
        # The child is this very grader, whatever folder it runs in: this package first on its
        # path, and this repository as its root.
        package_parent = str(Path(__file__).resolve().parents[2])
        env = {**os.environ, "CUDALAB_ROOT": str(self.config.root),
               "PYTHONPATH": os.pathsep.join([package_parent, *filter(None, [os.environ.get("PYTHONPATH")])])}
        if slot is not None and self.gpus > 0:
            env["CUDA_VISIBLE_DEVICES"] = self.devices[slot]
        stdout_file = tempfile.TemporaryFile(dir=cwd)
        try:
            process = subprocess.Popen([*self.cudalab, *args], stdout=stdout_file,
                                       stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env, cwd=cwd,
                                       start_new_session=True)
        except OSError as err:
            if emit:
                emit(f"The grader could not be started: {err}.")
            return None, ""
        timer = threading.Timer(self.time_limit_s, lambda: _kill_group(process))
        timer.start()
        try:
            for raw in process.stderr:
                if emit:
                    emit(raw.decode("utf-8", "replace").rstrip("\n"))
            code = process.wait()
        finally:
            timer.cancel()
        stdout_file.seek(0)
        return code, stdout_file.read(16 * 1024 * 1024).decode("utf-8", "replace")

    def run(self, order: Order, slot: int, emit: Callable[[str], None]) -> Outcome:
        folder = unpack(self.config, order, order.scratch / "submission")
        return run_steps(order, commands_for(order, folder, order.scratch / "grade"),
                         lambda command: self._cudalab(command, slot, emit, order.scratch), emit)

    def check_hand_in(self, archive: Path, lab: str, scratch: Path) -> dict:
        code, stdout = self._cudalab(["check", str(archive), "--lab", lab, "--no-run", "--json"], None, None, scratch)
        receipt = _json_or_none(stdout)
        if not isinstance(receipt, dict) or "checks" not in receipt:
            message = (receipt or {}).get("message") if isinstance(receipt, dict) else None
            raise HandInCheckFailed(message or f"the hand-in checks could not run (exit {code})")
        return receipt


def unpack(config: Config, order: Order, folder: Path) -> Path:
    """The upload's accepted files, read by the grader's own safe reader, written to `folder`."""
    spec = labs.load_lab(config, order.lab)
    hand_in = handin.read_hand_in(order.archive, spec, config)
    folder.mkdir(parents=True, exist_ok=True)
    files = {name: entry.data for name, entry in hand_in.files().items()
             if entry.data is not None and name in handin.accepted_names(spec)}
    handin.write_staged(folder, files)
    return folder


# A bench try runs every case first, as `cudalab run` runs them, and is timed (`run --bench`
# runs the bench cases alone) only when they all passed: a ratio on the leaderboard is
# always a fully correct submission's.
BENCH_STEP_LINE = "Every case passed; now the bench cases, timed against the reference on this GPU:"


def commands_for(order: Order, submission: Path, grade_out: Path) -> list[list[str]]:
    """The cudalab command lines (after `cudalab`) a job runs, in order; each runs only when
    the one before it passed."""
    if order.kind == JobKind.GRADE:
        return [["grade", order.lab, str(submission), "--out", str(grade_out), "--json"]]
    cases = ["run", order.lab, str(submission), "--json"]
    return [cases, cases + ["--bench"]] if order.bench else [cases]


def run_steps(order: Order, commands: list[list[str]], run_one: Callable[[list[str]], "tuple[int | None, str] | Outcome"],
              emit: Callable[[str], None]) -> Outcome:
    """Runs a job's commands in turn (run_one: its exit code and standard output, or the
    Outcome of a failure that is the grader's), telling a try's verdicts as lines; the
    outcome is the last command's, with the cases' verdict kept beside a bench run's."""
    verdicts: list[dict | None] = []
    code: int | None = None
    for index, command in enumerate(commands):
        if index:
            emit(BENCH_STEP_LINE)
        ran = run_one(command)
        if isinstance(ran, Outcome):
            return ran
        code, stdout = ran
        verdicts.append(_json_or_none(stdout))
        if order.kind == JobKind.GRADE:
            return Outcome(code, summary_for(code), verdicts[-1])
        for line in verdict_lines(verdicts[-1]):
            emit(line)
        if code != 0:
            break
    verdict = verdicts[0]
    if len(verdicts) == 1:
        return Outcome(code, summary_for(code), verdict)
    bench = verdicts[-1]
    ratio, noise = speed_of(bench) if code == 0 else (None, None)
    return Outcome(code, summary_for(code), {**(verdict or {}), "bench_run": bench}, ratio, noise)


class HandInCheckFailed(Exception):
    """The checks themselves could not run (the grader's failure, not the hand-in's)."""


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, 9)
    except OSError:
        pass


def _json_or_none(text: str) -> dict | None:
    try:
        found = json.loads(text)
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


def verdict_lines(verdict: dict | None) -> list[str]:
    """The verdict of a run, case by case, as lines a student reads."""
    if not verdict:
        return []
    lines = []
    for name, case in (verdict.get("verdicts") or {}).items():
        if not isinstance(case, dict):
            continue
        message = case.get("message") or case.get("first_mismatch") or ""
        lines.append(f"  {name}: {case.get('status', '?')}" + (f" - {message}" if message else ""))
    comparison = verdict.get("calibration") or {}
    for name, ratio in (comparison.get("ratios") or {}).items():
        if isinstance(ratio, (int, float)):
            lines.append(f"  bench {name}: {ratio:.2f}x the reference's time on this GPU")
    if comparison.get("sentence"):
        lines.append(str(comparison["sentence"]))
    return lines


def speed_of(verdict: dict | None) -> tuple[float | None, float | None]:
    """A fully correct bench run's ratio to the reference (geometric mean over its cases) and
    the largest relative spread its timings measured, for the leaderboard."""
    if not verdict:
        return None, None
    ratios = [r for r in ((verdict.get("calibration") or {}).get("ratios") or {}).values()
              if isinstance(r, (int, float)) and r > 0]
    if not ratios:
        return None, None
    spreads = [b.get("spread") for b in ((verdict.get("run") or {}).get("bench") or [])
               if isinstance(b, dict) and isinstance(b.get("spread"), (int, float))]
    ratio = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    return ratio, (max(spreads) if spreads else None)


# --- the stand-in executor: no code runs -----------------------------------------------------------

STANDIN_MARK = re.compile(rb"standin:\s*(passed|failed|grader_error|crash|reject)(?:\s+([0-9.]+))?")
STANDIN_READ_BYTES = 1024 * 1024


def standin_directive(archive: Path) -> tuple[str, float | None]:
    """What a stand-in job does, from the first `standin: OUTCOME [SECONDS]` in the archive's
    files (default: passed, after the executor's delay)."""
    try:
        with tarfile.open(archive, "r:gz") as tar:
            budget = STANDIN_READ_BYTES
            for member in tar:
                if not member.isfile() or budget <= 0:
                    continue
                handle = tar.extractfile(member)
                data = handle.read(min(member.size, budget)) if handle else b""
                budget -= len(data)
                found = STANDIN_MARK.search(data)
                if found:
                    return found.group(1).decode(), float(found.group(2)) if found.group(2) else None
    except (tarfile.TarError, OSError, EOFError):
        return "unreadable", None
    return "passed", None


class StandInExecutor(Executor):
    """For tests and the rush: waits `delay_s` (or the archive's own time) and answers as the
    archive says; `slots` jobs at once."""
    name = "standin"

    def __init__(self, delay_s: float = 0.2, slots: int = 1):
        self.delay_s, self.slots = delay_s, slots

    def run(self, order: Order, slot: int, emit: Callable[[str], None]) -> Outcome:
        outcome, seconds = standin_directive(order.archive)
        emit(f"stand-in executor: {order.kind.value} of {order.lab}, no code is run")
        time.sleep(self.delay_s if seconds is None else seconds)
        if outcome == "passed":
            emit("  case_1: passed")
            ratio = 1.0 + (order.job_id % 7) / 10 if order.bench else None
            return Outcome(0, summary_for(0), {"status": "passed"}, ratio, 0.02 if ratio else None)
        if outcome == "failed":
            emit("  case_1: failed - element 3: expected 1, got 0")
            return Outcome(1, summary_for(1), {"status": "failed"})
        if outcome == "crash":
            emit("  the stand-in's runner was killed")
            return Outcome(None, summary_for(None))
        emit("  the stand-in grader failed")
        return Outcome(int(Cli.INTERNAL), summary_for(int(Cli.INTERNAL)))

    def check_hand_in(self, archive: Path, lab: str, scratch: Path) -> dict:
        outcome, _ = standin_directive(archive)
        accepted = outcome != "reject" and outcome != "unreadable"
        verdict = "passed" if accepted else "failed"
        findings = [] if accepted else [{"check": "files", "severity": "error",
                                         "message": "the stand-in was asked to reject this hand-in"}]
        return {"schema": "cudalab.receipt/1", "lab": lab, "accepted": accepted,
                "checks": [{"name": "archive", "verdict": "passed", "findings": []},
                           {"name": "files", "verdict": verdict, "findings": findings}]}


# --- the runner: workers that take jobs from the queue --------------------------------------------

class Runner:
    """`executor.slots` worker threads: each claims the next job in fair order, runs it, stores
    its lines as they come and its outcome at the end."""

    def __init__(self, sessions, course_folder: Path, executor: Executor, scratch_root: Path):
        self.sessions, self.course_folder, self.executor = sessions, Path(course_folder), executor
        self.scratch_root = Path(scratch_root)
        self.wake = threading.Event()
        self.stopping = threading.Event()
        self.threads: list[threading.Thread] = []

    def start(self) -> None:
        self.executor.start()
        for slot in range(self.executor.slots):
            thread = threading.Thread(target=self._work, args=(slot,), name=f"course-worker-{slot}", daemon=True)
            thread.start()
            self.threads.append(thread)

    def stop(self) -> None:
        self.stopping.set()
        self.wake.set()
        self.executor.stop()

    def _work(self, slot: int) -> None:
        while not self.stopping.is_set():
            job = queue.claim(self.sessions)
            if job is None:
                self.wake.wait(0.5)
                self.wake.clear()
                continue
            self.run_one(job, slot)

    def run_one(self, job: Job, slot: int) -> None:
        scratch = Path(tempfile.mkdtemp(prefix=f"job-{job.id}-", dir=self._scratch()))
        lines = _LineWriter(self.sessions, job.id)
        order = Order(job.id, job.kind, job.lab, upload_path(self.course_folder, job.upload_sha256), job.bench, scratch)
        try:
            outcome = self.executor.run(order, slot, lines.emit)
        except JobInterrupted:
            lines.flush()
            return
        except Exception as err:  # the executor's own failure is the grader's, never the student's
            lines.emit(f"The grader failed while running this job: {err}")
            outcome = Outcome(int(Cli.INTERNAL), summary_for(int(Cli.INTERNAL)))
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        lines.flush()
        with self.sessions() as session:
            stored = session.get(Job, job.id)
            stored.state = JobState.GRADER_FAILED if outcome.grader_failed else JobState.DONE
            stored.charged = stored.charged and not outcome.grader_failed
            stored.exit_code, stored.summary = outcome.exit_code, outcome.summary
            stored.verdict, stored.ratio, stored.noise = outcome.verdict, outcome.ratio, outcome.noise
            stored.finished_at = now()
            session.commit()

    def _scratch(self) -> Path:
        self.scratch_root.mkdir(parents=True, exist_ok=True, mode=0o700)
        return self.scratch_root


class _LineWriter:
    """A job's lines, each committed as it comes (a streaming client sees it at once), cut
    at MAX_LINES."""

    def __init__(self, sessions, job_id: int):
        self.sessions, self.job_id = sessions, job_id
        self.pending: list[str] = []
        with sessions() as session:
            self.seq = session.scalar(select(func.max(JobLine.seq)).where(JobLine.job_id == job_id)) or 0
        self.cut = False

    def emit(self, text: str) -> None:
        if self.seq + len(self.pending) >= MAX_LINES:
            if not self.cut:
                self.pending.append(f"... (more than {MAX_LINES} lines: the rest was not kept)")
                self.cut = True
            return
        self.pending.append(text[:MAX_LINE_CHARS])
        self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        with self.sessions() as session:
            for text in self.pending:
                self.seq += 1
                session.add(JobLine(job_id=self.job_id, seq=self.seq, text=text, at=now()))
            session.commit()
        self.pending.clear()


def standin_slots() -> int:
    """How many stand-in jobs run at once (CUDALAB_STANDIN_SLOTS, for rehearsals; default 1)."""
    text = os.environ.get("CUDALAB_STANDIN_SLOTS", "1")
    return max(1, int(text)) if text.isdigit() else 1
