"""`cudalab batch --executor slurm`: a class graded by a Slurm cluster's job arrays.

    cudalab batch LAB HAND-INS --out DIR --executor slurm [--partition P] [--gpus-per-task 1]
                  [--max-parallel N] [--sbatch-arg=--account=cs101 ...] [--poll-s 5]

Each hand-in is graded exactly as the local executor grades it (batch.begin_job, then
grade.finish, then Store.commit of records/<key>.json), in two job arrays with one task
per hand-in:

- the build array (CPU only): task i stages and builds hand-in i in the sandbox
  (batch.begin_job). A hand-in that needs no GPU (rejected, not compiling, a forbidden
  library) is finished and committed there and then; any other leaves its grade's pending
  state (grade.Pending: the result so far, the binary, the grade's scratch folder) in
  DIR/.slurm/<submission>/pending/<key>.json.
- the GPU array (--gres=gpu:N): task i starts when build task i has succeeded
  (--dependency=aftercorr), loads that state, runs grade.finish on the GPU Slurm gave it
  (the probe, the correctness run, the timing rounds, the checker) and commits the record.

Why two arrays rather than one task that builds and then grades: a build is 3 to 10 s of
nvcc on one CPU core and the GPU step about 6 s (an H100, vector_add), so a combined task
would hold a GPU idle for about half of its time, while builds of a whole class can run
side by side on CPU cores, which a cluster has far more of than GPUs. The cost is one more
scheduling step per hand-in (the GPU task's wait once its build is done) and a pending
state on shared storage: the build task's scratch folder, with the binary in it, is
DIR/.slurm/<submission>/work (grade.begin puts it under the configuration's work folder),
never a node's own /tmp, since the two tasks of a hand-in may run on different nodes; the
GPU task copies it to its own node's temporary folder before it runs anything, so that the
runs' output dumps (hundreds of MB a grade) stay off the shared storage.

The tasks run `python -m cudalab.slurm build|gpu FOLDER` with the head's own interpreter
(its path is in the sbatch scripts) and the head's configuration (in tasks.json), so the
repository, the official build, the virtual environment, the hand-ins and DIR must be on
storage that every node sees at the same path. The grade inside a task is the local one:
the sandbox applies there as it does on this machine. Student ids are only data: the
tasks' files are named by array index and by key (publish.safe_id), as records are.

Following: the head (this process) asks `squeue` every --poll-s seconds how the tasks of
its arrays are, reads the records as they are committed, and reports started/done to the
progress reporter as the local executor does. A task that ends otherwise than COMPLETED
without a record (CANCELLED, FAILED, TIMEOUT, NODE_FAIL, OUT_OF_MEMORY, ...) is looked up
with `scontrol show job -o` (its exit code and reason; `sacct` where accounting works, once
the controller has forgotten it) and recorded as a scheduler failure
(batch.scheduler_failure_result): status error, zero points, a sentence saying what Slurm
did. That record is no grade: the outputs show it as not graded, and the next run grades
the hand-in again.

Crash-safe: DIR/.slurm/submissions.json (the ledger) holds every submission's job ids,
written atomically before and after each sbatch. Both arrays are submitted held and
released (the build array first) only once both ids are in the ledger, so a head killed
while submitting leaves at most a held array, which the next run finds by its job name and
cancels before any of it ran. A head killed later (SIGKILL included) leaves its arrays running: the next
run attaches to the tasks still queued or running and submits only the hand-ins that have
neither a record nor a live task. Ctrl-C only stops following: the jobs run on, and the
same command collects their grades.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import platform
import re
import secrets
import shlex
import shutil
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from . import batch, build, console, grade, labs, report, safe_files
from .config import Config
from .errors import CudalabError, UsageError
from .executor import Executor
from .runner import hand_over, scratch_dir
from .sandbox import scratch_root
from .trees import remove_tree

SLURM_DIR = ".slurm"
LEDGER_FILE = "submissions.json"
LEDGER_SCHEMA = "cudalab.slurm-submissions/1"
TASKS_FILE = "tasks.json"
TASKS_SCHEMA = "cudalab.slurm-tasks/1"
PENDING_SCHEMA = "cudalab.slurm-pending/1"
STEPS = ("build", "gpu")
STEP_WORDS = {"build": "build", "gpu": "GPU"}
COMMANDS = ("sbatch", "squeue", "scontrol", "scancel")

# How a task starts cudalab: this interpreter and this package. (The tests' driver puts
# its own program here, so that the tasks grade with its fake build as the head does.)
WORKER = [sys.executable, "-m", "cudalab.slurm"]

DEFAULT_POLL_S = 5.0
RECORD_LAG_S = 30.0        # how long a record may take to show after its task ended (shared storage caches)
UNREACHABLE_LIMIT_S = 600.0  # how long squeue may fail in a row before the head gives up following
PHASE_EVERY_S = 15.0       # the queue's state is said at most this often
RETIRE_WAIT_S = 10.0       # how long the head waits for the tasks it cancelled to leave the queue

# Slurm's job states in which a task may still run (or is running); any other is an end.
ALIVE = frozenset({"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED",
                   "REQUEUE_FED", "REQUEUE_HOLD", "RESIZING", "SIGNALING", "STAGE_OUT", "STOPPED"})
# What an end other than COMPLETED did to the grade, and what to do about it.
ENDINGS = {
    "CANCELLED": ("was cancelled (scancel, by you or an administrator)", ""),
    "FAILED": ("failed", ""),
    "TIMEOUT": ("ran past its time limit", "give the tasks more time with --sbatch-arg=--time=HH:MM:SS"),
    "OUT_OF_MEMORY": ("ran out of memory", "ask for more with --sbatch-arg=--mem=16G"),
    "NODE_FAIL": ("was lost when its node failed", ""),
    "BOOT_FAIL": ("could not start: its node failed to boot", ""),
    "PREEMPTED": ("was preempted by another job", ""),
    "DEADLINE": ("reached its deadline before it could finish", ""),
}


class SlurmUnavailable(CudalabError):
    """A Slurm command could not answer now (the controller is busy or unreachable)."""


# --- talking to Slurm: its commands, nothing else -------------------------------------------

@dataclass(frozen=True)
class Task:
    """One array task as Slurm reports it."""
    state: str                 # JobState (RUNNING, COMPLETED, CANCELLED, ...)
    reason: str = ""
    node: str = ""
    exit_code: str = ""        # "code:signal", where scontrol or sacct said it

    @property
    def alive(self) -> bool:
        return self.state in ALIVE


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0] if lines else ""


def _field(record: str, name: str) -> str:
    """One Key=Value of `scontrol show job -o`'s one-line record."""
    found = re.search(rf"(?:^|\s){re.escape(name)}=(\S*)", record)
    return found.group(1) if found else ""


