"""The course service's local executor run for real: `python -m cudalab run|check` in a
subprocess of the service's runner, on the toy lab with the tests' fake build
(batch_driver.py: a hand-in's toy.cu says on its first line how its 'program' behaves), so
every try goes through the same CLI, sandbox and checker as `cudalab run` does."""
from __future__ import annotations

import gzip
import io
import sys
import tarfile
from pathlib import Path

import pytest

from cudalab import cli
from cudalab.course import queue, store, work
from cudalab.course.store import Job, JobKind, JobLine, JobState
from cudalab.building import sdk as sdk_module

DRIVER = Path(__file__).resolve().parent / "batch_driver.py"


def tar_gz(files: dict[str, bytes]) -> bytes:
    """A .tar.gz of `files`, the same bytes for the same files."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return gzip.compress(buffer.getvalue(), mtime=0)


def toy_archive(behaviour: dict) -> bytes:
    """A hand-in of the toy lab, as `cudalab pack` makes one, whose fake build behaves as told."""
    return tar_gz({"toy.cu": f"// {behaviour!r}\n__global__ void toy() {{}}\n".encode()})


@pytest.fixture
def runner(toy_env, tmp_path):
    """A runner over a fresh course database whose local executor runs the real CLI (with the
    fake build) on the toy repository; yields (runner, try_job) where try_job(behaviour,
    bench=False) queues a try and runs it to its end."""
    sdk = toy_env.build_dir / "sdk" / "toy"   # what `run` checks the official build has; the build itself is fake
    sdk.mkdir(parents=True)
    (sdk / "sdk.cmake").write_text("# toy\n")
    (sdk / "build.json").write_text('{"compile": "true CMakeFiles/toy.dir/toy.o", "object": "CMakeFiles/toy.dir/toy.o", "link": "true", "binary": "toy_submission"}')
    build = toy_env.build_dir
    sdk_module.write_manifest(build / sdk_module.MANIFEST_NAME, build,
                              sorted((build / "bin").iterdir()) + sorted(sdk.iterdir()))
    course = tmp_path / "course"
    course.mkdir()
    sessions = store.open_database(f"sqlite:///{course / 'course.db'}")
    with sessions() as session:
        session.add(store.Student(id="s001", name="Student One"))
        session.commit()
    executor = work.LocalExecutor(gpus=[], time_limit_s=120,
                                  cudalab=[sys.executable, str(DRIVER), str(toy_env.root), str(toy_env.work_dir), "--"])
    the_runner = work.Runner(sessions, course, executor, tmp_path / "scratch")

    def try_job(behaviour: dict, bench: bool = False) -> tuple[Job, list[str]]:
        sha = store.store_upload(course, toy_archive(behaviour))
        with sessions() as session:
            session.merge(store.Upload(sha256=sha, size=1))
            queue.enqueue(session, kind=JobKind.TRY, student_id="s001", lab="toy", upload_sha256=sha, bench=bench)
            session.commit()
        job = queue.claim(sessions)
        the_runner.run_one(job, 0)
        with sessions() as session:
            done = session.get(Job, job.id)
            session.expunge(done)
            lines = [line.text for line in session.query(JobLine).filter_by(job_id=job.id).order_by(JobLine.seq)]
        return done, lines

    yield the_runner, try_job
    sessions.kw["bind"].dispose()


def test_a_passing_try_is_done_charged_and_its_cases_streamed(runner):
    _, try_job = runner
    job, lines = try_job({})
    assert (job.state, job.exit_code, job.charged) == (JobState.DONE, 0, True), lines
    assert job.verdict["status"] == "passed" and job.summary == "every case passed"
    for case in ("c_1", "c_7", "c_300"):
        assert any(line.strip().startswith(f"{case}: passed") for line in lines), lines


def test_a_bench_try_gives_the_leaderboard_a_ratio(runner, capsys):
    _, try_job = runner
    assert cli.main(["calibrate", "toy", "--samples", "10", "--warmup", "1"]) == 0  # the reference's 2 ms on the fake GPU
    job, lines = try_job({"sample_ms": 4.0}, bench=True)
    assert (job.state, job.exit_code) == (JobState.DONE, 0), lines
    assert job.ratio == pytest.approx(2.0, rel=0.1) and job.noise is not None
    assert any("b_1000" in line and "the reference's time" in line for line in lines), lines
    # Every case ran first: a ratio on the board is always a fully correct submission's.
    passed_at = next(i for i, line in enumerate(lines) if line.startswith("Every case passed"))
    assert any(line.strip().startswith("c_7: passed") for line in lines[:passed_at]), lines


def test_a_bench_try_whose_cases_fail_is_never_timed(runner):
    _, try_job = runner
    job, lines = try_job({"sample_ms": 1.0, "wrong_cases": ["c_7"]}, bench=True)
    assert (job.state, job.exit_code) == (JobState.DONE, 1), lines
    assert job.ratio is None and not any(line.startswith("Every case passed") for line in lines), lines


def test_a_failing_try_streams_its_first_mismatch(runner):
    _, try_job = runner
    job, lines = try_job({"wrong_cases": ["c_7"]})
    assert (job.state, job.exit_code, job.charged) == (JobState.DONE, 1, True), lines
    assert any(line.strip().startswith("c_7: failed") and "is wrong: expected" in line for line in lines), lines
    assert job.ratio is None


def test_a_grader_failure_is_refunded(runner):
    _, try_job = runner
    job, lines = try_job({"no_device": True})
    assert (job.state, job.exit_code, job.charged) == (JobState.GRADER_FAILED, 23, False), lines
    assert "did not count" in job.summary


def test_a_hand_in_is_checked_by_the_real_check(runner, tmp_path):
    """`cudalab check --no-run` in a subprocess: its receipt comes back as the service keeps it.
    (A hand-in that passes needs the real compiler: the GPU drill, tools/course-drill.py.)"""
    the_runner, _ = runner
    stray = tmp_path / "stray.tar.gz"
    stray.write_bytes(tar_gz({"toy.cu": b"// {}\n", "notes.exe": b"\x7fELF"}))
    receipt = the_runner.executor.check_hand_in(stray, "toy", tmp_path)
    assert receipt["accepted"] is False
    files = next(check for check in receipt["checks"] if check["name"] == "files")
    assert files["verdict"] == "failed" and any("notes.exe" in f["message"] for f in files["findings"]), files
