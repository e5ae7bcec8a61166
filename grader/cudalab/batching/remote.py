"""A class graded by a cluster's scheduler: the protocol every scheduler shares, driven
through an adapter of a few operations (Scheduler; slurm.Slurm is Slurm's).

The protocol (two job arrays a hand-in, the hand-off between them, following, and taking
up jobs again after a crash) and why it is so are in docs/architecture.md, "On a cluster".
"""
from __future__ import annotations

import dataclasses
import json
import os
import platform
import secrets
import time
from abc import ABC, abstractmethod
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from . import batch
from ..building import build
from .. import console
from ..grading import grade
from ..lab import labs
from ..outputs import report
from ..isolation import safe_files
from ..config import Config
from ..errors import CudalabError, UsageError
from .executor import Executor
from ..isolation.runner import hand_over, scratch_dir
from ..isolation.sandbox import scratch_root
from ..isolation.trees import remove_tree

LEDGER_FILE = "submissions.json"
TASKS_FILE = "tasks.json"
STEPS = ("build", "gpu")
STEP_WORDS = {"build": "build", "gpu": "GPU"}

DEFAULT_POLL_S = 5.0
RECORD_LAG_S = 30.0        # how long a record may take to show after its task ended (shared storage caches)
UNREACHABLE_LIMIT_S = 600.0  # how long the scheduler may fail to answer in a row before the head gives up following
PHASE_EVERY_S = 15.0       # the queue's state is said at most this often
RETIRE_WAIT_S = 10.0       # how long the head waits for the tasks it cancelled to leave the queue

# Where a task stands, in the protocol's words (a scheduler's own states map onto these).
QUEUED = "queued"          # waiting to start (for resources, its dependency, a hold)
RUNNING = "running"
BUSY = "busy"              # alive otherwise: suspended, completing, requeued, ...
COMPLETED = "completed"    # ended, successfully
ENDED = "ended"            # ended otherwise: cancelled, failed, out of time, ...
ALIVE = frozenset({QUEUED, RUNNING, BUSY})


class SchedulerUnavailable(CudalabError):
    """The scheduler could not answer now (its controller is busy or unreachable)."""


@dataclass(frozen=True)
class Task:
    """One array task as the scheduler reports it."""
    state: str                 # the scheduler's own word for it (RUNNING, CANCELLED, ...), as said to the user
    phase: str                 # what it means to the protocol: QUEUED, RUNNING, BUSY, COMPLETED or ENDED
    reason: str = ""           # why it waits or ended, where the scheduler says
    node: str = ""
    exit_code: str = ""        # "code:signal", where the scheduler said it

    @property
    def alive(self) -> bool:
        return self.phase in ALIVE


@dataclass(frozen=True)
class Array:
    """A job array to submit: task i (0 <= i < count) runs `step` for hand-in i of the
    submission whose files are in `folder`, and writes its output to log(i).

    With `command`, each task runs that command instead (the course service's one-task
    jobs: `cudalab run` or `cudalab grade` on one upload), its standard output to `stdout`
    and its standard error to log(i)."""
    name: str                  # the job's name, by which find() finds it again
    step: str                  # "build" (CPU only) or "gpu" (one or more GPUs a task)
    folder: Path
    count: int
    time_limit_s: float
    after: str | None = None   # task i starts only once task i of this array has completed
    command: tuple[str, ...] = ()
    stdout: Path | None = None

    def log(self, index: int) -> Path:
        return self.folder / "logs" / f"{self.step}-{index}.log"

    @property
    def words(self) -> str:
        return STEP_WORDS[self.step]