def _indices(text: str) -> list[int]:
    """The array indices that scontrol's ArrayTaskId names: '4', '3-9', '0,2-5%2'."""
    found: list[int] = []
    for part in text.split("%", 1)[0].split(","):
        low, _, high = part.partition("-")
        if low.isdigit() and (not high or high.isdigit()):
            found += range(int(low), int(high or low) + 1)
    return found


def not_found(commands: list[str]) -> str:
    return (f"{', '.join(commands)} {'was' if len(commands) == 1 else 'were'} not found: --executor slurm "
            f"grades through Slurm's commands ({', '.join(COMMANDS)}). Run it on a Slurm login node, where "
            "`sbatch` works, or grade on this machine with --executor local.")


class Slurm:
    """Slurm's commands (sbatch, squeue, scontrol, scancel; sacct where it works), run as
    programs: what every login node has, with no library bindings to match its version."""

    def missing(self) -> list[str]:
        return [name for name in COMMANDS if shutil.which(name) is None]

    def _run(self, argv: list[str], timeout_s: float = 120.0) -> subprocess.CompletedProcess:
        try:
            return subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, check=False)
        except FileNotFoundError:
            raise UsageError(not_found([argv[0]])) from None
        except subprocess.TimeoutExpired:
            raise SlurmUnavailable(f"{argv[0]} did not answer within {timeout_s:.0f} s") from None
        except OSError as err:
            raise UsageError(f"{argv[0]} could not be run ({err}).") from None

    def submit(self, script: Path, options: list[str], what: str) -> str:
        """sbatch --parsable: the new job's id."""
        done = self._run(["sbatch", "--parsable", *options, str(script)])
        said = _first_line(done.stdout)
        found = re.match(r"(\d+)(;\S+)?$", said)
        if done.returncode != 0 or not found:
            why = " ".join(done.stderr.split()) or said or f"exit status {done.returncode}"
            raise UsageError(f"sbatch refused the {what} array: {why}. Check --partition, --gpus-per-task "
                             "and --sbatch-arg against what this cluster offers (sinfo lists its "
                             "partitions and their GPUs).")
        return found.group(1)

    def tasks(self, jobs: list[str]) -> dict[tuple[str, int], Task]:
        """Every task of these arrays that Slurm still knows (queued, running, or ended less
        than MinJobAge ago), by (array job id, index)."""
        if not jobs:
            return {}
        done = self._run(["squeue", "--noheader", "--array", "--states=all", f"--jobs={','.join(jobs)}",
                          "--format=%F|%K|%T|%N|%r"])
        if done.returncode != 0:
            if "Invalid job id" in done.stderr:
                return {}  # Slurm has forgotten every one of them
            raise SlurmUnavailable(f"squeue failed ({' '.join(done.stderr.split()) or done.returncode}); is the "
                                   "Slurm controller up (scontrol ping)?")
        found = {}
        for line in done.stdout.splitlines():
            parts = line.strip().split("|")
            if len(parts) == 5 and parts[0].isdigit() and parts[1].isdigit():
                found[(parts[0], int(parts[1]))] = Task(parts[2].split()[0] if parts[2] else "", parts[4], parts[3])
        return found

    def details(self, job: str, index: int) -> Task | None:
        """How one task ended, with its exit code: scontrol while the controller remembers the
        job, else sacct where accounting works; None when neither can say."""
        done = self._run(["scontrol", "show", "job", "-o", f"{job}_{index}"])
        for record in done.stdout.splitlines() if done.returncode == 0 else []:
            if _field(record, "ArrayJobId") == job and index in _indices(_field(record, "ArrayTaskId")):
                return Task(_field(record, "JobState"), _field(record, "Reason"),
                            _field(record, "BatchHost") or _field(record, "NodeList"), _field(record, "ExitCode"))
        return self._accounted(job, index)

    def _accounted(self, job: str, index: int) -> Task | None:
        try:
            done = self._run(["sacct", "--noheader", "--parsable2", "--allocations", f"--jobs={job}_{index}",
                              "--format=State,ExitCode,NodeList"], timeout_s=60.0)
        except UsageError:
            return None  # no sacct here
        line = _first_line(done.stdout) if done.returncode == 0 else ""
        parts = line.split("|")
        if len(parts) != 3 or not parts[0]:
            return None
        return Task(parts[0].split()[0], "", parts[2], parts[1])

    def find(self, name: str) -> str | None:
        """The id of the job named `name`, while Slurm knows it."""
        done = self._run(["squeue", "--noheader", "--states=all", f"--name={name}", "--format=%F"])
        ids = [line.strip() for line in done.stdout.splitlines() if line.strip().isdigit()]
        return ids[0] if done.returncode == 0 and ids else None

    def release(self, job: str) -> None:
        done = self._run(["scontrol", "release", job])
        if done.returncode != 0 and "already" not in done.stderr.lower():
            raise UsageError(f"scontrol could not release job {job}: {' '.join(done.stderr.split())}.")

    def cancel(self, targets: list[str]) -> None:
        """scancel, quietly: a target that already ended is not an error here."""
        if targets:
            self._run(["scancel", *targets])


