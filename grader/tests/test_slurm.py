"""`cudalab batch --executor slurm` on the toy lab, through fake Slurm commands
(fake_slurm.py: sbatch, squeue, scontrol, scancel and sacct first on PATH, running the
array tasks as local processes): the same grades as the local executor, a head killed with
SIGKILL and resumed by attaching to its jobs, a head killed while submitting, a cancelled,
a failed and a timed-out task each reported and graded again by the next run, and the
sentences for a machine without Slurm or a submission Slurm refuses. The unit tests at the
end take apart what the head reads from Slurm and what it says about a task's end."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import fake_slurm
from cudalab.batching import batch, remote, slurm
from cudalab.outputs import publish
from cudalab.exit_codes import Cli
from test_batch import CLASS, DRIVER, outcome, records, write_handin

# What the local executor decides for test_batch.CLASS (test_the_class_is_graded_as_the_local_executor_grades_it
# holds it to a local run): (status, correctness points, performance points > 0).
EXPECTED = {"alice": ("graded", "60", True), "bob": ("graded", "40", False), "carol": ("compile_error", "0", False),
            "dave": ("graded", "60", False), "erin": ("graded", "20", False), "frank": ("graded", "60", True),
            "grace": ("graded", "60", True)}


@pytest.fixture
def fake_cluster(tmp_path, monkeypatch) -> Path:
    """The fake Slurm's state folder; its commands first on PATH. Every job it ran is
    cancelled and waited for at the end."""
    state = tmp_path / "fake-slurm"
    state.mkdir()
    bin_dir = fake_slurm.install(tmp_path / "fake-bin")
    monkeypatch.setenv("FAKE_SLURM_DIR", str(state))
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    yield state
    fake_slurm.stop_everything(state)


def make_class(folder: Path, students: dict) -> Path:
    folder.mkdir()
    for student, (form, behaviour) in students.items():
        if student == "frank":  # as test_batch's class: packed with a manifest that agrees with the name
            write_handin(folder, student, form, behaviour, manifest_student="frank")
        else:
            write_handin(folder, student, form, behaviour)
    return folder


@pytest.fixture
def handins(tmp_path) -> Path:
    return make_class(tmp_path / "handins", CLASS)


def start(toy_config, handins: Path, out: Path, *extra: str, executor: str = "slurm",
          env: dict | None = None) -> subprocess.Popen:
    options = ["--executor", "slurm", "--poll-s", "0.2"] if executor == "slurm" else ["--jobs", "3"]
    return subprocess.Popen([sys.executable, str(DRIVER), str(toy_config.root), str(toy_config.work_dir), "--",
                             "batch", "toy", str(handins), "--out", str(out), *options, *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def run_batch(toy_config, handins: Path, out: Path, *extra: str, **options) -> tuple[int, str, str]:
    proc = start(toy_config, handins, out, *extra, **options)
    stdout, stderr = proc.communicate(timeout=600)
    return proc.returncode, stdout, stderr


def calls(cluster: Path) -> list[str]:
    return (cluster / "calls.log").read_text().splitlines()


def wait_for(condition, what: str, timeout_s: float = 120.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def submitted(out: Path) -> list[dict]:
    """The ledger's submissions once both arrays are in it."""
    try:
        entries = json.loads((remote.remote_dir(out, slurm.Slurm) / remote.LEDGER_FILE).read_text())["submissions"]
    except (OSError, ValueError):
        return []
    return entries if entries and all(e["gpu_job"] for e in entries) else []


def index_of(out: Path, submission: dict, student: str) -> int:
    tasks = json.loads((remote.submission_folder(out, slurm.Slurm, submission["token"]) / remote.TASKS_FILE).read_text())
    return [job["student"] for job in tasks["jobs"]].index(student)


def results_folder(out: Path, handins: Path, submission: remote.Submission) -> Path:
    """A batch's results folder whose ledger holds `submission`, as a head left it."""
    out.mkdir()
    (out / batch.BATCH_FILE).write_text(json.dumps({"schema": batch.SCHEMA, "lab": "toy", "handins": str(handins)}))
    remote.Ledger(out, slurm.Slurm).add(submission)
    return out


