"""The course service's Slurm executor (course/cluster.py) on the toy lab, through the fake
Slurm commands of test_slurm.py (fake_slurm.py: sbatch, squeue, scontrol, scancel first on
PATH, the jobs run as local processes), each job running `cudalab run` with the tests' fake
build (batch_driver.py): a try's lines streamed while its job runs, a student's failure
charged while a job Slurm cancels, times out or a signal kills is the grader's (refunded),
the service's stop cancelling its jobs and leaving them to be run again, a start cancelling
what a killed service left, and serve's Slurm options. Where CUDALAB_SLURM_TEST=1, one try
runs through the real Slurm that tools/slurm-ci.sh starts."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from sqlalchemy import select

import fake_slurm
import test_slurm_integration as integration
from course_server import GRADER, REPO_ROOT, write_course
from cudalab.batching import remote
from cudalab.batching.slurm import Slurm
from cudalab.course import cluster, queue, store
from cudalab.course.store import Job, JobKind, JobState
from cudalab.course.work import Executor, JobInterrupted, Order, Runner
from cudalab.exit_codes import Cli
from test_batch import DRIVER, write_handin
from test_slurm import fake_cluster, wait_for  # noqa: F401 (fake_cluster is a fixture)

place, real_slurm = integration.place, integration.real_slurm  # the real-Slurm test's fixtures


def executor(config, shared: Path, **options) -> cluster.SlurmExecutor:
    """The Slurm executor whose jobs run `cudalab` through the tests' driver (the fake build)."""
    slurm = Slurm(sbatch_args=options.pop("sbatch_args", []))
    return cluster.SlurmExecutor(slurm, shared, poll_s=0.2, **options,
                                 cudalab=[sys.executable, str(DRIVER), str(config.root), str(config.work_dir), "--"])


def order(tmp_path: Path, behaviour: dict, job_id: int = 1) -> Order:
    (tmp_path / "uploads").mkdir(exist_ok=True)
    archive = write_handin(tmp_path / "uploads", f"student{job_id}", "tar.gz", behaviour)
    scratch = tmp_path / f"scratch-{job_id}"
    scratch.mkdir()
    return Order(job_id, JobKind.TRY, "toy", archive, False, scratch)


class Running:
    """executor.run in a thread of its own, as the runner's worker runs it: its lines, each
    with the fake Slurm's state of the job when it came, and its outcome or exception."""

    def __init__(self, executor: cluster.SlurmExecutor, job: Order, cluster_dir: Path):
        self.cluster_dir, self.lines, self.outcome, self.error = cluster_dir, [], None, None
        self.thread = threading.Thread(target=self._run, args=(executor, job), daemon=True)
        self.thread.start()

    def _run(self, executor, job):
        try:
            self.outcome = executor.run(job, 0, self.emit)
        except BaseException as err:  # kept for the test to look at
            self.error = err

    def emit(self, text: str) -> None:
        self.lines.append((text, self.job_state()))

    def job_state(self) -> str | None:
        tasks = sorted(self.cluster_dir.glob("jobs/*/task-0.json"))
        return json.loads(tasks[-1].read_text())["state"] if tasks else None

    def job_id(self) -> str:
        return wait_for(lambda: next((p.stem for p in self.cluster_dir.glob("jobs/*.json")), None), "the job")

    def wait_running(self) -> str:
        job = self.job_id()
        wait_for(lambda: self.job_state() == "RUNNING", "the job to run")
        return job

    def join(self, timeout_s: float = 120.0):
        self.thread.join(timeout_s)
        assert not self.thread.is_alive(), "the executor's run did not return"
        return self.outcome


def sbatch_calls(cluster_dir: Path) -> list[str]:
    return [c for c in (cluster_dir / "calls.log").read_text().splitlines() if c.startswith("sbatch")]


# --- a try through (fake) Slurm ---------------------------------------------------------------