# --- what a submission leaves in the results folder -----------------------------------------

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
    """DIR/.slurm/submissions.json: every submission of this results folder that may still
    have tasks on Slurm. Only the head writes it (under the batch's lock), atomically,
    before and after each step of a submission, so that a head killed at any point leaves
    what the next run needs to find its jobs."""

    def __init__(self, out: Path):
        self.folder = out / SLURM_DIR
        self.path = self.folder / LEDGER_FILE
        self.submissions = self._load()

    def _load(self) -> list[Submission]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            return [Submission(**entry) for entry in data["submissions"]]
        except FileNotFoundError:
            return []
        except (OSError, ValueError, KeyError, TypeError) as err:
            why = (f"{self.path} is unreadable ({err}). If this batch still has jobs on Slurm (`squeue --me` "
                   "lists them as cudalab-build-... and cudalab-gpu-...), cancel them; then delete the file and "
                   "run again.")
            raise UsageError(why) from None

    def save(self) -> None:
        body = {"schema": LEDGER_SCHEMA, "submissions": [dataclasses.asdict(s) for s in self.submissions]}
        report.atomic_write_text(self.path, json.dumps(body, indent=2) + "\n")

    def add(self, submission: Submission) -> None:
        self.submissions.append(submission)
        self.save()

    def remove(self, submission: Submission) -> None:
        self.submissions = [s for s in self.submissions if s.token != submission.token]
        self.save()

    def submission_folder(self, token: str) -> Path:
        return submission_folder(self.folder.parent, token)


def submission_folder(out: Path, token: str) -> Path:
    """A submission's files: tasks.json, the sbatch scripts, logs/, pending/, work/."""
    return out / SLURM_DIR / token


def recorded_jobs(out: Path) -> list[str]:
    """The Slurm job ids an earlier `--executor slurm` run recorded in this results folder
    and did not see end."""
    try:
        return [job for submission in Ledger(out).submissions for job in submission.jobs()]
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

    @classmethod
    def load(cls, folder: Path) -> "Tasks":
        path = folder / TASKS_FILE
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if data.get("schema") != TASKS_SCHEMA:
                raise ValueError(f"its schema is {data.get('schema')!r}, not {TASKS_SCHEMA}")
            jobs = [batch.Job.from_json(j) for j in data["jobs"]]
            return cls(folder, data["submission"], data["lab"], Path(data["out"]), float(data["submitted_at"]),
                       bool(data["allow_unisolated"]), config_from_json(data["config"]), jobs)
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise CudalabError(f"{path} is unreadable ({err}): this task cannot know what to grade. Is "
                               f"{folder} on storage this node shares with the node that submitted it?") from None


# --- the tasks (python -m cudalab.slurm build|gpu FOLDER) -----------------------------------

