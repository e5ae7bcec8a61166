"""`cudalab batch --executor slurm` through a real Slurm: the one-node cluster that
tools/slurm-ci.sh starts in CI (one fake GPU as GRES), or any Slurm that `scontrol ping`
reaches. It runs only where CUDALAB_SLURM_TEST=1 says so (it submits jobs); .ci/run sets
it after starting the cluster, and then a Slurm that does not answer fails the test
instead of skipping it.

A mixed class of the toy lab (tests' fake build, batch_driver.py: correct, wrong, not
compiling, hung, hostile) is graded through Slurm and compared with the local executor's
grades of the same class; a head is killed with SIGKILL and the next attaches to its jobs;
a task cancelled with scancel is reported and graded again by the next run. One real
vector_add hand-in (the course's solution) is built with nvcc in a Slurm task, and its GPU
step says "not run" as a local grade does on a machine without a GPU. The timings of the
uninterrupted run are printed (pytest -s) for capacity planning."""
from __future__ import annotations

import functools
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

import conftest
from cudalab.batching import batch, remote, slurm
from cudalab.outputs import publish
from cudalab.isolation import trees
from cudalab.exit_codes import Cli
from test_batch import DRIVER, outcome, records, write_handin

GRADER = Path(__file__).resolve().parents[1]

# In the order of their array indices (sorted by hand-in name): zoe's tasks come last, so
# that hers are still queued when the test cancels one.
CLASS = {
    "alice": ("folder", {"sample_ms": 1.0}),                       # correct
    "bob": ("tar.gz", {"wrong_cases": ["c_7"]}),                   # wrong
    "carol": ("zip", {"compile_error": True}),                     # does not compile
    "hank": ("folder", {"hang": True}),                            # hangs: the run's time limit stops it
    "mallory": ("folder", {"sample_ms": 0.5, "skip_after": 25}),  # stops computing after 25 timed calls
    "x;touch PWNED #": ("tar.gz", {"sample_ms": 1.0}),              # an id that is shell, never a path
    "zoe": ("folder", {"sample_ms": 1.5}),                         # correct
}