def failure(out: Path, student: str) -> dict:
    result = records(out)[student]["result"]
    assert batch.is_scheduler_failure(result), result["status"]
    return result


# --- end to end -----------------------------------------------------------------------------

def test_the_class_is_graded_as_the_local_executor_grades_it(toy_config, handins, fake_cluster, tmp_path):
    code, _, stderr = run_batch(toy_config, handins, tmp_path / "local", executor="local")
    assert code == 0, stderr
    assert outcome(tmp_path / "local") == EXPECTED

    out = tmp_path / "slurm"
    code, stdout, stderr = run_batch(toy_config, handins, out, "--json")
    assert code == 0, stderr
    assert outcome(out) == EXPECTED
    found = records(out)
    assert set(found) == set(CLASS)
    for student, record in found.items():
        steps = record["result"]["provenance"]["slurm"]
        assert steps["build"]["node"] == "fakenode" and steps["build"]["queued_s"] >= 0
        # A hand-in that did not compile needs no GPU: its build task committed it.
        assert ("gpu" in steps) == (student != "carol"), student
        assert record["job"] == records(tmp_path / "local")[student]["job"]
    # The same outputs as a local batch: every student's feedback and the class's files.
    for student in CLASS:
        folder = publish.student_dir(out, student)
        assert (folder / "feedback.md").is_file() and (folder / "results.json").is_file()
    events = [json.loads(line) for line in stdout.splitlines()]
    started = [e["what"] for e in events if e["event"] == "started"]
    assert any(w.startswith("building on fakenode") for w in started)
    assert any(w == "grading on fakenode (GPU)" for w in started)
    assert sorted(e["student"] for e in events if e["event"] == "done") == sorted(CLASS)
    assert events[-1]["info"]["executor"] == "slurm" and events[-1]["info"]["complete"] is True
    # One submission of two arrays, held until both were in the ledger and released build
    # array first; every task ran once; the GPU tasks had the (one) GPU each to itself.
    sbatch = [line for line in calls(fake_cluster) if line.startswith("sbatch")]
    assert len(sbatch) == 2 and all("--hold" in line for line in sbatch)
    assert "--dependency=aftercorr:" in sbatch[1]
    releases = [line for line in calls(fake_cluster) if line.startswith("scontrol release")]
    assert releases == ["scontrol release 1000", "scontrol release 1001"]
    assert "--gres=gpu:1" in sbatch[1] and "--kill-on-invalid-dep=yes" in sbatch[1]
    runs = [line for line in calls(fake_cluster) if line.startswith("run ")]
    assert len(runs) == len(set(runs))
    # Nothing is left in the results folder's Slurm state but an empty ledger.
    assert submitted(out) == [] and [p.name for p in remote.remote_dir(out, slurm.Slurm).iterdir()] == [remote.LEDGER_FILE]


def test_a_head_killed_with_sigkill_is_resumed_by_attaching_to_its_jobs(toy_config, handins, fake_cluster,
                                                                       tmp_path):
    out = tmp_path / "out"
    proc = start(toy_config, handins, out)
    wait_for(lambda: len(list((out / "records").glob("*.json"))) >= 2, "two records")
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate()
    committed = records(out)
    assert 2 <= len(committed) < len(CLASS), "the batch ended before it could be killed"
    code, _, stderr = run_batch(toy_config, handins, out)
    assert code == 0, stderr
    assert "already queued or running on Slurm" in stderr
    final = records(out)
    assert set(final) == set(CLASS)
    for student, record in committed.items():  # nothing graded twice
        assert final[student]["result"]["provenance"]["seed"] == record["result"]["provenance"]["seed"]
    assert outcome(out) == EXPECTED
    # Nothing was submitted again and no task ran twice.
    assert len([line for line in calls(fake_cluster) if line.startswith("sbatch")]) == 2
    runs = [line for line in calls(fake_cluster) if line.startswith("run ")]
    assert len(runs) == len(set(runs))


