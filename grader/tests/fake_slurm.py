"""A stand-in for Slurm's commands on one machine, for the Slurm executor's tests: sbatch,
squeue, scontrol, scancel and sacct as this one program (`fake_slurm.py COMMAND ARGS`;
install() writes a wrapper for each into a folder to put first on PATH).

The state lives in the folder $FAKE_SLURM_DIR: jobs/<id>.json (what sbatch was asked),
jobs/<id>/task-<i>.json (each array task's state), jobs/<id>.held, cancel requests
(jobs/<id>/cancel, jobs/<id>/cancel-<i>), and calls.log (one line per command run). Each
sbatch starts a runner (`fake_slurm.py run-job ID`, in a session of its own, so it
outlives the command that submitted it, as a real cluster's jobs do) that runs the array's
tasks as local processes, as slurmd would: --hold and `scontrol release`,
--dependency=aftercorr (task i after task i of the other array COMPLETED) with
--kill-on-invalid-dep, the %N throttle, one fake GPU (--gres=gpu:1 tasks one at a time,
CUDA_VISIBLE_DEVICES=0), --time (TIMEOUT), scancel (CANCELLED) and the exit status
(COMPLETED, or FAILED with code:signal). Its output formats are real Slurm 22.05's, for
the fields cudalab reads. A partition named "nope" is refused as a real sbatch refuses an
unknown one, and with FAKE_SLURM_NO_RELEASE=1 `scontrol release` fails as it does when the
controller cannot be reached. Accounting is off: sacct says so and fails, as it does
without slurmdbd.
"""
from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

COMMANDS = ("sbatch", "squeue", "scontrol", "scancel", "sacct")
NODE = "fakenode"
ALIVE = ("PENDING", "RUNNING")


