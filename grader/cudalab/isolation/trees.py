"""The folders untrusted runs write into: a size-capped tmpfs for each (where the grader may
mount one), and their removal whatever a student's program left in them.

A run folder is the student's: it may hold a tree thousands of levels deep (deeper than
PATH_MAX and Python's recursion limit), millions of files, folders without read, write or
search permission, and it may itself be a tmpfs the grader mounted for the run (sandbox.py).
`remove_tree` removes all of it without recursion and without paths longer than one name:
it walks down and back up with directory descriptors (openat, "..") holding one at a time,
fixes the modes of folders it cannot enter or empty, unmounts a tmpfs it meets, and never
follows a link. It never raises: what it could not remove is left, and it says so by
returning False.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil
import stat
from pathlib import Path

_MNT_DETACH = 2
_MS_NOSUID, _MS_NODEV = 2, 4
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_OWNER_ALL = 0o700
_libc = None
# The source name of every run tmpfs (as /proc/self/mountinfo shows it): only mounts of this
# name are ever unmounted, so that a removal never detaches a mount someone else made, and a
# run tmpfs a killed grader left mounted is still recognised as one.
RUN_TMPFS = "cudalab-run"


def _c_library():
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    return _libc


def mount_tmpfs(path: Path, size_bytes: int, files: int) -> None:
    """Mount a tmpfs of at most `size_bytes` and `files` inodes on the folder `path` (no
    devices, no set-uid programs), keeping what the folder held; OSError when this process
    may not mount (it needs CAP_SYS_ADMIN: the grader as root)."""
    old = os.open(path, _DIR_FLAGS)
    try:
        options = f"size={size_bytes},nr_inodes={files},mode=0755".encode()
        if _c_library().mount(RUN_TMPFS.encode(), os.fsencode(str(path)), b"tmpfs", _MS_NOSUID | _MS_NODEV,
                              options) != 0:
            code = ctypes.get_errno()
            raise OSError(code, f"mounting a tmpfs on {path}: {os.strerror(code)}")
        # What the grader put there before (build folders, say) moves onto the tmpfs; the
        # disk copy underneath goes, so that nothing is left hidden below the mount.
        with os.scandir(old) as entries:
            names = [entry.name for entry in entries]
        for name in names:
            source = f"/proc/self/fd/{old}/{name}"
            if os.path.isdir(source) and not os.path.islink(source):
                shutil.copytree(source, path / name, symlinks=True)
            else:
                shutil.copy2(source, path / name, follow_symlinks=False)
            _remove_at(old, name)
    finally:
        os.close(old)


def _is_run_tmpfs_device(device: int) -> bool:
    """Whether the file system of st_dev `device` is a run tmpfs (mount_tmpfs's)."""
    wanted = f"{os.major(device)}:{os.minor(device)}"
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as mounts:
            for line in mounts:
                left, _, right = line.partition(" - ")
                fields, tail = left.split(), right.split()
                if len(fields) > 2 and fields[2] == wanted and tail[:2] == ["tmpfs", RUN_TMPFS]:
                    return True
    except OSError:
        pass
    return False


def is_run_tmpfs(path: Path) -> bool:
    """Whether the folder `path` is the root of a run tmpfs (mount_tmpfs's)."""
    try:
        st, parent = os.lstat(path), os.stat(Path(path).parent)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_dev != parent.st_dev and _is_run_tmpfs_device(st.st_dev)


def _unmount_fd(fd: int) -> bool:
    """Detach the mount whose root `fd` is, if it is a run tmpfs (lazily: a process that
    still holds a file there cannot keep it)."""
    if not _is_run_tmpfs_device(os.fstat(fd).st_dev):
        return False
    return _c_library().umount2(f"/proc/self/fd/{fd}".encode(), _MNT_DETACH) == 0


def _open_folder(parent_fd: int, name: str) -> int | None:
    """A descriptor of the folder `name` in parent_fd, made enterable and writable by its
    owner if it was not, and with any mount on it (a run's tmpfs) detached first. None when
    it cannot be opened (then it is left as it is)."""
    try:
        fd = os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    except PermissionError:
        # A folder of mode 000: change its mode through an O_PATH descriptor, so that the
        # change lands on this very folder, never on what a link in its place points to.
        try:
            handle = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent_fd)
        except OSError:
            return None
        try:
            if not stat.S_ISDIR(os.fstat(handle).st_mode):
                return None
            os.chmod(f"/proc/self/fd/{handle}", _OWNER_ALL)
            fd = os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
        except OSError:
            return None
        finally:
            os.close(handle)
    except OSError:
        return None
    try:
        if os.fstat(fd).st_dev != os.fstat(parent_fd).st_dev and _unmount_fd(fd):
            os.close(fd)
            return _open_folder(parent_fd, name)  # the folder under the mount, once (no mount left)
        mode = os.fstat(fd).st_mode
        if mode & _OWNER_ALL != _OWNER_ALL:
            os.fchmod(fd, stat.S_IMODE(mode) | _OWNER_ALL)  # else its entries cannot be removed
    except OSError:
        pass  # not ours to change: what cannot be removed is left
    return fd


