"""The reference's paced program kept for every timing round (reference.py): sessions from
one process, its pids for the GPU's idle check, failures as grader errors, and a fresh
process after one."""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from cudalab import gpu, labs
from cudalab.errors import GraderError
from cudalab.reference import ReferenceServer
from cudalab.runner import Runner
from cudalab.timing import Pace
from conftest import seal, write_fake


def pace(**overrides) -> Pace:
    values = dict(warmup=1, samples=None, target_s=0.01, samples_min=5, samples_max=50, keep=0,
                  sample_timeout_s=5.0, stop_when=None)
    values.update(overrides)
    return Pace(**values)


def server(toy_config, toy_root, tmp_path, **behaviour) -> ReferenceServer:
    if behaviour:
        write_fake(toy_root / "build" / "ci" / "bin" / "toy_solution", name="toy_solution", **behaviour)
        seal(toy_root)
    runner = Runner(toy_config, labs.load_lab(toy_config, "toy"), tmp_path / "scratch")
    return ReferenceServer(runner, runner.official("solution"), "b_1000", 5.0)


def alive(pid: int) -> bool:
    """A process that has not ended (a zombie left to an init that reaps late has ended)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2:].split()[0] != "Z"


def paced_processes(runner: Runner) -> list[str]:
    return [t["what"] for t in runner.times if "--paced" in t["what"]]


def test_one_process_serves_every_session_until_closed(toy_config, toy_root, tmp_path):
    ref = server(toy_config, toy_root, tmp_path)
    assert ref.pids() == frozenset()
    first = ref.session(pace())
    pids = ref.pids()
    assert pids and all(alive(pid) for pid in pids)
    second = ref.session(pace(samples=first.timed))
    third = ref.session(pace(samples=first.timed, warmup=0))
    assert first.timed >= 5 and second.timed == third.timed == first.timed
    assert ref.pids() == pids  # the same program all along
    assert paced_processes(ref.runner) == []  # still running: not ended yet
    clocks = ref.close()
    assert clocks == [1980.0, 1970.0]  # its run.json, read once it ended
    assert paced_processes(ref.runner) == ["toy_solution --paced"]
    assert ref.pids() == frozenset() and not [pid for pid in pids if alive(pid)]
    assert ref.close() == clocks  # closing again does nothing
    assert not any((tmp_path / "scratch").iterdir())  # its folder is gone


def test_a_reference_that_dies_is_a_grader_error_and_the_next_session_starts_afresh(toy_config, toy_root, tmp_path):
    ref = server(toy_config, toy_root, tmp_path, sample_ms=1.0, paced_crash_at=8)
    ref.session(pace(samples=3))  # samples 0-6: a warm-up and three timed and blank pairs
    with pytest.raises(GraderError, match=r"The reference solution's timed run failed \(the program crashed "
                                          r"with SIGSEGV"):
        ref.session(pace(samples=3))
    assert ref.pids() == frozenset()
    again = ref.session(pace(samples=3))  # a new program, its samples numbered from 0
    assert again.timed == 3
    ref.close()
    assert paced_processes(ref.runner) == ["toy_solution --paced"] * 2


def test_a_reference_that_breaks_the_protocol_is_stopped(toy_config, toy_root, tmp_path):
    ref = server(toy_config, toy_root, tmp_path, bad_reply="done maybe")
    started = time.monotonic()
    with pytest.raises(GraderError, match="timed run failed \\(the program answered sample 0 with 'done maybe'"):
        ref.session(pace())
    assert time.monotonic() - started < 5
    assert ref.pids() == frozenset()


def test_the_idle_check_ignores_the_kept_reference_but_sees_everything_else(monkeypatch):
    child = subprocess.Popen([sys.executable, "-c", "import subprocess, sys; "
                              "subprocess.run([sys.executable, '-c', 'import time; time.sleep(30)'])"])
    try:
        for _ in range(100):
            tree = gpu.process_tree(child.pid)
            if len(tree) == 2:
                break
            time.sleep(0.05)
        assert child.pid in tree and len(tree) == 2  # the program and the one it started
        grandchild = next(iter(tree - {child.pid}))
        monkeypatch.setattr(gpu, "_smi", lambda argv: [f"GPU-1, {grandchild}, /cudalab/bin/toy_solution, 900 MiB",
                                                       "GPU-1, 4242, python3, 500 MiB"])
        assert gpu.compute_processes(ignore=tree) == ["4242, python3, 500 MiB"]
        assert gpu.compute_processes() == [f"{grandchild}, /cudalab/bin/toy_solution, 900 MiB",
                                           "4242, python3, 500 MiB"]
        waited = gpu.wait_until_idle(0.0, ignore=tree)
        assert waited.busy_with == ["4242, python3, 500 MiB"]
    finally:
        child.kill()
        child.wait()