class Scheduler(ABC):
    """A cluster's scheduler as the protocol uses it: job arrays, submitted held, released,
    asked about, cancelled. An adapter implements the operations and names the few words
    that its sentences need; RemoteExecutor does everything else."""

    name = ""                  # in sentences: "Slurm"
    key = ""                   # in files: DIR/.<key>/, a result's provenance.<key>, `--executor <key>`
    index_variable = ""        # the environment variable that tells a task its array index
    job_variable = ""          # ... its array's job id
    node_variable = ""         # ... its node's name
    status_command = ""        # how the head asks about its tasks, in sentences: "squeue"
    list_command = ""          # how a user lists their jobs: "squeue --me"
    routine_reasons: frozenset = frozenset({""})  # why a task waits, when that is not worth saying

    @abstractmethod
    def submit(self, array: Array) -> str:
        """Submit `array`, held until release(); its task i runs run_task (through task_main,
        where the task is a process of its own) for hand-in i. Returns the array's job id;
        UsageError, in a sentence, when the scheduler refuses it."""

    @abstractmethod
    def release(self, job: str) -> None:
        """Let a held array run (UsageError when it cannot)."""

    @abstractmethod
    def tasks(self, jobs: list[str]) -> dict[tuple[str, int], Task]:
        """Every task of these arrays that the scheduler still knows, by (job id, index);
        SchedulerUnavailable when it cannot answer now."""

    @abstractmethod
    def details(self, job: str, index: int) -> Task | None:
        """How one task ended, with its exit code and reason; None when the scheduler cannot say."""

    @abstractmethod
    def cancel(self, jobs: list[str], index: int | None = None) -> None:
        """Cancel these arrays (or only their task `index`), quietly: an end is not an error."""

    @abstractmethod
    def find(self, name: str) -> str | None:
        """The id of the job named `name`, while the scheduler knows it."""

    def check_folder(self, folder: Path) -> None:
        """UsageError, before anything is written there, when a submission's files cannot be
        in `folder` on this scheduler (a path its job options would misread)."""

    def task_name(self, job: str, index: int) -> str:
        return f"{job}_{index}"

    def cancel_command(self, jobs: list[str]) -> str:
        """The command a user runs to cancel these jobs, for sentences."""
        return f"cancel {' '.join(jobs)}"

    def ending(self, task: Task) -> tuple[str, str] | None:
        """How an ended task's end is told ('was cancelled', 'ran past its time limit') and
        what to do about it (or ''); None for an end it has no words for."""
        return None

    def forgotten(self) -> str:
        """Why the scheduler no longer says how a task ended."""
        return f"{self.name} no longer says how"


# --- what a submission leaves in the results folder -----------------------------------------

def remote_dir(out: Path, scheduler) -> Path:
    return out / f".{scheduler.key}"


def submission_folder(out: Path, scheduler, token: str) -> Path:
    """A submission's files: tasks.json, the job scripts, logs/, pending/, work/."""
    return remote_dir(out, scheduler) / token


def job_name(token: str, step: str) -> str:
    return f"cudalab-{step}-{token}"


@dataclass
class Submission:
    """One submission of hand-ins: its two arrays, task i of each being keys[i]."""
    token: str
    keys: list[str]
    submitted_at: float
    build_job: str | None = None
    gpu_job: str | None = None
    released: bool = False

    def jobs(self) -> list[str]:
        return [job for job in (self.build_job, self.gpu_job) if job]

    def job_of(self, step: str) -> str | None:
        return self.build_job if step == "build" else self.gpu_job


class Ledger:
    """DIR/.<scheduler>/submissions.json: every submission of this results folder that may
    still have tasks on the scheduler. Only the head writes it (under the batch's lock),
    atomically, before and after each step of a submission, so that a head killed at any
    point leaves what the next run needs to find its jobs."""

    def __init__(self, out: Path, scheduler):
        self.scheduler = scheduler
        self.folder = remote_dir(out, scheduler)
        self.path = self.folder / LEDGER_FILE
        self.submissions = self._load()

    def _load(self) -> list[Submission]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            return [Submission(**entry) for entry in data["submissions"]]
        except FileNotFoundError:
            return []
        except (OSError, ValueError, KeyError, TypeError) as err:
            why = (f"{self.path} is unreadable ({err}). If this batch still has jobs on {self.scheduler.name} "
                   f"(`{self.scheduler.list_command}` lists them as cudalab-build-... and cudalab-gpu-...), "
                   "cancel them; then delete the file and run again.")
            raise UsageError(why) from None

    def save(self) -> None:
        body = {"schema": f"cudalab.{self.scheduler.key}-submissions/1",
                "submissions": [dataclasses.asdict(s) for s in self.submissions]}
        report.atomic_write_text(self.path, json.dumps(body, indent=2) + "\n")

    def add(self, submission: Submission) -> None:
        self.submissions.append(submission)
        self.save()

    def remove(self, submission: Submission) -> None:
        self.submissions = [s for s in self.submissions if s.token != submission.token]
        self.save()

    def submission_folder(self, token: str) -> Path:
        return self.folder / token


def recorded_jobs(out: Path, scheduler) -> list[str]:
    """The job ids an earlier run with this scheduler recorded in this results folder and
    did not see end."""
    try:
        return [job for submission in Ledger(out, scheduler).submissions for job in submission.jobs()]
    except UsageError:
        return []


def config_to_json(config: Config) -> dict:
    return {f.name: str(value) if isinstance(value := getattr(config, f.name), Path) else value
            for f in dataclasses.fields(config)}


