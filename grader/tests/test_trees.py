"""trees: a run folder is removed whatever a student's program left in it (a tree deeper than
PATH_MAX and Python's recursion limit, millions of files, folders without permissions, links
to what is not its own), and a run tmpfs is unmounted on the way."""
from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import pytest

from cudalab.isolation import trees

GRADER = Path(__file__).resolve().parents[1]
UNPRIVILEGED = 65534


def deep_tree(top: Path, levels: int) -> None:
    """`levels` nested folders under `top`, made through descriptors (their path is far
    longer than PATH_MAX), with a file at the bottom."""
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(levels):
        os.mkdir("d", dir_fd=fd)
        below = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = below
    os.close(os.open("bottom", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
    os.close(fd)


@pytest.fixture
def fast_space():
    """A folder on a tmpfs where there is one (/dev/shm), so that two million files are made
    and removed in seconds, not minutes."""
    base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    folder = Path(tempfile.mkdtemp(prefix="cudalab-trees-test-", dir=base))
    yield folder
    trees.remove_tree(folder)


@pytest.mark.slow
def test_a_deep_tree_and_two_million_files_are_removed(fast_space):
    """Proves: a run folder holding a tree 4000 levels deep (which made shutil.rmtree raise
    RecursionError and abort a batch) and two million files (hard links, so they cost no
    inodes) is removed entirely, while a link to a file outside it leaves that file alone.
    Costs about 10 s and 0.5 GiB of kernel memory on a tmpfs (2 cores)."""
    outside = fast_space / "not-the-runs.txt"
    outside.write_text("keep me\n")
    run = fast_space / "run"
    run.mkdir()
    deep_tree(run, 4000)
    os.symlink(outside, run / "link-out")
    wide = run / "wide"
    wide.mkdir()
    (run / "one").write_text("")
    fd = os.open(wide, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for number in range(2_000_000):
            os.link(run / "one", str(number), dst_dir_fd=fd)
    finally:
        os.close(fd)
    assert trees.remove_tree(run)
    assert not os.path.lexists(run)
    assert outside.read_text() == "keep me\n"


def test_a_tree_deeper_than_the_recursion_limit_is_removed(tmp_path):
    """Proves: a tree 4000 levels deep on an ordinary file system is removed without
    recursion (quick: no million files)."""
    run = tmp_path / "run"
    run.mkdir()
    deep_tree(run, 4000)
    assert trees.remove_tree(run) and not run.exists()


ODD_MODES = """
import os, sys
sys.path.insert(0, sys.argv[2])
from cudalab.isolation.trees import remove_tree
run = sys.argv[1] + "/tree"
os.makedirs(f"{run}/locked/inner")
open(f"{run}/locked/inner/file", "w").close()
os.makedirs(f"{run}/readonly/sub")
open(f"{run}/readonly/sub/file", "w").close()
open(f"{run}/readonly/file", "w").close()
os.chmod(f"{run}/locked/inner", 0)
os.chmod(f"{run}/locked", 0)
os.chmod(f"{run}/readonly/sub", 0o500)
os.chmod(f"{run}/readonly", 0o500)
os.chmod(f"{run}/readonly/file", 0)
print(remove_tree(run), os.path.lexists(run))
"""


def test_folders_without_permissions_are_removed_by_their_owner(tmp_path):
    """Proves: folders of mode 000 and folders without write permission (what a program
    leaves to make its folder hard to remove) are removed by a grader that is not root,
    the way the sandbox user's own files are: their modes are fixed on the way down."""
    run = tmp_path / "run"
    run.mkdir()
    as_user = {}
    if os.geteuid() == 0:  # root ignores modes: run as the sandbox user, who owns the folder
        os.chown(run, UNPRIVILEGED, UNPRIVILEGED)

        def drop() -> None:
            os.setgroups([])
            os.setgid(UNPRIVILEGED)
            os.setuid(UNPRIVILEGED)
        as_user = {"preexec_fn": drop}
    done = subprocess.run(["/usr/bin/python3", "-c", ODD_MODES, str(run), str(GRADER)], capture_output=True,
                          text=True, timeout=60, check=False, **as_user)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "False"]


def test_links_are_removed_never_followed(tmp_path):
    """Proves: a link in the run folder to a folder outside it is removed as a link; the
    folder it points to and its files stay."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "precious").write_text("mine\n")
    run = tmp_path / "run"
    run.mkdir()
    os.symlink(elsewhere, run / "folder-link")
    os.symlink(elsewhere / "precious", run / "file-link")
    assert trees.remove_tree(run) and not run.exists()
    assert (elsewhere / "precious").read_text() == "mine\n"
    assert trees.remove_tree(tmp_path / "never-there")


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")
def test_only_a_run_tmpfs_is_unmounted(tmp_path):
    """Proves: removing a folder unmounts the run tmpfs it holds (the grader's own), with what
    the folder held before moved onto it; a tmpfs someone else mounted is never unmounted,
    and the removal says it could not finish."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "before.txt").write_text("the grader's\n")
    trees.mount_tmpfs(run, 1024 * 1024, 16)
    assert trees.is_run_tmpfs(run) and (run / "before.txt").read_text() == "the grader's\n"
    other = tmp_path / "other"
    other.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(other)], check=True)
    try:
        assert trees.remove_tree(run) and not run.exists()
        assert not trees.remove_tree(tmp_path)
        assert os.path.ismount(other)
    finally:
        subprocess.run(["umount", str(other)], check=True)