def test_a_head_killed_while_submitting_leaves_nothing_running(toy_config, fake_cluster, tmp_path):
    """The head died after sbatch gave it the (held) build array, before the ledger had its
    id: the next run finds it by name, cancels it before any of it ran, and submits again."""
    students = {s: CLASS[s] for s in ("alice", "carol")}
    handins = make_class(tmp_path / "handins", students)
    out = tmp_path / "out"
    token = "20250101-000000-abcdef"
    script = tmp_path / "orphan.sh"
    script.write_text("#!/bin/sh\necho this must never run\nexit 1\n")
    script.chmod(0o755)
    held = subprocess.run(["sbatch", "--parsable", "--hold", f"--job-name={remote.job_name(token, 'build')}",
                           "--array=0-1", f"--output={tmp_path}/orphan-%a.log", str(script)],
                          capture_output=True, text=True, check=True).stdout.strip()
    results_folder(out, handins, remote.Submission(token, ["alice", "carol"], time.time()))
    code, _, stderr = run_batch(toy_config, handins, out)
    assert code == 0, stderr
    assert f"scancel {held}" in calls(fake_cluster)
    assert not any(line.startswith(f"run {remote.job_name(token, 'build')}") for line in calls(fake_cluster))
    assert {s: r["result"]["status"] for s, r in records(out).items()} == {"alice": "graded", "carol": "compile_error"}
    assert submitted(out) == []


def test_arrays_submitted_but_not_released_are_released_by_the_next_run(toy_config, fake_cluster, tmp_path):
    """The head stopped after both arrays were in the ledger, before it released them (here
    scontrol could not reach the controller): the next run releases them and follows them."""
    handins = make_class(tmp_path / "handins", {s: CLASS[s] for s in ("alice", "carol")})
    out = tmp_path / "out"
    code, _, stderr = run_batch(toy_config, handins, out, env={**os.environ, "FAKE_SLURM_NO_RELEASE": "1"})
    assert code == int(Cli.USAGE) and "scontrol could not release job 1000" in stderr and "Traceback" not in stderr
    [held] = submitted(out)
    assert not held["released"] and not records(out)
    code, _, stderr = run_batch(toy_config, handins, out)
    assert code == 0, stderr
    assert "following 2 hand-ins already queued or running on Slurm (jobs 1000, 1001)" in stderr
    assert len([line for line in calls(fake_cluster) if line.startswith("sbatch")]) == 2
    assert {s: r["result"]["status"] for s, r in records(out).items()} == {"alice": "graded", "carol": "compile_error"}


def test_a_cancelled_task_is_reported_and_graded_by_the_next_run(toy_config, fake_cluster, tmp_path):
    students = {s: CLASS[s] for s in ("alice", "bob", "grace")}
    handins = make_class(tmp_path / "handins", students)
    out = tmp_path / "out"
    proc = start(toy_config, handins, out)
    submission = wait_for(lambda: submitted(out), "the submission")[0]
    subprocess.run(["scancel", f"{submission['gpu_job']}_{index_of(out, submission, 'grace')}"], check=True)
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == int(Cli.INTERNAL), stderr
    assert "2 of 3 hand-ins have a grade; 1 not graded: the cluster's scheduler stopped the grade." in stderr
    result = failure(out, "grace")
    assert result["status"] == "error" and result["score"]["total"] == 0 and result["score"]["total_max"] == 100
    assert result["message"].startswith(f"The Slurm GPU task {submission['gpu_job']}_")
    assert "was cancelled (scancel" in result["message"] and "run the same `cudalab batch` command" in result["message"]
    assert result[batch.SCHEDULER_FAILURE]["state"] == "CANCELLED"
    # The outputs say it was not graded (never a zero in Canvas), with the sentence.
    rows = {row.split(",")[0]: row for row in (out / "gradebook.csv").read_text().splitlines()}
    assert ",failed_to_grade," in rows["grace"] and "was cancelled" in rows["grace"]
    canvas = {row.split(",")[2]: row for row in (out / "canvas.csv").read_text().splitlines()[2:]}
    assert canvas["grace"].endswith(",") and canvas["alice"].endswith(",100.00")
    assert "was cancelled" in (publish.student_dir(out, "grace") / "feedback.md").read_text()
    assert "Partial" in (out / "summary.html").read_text()
    # The next run grades it again, and only it.
    code, _, stderr = run_batch(toy_config, handins, out)
    assert code == 0, stderr
    assert "3 hand-ins, 2 graded before, 1 to grade now" in stderr
    assert records(out)["grace"]["result"]["status"] == "graded"