def config_from_json(data: dict) -> Config:
    values = {}
    for f in dataclasses.fields(Config):
        if f.name in data:
            value = data[f.name]
            values[f.name] = Path(value) if f.type in ("Path", Path) and value is not None else value
    return Config(**values)


@dataclass
class Tasks:
    """A submission's tasks.json, as a task reads it: what to grade, and how."""
    folder: Path
    submission: str
    lab: str
    out: Path
    submitted_at: float
    allow_unisolated: bool
    config: Config
    jobs: list[batch.Job]

    @staticmethod
    def schema(scheduler) -> str:
        return f"cudalab.{scheduler.key}-tasks/1"

    @classmethod
    def load(cls, folder: Path, scheduler) -> "Tasks":
        path = folder / TASKS_FILE
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if data.get("schema") != cls.schema(scheduler):
                raise ValueError(f"its schema is {data.get('schema')!r}, not {cls.schema(scheduler)}")
            jobs = [batch.Job.from_json(j) for j in data["jobs"]]
            return cls(folder, data["submission"], data["lab"], Path(data["out"]), float(data["submitted_at"]),
                       bool(data["allow_unisolated"]), config_from_json(data["config"]), jobs)
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise CudalabError(f"{path} is unreadable ({err}): this task cannot know what to grade. Is "
                               f"{folder} on storage this node shares with the node that submitted it?") from None


# --- the tasks (python -m cudalab.<scheduler> build|gpu FOLDER) -------------------------------

@dataclass(frozen=True)
class Where:
    """Where a task runs, as its scheduler tells it: for the result's provenance."""
    scheduler: object          # the Scheduler (class or instance): its key names the provenance
    job: str                   # the array's job id
    node: str


def _step_info(where: Where, index: int, started: float, waiting_since: float) -> dict:
    """Where and when a task ran, for the result's provenance.<scheduler>."""
    return {"job": f"{where.job}_{index}", "node": where.node,
            "started_at": report.timestamp(started), "queued_s": round(max(0.0, started - waiting_since), 2),
            "wall_s": round(time.time() - started, 2)}


def _stamp(result: dict, tasks: Tasks, where: Where, step: str, info: dict) -> None:
    steps = result["provenance"].setdefault(where.scheduler.key, {"submission": tasks.submission})
    steps[step] = info


def _pending_path(tasks: Tasks, key: str) -> Path:
    return tasks.folder / "pending" / f"{key}.json"


def build_task(tasks: Tasks, index: int, started: float, where: Where) -> int:
    """Stage and build hand-in `index`; finish and commit it here when it needs no GPU, else
    leave its grade.Handoff for the GPU task."""
    job = tasks.jobs[index]
    config = tasks.config
    spec = labs.load_lab(config, tasks.lab)
    store = batch.Store(tasks.out)
    pending, handin_folder = batch.begin_job(config, spec, job, scratch_root(config), tasks.allow_unisolated)
    remove_tree(handin_folder)  # the build staged what it needs
    if pending.error is not None or pending.binary is None:
        result = grade.finish(pending, attachments_to=store.student_dir(job))
        _stamp(result, tasks, where, "build", _step_info(where, index, started, tasks.submitted_at))
        store.commit(job, result)
        print(f"task {index} ({job.key}): {result['status']}, committed; no GPU step is needed", flush=True)
        return 0
    _stamp(pending.result, tasks, where, "build", _step_info(where, index, started, tasks.submitted_at))
    hand_over(pending.tmp)  # the GPU task copies it after this task has ended
    handoff = grade.Handoff.of(pending, job.key)
    report.atomic_write_text(_pending_path(tasks, job.key), json.dumps(handoff.to_json()) + "\n")
    print(f"task {index} ({job.key}): built; its GPU task grades it", flush=True)
    return 0


def steps_of(result: dict | None, scheduler) -> dict:
    """A result's provenance.<scheduler>: the submission that graded it, and where each step ran."""
    return ((result or {}).get("provenance") or {}).get(scheduler.key) or {}


def _graded_by_build(store: batch.Store, tasks: Tasks, key: str, scheduler) -> bool:
    steps = steps_of((store.record(key) or {}).get("result"), scheduler)
    return steps.get("submission") == tasks.submission and "build" in steps