@functools.cache
def _slurm_problem() -> str | None:
    """Why no Slurm can be used here, or None."""
    if shutil.which("scontrol") is None or shutil.which("sbatch") is None:
        return "Slurm's commands (scontrol, sbatch) are not installed"
    try:
        ping = subprocess.run(["scontrol", "ping"], capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        return "`scontrol ping` did not answer in 30 s"
    if ping.returncode != 0 or "UP" not in ping.stdout:
        return f"`scontrol ping` says the controller is not up: {' '.join((ping.stdout + ping.stderr).split())}"
    return None


@pytest.fixture(scope="module")
def real_slurm():
    """Only with CUDALAB_SLURM_TEST=1 (it submits jobs); then Slurm must answer."""
    if os.environ.get("CUDALAB_SLURM_TEST") != "1":
        pytest.skip("grades through a real Slurm only with CUDALAB_SLURM_TEST=1 (it submits jobs): "
                    "eval \"$(bash tools/slurm-ci.sh start)\" starts a one-node cluster for it")
    problem = _slurm_problem()
    if problem:
        pytest.fail(f"CUDALAB_SLURM_TEST=1 but {problem}; start one with `eval \"$(bash tools/slurm-ci.sh start)\"`")


class Heads:
    """The batch processes a test starts, and what their runs submitted: all stopped at the end."""

    def __init__(self, base: Path):
        self.base = base
        self.procs: list[subprocess.Popen] = []
        self.outs: set[Path] = set()

    def start(self, argv: list[str], out: Path, env: dict) -> subprocess.Popen:
        self.outs.add(out)
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        self.procs.append(proc)
        return proc

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        jobs = sorted({job for out in self.outs for job in slurm.recorded_jobs(out)})
        if jobs:
            subprocess.run(["scancel", *jobs], capture_output=True, timeout=60)
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and subprocess.run(
                    ["squeue", "--noheader", f"--jobs={','.join(jobs)}", "--format=%i"],
                    capture_output=True, text=True).stdout.strip():
                time.sleep(0.2)


@pytest.fixture(scope="module")
def place(real_slurm):
    """A folder the sandbox user can reach, with the toy lab's repository and the class."""
    base = Path(tempfile.mkdtemp(prefix="cudalab-slurm-test-", dir="/tmp" if os.geteuid() == 0 else None))
    base.chmod(0o755)
    root = base / "repo"
    (root / "labs" / "toy").mkdir(parents=True)
    # A hung run is stopped after 5 s (the lab's time limit), not the usual 30.
    (root / "labs" / "toy" / "lab.toml").write_text(
        conftest.TOY_LAB_TOML.replace("zero_marks_ratio = 3.00\n", "zero_marks_ratio = 3.00\ntime_limit_s = 5\n"))
    (root / "CMakeLists.txt").write_text("# toy\n")
    conftest.write_fake(root / "build" / "ci" / "bin" / "toy_solution", name="toy_solution", sample_ms=2.0)
    conftest.write_fake(root / "build" / "ci" / "bin" / "toy_checker", role="checker")
    conftest.seal(root)
    handins = base / "handins"
    handins.mkdir()
    for student, (form, behaviour) in CLASS.items():
        write_handin(handins, student, form, behaviour)
    heads = Heads(base)
    yield base, root, handins, heads
    heads.stop()
    trees.remove_tree(base)  # also unmounts run folders left mounted


def toy_env() -> dict:
    """The toy runs' environment: none of the caller's official-build settings; this
    checkout's grader importable in the tasks too."""
    env = {k: v for k, v in os.environ.items() if k not in ("CUDALAB_BUILD_DIR", "CUDALAB_ROOT", "CUDALAB_WORK_DIR")}
    return {**env, "PYTHONPATH": str(GRADER)}


def start_toy(place, out: Path, *extra: str) -> subprocess.Popen:
    base, root, handins, heads = place
    argv = [sys.executable, str(DRIVER), str(root), str(base / "work"), "--", "batch", "toy", str(handins),
            "--out", str(out), *extra]
    return heads.start(argv, out, toy_env())


def finish(proc: subprocess.Popen) -> tuple[int, str, str]:
    stdout, stderr = proc.communicate(timeout=900)
    return proc.returncode, stdout, stderr


SLURM = ("--executor", "slurm", "--poll-s", "0.5")


@pytest.fixture(scope="module")
def local_outcome(place) -> dict:
    base = place[0]
    code, _, stderr = finish(start_toy(place, base / "local", "--jobs", "2"))
    assert code == 0, stderr
    found = outcome(base / "local")
    assert found["carol"][0] == "compile_error" and found["alice"] == ("graded", "60", True)
    return found


def _timings(out: Path, wall_s: float) -> dict:
    """What the run cost, from the records' provenance.slurm: per step, the wait before
    the task ran (build: since the submission; GPU: since its build ended) and its own
    time in cudalab (after the interpreter started)."""
    steps: dict[str, dict[str, list[float]]] = {"build": {"queued_s": [], "wall_s": []},
                                               "gpu": {"queued_s": [], "wall_s": []}}
    for record in records(out).values():
        for step, info in record["result"]["provenance"]["slurm"].items():
            if step in steps:
                for key in ("queued_s", "wall_s"):
                    steps[step][key].append(info[key])
    summary = {"handins": len(records(out)), "batch_wall_s": round(wall_s, 1)}
    for step, values in steps.items():
        for key, numbers in values.items():
            if numbers:
                summary[f"{step}_{key}"] = {"median": round(statistics.median(numbers), 2),
                                            "max": round(max(numbers), 2)}
    return summary


def test_a_mixed_class_through_slurm_gets_the_local_grades(place, local_outcome):
    base = place[0]
    out = base / "slurm"
    started = time.monotonic()
    code, _, stderr = finish(start_toy(place, out, *SLURM))
    wall_s = time.monotonic() - started
    assert code == 0, stderr
    assert outcome(out) == local_outcome
    found = records(out)
    assert found["hank"]["result"]["run"]["status"] == "timeout"
    assert found["mallory"]["result"]["performance"]["status"] == "zero"  # its first skipped call was caught
    assert found["x;touch PWNED #"]["job"]["key"] == publish.safe_id("x;touch PWNED #")
    assert not list(base.rglob("PWNED")) and not Path("PWNED").exists()
    for record in found.values():  # graded in Slurm's tasks, the GPU step with the GPU Slurm gave it
        steps = record["result"]["provenance"]["slurm"]
        assert steps["build"]["job"].split("_")[0].isdigit()
        assert ("gpu" in steps) == (record["result"]["status"] != "compile_error")
    assert slurm.recorded_jobs(out) == []
    print("\nSlurm timings of the toy class:", json.dumps(_timings(out, wall_s), indent=1))


def test_a_killed_head_is_resumed_and_a_cancelled_task_is_reported(place, local_outcome):
    base = place[0]
    out = base / "resumed"
    first = start_toy(place, out, *SLURM)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not list((out / "records").glob("*.json")):
        time.sleep(0.1)
    assert first.poll() is None, "the batch ended before it could be killed"
    os.kill(first.pid, signal.SIGKILL)
    first.communicate()
    committed = records(out)
    assert committed and len(committed) < len(CLASS)

    second = start_toy(place, out, *SLURM)
    said = []
    for line in second.stderr:  # once it follows the jobs, one is cancelled under its eyes
        said.append(line)
        if "already queued or running on Slurm" in line:
            break
    [submission] = remote.Ledger(out, slurm.Slurm).submissions
    tasks = json.loads((remote.submission_folder(out, slurm.Slurm, submission.token) / remote.TASKS_FILE).read_text())
    index = [job["student"] for job in tasks["jobs"]].index("zoe")
    subprocess.run(["scancel", f"{submission.gpu_job}_{index}"], check=True, timeout=60)
    code, _, rest = finish(second)
    stderr = "".join(said) + rest
    assert code == int(Cli.INTERNAL), stderr
    assert "already queued or running on Slurm" in stderr
    zoe = records(out)["zoe"]["result"]
    assert batch.is_scheduler_failure(zoe) and zoe[batch.SCHEDULER_FAILURE]["state"] == "CANCELLED"
    assert f"The Slurm GPU task {submission.gpu_job}_{index} was cancelled" in zoe["message"]
    for student, record in committed.items():  # nothing graded twice
        assert records(out)[student]["result"]["provenance"]["seed"] == record["result"]["provenance"]["seed"]

    code, _, stderr = finish(start_toy(place, out, *SLURM))
    assert code == 0, stderr
    assert f"{len(CLASS) - 1} graded before, 1 to grade now" in stderr
    assert outcome(out) == local_outcome


@pytest.mark.needs_build
def test_a_real_handin_is_built_by_nvcc_in_a_task_and_not_run_without_a_gpu(place):
    base, _, _, heads = place
    build_dir = conftest.official_build_dir()
    handins = base / "vector_add-handins"
    shutil.copytree(conftest.REPO_ROOT / "solutions" / "vector_add", handins / "s1001",
                    ignore=shutil.ignore_patterns("ladder"))
    env = {**os.environ, "PYTHONPATH": str(GRADER), "CUDALAB_ROOT": str(conftest.REPO_ROOT),
           "CUDALAB_BUILD_DIR": str(build_dir), "CUDALAB_WORK_DIR": str(base / "vector_add-work")}
    results = {}
    for executor, extra in (("local", ()), ("slurm", SLURM[2:])):
        out = base / f"vector_add-{executor}"
        argv = [sys.executable, "-m", "cudalab", "batch", "vector_add", str(handins), "--out", str(out),
                "--executor", executor, *extra]
        code, _, stderr = finish(heads.start(argv, out, env))
        results[executor] = records(out)["s1001"]["result"]
        # Without a GPU (CI) the hand-in is not run: no grade, and the batch exits as `grade` would.
        assert code == (int(Cli.NO_DEVICE) if results[executor]["status"] == "not_run" else 0), stderr
    local, on_slurm = results["local"], results["slurm"]
    assert on_slurm["build"]["status"] == local["build"]["status"] == "built"
    assert on_slurm["status"] == local["status"]
    if local["status"] == "not_run":  # no GPU here (CI): said as a local grade says it
        assert on_slurm["score"] is None and "no grade was given" in on_slurm["message"].lower()
    assert "gpu" in on_slurm["provenance"]["slurm"]