def install(bin_dir: Path, python: str = sys.executable) -> Path:
    """Wrappers sbatch, squeue, ... in bin_dir that run this program with `python`."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    for command in COMMANDS:
        wrapper = bin_dir / command
        wrapper.write_text(f"#!/bin/sh\nexec '{python}' '{Path(__file__).resolve()}' {command} \"$@\"\n")
        wrapper.chmod(0o755)
    return bin_dir


def state_dir() -> Path:
    return Path(os.environ["FAKE_SLURM_DIR"])


def _jobs() -> Path:
    return state_dir() / "jobs"


def _write(path: Path, body: dict) -> None:
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(body))
    os.replace(temporary, path)


def _read(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _stamp(epoch: float | None) -> str:
    return datetime.fromtimestamp(epoch).strftime("%Y-%m-%dT%H:%M:%S") if epoch else "Unknown"


def _fail(message: str, code: int = 1) -> int:
    print(message, file=sys.stderr)
    return code


# --- sbatch -----------------------------------------------------------------------------------

def _new_id() -> int:
    with open(state_dir() / "ids.lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        counter = state_dir() / "next_id"
        number = int(counter.read_text()) if counter.exists() else 1000
        counter.write_text(str(number + 1))
    return number


def _seconds(text: str) -> float:
    """--time: minutes, MM:SS or HH:MM:SS (D-HH... is not needed here)."""
    parts = [int(p) for p in text.split(":")]
    if len(parts) == 1:
        return parts[0] * 60.0
    if len(parts) == 2:
        return parts[0] * 60.0 + parts[1]
    return parts[0] * 3600.0 + parts[1] * 60.0 + parts[2]


def sbatch(argv: list[str]) -> int:
    options: dict[str, str] = {}
    flags: set[str] = set()
    script = None
    for word in argv:
        if word.startswith("--") and "=" in word:
            name, value = word[2:].split("=", 1)
            options[name] = value  # the last one wins, as in sbatch
        elif word.startswith("-"):
            flags.add(word.lstrip("-"))
        else:
            script = word
    if script is None or not Path(script).is_file():
        return _fail(f"sbatch: error: Unable to open file {script}")
    if options.get("partition") == "nope":
        return _fail("sbatch: error: invalid partition specified: nope\n"
                     "sbatch: error: Batch job submission failed: Invalid partition name specified")
    array, _, throttle = options.get("array", "0-0").partition("%")
    low, _, high = array.partition("-")
    dependency = options.get("dependency", "")
    if dependency and not (dependency.startswith("aftercorr:") and (_jobs() / f"{dependency[10:]}.json").exists()):
        return _fail("sbatch: error: Batch job submission failed: Job dependency problem")
    number = _new_id()
    job = {"id": str(number), "name": options.get("job-name", Path(script).name), "script": str(Path(script).resolve()),
           "indices": list(range(int(low), int(high or low) + 1)), "throttle": int(throttle) if throttle else 0,
           "after": dependency[10:] if dependency else None,
           "kill_on_invalid_dep": options.get("kill-on-invalid-dep", "no") == "yes",
           "gpus": int(options["gres"].rsplit(":", 1)[1]) if options.get("gres", "").startswith("gpu") else 0,
           "time_s": _seconds(options["time"]) if "time" in options else None,
           "output": options.get("output", str(Path.cwd() / "slurm-%A_%a.out")),
           "chdir": options.get("chdir", str(Path.cwd())), "env": dict(os.environ), "submitted": time.time()}
    folder = _jobs() / job["id"]
    folder.mkdir(parents=True)
    if "hold" in flags:
        (_jobs() / f"{job['id']}.held").touch()
    for index in job["indices"]:
        _write(folder / f"task-{index}.json", {"state": "PENDING", "reason": "None", "exit": "0:0"})
    _write(_jobs() / f"{job['id']}.json", job)
    runner = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "run-job", job["id"]],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=open(folder / "runner.log", "w"), start_new_session=True)
    (folder / "runner.pid").write_text(str(runner.pid))
    print(job["id"] if "parsable" in flags else f"Submitted batch job {job['id']}")
    return 0


# --- the runner: slurmd for one array ------------------------------------------------------------

class Runner:
    def __init__(self, job_id: str):
        self.job = _read(_jobs() / f"{job_id}.json")
        self.folder = _jobs() / job_id
        self.procs: dict[int, tuple[subprocess.Popen, float, object]] = {}  # index -> (process, start, GPU lock)

    def task(self, index: int) -> dict:
        return _read(self.folder / f"task-{index}.json")

    def set(self, index: int, **fields) -> None:
        _write(self.folder / f"task-{index}.json", {**self.task(index), **fields})

    def cancel_asked(self, index: int) -> bool:
        return (self.folder / "cancel").exists() or (self.folder / f"cancel-{index}").exists()

    def loop(self) -> None:
        while True:
            for index in self.job["indices"]:
                state = self.task(index)["state"]
                if state == "RUNNING":
                    self.watch(index)
                elif state == "PENDING":
                    self.consider(index)
            if all(self.task(i)["state"] not in ALIVE for i in self.job["indices"]):
                return
            time.sleep(0.05)

    def consider(self, index: int) -> None:
        if self.cancel_asked(index):
            self.set(index, state="CANCELLED", reason="None", end=time.time())
            return
        if (_jobs() / f"{self.job['id']}.held").exists():
            self.set(index, reason="JobHeldUser")
            return
        if self.job["after"]:
            before = _read(_jobs() / self.job["after"] / f"task-{index}.json") or {"state": "COMPLETED", "exit": "0:0"}
            if before["state"] in ALIVE:
                self.set(index, reason="Dependency")
                return
            if before["state"] != "COMPLETED" or before["exit"] != "0:0":
                if self.job["kill_on_invalid_dep"]:
                    self.set(index, state="CANCELLED", reason="DependencyNeverSatisfied", end=time.time())
                else:
                    self.set(index, reason="DependencyNeverSatisfied")
                return
        if self.job["throttle"] and len(self.procs) >= self.job["throttle"]:
            self.set(index, reason="JobArrayTaskLimit")
            return
        lock = None
        if self.job["gpus"]:
            lock = open(state_dir() / "gpu.lock", "a+")
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                lock.close()
                self.set(index, reason="Resources")
                return
        self.start(index, lock)

    def start(self, index: int, lock) -> None:
        job = self.job
        task_id = f"{job['id']}_{index}"
        env = {**job["env"], "SLURM_JOB_ID": task_id, "SLURM_ARRAY_JOB_ID": job["id"],
               "SLURM_ARRAY_TASK_ID": str(index), "SLURM_JOB_NAME": job["name"], "SLURMD_NODENAME": NODE}
        if job["gpus"]:
            env["CUDA_VISIBLE_DEVICES"] = ",".join(str(n) for n in range(job["gpus"]))
        output = job["output"].replace("%A", job["id"]).replace("%a", str(index)).replace("%j", task_id)
        with open(output, "a") as log:
            proc = subprocess.Popen([job["script"]], cwd=job["chdir"], env=env, stdin=subprocess.DEVNULL,
                                    stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.procs[index] = (proc, time.time(), lock)
        self.set(index, state="RUNNING", reason="None", start=time.time(), node=NODE)
        with open(state_dir() / "calls.log", "a") as calls:
            calls.write(f"run {job['name']} {index}\n")

    def stop(self, index: int, proc: subprocess.Popen) -> None:
        for sig, wait in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                pass
            try:
                proc.wait(wait)
                return
            except subprocess.TimeoutExpired:
                continue

    def watch(self, index: int) -> None:
        proc, started, lock = self.procs[index]
        ending = None
        if self.cancel_asked(index):
            self.stop(index, proc)
            ending = {"state": "CANCELLED", "reason": "None", "exit": "0:15"}
        elif self.job["time_s"] is not None and time.time() - started > self.job["time_s"]:
            self.stop(index, proc)
            ending = {"state": "TIMEOUT", "reason": "TimeLimit", "exit": "0:15"}
        elif proc.poll() is not None:
            code = proc.returncode
            ending = ({"state": "COMPLETED", "reason": "None", "exit": "0:0"} if code == 0 else
                      {"state": "FAILED", "reason": "NonZeroExitCode", "exit": f"{code}:0"} if code > 0 else
                      {"state": "FAILED", "reason": "JobLaunchFailure", "exit": f"0:{-code}"})
        if ending:
            if lock is not None:
                lock.close()
            del self.procs[index]
            self.set(index, end=time.time(), **ending)


# --- the query commands -------------------------------------------------------------------------

def _known(ids: list[str]) -> list[dict]:
    return [job for job in (_read(_jobs() / f"{i}.json") for i in ids) if job is not None]


def _tasks(job: dict):
    for index in job["indices"]:
        yield index, _read(_jobs() / job["id"] / f"task-{index}.json")


def _options(argv: list[str]) -> tuple[dict[str, str], set[str]]:
    options, flags = {}, set()
    for word in argv:
        if word.startswith("--") and "=" in word:
            name, value = word[2:].split("=", 1)
            options[name] = value
        else:
            flags.add(word.lstrip("-"))
    return options, flags


def squeue(argv: list[str]) -> int:
    options, _ = _options(argv)
    every = sorted((p.stem for p in _jobs().glob("*.json")), key=int)
    if "jobs" in options:
        jobs = _known(options["jobs"].split(","))
        if not jobs:
            return _fail("slurm_load_jobs error: Invalid job id specified")
    else:
        jobs = _known(every)
    if "name" in options:
        jobs = [job for job in jobs if job["name"] == options["name"]]
    every_state = options.get("states", "").lower() == "all"
    codes = {"F": lambda job, i, t: job["id"], "K": lambda job, i, t: str(i), "T": lambda job, i, t: t["state"],
             "N": lambda job, i, t: t.get("node", "") if t["state"] != "PENDING" else "",
             "r": lambda job, i, t: t.get("reason", "None"), "i": lambda job, i, t: f"{job['id']}_{i}",
             "j": lambda job, i, t: job["name"]}
    fmt = options.get("format", "%i %T")
    for job in jobs:
        for index, task in _tasks(job):
            if not every_state and task["state"] not in ALIVE:
                continue
            line, rest = "", fmt
            while rest:
                if rest[0] == "%" and len(rest) > 1 and rest[1] in codes:
                    line += codes[rest[1]](job, index, task)
                    rest = rest[2:]
                else:
                    line, rest = line + rest[0], rest[1:]
            print(line)
    return 0


def _record(job: dict, tasks: str, task: dict) -> str:
    fields = {"JobId": job["id"], "ArrayJobId": job["id"], "ArrayTaskId": tasks, "JobName": job["name"],
              "JobState": task["state"], "Reason": task.get("reason", "None"),
              "Dependency": f"aftercorr:{job['after']}_*" if job["after"] else "(null)",
              "ExitCode": task.get("exit", "0:0"), "SubmitTime": _stamp(job["submitted"]),
              "StartTime": _stamp(task.get("start")), "EndTime": _stamp(task.get("end")),
              "NodeList": task.get("node", ""), "BatchHost": task.get("node", ""),
              "StdOut": job["output"]}
    return " ".join(f"{k}={v}" for k, v in fields.items())


def scontrol(argv: list[str]) -> int:
    if argv[:1] == ["ping"]:
        print(f"Slurmctld(primary) at {NODE} is UP")
        return 0
    if argv[:1] == ["release"] and len(argv) == 2:
        if os.environ.get("FAKE_SLURM_NO_RELEASE") == "1":
            return _fail("scontrol: error: Unable to contact slurm controller (connect failure)")
        if not _known([argv[1]]):
            return _fail("scontrol: error: Invalid job id specified")
        (_jobs() / f"{argv[1]}.held").unlink(missing_ok=True)
        return 0
    if argv[:2] != ["show", "job"]:
        return _fail(f"scontrol: error: this fake knows ping, release and show job, not {' '.join(argv)}")
    target = [word for word in argv[2:] if word != "-o"][0]
    job_id, _, wanted = target.partition("_")
    jobs = _known([job_id])
    if not jobs:
        return _fail("slurm_load_jobs error: Invalid job id specified")
    waiting = []
    for index, task in _tasks(jobs[0]):
        if wanted and str(index) != wanted:
            continue
        if task["state"] == "PENDING" and not wanted:
            waiting.append(index)  # as Slurm does, the tasks not started yet are one record
        else:
            print(_record(jobs[0], str(index), task))
    if waiting:
        print(_record(jobs[0], f"{waiting[0]}-{waiting[-1]}" if len(waiting) > 1 else str(waiting[0]),
                      {"state": "PENDING", "reason": "None"}))
    return 0


def scancel(argv: list[str]) -> int:
    code = 0
    for target in argv:
        job_id, _, index = target.partition("_")
        if not _known([job_id]):
            code = _fail(f"scancel: error: Kill job error on job id {target}: Invalid job id specified")
            continue
        (_jobs() / job_id / (f"cancel-{index}" if index else "cancel")).touch()
    return code


def sacct(argv: list[str]) -> int:
    return _fail("Slurm accounting storage is disabled")


def main(argv: list[str]) -> int:
    command, rest = argv[0], argv[1:]
    if command == "run-job":
        Runner(rest[0]).loop()
        return 0
    _jobs().mkdir(parents=True, exist_ok=True)
    with open(state_dir() / "calls.log", "a") as calls:
        calls.write(" ".join([command, *rest]) + "\n")
    return {"sbatch": sbatch, "squeue": squeue, "scontrol": scontrol, "scancel": scancel, "sacct": sacct}[command](rest)


def stop_everything(folder: Path) -> None:
    """Cancel every job and wait for the runners (and so their tasks) to end: what a test
    leaves behind. Only the runners this fake started, by their pids."""
    for job in folder.glob("jobs/*.json"):
        (folder / "jobs" / job.stem / "cancel").touch()
    deadline = time.monotonic() + 30
    for pid_file in folder.glob("jobs/*/runner.pid"):
        pid = int(pid_file.read_text())
        while time.monotonic() < deadline and _running(pid):
            time.sleep(0.05)
        if _running(pid):
            os.kill(pid, signal.SIGKILL)


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