def _on_this_node(config: Config, handoff: grade.Handoff) -> tuple[Config, Path, Path]:
    """The build (the grade's scratch folder, binary included) copied from the shared results
    folder to this node's own temporary folder, where the GPU step's runs then write their
    output dumps (hundreds of MB a grade, better kept off shared storage): the configuration
    that puts the grade's other folders there too, the binary and the folder.

    The shared folder must be one of the batch's own private grade folders (in its checked
    scratch root), and is copied without following a link at any component; the node's copy
    goes to this process's own temporary folder, never to a fixed name another user of the
    node could have made first."""
    shared = handoff.tmp
    shared_root = scratch_root(config)
    problem = safe_files.folder_problem(shared) if shared.parent == shared_root else f"is not a folder of {shared_root}"
    if problem:
        raise CudalabError(f"The build's folder {shared} {problem}, so the GPU task does not trust it; grade the "
                           "hand-in again.")
    passable = os.geteuid() == 0  # root's runs are another uid's, which must pass through
    node_work = safe_files.private_folder(safe_files.process_temp_root(passable=passable, keep=config.keep_temp)
                                          / "work", "work folder", passable=passable)
    config = dataclasses.replace(config, work_dir=node_work)
    local = scratch_dir(config, "grade")
    os.rmdir(local)  # copy_tree makes it, from nothing
    try:
        safe_files.copy_tree(shared, local)
    except safe_files.NotPlainError as err:
        raise CudalabError(f"The build's folder {shared} cannot be copied to this node: {err.why}.") from None
    if passable:
        local.chmod(0o711)
    return config, local / handoff.binary.relative_to(shared), local


def gpu_task(tasks: Tasks, index: int, started: float, where: Where) -> int:
    """Grade hand-in `index` on the GPU the scheduler gave this task, from its build's hand-off."""
    job = tasks.jobs[index]
    store = batch.Store(tasks.out)
    path = _pending_path(tasks, job.key)
    try:
        handoff = grade.Handoff.from_json(json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        if _graded_by_build(store, tasks, job.key, where.scheduler):
            print(f"task {index} ({job.key}): graded by its build task; nothing to run", flush=True)
            return 0
        raise CudalabError(f"{path} is missing: build task {index} did not leave this hand-in's build, "
                           "so there is nothing to grade.") from None
    except (OSError, ValueError) as err:
        raise CudalabError(f"{path} is unreadable ({err}); grade the hand-in again.") from None
    device = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    config, binary, tmp = _on_this_node(dataclasses.replace(tasks.config, gpu_device=device), handoff)
    spec = labs.load_lab(config, tasks.lab)
    result = grade.finish(handoff.pending(config, spec, binary, tmp), attachments_to=store.student_dir(job))
    _stamp(result, tasks, where, "gpu", _step_info(where, index, started, handoff.built_at))
    store.commit(job, result)
    path.unlink(missing_ok=True)
    remove_tree(handoff.tmp)
    print(f"task {index} ({job.key}): {result['status']}, committed", flush=True)
    return 0


def run_task(scheduler, step: str, folder: Path, index: int, where: Where, started: float | None = None) -> int:
    """One array task, once its scheduler has said which: step `step` of hand-in `index`
    of the submission in `folder`. CudalabError when it cannot grade."""
    started = time.time() if started is None else started
    tasks = Tasks.load(folder, scheduler)
    if index >= len(tasks.jobs):
        raise CudalabError(f"array task {index} has no hand-in: {TASKS_FILE} lists {len(tasks.jobs)}.")
    return (build_task if step == "build" else gpu_task)(tasks, index, started, where)


def task_main(scheduler, argv: list[str], environ=os.environ) -> int:
    """One array task as a scheduler's job script runs it: `python -m
    cudalab.<scheduler> build|gpu FOLDER`, its index in the scheduler's environment variable."""
    started = time.time()
    executor = f"`cudalab batch --executor {scheduler.key}`"
    if len(argv) != 2 or argv[0] not in STEPS:
        console.error(f"usage: python -m cudalab.{scheduler.key} build|gpu FOLDER (run by the job scripts of "
                      f"{executor}, one array task per hand-in)")
        return 2
    index_text = environ.get(scheduler.index_variable, "")
    if not index_text.isdigit():
        console.error(f"{scheduler.index_variable} is not set: this runs as one task of the job arrays that "
                      f"{executor} submits, not by hand.")
        return 2
    where = Where(scheduler, environ.get(scheduler.job_variable, "?"),
                  environ.get(scheduler.node_variable) or platform.node())
    try:
        return run_task(scheduler, argv[0], Path(argv[1]), int(index_text), where, started)
    except CudalabError as err:
        console.error(str(err))
        return 1


# --- the head: submitting and following -----------------------------------------------------

@dataclass
class Watch:
    """One hand-in the head follows: its tasks are index `index` of its submission's arrays."""
    job: batch.Job
    submission: Submission
    index: int
    record_seen: tuple | None = None          # the record file's identity when last read
    reported: set = field(default_factory=set)  # the steps whose start was reported
    suspect: tuple | None = None              # (what ended, when first seen): believed when seen again

    def task(self, live: dict, step: str) -> Task | None:
        job = self.submission.job_of(step)
        return live.get((job, self.index)) if job else None


def _identity(path: Path) -> tuple | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)


