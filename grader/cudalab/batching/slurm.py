"""`cudalab batch --executor slurm`: a class graded by a Slurm cluster's job arrays.

    cudalab batch LAB HAND-INS --out DIR --executor slurm [--partition P] [--gpus-per-task 1]
                  [--max-parallel N] [--sbatch-arg=--account=cs101 ...] [--poll-s 5]

The protocol (a build array and a GPU array a submission, the ledger in DIR/.slurm, the
hand-off between a hand-in's two tasks, following, reattaching after a crash, scheduler
failures) is remote.py's and the same for every scheduler; this module is Slurm's adapter
to it (class Slurm: sbatch, squeue, scontrol, scancel and sacct, and reading what they
say) and the executor's options. On Slurm:

- the build array is CPU only; the GPU array asks for --gres=gpu:N, and its task i waits
  for build task i to succeed (--dependency=aftercorr, --kill-on-invalid-dep=yes);
- both arrays are submitted --hold and released with `scontrol release`, the build array
  first: Slurm gives a released job the priority of a new one, so the builds then come
  before the GPU tasks, and a GPU task waiting for a GPU does not hold back the builds
  behind it (Slurm's main scheduler starts nothing of lower priority in a partition past
  a job that cannot start);
- each task runs `python -m cudalab.batching.slurm build|gpu FOLDER` from an sbatch script in the
  submission's folder, SLURM_ARRAY_TASK_ID saying which hand-in; its log is
  DIR/.slurm/<submission>/logs/<step>-<index>.log;
- how a task ended comes from `scontrol show job -o` (its exit code and reason), or from
  `sacct` where accounting works, once the controller has forgotten it (MinJobAge).
"""
from __future__ import annotations

import math
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from . import remote
from ..config import Config
from ..errors import UsageError
from .remote import DEFAULT_POLL_S, Array, RemoteExecutor, Scheduler, SchedulerUnavailable, Task

COMMANDS = ("sbatch", "squeue", "scontrol", "scancel")

# How a task starts cudalab: this interpreter and this package. (The tests' driver puts
# its own program here, so that the tasks grade with its fake build as the head does.)
WORKER = [sys.executable, "-m", "cudalab.batching.slurm"]

# Slurm's job states in which a task, not running, may still run (PENDING: waiting to
# start); any other is an end.
BUSY = frozenset({"CONFIGURING", "COMPLETING", "SUSPENDED", "REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD",
                  "RESIZING", "SIGNALING", "STAGE_OUT", "STOPPED"})
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


class SlurmUnavailable(SchedulerUnavailable):
    """A Slurm command could not answer now (the controller is busy or unreachable)."""


def task(state: str, reason: str = "", node: str = "", exit_code: str = "") -> Task:
    """A task in Slurm's JobState, with what that state means to the protocol."""
    if state == "PENDING":
        phase = remote.QUEUED
    elif state == "RUNNING":
        phase = remote.RUNNING
    elif state in BUSY:
        phase = remote.BUSY
    elif state == "COMPLETED":
        phase = remote.COMPLETED
    else:
        phase = remote.ENDED
    return Task(state, phase, reason, node, exit_code)


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


def _time_limit(seconds: float) -> str:
    minutes = max(1, math.ceil(seconds / 60))
    return f"{minutes // 60}:{minutes % 60:02d}:00"


def _exit_words(exit_code: str) -> str:
    code, _, signal = (exit_code or "").partition(":")
    if signal.isdigit() and int(signal):
        return f" (killed by signal {signal})"
    if code.isdigit() and int(code):
        return f" (exit code {code})"
    return ""


def not_found(commands: list[str]) -> str:
    return (f"{', '.join(commands)} {'was' if len(commands) == 1 else 'were'} not found: --executor slurm "
            f"grades through Slurm's commands ({', '.join(COMMANDS)}). Run it on a Slurm login node, where "
            "`sbatch` works, or grade on this machine with --executor local.")