def _remove_entry(fd: int, name: str) -> bool:
    try:
        os.unlink(name, dir_fd=fd)
        return True
    except FileNotFoundError:
        return True
    except OSError:
        return False


def remove_tree(path: str | Path) -> bool:
    """Remove `path` and everything below it, never following a link (a link is removed,
    not its target); True when nothing of it is left. Never raises."""
    path = Path(path)
    if not os.path.lexists(path):
        return True
    try:
        parent_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        return _remove_at(parent_fd, path.name)
    finally:
        os.close(parent_fd)


def _remove_at(parent_fd: int, name: str) -> bool:
    try:
        is_folder = stat.S_ISDIR(os.stat(name, dir_fd=parent_fd, follow_symlinks=False).st_mode)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return _remove_below(parent_fd, name) if is_folder else _remove_entry(parent_fd, name)


def _remove_below(top_parent_fd: int, top_name: str) -> bool:
    # The walk holds one folder open at a time: the names from the top down to it, and for
    # each level the entries that could not be removed (so that they are skipped, not retried
    # for ever). Going back up is openat(".."), so no path is ever longer than one name.
    fd = _open_folder(top_parent_fd, top_name)
    if fd is None:
        return False
    names: list[str] = [top_name]
    stuck: list[set[str]] = [set()]
    clean = True
    while True:
        child = None
        seen_any = False
        try:
            with os.scandir(fd) as entries:
                for entry in entries:
                    if entry.name in stuck[-1]:
                        continue
                    seen_any = True
                    try:
                        is_folder = entry.is_dir(follow_symlinks=False)
                    except OSError:
                        is_folder = False
                    if is_folder:
                        child = entry.name
                        break
                    if not _remove_entry(fd, entry.name):
                        stuck[-1].add(entry.name)
                        clean = False
        except OSError:
            seen_any, clean = False, False  # unreadable: leave what is in it
        if child is not None:
            child_fd = _open_folder(fd, child)
            if child_fd is None:
                stuck[-1].add(child)
                clean = False
                continue
            os.close(fd)
            fd = child_fd
            names.append(child)
            stuck.append(set())
            continue
        if seen_any:
            continue  # files were removed while listing: list again until nothing is left
        # This folder is empty (but for what could not be removed): remove it from its parent.
        name = names.pop()
        stuck.pop()
        if names:
            try:
                parent = os.open("..", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=fd)
            except OSError:
                os.close(fd)
                return False
        else:
            parent = None
        os.close(fd)
        removed = _rmdir(top_parent_fd if parent is None else parent, name)
        if parent is None:
            return clean and removed
        fd = parent
        if not removed:
            stuck[-1].add(name)
            clean = False


def _rmdir(parent_fd: int, name: str) -> bool:
    try:
        os.rmdir(name, dir_fd=parent_fd)
        return True
    except FileNotFoundError:
        return True
    except OSError:
        return False