class RemoteExecutor(Executor):
    """A batch as two job arrays of a cluster's scheduler (see the module's docstring). A
    scheduler's executor subclasses it with its name, options, add_arguments and from_args,
    and hands it its Scheduler adapter."""

    def __init__(self, config: Config, scheduler: Scheduler, poll_s: float = DEFAULT_POLL_S):
        super().__init__()
        self.config, self.scheduler = config, scheduler
        self.poll_s = poll_s
        self._said = ("", 0.0)  # the last queue state said, and when

    def run(self, plan, reporter) -> None:
        if not plan.todo:
            return
        reporter.phase("bringing the official build up to date")
        try:
            build.ensure_official(self.config, plan.spec)
        except CudalabError:
            pass  # each grade reports it in its own result
        ledger = Ledger(plan.store.out, self.scheduler)
        watches = self._attach(plan, ledger, reporter)
        following = {w.job.key for w in watches}
        rest = [job for job in plan.todo if job.key not in following]
        if rest:
            watches += self._submit(plan, ledger, rest, reporter)
        try:
            self._follow(plan, reporter, watches)
        except KeyboardInterrupt:
            jobs = sorted({j for w in watches for j in w.submission.jobs()})
            reporter.phase(f"stopped following; the {self.scheduler.name} jobs ({' '.join(jobs)}) run on: run the "
                           "same command again to collect their grades, or cancel them with "
                           f"`{self.scheduler.cancel_command(jobs)}`")
            raise
        self._retire(plan, ledger, {w.submission.token: w.submission for w in watches}.values())

    # -- submitting ------------------------------------------------------------------------
    def _submit(self, plan, ledger: Ledger, jobs: list, reporter) -> list[Watch]:
        """Both arrays for `jobs`, held until both ids are in the ledger."""
        token = f"{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"
        submission = Submission(token, [job.key for job in jobs], time.time())
        folder = ledger.submission_folder(token)
        self.scheduler.check_folder(folder)
        self._write_tasks(plan, submission, jobs, folder)
        watches = [Watch(job, submission, i) for i, job in enumerate(jobs)]
        ledger.add(submission)
        reporter.phase(f"submitting {len(jobs)} hand-ins to {self.scheduler.name}: a build array, then a GPU array")
        try:
            submission.build_job = self.scheduler.submit(self._array(plan.spec, submission, "build", folder))
            ledger.save()
            submission.gpu_job = self.scheduler.submit(self._array(plan.spec, submission, "gpu", folder))
            ledger.save()
        except CudalabError:
            self.scheduler.cancel(submission.jobs())  # held: nothing of it ran
            ledger.remove(submission)
            remove_tree(folder)
            raise
        self._release(ledger, submission)
        reporter.phase(f"submitted: build array {submission.build_job}, GPU array {submission.gpu_job} "
                       f"({len(jobs)} tasks each); following them with {self.scheduler.status_command} every "
                       f"{self.poll_s:g} s")
        return watches

    def _write_tasks(self, plan, submission: Submission, jobs: list, folder: Path) -> None:
        """tasks.json; the tasks' scratch is in `folder`, on the shared results folder."""
        for part in ("logs", "pending", "work"):
            (folder / part).mkdir(parents=True, exist_ok=True)
        config = dataclasses.replace(self.config, work_dir=folder / "work", gpu_device="")
        if scratch_root(config) != config.temp_dir:
            remove_tree(folder)
            raise UsageError(f"The sandbox user (uid {config.sandbox_uid}) cannot reach {plan.store.out}, where "
                             f"the {self.scheduler.name} tasks build and run the hand-ins (a hand-in's build and "
                             "GPU tasks may run on different nodes, so its files must be in the shared results "
                             "folder). Let others search the results folder and the folders above it (chmod o+x), "
                             "or grade as a user other than root.")
        tasks = {"schema": Tasks.schema(self.scheduler), "submission": submission.token, "lab": plan.spec.name,
                 "out": str(plan.store.out), "submitted_at": submission.submitted_at,
                 "allow_unisolated": plan.allow_unisolated, "config": config_to_json(config),
                 "jobs": [job.to_json() for job in jobs]}
        report.atomic_write_text(folder / TASKS_FILE, json.dumps(tasks, indent=2) + "\n")

    def _release(self, ledger: Ledger, submission: Submission) -> None:
        """Let both arrays run, the build array first: a scheduler commonly gives a released
        job the priority of a new one, so the builds then come before the GPU tasks, and a
        GPU task waiting for a GPU does not hold back the builds behind it."""
        for job in submission.jobs():
            try:
                self.scheduler.release(job)
            except UsageError as err:
                jobs = submission.jobs()
                hint = (f" The batch's two arrays ({' '.join(jobs)}) are submitted and held: run the same command "
                        f"again to release and follow them, or cancel them ({self.scheduler.cancel_command(jobs)}).")
                raise UsageError(f"{err}{hint}") from None
        submission.released = True
        ledger.save()

    def _array(self, spec, submission: Submission, step: str, folder: Path) -> Array:
        return Array(job_name(submission.token, step), step, folder, len(submission.keys),
                     self._time_needed_s(spec, step), submission.build_job if step == "gpu" else None)

    def _time_needed_s(self, spec, step: str) -> float:
        """A task's time limit: the longest its grade's own limits allow, and a margin."""
        config = self.config
        if step == "build":
            return config.build_timeout_s + 600
        runs = 2 + 2 * spec.scoring.rounds(config.timing_rounds)  # the probe, the correctness run, two per timing round
        longest_run_s = max(config.process_timeout_s, spec.scoring.time_limit_s)
        return longest_run_s * runs + 4 * config.sanitizer_timeout_s + 600

    # -- attaching to what an earlier run submitted -------------------------------------------
    def _attach(self, plan, ledger: Ledger, reporter) -> list[Watch]:
        """Follow the hand-ins to grade whose tasks an earlier run submitted and the
        scheduler still queues or runs; forget the submissions that have nothing alive."""
        if not ledger.submissions:
            return []
        reporter.phase(f"looking for this batch's jobs already on {self.scheduler.name}")
        for submission in list(ledger.submissions):
            if not submission.released:
                self._finish_submitting(ledger, submission)
        live = self.scheduler.tasks(sorted({j for s in ledger.submissions for j in s.jobs()}))
        todo = {job.key: job for job in plan.todo}
        watches: list[Watch] = []
        for submission in reversed(list(ledger.submissions)):  # the newest submission of a hand-in wins
            alive = [i for i in range(len(submission.keys))
                     if any(task.alive for job in submission.jobs() if (task := live.get((job, i))))]
            if not alive:
                self._forget(plan, ledger, submission)
                continue
            for i in alive:
                key = submission.keys[i]
                if key in todo and all(w.job.key != key for w in watches):
                    watches.append(Watch(todo[key], submission, i))
        if watches:
            jobs = ", ".join(sorted({j for w in watches for j in w.submission.jobs()}))
            reporter.phase(f"following {len(watches)} hand-ins already queued or running on {self.scheduler.name} "
                           f"(jobs {jobs})")
        return watches

    def _finish_submitting(self, ledger: Ledger, submission: Submission) -> None:
        """A submission whose head died while submitting: with both arrays there, release
        them; else cancel the one there (held, so nothing of it ran) and forget it: its
        hand-ins are submitted again."""
        submission.build_job = submission.build_job or self.scheduler.find(job_name(submission.token, "build"))
        submission.gpu_job = submission.gpu_job or self.scheduler.find(job_name(submission.token, "gpu"))
        if submission.build_job and submission.gpu_job:
            ledger.save()
            self._release(ledger, submission)
            return
        self.scheduler.cancel(submission.jobs())
        ledger.remove(submission)
        remove_tree(ledger.submission_folder(submission.token))

    # -- following -------------------------------------------------------------------------
    def _follow(self, plan, reporter, watches: list[Watch]) -> None:
        """Until every followed hand-in has its record: ask the scheduler, read the records, report."""
        following = {w.job.key: w for w in watches}
        answered = time.monotonic()
        while following:
            try:
                live = self.scheduler.tasks(sorted({j for w in following.values() for j in w.submission.jobs()}))
                answered = time.monotonic()
            except SchedulerUnavailable as err:
                if time.monotonic() - answered > UNREACHABLE_LIMIT_S:
                    raise CudalabError(f"{self.scheduler.name} has not answered for {UNREACHABLE_LIMIT_S / 60:.0f} "
                                       f"minutes ({err}). The jobs may still be running: run the same command "
                                       "again later to collect their grades.") from None
                reporter.phase(f"{err}; asking again in {self.poll_s:g} s")
                time.sleep(self.poll_s)
                continue
            for key, watch in list(following.items()):
                if self._settled(plan, reporter, watch, live):
                    del following[key]
            self._say_queue(reporter, following.values(), live)
            if following:
                time.sleep(self.poll_s)

    def _settled(self, plan, reporter, watch: Watch, live: dict) -> bool:
        """Whether this hand-in is done with: its record came, or its tasks ended without one
        (then recorded as a scheduler failure)."""
        result = self._new_record(plan.store, watch)
        if result is not None:
            gpu = watch.task(live, "gpu")
            if gpu is not None and gpu.phase == QUEUED:  # graded at its build: no GPU needed
                self.scheduler.cancel([watch.submission.gpu_job], watch.index)
            self._done(reporter, watch, result)
            return True
        for step, words in (("build", "building"), ("gpu", "grading")):
            task = watch.task(live, step)
            if task is not None and task.phase == RUNNING and step not in watch.reported:
                watch.reported.add(step)
                reporter.started(watch.job, f"{words} on {task.node or 'a node'}"
                                 + (" (GPU)" if step == "gpu" else ""))
        ended = self._ended(watch, live)
        if ended is None:
            watch.suspect = None
            return False
        # Believed when seen again, a poll (or the records' lag) later: a record may trail its task.
        last = watch.task(live, ended[0])
        wait = RECORD_LAG_S if last is None or last.phase == COMPLETED else self.poll_s * 0.9
        if watch.suspect is None or watch.suspect[0] != ended:
            watch.suspect = (ended, time.monotonic())
            return False
        if time.monotonic() - watch.suspect[1] < wait:
            return False
        result = self._new_record(plan.store, watch)  # a record that came meanwhile wins
        if result is None:
            result = self._failure(plan, watch, ended[0])
            plan.store.commit(watch.job, result)
        self._done(reporter, watch, result)
        return True

    def _new_record(self, store, watch: Watch) -> dict | None:
        """The hand-in's result once a task of this submission committed it (its
        provenance.<scheduler> says which submission; a record from before is not this
        grade). Read again only when the file changed."""
        identity = _identity(store.records / f"{watch.job.key}.json")
        if identity is None or identity == watch.record_seen:
            return None
        watch.record_seen = identity
        result = (store.record(watch.job.key) or {}).get("result")
        return result if steps_of(result, self.scheduler).get("submission") == watch.submission.token else None

    @staticmethod
    def _ended(watch: Watch, live: dict) -> tuple[str, str] | None:
        """(the step, the scheduler's word for its end) when the grade can no longer come: a
        task ended badly, the GPU task completed without the record, or the scheduler forgot
        both ('' for that)."""
        build, gpu = watch.task(live, "build"), watch.task(live, "gpu")
        if build is not None and not build.alive and build.phase != COMPLETED:
            return ("build", build.state)  # its GPU task never runs (it waits for this one to complete)
        if gpu is not None and not gpu.alive:
            return ("gpu", gpu.state)
        if gpu is None and (build is None or not build.alive):
            return ("gpu" if build is not None else "build", "")
        return None

    def _failure(self, plan, watch: Watch, step: str) -> dict:
        """The record of a hand-in whose task ended without grading it: what the scheduler says."""
        job = watch.submission.job_of(step)
        task = self.scheduler.details(job, watch.index) if job else None
        name = self.scheduler.task_name(job, watch.index) if job else f"(submission {watch.submission.token})"
        log = submission_folder(plan.store.out, self.scheduler, watch.submission.token) / "logs" / \
            f"{step}-{watch.index}.log"
        details = {"executor": self.scheduler.key, "submission": watch.submission.token, "index": watch.index,
                   "step": step, "job": name, "state": task.state if task else None,
                   "reason": task.reason if task else None, "exit_code": task.exit_code if task else None,
                   "node": task.node if task else None, "log": str(log)}
        message = failure_message(self.scheduler, step, name, task, log, plan.store.records)
        return batch.scheduler_failure_result(self.config, plan.spec, watch.job, message, details)

    def _done(self, reporter, watch: Watch, result: dict) -> None:
        gpu_name = (result.get("provenance") or {}).get("gpu")
        if self.device is None and gpu_name:
            self.device = {"name": gpu_name}
        reporter.done(watch.job, result)

    def _say_queue(self, reporter, watches, live: dict) -> None:
        """Where the hand-ins still followed stand, as a phase: said when it changes, at most
        every PHASE_EVERY_S seconds, with why tasks wait when the scheduler says."""
        counts: Counter = Counter()
        waiting_for: Counter = Counter()
        for watch in watches:
            build, gpu = watch.task(live, "build"), watch.task(live, "gpu")
            if build is not None and build.phase == QUEUED:
                counts["to build"] += 1
                waiting_for[build.reason] += 1
            elif build is not None and build.phase == RUNNING:
                counts["building"] += 1
            elif gpu is not None and gpu.phase == RUNNING:
                counts["on a GPU"] += 1
            else:
                counts["waiting for a GPU"] += 1
                if gpu is not None and gpu.phase == QUEUED:
                    waiting_for[gpu.reason] += 1
        parts = [f"{counts[k]} {k}" for k in ("to build", "building", "waiting for a GPU", "on a GPU") if counts[k]]
        reasons = [r for r, _ in waiting_for.most_common() if r not in self.scheduler.routine_reasons]
        text = (f"on {self.scheduler.name}: " + ", ".join(parts)
                + (f" (queued for: {', '.join(reasons[:3])})" if reasons else ""))
        if parts and text != self._said[0] and time.monotonic() - self._said[1] >= PHASE_EVERY_S:
            self._said = (text, time.monotonic())
            reporter.phase(text)

    # -- tidying up ------------------------------------------------------------------------
    def _retire(self, plan, ledger: Ledger, submissions) -> None:
        """Forget the followed submissions once no task of theirs is left on the scheduler:
        the GPU tasks cancelled as not needed end within moments (any still there after
        RETIRE_WAIT_S are forgotten by the next run)."""
        submissions = list(submissions)
        deadline = time.monotonic() + RETIRE_WAIT_S
        while submissions:
            try:
                live = self.scheduler.tasks(sorted({j for s in submissions for j in s.jobs()}))
            except CudalabError:
                return
            for submission in list(submissions):
                if not any(task.alive for (job, _), task in live.items() if job in submission.jobs()):
                    self._forget(plan, ledger, submission)
                    submissions.remove(submission)
            if not submissions or time.monotonic() > deadline:
                return
            time.sleep(min(self.poll_s, 1.0))

    @staticmethod
    def _forget(plan, ledger: Ledger, submission: Submission) -> None:
        """Drop a submission whose tasks all ended, and its folder, but for the logs that its
        scheduler-failure records point to (what the instructor reads about a failure)."""
        ledger.remove(submission)
        folder = ledger.submission_folder(submission.token)
        kept = {Path(failure.get("log") or "").name for failure in _failures(plan.store, submission)}
        for path in sorted(folder.iterdir()) if folder.is_dir() else []:
            if path.name == "logs" and path.is_dir():
                for log in path.iterdir():
                    if log.name not in kept:
                        log.unlink()
            elif path.is_dir() and not path.is_symlink():
                remove_tree(path)
            else:
                path.unlink()
        if not any((folder / "logs").glob("*")):
            remove_tree(folder)