def _step_info(tasks: Tasks, step: str, index: int, started: float, waiting_since: float) -> dict:
    """Where and when a task ran, for the result's provenance.slurm."""
    return {"job": f"{os.environ.get('SLURM_ARRAY_JOB_ID', '?')}_{index}",
            "node": os.environ.get("SLURMD_NODENAME") or platform.node(),
            "started_at": report.timestamp(started), "queued_s": round(max(0.0, started - waiting_since), 2),
            "wall_s": round(time.time() - started, 2)}


def _stamp(result: dict, tasks: Tasks, step: str, info: dict) -> None:
    slurm = result["provenance"].setdefault("slurm", {"submission": tasks.submission})
    slurm[step] = info


def _pending_path(tasks: Tasks, key: str) -> Path:
    return tasks.folder / "pending" / f"{key}.json"


def build_task(tasks: Tasks, index: int, started: float) -> int:
    """Stage and build hand-in `index`; finish and commit it here when it needs no GPU, else
    leave its pending state for the GPU task."""
    job = tasks.jobs[index]
    config = tasks.config
    spec = labs.load_lab(config, tasks.lab)
    store = batch.Store(tasks.out)
    pending, handin_folder = batch.begin_job(config, spec, job, scratch_root(config), tasks.allow_unisolated)
    remove_tree(handin_folder)  # the build staged what it needs
    if pending.error is not None or pending.binary is None:
        result = grade.finish(pending, attachments_to=store.student_dir(job))
        _stamp(result, tasks, "build", _step_info(tasks, "build", index, started, tasks.submitted_at))
        store.commit(job, result)
        print(f"task {index} ({job.key}): {result['status']}, committed; no GPU step is needed", flush=True)
        return 0
    _stamp(pending.result, tasks, "build", _step_info(tasks, "build", index, started, tasks.submitted_at))
    hand_over(pending.tmp)  # the GPU task copies it after this task has ended
    state = {"schema": PENDING_SCHEMA, "key": job.key, "result": pending.result, "binary": str(pending.binary),
             "tmp": str(pending.tmp), "built_at": time.time()}
    report.atomic_write_text(_pending_path(tasks, job.key), json.dumps(state) + "\n")
    print(f"task {index} ({job.key}): built; its GPU task grades it", flush=True)
    return 0


def _slurm_steps(result: dict | None) -> dict:
    """A result's provenance.slurm: the submission that graded it, and where each step ran."""
    return ((result or {}).get("provenance") or {}).get("slurm") or {}


def _graded_by_build(store: batch.Store, tasks: Tasks, key: str) -> bool:
    steps = _slurm_steps((store.record(key) or {}).get("result"))
    return steps.get("submission") == tasks.submission and "build" in steps


def _on_this_node(config: Config, state: dict) -> tuple[Config, Path, Path]:
    """The build (the grade's scratch folder, binary included) copied from the shared results
    folder to this node's own temporary folder, where the GPU step's runs then write their
    output dumps (hundreds of MB a grade, better kept off shared storage): the configuration
    that puts the grade's other folders there too, the binary and the folder.

    The shared folder must be one of the batch's own private grade folders (in its checked
    scratch root), and is copied without following a link at any component; the node's copy
    goes to this process's own temporary folder, never to a fixed name another user of the
    node could have made first."""
    shared = Path(state["tmp"])
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
    return config, local / Path(state["binary"]).relative_to(shared), local


def gpu_task(tasks: Tasks, index: int, started: float) -> int:
    """Grade hand-in `index` on the GPU Slurm gave this task, from its build's pending state."""
    job = tasks.jobs[index]
    store = batch.Store(tasks.out)
    path = _pending_path(tasks, job.key)
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        if _graded_by_build(store, tasks, job.key):
            print(f"task {index} ({job.key}): graded by its build task; nothing to run", flush=True)
            return 0
        raise CudalabError(f"{path} is missing: build task {index} did not leave this hand-in's build, "
                           "so there is nothing to grade.") from None
    except (OSError, ValueError) as err:
        raise CudalabError(f"{path} is unreadable ({err}); grade the hand-in again.") from None
    device = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    config, binary, tmp = _on_this_node(dataclasses.replace(tasks.config, gpu_device=device), state)
    spec = labs.load_lab(config, tasks.lab)
    pending = grade.Pending(state["result"], config, spec, binary=binary, tmp=tmp)
    result = grade.finish(pending, attachments_to=store.student_dir(job))
    _stamp(result, tasks, "gpu", _step_info(tasks, "gpu", index, started, float(state["built_at"])))
    store.commit(job, result)
    path.unlink(missing_ok=True)
    remove_tree(state["tmp"])
    print(f"task {index} ({job.key}): {result['status']}, committed", flush=True)
    return 0