def test_a_failed_and_a_timed_out_task_are_reported(toy_config, fake_cluster, tmp_path):
    students = {"alice": ("folder", {"sample_ms": 1.0}),
                "mallory": ("folder", {"kill_build": True}),       # the build's process is killed (SIGKILL)
                "slowpoke": ("folder", {"build_sleep_s": 120})}    # past the tasks' time limit
    handins = make_class(tmp_path / "handins", students)
    out = tmp_path / "out"
    code, _, stderr = run_batch(toy_config, handins, out, "--sbatch-arg=--time=0:08")
    assert code == int(Cli.INTERNAL), stderr
    assert "Traceback" not in stderr
    assert records(out)["alice"]["result"]["status"] == "graded"
    killed = failure(out, "mallory")
    assert killed[batch.SCHEDULER_FAILURE]["state"] == "FAILED"
    assert "build task" in killed["message"] and "failed (killed by signal 9)" in killed["message"]
    log = Path(killed[batch.SCHEDULER_FAILURE]["log"])
    assert f"its log: {log}" in killed["message"] and log.is_file()  # kept for the instructor
    late = failure(out, "slowpoke")
    assert late[batch.SCHEDULER_FAILURE]["state"] == "TIMEOUT"
    assert "ran past its time limit before this hand-in was graded (give the tasks more time with " \
           "--sbatch-arg=--time=" in late["message"]
    assert submitted(out) == []


def test_without_slurm_or_with_a_refused_submission_the_batch_says_what_to_do(toy_config, handins, tmp_path,
                                                                           fake_cluster):
    empty = tmp_path / "no-slurm-here"
    empty.mkdir()
    code, _, stderr = run_batch(toy_config, handins, tmp_path / "out", env={**os.environ, "PATH": str(empty)})
    assert code == int(Cli.USAGE) and "Traceback" not in stderr
    assert "sbatch, squeue, scontrol, scancel were not found" in stderr and "Slurm login node" in stderr
    assert "--executor local" in stderr

    code, _, stderr = run_batch(toy_config, handins, tmp_path / "refused", "--partition", "nope")
    assert code == int(Cli.USAGE) and "Traceback" not in stderr
    assert "sbatch refused the build array: sbatch: error: invalid partition specified: nope" in stderr
    assert submitted(tmp_path / "refused") == [] and not records(tmp_path / "refused")

    for extra, said in ((["--jobs", "2"], "--jobs is an option of --executor local"),
                        (["--gpus-per-task", "0"], "--gpus-per-task must be 1 or more"),
                        (["--sbatch-arg=account"], "--sbatch-arg takes one sbatch option")):
        code, _, stderr = run_batch(toy_config, handins, tmp_path / "bad", *extra)
        assert code == int(Cli.USAGE) and said in stderr and "Traceback" not in stderr
    code, _, stderr = run_batch(toy_config, handins, tmp_path / "bad", "--partition", "gpu", executor="local")
    assert code == int(Cli.USAGE) and "--partition is an option of --executor slurm" in stderr


def test_grading_here_warns_of_the_jobs_an_earlier_slurm_run_left(toy_config, tmp_path):
    handins = make_class(tmp_path / "handins", {"alice": CLASS["alice"]})
    out = results_folder(tmp_path / "out", handins, remote.Submission("t", ["alice"], 0.0, "41", "42", True))
    code, _, stderr = run_batch(toy_config, handins, out, executor="local")
    assert code == 0, stderr
    assert "an earlier --executor slurm run of this batch submitted Slurm jobs 41, 42" in stderr
    assert "(scancel 41 42)" in stderr