def _failures(store, submission: Submission) -> list[dict]:
    """What the scheduler-failure records of this submission's hand-ins say."""
    found = []
    for key in submission.keys:
        result = (store.record(key) or {}).get("result")
        if batch.is_scheduler_failure(result):
            failure = result[batch.SCHEDULER_FAILURE]
            if failure.get("submission") == submission.token:
                found.append(failure)
    return found


def failure_message(scheduler, step: str, name: str, task: Task | None, log: Path, records: Path) -> str:
    """The sentence a scheduler-failure record says: what the scheduler did, where the log
    is, what to do."""
    what = f"The {scheduler.name} {STEP_WORDS[step]} task {name}"
    ending = scheduler.ending(task) if task is not None else None
    if ending is not None:
        ended, hint = ending
        said = f"{what} {ended} before this hand-in was graded" + (f" ({hint})" if hint else "")
    elif task is not None and task.phase == COMPLETED:
        said = (f"{what} ended without writing this hand-in's record to {records}: is that folder on storage "
                "every node shares, at the same path?")
    elif task is not None and task.state:
        said = f"{what} ended as {task.state} before this hand-in was graded"
    else:
        said = f"{what} ended without a record, and {scheduler.forgotten()}"
    where = f"; its log: {log}" if log.is_file() else ""
    return (f"{said}{where}. No grade was given (this is not the student's fault): run the same "
            "`cudalab batch` command again to grade it.")