class Slurm(Scheduler):
    """Slurm's commands (sbatch, squeue, scontrol, scancel; sacct where it works), run as
    programs: what every login node has, with no library bindings to match its version."""

    name = "Slurm"
    key = "slurm"
    index_variable = "SLURM_ARRAY_TASK_ID"
    job_variable = "SLURM_ARRAY_JOB_ID"
    node_variable = "SLURMD_NODENAME"
    status_command = "squeue"
    list_command = "squeue --me"
    routine_reasons = frozenset({"", "None", "Dependency", "Priority"})

    def __init__(self, partition: str | None = None, gpus_per_task: int = 1, max_parallel: int | None = None,
                 sbatch_args: list[str] | None = None):
        self.partition, self.gpus_per_task, self.max_parallel = partition, gpus_per_task, max_parallel
        self.sbatch_args = sbatch_args or []

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

    def submit(self, array: Array) -> str:
        """The array's sbatch script, then sbatch --parsable --hold: the new job's id."""
        done = self._run(["sbatch", "--parsable", *self._options(array), str(self._script(array))])
        said = _first_line(done.stdout)
        found = re.match(r"(\d+)(;\S+)?$", said)
        if done.returncode != 0 or not found:
            why = " ".join(done.stderr.split()) or said or f"exit status {done.returncode}"
            raise UsageError(f"sbatch refused the {array.words} array: {why}. Check --partition, --gpus-per-task "
                             "and --sbatch-arg against what this cluster offers (sinfo lists its "
                             "partitions and their GPUs).")
        return found.group(1)

    def check_folder(self, folder: Path) -> None:
        if "%" in str(folder) or "\\" in str(folder):
            raise UsageError(f"The results folder's path ({folder.parent.parent}) holds a '%' or a '\\', which "
                             "sbatch reads in the log files' names (a pattern, or no patterns at all): give an "
                             "--out without them.")

    @staticmethod
    def _script(array: Array) -> Path:
        script = array.folder / f"{array.step}.sh"
        if array.command:
            # exec, so that Slurm's ExitCode is the command's own (code, or the signal that killed it)
            command = " ".join(shlex.quote(word) for word in array.command)
            redirect = f" > {shlex.quote(str(array.stdout))}" if array.stdout is not None else ""
            script.write_text(f"#!/bin/sh\n# cudalab on Slurm: one {array.words} job ({array.name}).\n"
                              f"exec {command}{redirect}\n", encoding="utf-8")
        else:
            command = " ".join(shlex.quote(word) for word in [*WORKER, array.step, str(array.folder)])
            script.write_text(f"#!/bin/sh\n# cudalab batch on Slurm: the {array.words} step of one hand-in per "
                              f"array task (submission {array.folder.name}).\nexec {command}\n", encoding="utf-8")
        script.chmod(0o755)
        return script

    def _options(self, array: Array) -> list[str]:
        indices = f"0-{array.count - 1}" + (f"%{self.max_parallel}" if self.max_parallel else "")
        options = [f"--job-name={array.name}", f"--array={indices}",
                   f"--output={array.folder}/logs/{array.step}-%a.log", f"--chdir={array.folder}", "--export=ALL",
                   f"--time={_time_limit(array.time_limit_s)}"]
        if self.partition:
            options.append(f"--partition={self.partition}")
        options.append("--hold")  # until both ids are in the ledger (released by the executor)
        if array.after:
            options += [f"--dependency=aftercorr:{array.after}", "--kill-on-invalid-dep=yes"]
        if array.step == "gpu":
            options.append(f"--gres=gpu:{self.gpus_per_task}")
        return options + self.sbatch_args

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
                found[(parts[0], int(parts[1]))] = task(parts[2].split()[0] if parts[2] else "", parts[4], parts[3])
        return found

    def details(self, job: str, index: int) -> Task | None:
        """How one task ended, with its exit code: scontrol while the controller remembers the
        job, else sacct where accounting works; None when neither can say."""
        done = self._run(["scontrol", "show", "job", "-o", f"{job}_{index}"])
        for record in done.stdout.splitlines() if done.returncode == 0 else []:
            if _field(record, "ArrayJobId") == job and index in _indices(_field(record, "ArrayTaskId")):
                return task(_field(record, "JobState"), _field(record, "Reason"),
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
        return task(parts[0].split()[0], "", parts[2], parts[1])

    def find(self, name: str) -> str | None:
        """The id of the job named `name`, while Slurm knows it."""
        done = self._run(["squeue", "--noheader", "--states=all", f"--name={name}", "--format=%F"])
        ids = [line.strip() for line in done.stdout.splitlines() if line.strip().isdigit()]
        return ids[0] if done.returncode == 0 and ids else None

    def release(self, job: str) -> None:
        done = self._run(["scontrol", "release", job])
        if done.returncode != 0 and "already" not in done.stderr.lower():
            raise UsageError(f"scontrol could not release job {job}: {' '.join(done.stderr.split())}.")

    def cancel(self, jobs: list[str], index: int | None = None) -> None:
        """scancel, quietly: a target that already ended is not an error here."""
        targets = [job if index is None else f"{job}_{index}" for job in jobs if job]
        if targets:
            self._run(["scancel", *targets])

    def cancel_command(self, jobs: list[str]) -> str:
        return f"scancel {' '.join(jobs)}"

    def ending(self, ended: Task) -> tuple[str, str] | None:
        if ended.state not in ENDINGS:
            return None
        words, hint = ENDINGS[ended.state]
        return words + (_exit_words(ended.exit_code) if ended.state == "FAILED" else ""), hint

    def forgotten(self) -> str:
        return "Slurm no longer says how (the controller forgets a job MinJobAge seconds after it ends)"


def recorded_jobs(out: Path) -> list[str]:
    """The Slurm job ids an earlier `--executor slurm` run recorded in this results folder
    and did not see end."""
    return remote.recorded_jobs(out, Slurm)


def task_main(argv: list[str]) -> int:
    """One array task: `python -m cudalab.batching.slurm build|gpu FOLDER`, as the sbatch scripts run it."""
    return remote.task_main(Slurm, argv)


class SlurmExecutor(RemoteExecutor):
    """A batch as two Slurm job arrays (remote.RemoteExecutor through the Slurm adapter)."""

    name = "slurm"
    options = ("partition", "gpus_per_task", "max_parallel", "sbatch_arg", "poll_s")

    @classmethod
    def add_arguments(cls, group) -> None:
        group.add_argument("--partition", help="the Slurm partition of the jobs (a batch's two arrays, or the "
                           "course service's tries) (default: the cluster's default partition)")
        group.add_argument("--gpus-per-task", type=int, metavar="N",
                           help="GPUs each grading task asks for, as --gres=gpu:N (default 1: every grade "
                           "times on a GPU of its own)")
        group.add_argument("--max-parallel", type=int, metavar="N",
                           help="most tasks of each array that run at once (default: as many as Slurm gives); "
                           "with serve, most jobs in Slurm at once (default 16)")
        group.add_argument("--sbatch-arg", action="append", metavar="OPTION",
                           help="one more sbatch option for every job, written with '=' "
                           "(--sbatch-arg=--account=cs101); repeatable. It comes after cudalab's own, so "
                           "--sbatch-arg=--time=1:00:00 replaces the time limit")
        group.add_argument("--poll-s", type=float, metavar="SECONDS",
                           help=f"how often squeue is asked about the jobs (default {DEFAULT_POLL_S:g})")

    @classmethod
    def from_args(cls, config: Config, args) -> "SlurmExecutor":
        return cls(config, scheduler_from_args(args), poll_s=poll_s_from_args(args))


def scheduler_from_args(args, *, throttle: bool = True) -> Slurm:
    """The Slurm adapter that the options of add_arguments ask for (argparse's namespace),
    after checking them and that Slurm's commands are here; UsageError in a sentence.
    Without `throttle`, --max-parallel is the caller's own to apply (not an array's %N)."""
    for option, value in (("--gpus-per-task", args.gpus_per_task), ("--max-parallel", args.max_parallel)):
        if value is not None and value < 1:
            raise UsageError(f"{option} must be 1 or more.")
    poll_s_from_args(args)
    for option in args.sbatch_arg or []:
        if not option.startswith("-"):
            raise UsageError(f"--sbatch-arg takes one sbatch option, such as --sbatch-arg=--account=cs101; "
                             f"{option!r} is not an option.")
    slurm = Slurm(partition=args.partition, gpus_per_task=args.gpus_per_task or 1,
                  max_parallel=args.max_parallel if throttle else None, sbatch_args=list(args.sbatch_arg or []))
    missing = slurm.missing()
    if missing:
        raise UsageError(not_found(missing))
    return slurm


def poll_s_from_args(args) -> float:
    if args.poll_s is not None and not args.poll_s > 0:
        raise UsageError("--poll-s must be a positive number of seconds.")
    return args.poll_s or DEFAULT_POLL_S


if __name__ == "__main__":
    sys.exit(task_main(sys.argv[1:]))