def test_a_task_run_by_hand_says_what_it_is_for(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    done = subprocess.run([sys.executable, "-m", "cudalab.batching.slurm", "build", str(tmp_path)], capture_output=True,
                          text=True, env=env, cwd=Path(__file__).resolve().parents[1])
    assert done.returncode == 2 and "SLURM_ARRAY_TASK_ID is not set" in done.stderr
    done = subprocess.run([sys.executable, "-m", "cudalab.batching.slurm", "build", str(tmp_path)], capture_output=True,
                          text=True, env={**env, "SLURM_ARRAY_TASK_ID": "0"},
                          cwd=Path(__file__).resolve().parents[1])
    assert done.returncode == 1 and "tasks.json is unreadable" in done.stderr and "Traceback" not in done.stderr


# --- what the head reads from Slurm, and what it says ----------------------------------------

def test_array_task_ranges_are_read_as_scontrol_writes_them():
    assert slurm._indices("4") == [4]
    assert slurm._indices("3-6") == [3, 4, 5, 6]
    assert slurm._indices("0,2-4%2") == [0, 2, 3, 4]
    assert slurm._indices("") == []


def test_a_task_end_is_told_in_words_with_what_to_do(tmp_path):
    log = tmp_path / "gpu-3.log"
    log.write_text("")
    records_dir = tmp_path / "records"
    said = {state: remote.failure_message(slurm.Slurm(), "gpu", "12_3", slurm.task(state, exit_code=code), log, records_dir)
            for state, code in (("CANCELLED", "0:15"), ("FAILED", "1:0"), ("TIMEOUT", "0:15"),
                                ("OUT_OF_MEMORY", "0:125"), ("NODE_FAIL", "0:0"), ("PREEMPTED", "0:0"),
                                ("COMPLETED", "0:0"), ("SPECIAL_EXIT", "0:0"))}
    assert said["CANCELLED"].startswith("The Slurm GPU task 12_3 was cancelled (scancel")
    assert "failed (exit code 1) before" in said["FAILED"]
    assert "--sbatch-arg=--time=" in said["TIMEOUT"] and "--sbatch-arg=--mem=" in said["OUT_OF_MEMORY"]
    assert "its node failed" in said["NODE_FAIL"] and "preempted" in said["PREEMPTED"]
    assert f"without writing this hand-in's record to {records_dir}" in said["COMPLETED"]
    assert "ended as SPECIAL_EXIT" in said["SPECIAL_EXIT"]
    assert all(f"its log: {log}" in text and text.endswith("command again to grade it.") for text in said.values())
    forgotten = remote.failure_message(slurm.Slurm(), "build", "12_3", None, tmp_path / "never-started.log", records_dir)
    assert "Slurm no longer says how" in forgotten and "its log" not in forgotten


def test_when_a_grade_can_no_longer_come():
    submission = remote.Submission("t", ["a"], 0.0, build_job="10", gpu_job="11", released=True)
    watch = remote.Watch(job=None, submission=submission, index=0)

    def ended(build, gpu):
        live = {key: slurm.task(state) for key, state in ((("10", 0), build), (("11", 0), gpu)) if state}
        return remote.RemoteExecutor._ended(watch, live)
    assert ended("RUNNING", "PENDING") is None
    assert ended("COMPLETED", "RUNNING") is None
    assert ended("FAILED", "CANCELLED") == ("build", "FAILED")  # the build's end, not its dependent's
    assert ended("COMPLETED", "OUT_OF_MEMORY") == ("gpu", "OUT_OF_MEMORY")
    assert ended("COMPLETED", "COMPLETED") == ("gpu", "COMPLETED")  # but no record came
    assert ended(None, None) == ("build", "")  # Slurm has forgotten both
    assert ended("COMPLETED", None) == ("gpu", "")


def test_the_tasks_get_the_heads_configuration(toy_config):
    assert remote.config_from_json(json.loads(json.dumps(remote.config_to_json(toy_config)))) == toy_config