def task_main(argv: list[str]) -> int:
    """One array task: `python -m cudalab.slurm build|gpu FOLDER`, as the sbatch scripts of
    `cudalab batch --executor slurm` run it, with SLURM_ARRAY_TASK_ID saying which hand-in."""
    started = time.time()
    if len(argv) != 2 or argv[0] not in STEPS:
        console.error("usage: python -m cudalab.slurm build|gpu FOLDER (run by the sbatch scripts of "
                      "`cudalab batch --executor slurm`, one array task per hand-in)")
        return 2
    index_text = os.environ.get("SLURM_ARRAY_TASK_ID", "")
    if not index_text.isdigit():
        console.error("SLURM_ARRAY_TASK_ID is not set: this runs as one task of the job arrays that "
                      "`cudalab batch --executor slurm` submits, not by hand.")
        return 2
    try:
        tasks = Tasks.load(Path(argv[1]))
        index = int(index_text)
        if index >= len(tasks.jobs):
            raise CudalabError(f"array task {index} has no hand-in: {TASKS_FILE} lists {len(tasks.jobs)}.")
        return (build_task if argv[0] == "build" else gpu_task)(tasks, index, started)
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


def _time_limit(seconds: float) -> str:
    minutes = max(1, math.ceil(seconds / 60))
    return f"{minutes // 60}:{minutes % 60:02d}:00"


