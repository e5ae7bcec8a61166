"""safe_files: moves out of a run folder that is a file system of its own (a run folder is a
tmpfs where the grader may mount) copy without following links."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from cudalab.isolation import safe_files


@pytest.fixture
def other_file_system(tmp_path):
    """A folder on another file system than tmp_path (/dev/shm is a tmpfs)."""
    if not os.path.isdir("/dev/shm") or os.stat("/dev/shm").st_dev == os.stat(tmp_path).st_dev:
        pytest.skip("needs /dev/shm on another file system than the test's temporary folder")
    with tempfile.TemporaryDirectory(dir="/dev/shm") as folder:
        yield Path(folder)


def test_a_file_moves_across_file_systems_and_leaves_nothing_behind(other_file_system, tmp_path):
    (other_file_system / "a.pgm").write_bytes(b"P5 1 1 255\n\x07")
    source_fd, target_fd = safe_files.open_folder(other_file_system), safe_files.open_folder(tmp_path)
    try:
        safe_files.move_file("a.pgm", source_fd, "b.pgm", target_fd, "a.pgm")
    finally:
        os.close(source_fd)
        os.close(target_fd)
    assert (tmp_path / "b.pgm").read_bytes() == b"P5 1 1 255\n\x07"
    assert not (other_file_system / "a.pgm").exists()


def test_a_link_is_not_moved_across_file_systems(other_file_system, tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("root only\n")
    os.symlink(secret, other_file_system / "a.pgm")
    source_fd, target_fd = safe_files.open_folder(other_file_system), safe_files.open_folder(tmp_path)
    try:
        with pytest.raises((OSError, safe_files.NotPlainError)):
            safe_files.move_file("a.pgm", source_fd, "b.pgm", target_fd, "a.pgm")
    finally:
        os.close(source_fd)
        os.close(target_fd)
    assert not (tmp_path / "b.pgm").exists()


def test_a_tree_moves_out_across_file_systems(other_file_system, tmp_path):
    (other_file_system / "dump" / "kept").mkdir(parents=True)
    (other_file_system / "dump" / "kept" / "c.bin").write_bytes(b"\x01\x02")
    moved = safe_files.move_out(other_file_system, "dump/kept", tmp_path / "kept")
    assert (moved / "c.bin").read_bytes() == b"\x01\x02"
    assert not (other_file_system / "dump" / "kept").exists()