def test_a_try_is_one_slurm_job_whose_lines_come_while_it_runs(toy_env, fake_cluster, tmp_path):
    shared = tmp_path / "course" / ".slurm"
    running = Running(executor(toy_env, shared), order(tmp_path, {"sample_ms": 1.0, "build_sleep_s": 2}),
                      fake_cluster)
    outcome = running.join()
    assert running.error is None, running.error
    assert outcome.exit_code == 0 and not outcome.grader_failed, running.lines
    assert outcome.verdict is not None and outcome.verdict.get("status") == "passed", outcome.verdict
    # the job's own lines (cudalab run's, from its Slurm log) arrived while Slurm still ran it
    from_log = [text for text, state in running.lines if state == "RUNNING" and not text.startswith("Slurm job")]
    assert from_log, running.lines
    assert any("passed" in text for text, _ in running.lines)  # the verdict, case by case
    [submitted] = sbatch_calls(fake_cluster)
    assert "--gres=gpu:1" in submitted and "--hold" in submitted and "--dependency" not in submitted
    assert list(shared.iterdir()) == []  # the job's folder (upload, log, verdict) is gone


def test_a_students_failure_is_charged_but_slurms_ends_are_the_graders(toy_env, fake_cluster, tmp_path):
    failing = Running(executor(toy_env, tmp_path / "a"), order(tmp_path, {"wrong_cases": ["c_7"]}, 1), fake_cluster)
    outcome = failing.join()
    assert outcome.exit_code == 1 and not outcome.grader_failed  # Slurm says FAILED 1:0: the student's code

    killed = Running(executor(toy_env, tmp_path / "b"), order(tmp_path, {"kill_build": True}, 2), fake_cluster)
    outcome = killed.join()
    assert outcome.grader_failed and outcome.exit_code is None  # FAILED 0:9: a signal, not the code's exit
    assert "killed by signal 9" in outcome.summary and "did not count" in outcome.summary


@pytest.mark.parametrize("how", ["scancel", "timeout"])
def test_a_job_slurm_cancels_or_times_out_is_refunded(how, toy_env, fake_cluster, tmp_path):
    options = {"sbatch_args": ["--time=0:03"]} if how == "timeout" else {}
    running = Running(executor(toy_env, tmp_path / "shared", **options),
                      order(tmp_path, {"build_sleep_s": 60}), fake_cluster)
    job = running.wait_running()
    if how == "scancel":
        subprocess.run(["scancel", job], check=True)
    outcome = running.join()
    assert running.error is None, running.error
    assert outcome.grader_failed and outcome.exit_code is None
    words = "was cancelled" if how == "scancel" else "ran past its time limit"
    assert words in outcome.summary and "did not count" in outcome.summary
    assert any(words in text for text, _ in running.lines)


# --- the service's stop and start --------------------------------------------------------------

def test_stopping_the_service_cancels_its_jobs_and_leaves_them_to_run_again(toy_env, fake_cluster, tmp_path):
    shared = tmp_path / "shared"
    slurm_executor = executor(toy_env, shared)
    running = Running(slurm_executor, order(tmp_path, {"build_sleep_s": 60}), fake_cluster)
    job = running.wait_running()
    slurm_executor.stop()
    running.join(30)
    assert isinstance(running.error, JobInterrupted)  # the runner leaves the job to the next start's requeue
    assert f"scancel {job}" in (fake_cluster / "calls.log").read_text().splitlines()
    wait_for(lambda: running.job_state() == "CANCELLED", "Slurm to cancel the job", 30)
    assert list(shared.iterdir()) == []
    with pytest.raises(JobInterrupted):  # nothing more is submitted once it stopped
        slurm_executor.run(order(tmp_path, {"sample_ms": 1.0}, 2), 0, lambda text: None)
    assert len(sbatch_calls(fake_cluster)) == 1


def test_a_run_the_stop_interrupted_is_left_to_the_next_start_not_stored_as_failed(tmp_path):
    """The runner's side of a stop: a job whose run raised JobInterrupted keeps its state
    (running) and charge, so that the next start queues it again, rather than being stored
    as the grader's failure."""
    class Interrupted(Executor):
        def run(self, order, slot, emit):
            emit("started")
            raise JobInterrupted()

    sessions = store.open_database(f"sqlite:///{tmp_path / 'course.db'}")
    with sessions() as session:
        session.add(store.Student(id="s000"))
        session.add(store.Upload(sha256="0" * 64, size=1))
        session.flush()
        queue.enqueue(session, kind=JobKind.TRY, student_id="s000", lab="toy", upload_sha256="0" * 64)
        session.commit()
    runner = Runner(sessions, tmp_path, Interrupted(), tmp_path / "scratch")
    runner.run_one(queue.claim(sessions), 0)
    with sessions() as session:
        job = session.scalars(select(Job)).one()
        assert job.state == JobState.RUNNING and job.charged and job.finished_at is None
        assert [line.text for line in job.lines] == ["started"]
    assert queue.recover(sessions) == (1, 0)


