"""Scratch folders: named with the host and pid of the grader process that made them, so
that what a killed batch left behind is removed by the next command on that host, and
nothing of a live process or of another host is touched."""
from __future__ import annotations

import os
import subprocess
import sys

from cudalab.isolation import runner
from cudalab.config import Config
from conftest import REPO_ROOT


def a_dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_what_a_gone_process_of_this_host_left_is_removed_and_nothing_else(tmp_path):
    tag = runner._owner_tag()
    host = tag.split("@")[1]
    dead = a_dead_pid()
    left = tmp_path / f"batch-toy@{host}@p{dead}-x1y2"
    (left / "run-1" / "deep").mkdir(parents=True)
    (left / "run-1" / "deep" / "big.bin").write_bytes(b"0" * 1024)
    keep = {
        f"grade-toy{tag}-mine": "this process's own",
        f"batch-toy@otherhost@p{dead}-z": "another host's (a shared work folder)",
        f"batch-toy@{host}@p1-live": "a live process's",
        "batch-toy-old-style-abc": "not named by scratch_dir",
    }
    handed = f"grade-toy@{host}@p{dead}-built"
    keep[handed] = "handed to another process on purpose (a Slurm build, for its GPU task)"
    for name in keep:
        (tmp_path / name).mkdir()
    runner.hand_over(tmp_path / handed)
    (tmp_path / f"notes@{host}@p{dead}-file").write_text("a file, not a folder")
    assert runner.remove_abandoned(tmp_path) == [left.name]
    assert not left.exists()
    assert all((tmp_path / name).is_dir() for name in keep), keep
    assert (tmp_path / f"notes@{host}@p{dead}-file").is_file()


def test_a_commands_first_scratch_folder_sweeps_the_root_once(tmp_path, monkeypatch):
    config = Config.load(root=REPO_ROOT, work_dir=tmp_path / "work", env=os.environ)
    monkeypatch.setattr(runner, "_swept", set())
    root = runner.scratch_root(config)
    host = runner._owner_tag().split("@")[1]
    abandoned = root / f"grade-vector_add@{host}@p{a_dead_pid()}-abc"
    abandoned.mkdir(parents=True)
    first = runner.scratch_dir(config, "check-vector_add")
    assert not abandoned.exists() and first.parent == root
    assert first.name.startswith(f"check-vector_add{runner._owner_tag()}-")
    again = root / f"grade-vector_add@{host}@p{a_dead_pid()}-def"
    again.mkdir()
    runner.scratch_dir(config, "check-vector_add")
    assert again.exists(), "one sweep per root and process: a long batch does not list its root per grade"
