"""Runs `cudalab batch` in a process of its own on the toy lab, as the tests' SIGKILL cases
need: the submission 'build' is the tests' fake one (fake_program.py), whose behaviour the
hand-in's toy.cu gives as a Python dict literal on its first line (`// {'sample_ms': 1.0}`;
the build itself also takes 'compile_error', 'build_sleep_s', 'kill_build', which kills
the process that builds, as a node's OOM killer would, and 'grader_bug', which makes the
grader's own grade.finish raise for that hand-in).

    python batch_driver.py ROOT WORK_DIR -- batch toy HANDINS --out OUT ...

With --executor slurm the array tasks run this driver too (slurm.WORKER), so that they
build with the same fake build; so do the course service's Slurm jobs (`... -- run toy
FOLDER --json`, test_course_cluster.py), whose `cudalab run` also finds a stand-in SDK:

    python batch_driver.py ROOT WORK_DIR --slurm-task build|gpu FOLDER
"""
from __future__ import annotations

import ast
import json
import os
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cudalab.building import build
from cudalab import cli
from cudalab.grading import grade
from cudalab.batching import slurm  # noqa: E402
from conftest import write_fake  # noqa: E402


def fake_build(config, spec, folder, work):
    staged = build.stage_submission(spec, folder, work / "src")
    first = (staged.copy_dir / "toy.cu").read_text().splitlines()[0]
    behaviour = ast.literal_eval(first.removeprefix("//").strip())
    time.sleep(behaviour.pop("build_sleep_s", 0))
    if behaviour.pop("kill_build", False):
        os.kill(os.getpid(), signal.SIGKILL)
    if behaviour.pop("compile_error", False):
        from cudalab.errors import CompileError
        raise CompileError("toy.cu did not compile against the official toy harness.",
                           ["toy.cu:1: error: expected ';'"])
    behaviour.pop("grader_bug", None)  # for finish_failing_on_request
    binary = write_fake(work / "build" / "toy_submission", name="toy_submission", **behaviour)
    return build.SubmissionBuild(binary, staged, "")


def fake_sdk(config, spec):
    """The toy lab has no SDK: `cudalab run` reuses a build by a hash of what this holds."""
    sdk = Path(config.work_dir) / "fake-sdk"
    sdk.mkdir(parents=True, exist_ok=True)
    (sdk / "build.json").write_text(json.dumps({"compile": "true", "object": "o", "link": "true",
                                                "binary": "toy_submission"}))
    return sdk


real_finish = grade.finish


def finish_failing_on_request(pending, *args, **kwargs):
    """grade.finish, except for a hand-in whose behaviour has 'grader_bug': there the grader
    fails the way a bug of its own would, outside what a grade catches."""
    source = pending.tmp / "submission" / "src" / "toy.cu" if pending.tmp is not None else None
    if source is not None and source.is_file() and "grader_bug" in source.read_text():
        raise RuntimeError("a bug of the grader's own, raised on request")
    return real_finish(pending, *args, **kwargs)


if __name__ == "__main__":
    root, work = sys.argv[1], sys.argv[2]
    os.environ.update(CUDALAB_ROOT=root, CUDALAB_PRESET="ci", CUDALAB_WORK_DIR=work,
                      CUDALAB_TIMING_ROUNDS="2", CUDALAB_TIMING_TARGET_S="0.1", CUDALAB_SAMPLES_MIN="10",
                      CUDALAB_TIMING_WARMUP="1", CUDALAB_PROCESS_TIMEOUT_S="20", CUDALAB_GPU_IDLE_WAIT_S="0")
    build.build_submission = fake_build
    if "--" in sys.argv and sys.argv[sys.argv.index("--") + 1:][:1] == ["run"]:
        # `cudalab run` finds its build by the SDK; `check` finds none, as without the driver
        build._sdk = fake_sdk
    grade.finish = finish_failing_on_request
    slurm.WORKER = [sys.executable, str(Path(__file__).resolve()), root, work, "--slurm-task"]
    if sys.argv[3] == "--slurm-task":
        sys.exit(slurm.task_main(sys.argv[4:]))
    sys.exit(cli.main(sys.argv[sys.argv.index("--") + 1:]))