class SlurmExecutor(Executor):
    """A batch as two Slurm job arrays (see the module's docstring)."""

    name = "slurm"
    options = ("partition", "gpus_per_task", "max_parallel", "sbatch_arg", "poll_s")

    @classmethod
    def add_arguments(cls, group) -> None:
        group.add_argument("--partition", help="the Slurm partition of both job arrays "
                           "(default: the cluster's default partition)")
        group.add_argument("--gpus-per-task", type=int, metavar="N",
                           help="GPUs each grading task asks for, as --gres=gpu:N (default 1: every grade "
                           "times on a GPU of its own)")
        group.add_argument("--max-parallel", type=int, metavar="N",
                           help="most tasks of each array that run at once (default: as many as Slurm gives)")
        group.add_argument("--sbatch-arg", action="append", metavar="OPTION",
                           help="one more sbatch option for both arrays, written with '=' "
                           "(--sbatch-arg=--account=cs101); repeatable. It comes after cudalab's own, so "
                           "--sbatch-arg=--time=1:00:00 replaces the time limit")
        group.add_argument("--poll-s", type=float, metavar="SECONDS",
                           help=f"how often the head asks squeue about its tasks (default {DEFAULT_POLL_S:g})")

    @classmethod
    def from_args(cls, config: Config, args) -> "SlurmExecutor":
        for option, value in (("--gpus-per-task", args.gpus_per_task), ("--max-parallel", args.max_parallel)):
            if value is not None and value < 1:
                raise UsageError(f"{option} must be 1 or more.")
        if args.poll_s is not None and not args.poll_s > 0:
            raise UsageError("--poll-s must be a positive number of seconds.")
        for option in args.sbatch_arg or []:
            if not option.startswith("-"):
                raise UsageError(f"--sbatch-arg takes one sbatch option, such as --sbatch-arg=--account=cs101; "
                                 f"{option!r} is not an option.")
        slurm = Slurm()
        missing = slurm.missing()
        if missing:
            raise UsageError(not_found(missing))
        return cls(config, slurm, partition=args.partition, gpus_per_task=args.gpus_per_task or 1,
                   max_parallel=args.max_parallel, sbatch_args=list(args.sbatch_arg or []),
                   poll_s=args.poll_s or DEFAULT_POLL_S)

    def __init__(self, config: Config, slurm: Slurm, partition: str | None = None, gpus_per_task: int = 1,
                 max_parallel: int | None = None, sbatch_args: list[str] | None = None,
                 poll_s: float = DEFAULT_POLL_S):
        super().__init__()
        self.config, self.slurm = config, slurm
        self.partition, self.gpus_per_task, self.max_parallel = partition, gpus_per_task, max_parallel
        self.sbatch_args = sbatch_args or []
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
        ledger = Ledger(plan.store.out)
        watches = self._attach(plan, ledger, reporter)
        following = {w.job.key for w in watches}
        rest = [job for job in plan.todo if job.key not in following]
        if rest:
            watches += self._submit(plan, ledger, rest, reporter)
        try:
            self._follow(plan, reporter, watches)
        except KeyboardInterrupt:
            jobs = " ".join(sorted({j for w in watches for j in w.submission.jobs()}))
            reporter.phase(f"stopped following; the Slurm jobs ({jobs}) run on: run the same command again to "
                           f"collect their grades, or cancel them with `scancel {jobs}`")
            raise
        self._retire(plan, ledger, {w.submission.token: w.submission for w in watches}.values())

    # -- submitting ------------------------------------------------------------------------
    def _submit(self, plan, ledger: Ledger, jobs: list, reporter) -> list[Watch]:
        """Both arrays for `jobs`, held until both ids are in the ledger."""
        token = f"{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"
        submission = Submission(token, [job.key for job in jobs], time.time())
        folder = ledger.submission_folder(token)
        self._write_tasks(plan, submission, jobs, folder)
        watches = [Watch(job, submission, i) for i, job in enumerate(jobs)]
        ledger.add(submission)
        reporter.phase(f"submitting {len(jobs)} hand-ins to Slurm: a build array, then a GPU array")
        try:
            submission.build_job = self.slurm.submit(folder / "build.sh",
                                                     self._options(plan.spec, submission, "build", folder), "build")
            ledger.save()
            submission.gpu_job = self.slurm.submit(folder / "gpu.sh",
                                                   self._options(plan.spec, submission, "gpu", folder), "GPU")
            ledger.save()
        except CudalabError:
            self.slurm.cancel(submission.jobs())  # held: nothing of it ran
            ledger.remove(submission)
            remove_tree(folder)
            raise
        self._release(ledger, submission)
        reporter.phase(f"submitted: build array {submission.build_job}, GPU array {submission.gpu_job} "
                       f"({len(jobs)} tasks each); following them with squeue every {self.poll_s:g} s")
        return watches

    def _write_tasks(self, plan, submission: Submission, jobs: list, folder: Path) -> None:
        """tasks.json and the two sbatch scripts; the tasks' scratch is in `folder`, on the
        shared results folder."""
        if "%" in str(folder) or "\\" in str(folder):
            raise UsageError(f"The results folder's path ({plan.store.out}) holds a '%' or a '\\', which sbatch "
                             "reads in the log files' names (a pattern, or no patterns at all): give an --out "
                             "without them.")
        for part in ("logs", "pending", "work"):
            (folder / part).mkdir(parents=True, exist_ok=True)
        config = dataclasses.replace(self.config, work_dir=folder / "work", gpu_device="")
        if scratch_root(config) != config.temp_dir:
            remove_tree(folder)
            raise UsageError(f"The sandbox user (uid {config.sandbox_uid}) cannot reach {plan.store.out}, where "
                             "the Slurm tasks build and run the hand-ins (a hand-in's build and GPU tasks may "
                             "run on different nodes, so its files must be in the shared results folder). "
                             "Let others search the results folder and the folders above it (chmod o+x), "
                             "or grade as a user other than root.")
        tasks = {"schema": TASKS_SCHEMA, "submission": submission.token, "lab": plan.spec.name,
                 "out": str(plan.store.out), "submitted_at": submission.submitted_at,
                 "allow_unisolated": plan.allow_unisolated, "config": config_to_json(config),
                 "jobs": [job.to_json() for job in jobs]}
        report.atomic_write_text(folder / TASKS_FILE, json.dumps(tasks, indent=2) + "\n")
        for step in STEPS:
            command = " ".join(shlex.quote(word) for word in [*WORKER, step, str(folder)])
            script = folder / f"{step}.sh"
            script.write_text(f"#!/bin/sh\n# cudalab batch on Slurm: the {STEP_WORDS[step]} step of one hand-in "
                              f"per array task (submission {submission.token}).\nexec {command}\n", encoding="utf-8")
            script.chmod(0o755)

    def _release(self, ledger: Ledger, submission: Submission) -> None:
        """Let both arrays run, the build array first: Slurm gives a released job the
        priority of a new one, so the builds then come before the GPU tasks, and a GPU task
        waiting for a GPU does not hold back the builds behind it (Slurm's main scheduler
        starts nothing of lower priority in a partition past a job that cannot start)."""
        jobs = " ".join(submission.jobs())
        for job in submission.jobs():
            try:
                self.slurm.release(job)
            except UsageError as err:
                hint = (f" The batch's two arrays ({jobs}) are submitted and held: run the same command again "
                        f"to release and follow them, or cancel them (scancel {jobs}).")
                raise UsageError(f"{err}{hint}") from None
        submission.released = True
        ledger.save()

    def _options(self, spec, submission: Submission, step: str, folder: Path) -> list[str]:
        count = len(submission.keys)
        array = f"0-{count - 1}" + (f"%{self.max_parallel}" if self.max_parallel else "")
        options = [f"--job-name={job_name(submission.token, step)}", f"--array={array}",
                   f"--output={folder}/logs/{step}-%a.log", f"--chdir={folder}", "--export=ALL",
                   f"--time={_time_limit(self._time_needed_s(spec, step))}"]
        if self.partition:
            options.append(f"--partition={self.partition}")
        options.append("--hold")  # until both ids are in the ledger (_release)
        if step == "gpu":
            options += [f"--dependency=aftercorr:{submission.build_job}", "--kill-on-invalid-dep=yes",
                        f"--gres=gpu:{self.gpus_per_task}"]
        return options + self.sbatch_args

    def _time_needed_s(self, spec, step: str) -> float:
        """A task's time limit: the longest its grade's own limits allow, and a margin."""
        config = self.config
        if step == "build":
            return config.build_timeout_s + 600
        runs = 2 + 2 * config.timing_rounds  # the probe, the correctness run, two per timing round
        longest_run_s = max(config.process_timeout_s, spec.scoring.time_limit_s)
        return longest_run_s * runs + 4 * config.sanitizer_timeout_s + 600

    # -- attaching to what an earlier run submitted -------------------------------------------
    def _attach(self, plan, ledger: Ledger, reporter) -> list[Watch]:
        """Follow the hand-ins to grade whose tasks an earlier run submitted and Slurm still
        queues or runs; forget the submissions that have nothing alive."""
        if not ledger.submissions:
            return []
        reporter.phase("looking for this batch's jobs already on Slurm")
        for submission in list(ledger.submissions):
            if not submission.released:
                self._finish_submitting(ledger, submission)
        live = self.slurm.tasks(sorted({j for s in ledger.submissions for j in s.jobs()}))
        todo = {job.key: job for job in plan.todo}
        watches: list[Watch] = []
        for submission in reversed(list(ledger.submissions)):  # the newest submission of a hand-in wins
            alive = [i for i in range(len(submission.keys))
                     if any(live.get((job, i), Task("")).alive for job in submission.jobs())]
            if not alive:
                self._forget(plan, ledger, submission)
                continue
            for i in alive:
                key = submission.keys[i]
                if key in todo and all(w.job.key != key for w in watches):
                    watches.append(Watch(todo[key], submission, i))
        if watches:
            jobs = ", ".join(sorted({j for w in watches for j in w.submission.jobs()}))
            reporter.phase(f"following {len(watches)} hand-ins already queued or running on Slurm (jobs {jobs})")
        return watches

    def _finish_submitting(self, ledger: Ledger, submission: Submission) -> None:
        """A submission whose head died while submitting: with both arrays there, release
        them; else cancel the one there (held, so nothing of it ran) and forget it: its
        hand-ins are submitted again."""
        submission.build_job = submission.build_job or self.slurm.find(job_name(submission.token, "build"))
        submission.gpu_job = submission.gpu_job or self.slurm.find(job_name(submission.token, "gpu"))
        if submission.build_job and submission.gpu_job:
            ledger.save()
            self._release(ledger, submission)
            return
        self.slurm.cancel(submission.jobs())
        ledger.remove(submission)
        remove_tree(ledger.submission_folder(submission.token))

    # -- following -------------------------------------------------------------------------
    def _follow(self, plan, reporter, watches: list[Watch]) -> None:
        """Until every followed hand-in has its record: ask squeue, read the records, report."""
        following = {w.job.key: w for w in watches}
        answered = time.monotonic()
        while following:
            try:
                live = self.slurm.tasks(sorted({j for w in following.values() for j in w.submission.jobs()}))
                answered = time.monotonic()
            except SlurmUnavailable as err:
                if time.monotonic() - answered > UNREACHABLE_LIMIT_S:
                    raise CudalabError(f"Slurm has not answered for {UNREACHABLE_LIMIT_S / 60:.0f} minutes ({err}). "
                                       "The jobs may still be running: run the same command again later to "
                                       "collect their grades.") from None
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
            if gpu is not None and gpu.state == "PENDING":  # graded at its build: no GPU needed
                self.slurm.cancel([f"{watch.submission.gpu_job}_{watch.index}"])
            self._done(reporter, watch, result)
            return True
        for step, words in (("build", "building"), ("gpu", "grading")):
            task = watch.task(live, step)
            if task is not None and task.state == "RUNNING" and step not in watch.reported:
                watch.reported.add(step)
                reporter.started(watch.job, f"{words} on {task.node or 'a node'}"
                                 + (" (GPU)" if step == "gpu" else ""))
        ended = self._ended(watch, live)
        if ended is None:
            watch.suspect = None
            return False
        # Believed when seen again, a poll (or the records' lag) later: a record may trail its task.
        wait = RECORD_LAG_S if ended[1] in ("COMPLETED", "") else self.poll_s * 0.9
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

    @staticmethod
    def _new_record(store, watch: Watch) -> dict | None:
        """The hand-in's result once a task of this submission committed it (its
        provenance.slurm says which submission; a record from before is not this grade).
        Read again only when the file changed."""
        identity = _identity(store.records / f"{watch.job.key}.json")
        if identity is None or identity == watch.record_seen:
            return None
        watch.record_seen = identity
        result = (store.record(watch.job.key) or {}).get("result")
        return result if _slurm_steps(result).get("submission") == watch.submission.token else None

    @staticmethod
    def _ended(watch: Watch, live: dict) -> tuple[str, str] | None:
        """(the step, its end state) when the grade can no longer come: a task ended badly,
        the GPU task completed without the record, or Slurm forgot both ('' for that)."""
        build, gpu = watch.task(live, "build"), watch.task(live, "gpu")
        if build is not None and not build.alive and build.state != "COMPLETED":
            return ("build", build.state)  # its GPU task never runs (aftercorr)
        if gpu is not None and not gpu.alive:
            return ("gpu", gpu.state)
        if gpu is None and (build is None or not build.alive):
            return ("gpu" if build is not None else "build", "")
        return None

    def _failure(self, plan, watch: Watch, step: str) -> dict:
        """The record of a hand-in whose task ended without grading it: what Slurm says."""
        job = watch.submission.job_of(step)
        task = self.slurm.details(job, watch.index) if job else None
        name = f"{job}_{watch.index}" if job else f"(submission {watch.submission.token})"
        log = submission_folder(plan.store.out, watch.submission.token) / "logs" / f"{step}-{watch.index}.log"
        details = {"executor": "slurm", "submission": watch.submission.token, "index": watch.index,
                   "step": step, "job": name, "state": task.state if task else None,
                   "reason": task.reason if task else None, "exit_code": task.exit_code if task else None,
                   "node": task.node if task else None, "log": str(log)}
        message = failure_message(step, name, task, log, plan.store.records)
        return batch.scheduler_failure_result(self.config, plan.spec, watch.job, message, details)

    def _done(self, reporter, watch: Watch, result: dict) -> None:
        gpu_name = (result.get("provenance") or {}).get("gpu")
        if self.device is None and gpu_name:
            self.device = {"name": gpu_name}
        reporter.done(watch.job, result)

    def _say_queue(self, reporter, watches, live: dict) -> None:
        """Where the hand-ins still followed stand, as a phase: said when it changes, at most
        every PHASE_EVERY_S seconds, with why tasks wait when Slurm says."""
        counts: Counter = Counter()
        waiting_for: Counter = Counter()
        for watch in watches:
            build, gpu = watch.task(live, "build"), watch.task(live, "gpu")
            if build is not None and build.state == "PENDING":
                counts["to build"] += 1
                waiting_for[build.reason] += 1
            elif build is not None and build.state == "RUNNING":
                counts["building"] += 1
            elif gpu is not None and gpu.state == "RUNNING":
                counts["on a GPU"] += 1
            else:
                counts["waiting for a GPU"] += 1
                if gpu is not None and gpu.state == "PENDING":
                    waiting_for[gpu.reason] += 1
        parts = [f"{counts[k]} {k}" for k in ("to build", "building", "waiting for a GPU", "on a GPU") if counts[k]]
        reasons = [r for r, _ in waiting_for.most_common() if r not in ("", "None", "Dependency", "Priority")]
        text = "on Slurm: " + ", ".join(parts) + (f" (queued for: {', '.join(reasons[:3])})" if reasons else "")
        if parts and text != self._said[0] and time.monotonic() - self._said[1] >= PHASE_EVERY_S:
            self._said = (text, time.monotonic())
            reporter.phase(text)

    # -- tidying up ------------------------------------------------------------------------
    def _retire(self, plan, ledger: Ledger, submissions) -> None:
        """Forget the followed submissions once no task of theirs is left on Slurm: the GPU
        tasks cancelled as not needed end within moments (any still there after
        RETIRE_WAIT_S are forgotten by the next run)."""
        submissions = list(submissions)
        deadline = time.monotonic() + RETIRE_WAIT_S
        while submissions:
            try:
                live = self.slurm.tasks(sorted({j for s in submissions for j in s.jobs()}))
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