def test_a_start_cancels_the_jobs_a_killed_service_left(toy_env, fake_cluster, tmp_path):
    shared = tmp_path / "shared"
    first = executor(toy_env, shared)
    running = Running(first, order(tmp_path, {"build_sleep_s": 60}), fake_cluster)
    job = running.wait_running()  # the service is "killed" here: its thread is simply abandoned
    executor(toy_env, shared).start()
    assert f"scancel {job}" in (fake_cluster / "calls.log").read_text().splitlines()
    wait_for(lambda: running.job_state() == "CANCELLED", "Slurm to cancel the left job", 30)
    assert list(shared.iterdir()) == []
    running.join()


# --- serve's options ----------------------------------------------------------------------------

def serve(tmp_path: Path, *options: str, path: str | None = None) -> subprocess.CompletedProcess:
    folder = tmp_path / "course"
    write_course(folder, 1)
    env = {**os.environ, "PYTHONPATH": str(GRADER)}
    if path is not None:
        env["PATH"] = path
    return subprocess.run([sys.executable, "-m", "cudalab", "serve", "--course", str(folder), "--port", "1",
                           *options], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120)


def test_serve_takes_batchs_slurm_options_and_refuses_them_for_other_executors(tmp_path):
    refused = serve(tmp_path, "--executor", "standin", "--partition", "gpu")
    assert refused.returncode == int(Cli.USAGE), refused.stderr
    assert "--partition is an option of --executor slurm, not of --executor standin" in refused.stderr
    without_slurm = serve(tmp_path, "--executor", "slurm", "--partition", "gpu", "--max-parallel", "4",
                          path=str(Path(sys.executable).parent))
    assert without_slurm.returncode == int(Cli.USAGE), without_slurm.stderr
    assert "sbatch" in without_slurm.stderr and "were not found" in without_slurm.stderr
    assert "not yet" not in without_slurm.stderr and "cannot send jobs to Slurm" not in without_slurm.stderr
    for done in (refused, without_slurm):
        assert "Traceback" not in done.stderr + done.stdout


# --- through a real Slurm (CUDALAB_SLURM_TEST=1) ------------------------------------------------

def test_a_try_runs_through_the_real_slurm(place, monkeypatch):
    base, root, _, _ = place
    for name, value in integration.toy_env().items():
        monkeypatch.setenv(name, value)
    # The Slurm job inherits this environment: no official-build setting of the caller's
    # (tools/test.sh exports CUDALAB_BUILD_DIR) may point it at the real build.
    monkeypatch.delenv("CUDALAB_BUILD_DIR", raising=False)
    monkeypatch.setenv("CUDALAB_ROOT", str(root))
    monkeypatch.setenv("CUDALAB_PRESET", "ci")
    monkeypatch.setenv("CUDALAB_WORK_DIR", str(base / "work"))
    folder = base / "course-try"
    folder.mkdir()
    archive = write_handin(folder, "ann", "tar.gz", {"sample_ms": 1.0})
    (folder / "scratch").mkdir()
    lines: list[str] = []
    slurm_executor = cluster.SlurmExecutor(Slurm(), remote.remote_dir(folder, Slurm), poll_s=0.5,
                                           cudalab=[sys.executable, str(DRIVER), str(root), str(base / "work"), "--"])
    slurm_executor.start()
    try:
        outcome = slurm_executor.run(Order(1, JobKind.TRY, "toy", archive, False, folder / "scratch"), 0, lines.append)
    finally:
        slurm_executor.stop()
    assert outcome.exit_code == 0 and not outcome.grader_failed, lines
    assert lines[0].startswith("Slurm job ") and any("passed" in line for line in lines[1:]), lines