def failure_message(step: str, name: str, task: Task | None, log: Path, records: Path) -> str:
    """The sentence a scheduler-failure record says: what Slurm did, where the log is, what to do."""
    what = f"The Slurm {STEP_WORDS[step]} task {name}"
    state = task.state if task else ""
    if state in ENDINGS:
        ended, hint = ENDINGS[state]
        code = _exit_words(task.exit_code) if state == "FAILED" else ""
        said = f"{what} {ended}{code} before this hand-in was graded"
        if hint:
            said += f" ({hint})"
    elif state == "COMPLETED":
        said = (f"{what} ended without writing this hand-in's record to {records}: is that folder on storage "
                "every node shares, at the same path?")
    elif state:
        said = f"{what} ended as {state} before this hand-in was graded"
    else:
        said = (f"{what} ended without a record, and Slurm no longer says how (the controller forgets a "
                "job MinJobAge seconds after it ends)")
    where = f"; its log: {log}" if log.is_file() else ""
    return (f"{said}{where}. No grade was given (this is not the student's fault): run the same "
            "`cudalab batch` command again to grade it.")


def _exit_words(exit_code: str) -> str:
    code, _, signal = (exit_code or "").partition(":")
    if signal.isdigit() and int(signal):
        return f" (killed by signal {signal})"
    if code.isdigit() and int(code):
        return f" (exit code {code})"
    return ""


if __name__ == "__main__":
    sys.exit(task_main(sys.argv[1:]))
