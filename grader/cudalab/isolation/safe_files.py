"""Folders the grader owns, and trees a student's program wrote, on a machine the grader shares.

Two rules (docs/architecture.md, "Trust"):

* The grader writes only into private folders it created and checks: fresh, unpredictable
  names (mkdtemp), owned by the grader, writable by nobody else, in folders that nobody else
  can replace. A root is checked every time it is used; one that fails the check is refused
  in a sentence that names it, never reused.
* What a student's program leaves behind is data, never a path to follow. Such trees are
  walked, copied and handed over from a descriptor of their top, one component at a time
  (openat with O_NOFOLLOW), without recursion and to a bounded depth, so a symbolic link
  at any component, a FIFO or a device is refused instead of followed, and no tree is deep
  enough to exhaust the grader's descriptors or stack.
"""
from __future__ import annotations

import atexit
import errno
import hashlib
import os
import stat
import tempfile
import threading
from pathlib import Path
from typing import Iterator

from ..errors import GraderError
from .trees import remove_tree

MAX_DEPTH = 64
"""Deepest folder below a top that a walk enters: the grader's own trees are a few levels
deep, and every level holds one open descriptor while it is walked."""

MAX_ENTRIES = 100_000
"""Most entries a walk of a tree a program wrote looks at before refusing it."""

_FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_CHUNK = 1 << 20


class NotPlainError(GraderError):
    """A tree holds something other than plain files in plain folders (a symbolic link, a
    FIFO, a device), is nested too deep or holds too much. `why` is the sentence's end."""

    def __init__(self, top: Path | str, why: str):
        super().__init__(f"{top}: {why}")
        self.top, self.why = Path(top), why


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a plain file"


# --------------------------------------------------------------------------- walking a tree

def open_folder(path: Path | str, *, dir_fd: int | None = None) -> int:
    """A descriptor of the folder `path`, whose last component must not be a link;
    NotPlainError when it is one, or no folder."""
    try:
        return os.open(path, _FOLDER_FLAGS, dir_fd=dir_fd)
    except OSError as err:
        if err.errno in (errno.ELOOP, errno.ENOTDIR):
            try:
                mode = os.stat(path, dir_fd=dir_fd, follow_symlinks=False).st_mode
            except OSError:
                mode = 0
            raise NotPlainError(path, f"is {_kind(mode) if mode else 'not a folder'}, where a plain folder "
                                "was expected") from None
        raise


def open_file(name: str, dir_fd: int, where: str) -> tuple[int, os.stat_result]:
    """A descriptor of the plain file `name` in the folder `dir_fd`, never through a link and
    never blocking on a FIFO; NotPlainError for anything else (`where`: its path, for the
    sentence)."""
    try:
        fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise NotPlainError(where, "is a symbolic link, where a plain file was expected") from None
        raise
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise NotPlainError(where, f"is {_kind(info.st_mode)}, where a plain file was expected")
    return fd, info


def walk_from(top_fd: int, label: Path | str, *, max_entries: int = MAX_ENTRIES
              ) -> Iterator[tuple[str, int, str, os.stat_result]]:
    """Every entry below the open folder `top_fd` (which the walk closes), folders before what
    they hold: (path relative to the top, its folder's descriptor, its name, its lstat). The
    descriptor is valid until the next step; act on the entry through it (dir_fd=...), never
    through a path. Folders are entered without following links and checked to be the very
    folder that was listed; deeper than MAX_DEPTH or past `max_entries` is NotPlainError."""
    stack: list[tuple[int, str, Iterator[str]]] = []
    try:
        stack.append((top_fd, "", iter(sorted(os.listdir(top_fd)))))
        seen = 0
        while stack:
            folder_fd, relative, names = stack[-1]
            name = next(names, None)
            if name is None:
                os.close(folder_fd)
                stack.pop()
                continue
            seen += 1
            path = f"{relative}/{name}" if relative else name
            if seen > max_entries:
                raise NotPlainError(label, f"holds more than {max_entries} entries")
            info = os.stat(name, dir_fd=folder_fd, follow_symlinks=False)
            yield path, folder_fd, name, info
            if stat.S_ISDIR(info.st_mode):
                if len(stack) > MAX_DEPTH:
                    raise NotPlainError(label, f"holds folders nested deeper than {MAX_DEPTH} levels (at {path})")
                child = open_folder(name, dir_fd=folder_fd)
                opened = os.fstat(child)
                if (opened.st_dev, opened.st_ino) != (info.st_dev, info.st_ino):
                    os.close(child)
                    raise NotPlainError(label, f"{path} was replaced while the grader read it")
                stack.append((child, path, iter(sorted(os.listdir(child)))))
    finally:
        for folder_fd, _, _ in stack:
            os.close(folder_fd)


def walk(top: Path | str, *, max_entries: int = MAX_ENTRIES) -> Iterator[tuple[str, int, str, os.stat_result]]:
    """walk_from() of the folder `top`, refused (NotPlainError) when `top` itself is a link."""
    return walk_from(open_folder(top), top, max_entries=max_entries)


def plain_tree_problem(top: Path, *, max_entries: int = MAX_ENTRIES) -> str | None:
    """None when `top` is missing, or a plain folder holding only plain files and plain
    folders; else what is wrong, as the end of a sentence ('dump/c_1.bin is a symbolic link').
    For trees a program wrote, before anything reads them."""
    try:
        os.lstat(top)
    except FileNotFoundError:
        return None
    try:
        for path, _, _, info in walk(top, max_entries=max_entries):
            if not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode)):
                return f"{top.name}/{path} is {_kind(info.st_mode)}"
    except NotPlainError as err:
        return f"{top.name} {err.why}" if err.top == top else f"{top.name}: {err.why}"
    except OSError as err:
        return f"{top.name} could not be read ({err.strerror})"
    return None


def chown_tree(top: Path, uid: int) -> None:
    """Give `top` and everything below it to `uid` (gid the same), through descriptors: a
    link is changed itself, never what it points to, and a linked top is refused."""
    try:
        top_fd = open_folder(top)
    except NotPlainError as err:
        raise GraderError(f"Cannot hand {top} to the sandbox user: it {err.why}. The grader hands over only "
                          "folders it made itself.") from None
    try:
        os.fchown(top_fd, uid, uid)
        for _, folder_fd, name, _ in walk_from(os.dup(top_fd), top):
            os.chown(name, uid, uid, dir_fd=folder_fd, follow_symlinks=False)
    finally:
        os.close(top_fd)


def _copy_file(source_fd: int, target: str, target_dir_fd: int, mode: int) -> str:
    """Copy the open file into a new file `target` of the folder `target_dir_fd`; its sha256."""
    digest = hashlib.sha256()
    out = os.open(target, _NEW_FILE_FLAGS, mode, dir_fd=target_dir_fd)
    try:
        while block := os.read(source_fd, _CHUNK):
            digest.update(block)
            view = memoryview(block)
            while view:
                view = view[os.write(out, view):]
    finally:
        os.close(out)
    return digest.hexdigest()


def copy_tree(source: Path, target: Path) -> dict[str, str]:
    """Copy the file or folder `source` to `target` (which must not exist), never following a
    link at any component below `source`: only plain files and plain folders are copied,
    anything else is NotPlainError. A copied folder is made 0700 (the caller opens it once it
    is complete); what it holds keeps its permission bits, without write access for others
    or set-id bits. Returns the sha256 of every file copied, by its path
    relative to `target` ('' for a single file), as read while copying."""
    if stat.S_ISREG(os.lstat(source).st_mode):
        source_fd, opened = _open_plain_path(source)
        try:
            parent_fd = open_folder(target.parent)
            try:
                return {"": _copy_file(source_fd, target.name, parent_fd, stat.S_IMODE(opened.st_mode) & 0o755)}
            finally:
                os.close(parent_fd)
        finally:
            os.close(source_fd)
    top_fd = open_folder(source)
    hashes: dict[str, str] = {}
    os.mkdir(target, 0o700)
    target_fd = open_folder(target)
    targets = {"": target_fd}  # an open descriptor of every folder made so far, by relative path
    try:
        for path, folder_fd, name, entry in walk_from(top_fd, source):
            parent = targets[path.rpartition("/")[0]]
            if stat.S_ISDIR(entry.st_mode):
                os.mkdir(name, (stat.S_IMODE(entry.st_mode) & 0o755) | 0o700, dir_fd=parent)
                targets[path] = open_folder(name, dir_fd=parent)
            else:
                file_fd, opened = open_file(name, folder_fd, f"{source}/{path}")
                try:
                    if (opened.st_dev, opened.st_ino) != (entry.st_dev, entry.st_ino):
                        raise NotPlainError(source, f"{path} was replaced while the grader copied it")
                    hashes[path] = _copy_file(file_fd, name, parent, stat.S_IMODE(opened.st_mode) & 0o755)
                finally:
                    os.close(file_fd)
    finally:
        for fd in targets.values():
            os.close(fd)
    return hashes


def _open_plain_path(path: Path) -> tuple[int, os.stat_result]:
    parent_fd = os.open(path.parent, _FOLDER_FLAGS & ~os.O_NOFOLLOW)
    try:
        return open_file(path.name, parent_fd, str(path))
    finally:
        os.close(parent_fd)


def hash_tree(top: Path) -> dict[str, str]:
    """The sha256 of the file `top`, or of every file below the folder `top`, as copy_tree
    names them; NotPlainError for a link or anything but plain files and folders."""
    if stat.S_ISREG(os.lstat(top).st_mode):
        fd, _ = _open_plain_path(top)
        try:
            return {"": _hash_fd(fd)}
        finally:
            os.close(fd)
    hashes = {}
    for path, folder_fd, name, entry in walk(top):
        if stat.S_ISDIR(entry.st_mode):
            continue
        fd, _ = open_file(name, folder_fd, f"{top}/{path}")
        try:
            hashes[path] = _hash_fd(fd)
        finally:
            os.close(fd)
    return hashes


def _hash_fd(fd: int) -> str:
    digest = hashlib.sha256()
    while block := os.read(fd, _CHUNK):
        digest.update(block)
    return digest.hexdigest()


def move_file(name: str, folder_fd: int, target: str, target_fd: int, where: str) -> None:
    """Move the plain file `name` of folder `folder_fd` to `target` in folder `target_fd`;
    across file systems (a run folder is a tmpfs of its own) by a copy from a descriptor
    opened without following a link, then an unlink."""
    try:
        os.rename(name, target, src_dir_fd=folder_fd, dst_dir_fd=target_fd)
        return
    except OSError as err:
        if err.errno != errno.EXDEV:
            raise
    source_fd, opened = open_file(name, folder_fd, where)
    try:
        _copy_file(source_fd, target, target_fd, stat.S_IMODE(opened.st_mode) & 0o755)
    finally:
        os.close(source_fd)
    os.unlink(name, dir_fd=folder_fd)


def open_below(folder: Path, relative: str) -> int:
    """A descriptor of the folder `relative` (a/b/c) below `folder`, every component resolved
    from `folder` without following a link; NotPlainError where one is a link or no folder."""
    fd = open_folder(folder)
    for part in [p for p in relative.split("/") if p]:
        try:
            inner = open_folder(part, dir_fd=fd)
        finally:
            os.close(fd)
        fd = inner
    return fd


def move_out(folder: Path, relative: str, target: Path) -> Path:
    """Move the entry `relative` (a/b/c) below `folder` to `target` (whose parent must exist),
    resolving every component from `folder` without following links, and check that what
    was moved is a plain tree. Returns `target`."""
    parents, _, name = relative.rpartition("/")
    fd = open_below(folder, parents)
    try:
        target_fd = open_folder(target.parent)
        try:
            os.rename(name, target.name, src_dir_fd=fd, dst_dir_fd=target_fd)
            moved = True
        except OSError as err:
            if err.errno != errno.EXDEV:
                raise
            moved = False  # another file system (a run folder is a tmpfs of its own): copy, then remove
        finally:
            os.close(target_fd)
    finally:
        os.close(fd)
    if not moved:
        copy_tree(folder / relative, target)  # never through a link, below `folder` as above
        remove_tree(folder / relative)
    problem = plain_tree_problem(target)
    if problem:
        raise NotPlainError(f"{folder}/{relative}", problem)
    return target


# --------------------------------------------------------------------------- private folders

def folder_problem(path: Path) -> str | None:
    """None when `path` is a folder only the grader controls: not a link, owned by the
    grader's uid, writable by nobody else, and in folders (up to /) that belong to the grader
    or root and that nobody else may rename entries in (sticky ones, like /tmp, are fine).
    Else what is wrong, as the end of a sentence."""
    me = os.geteuid()
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return "does not exist"
    if stat.S_ISLNK(info.st_mode):
        return "is a symbolic link"
    if not stat.S_ISDIR(info.st_mode):
        return "is not a folder"
    if info.st_uid != me:
        return f"belongs to uid {info.st_uid}, not to the grader (uid {me})"
    if info.st_mode & 0o022:
        return f"may be written by others (mode {stat.S_IMODE(info.st_mode):04o})"
    parent = Path(os.path.realpath(path.parent))
    for folder in (parent, *parent.parents):
        above = os.stat(folder)
        if above.st_uid not in (0, me):
            return f"lies in {folder}, which belongs to uid {above.st_uid}"
        if above.st_mode & 0o022 and not above.st_mode & stat.S_ISVTX:
            return (f"lies in {folder}, where others may rename or replace entries "
                    f"(mode {stat.S_IMODE(above.st_mode):04o})")
    return None


def _refusal(path: Path, what: str, problem: str) -> GraderError:
    return GraderError(f"The grader's {what} {path} {problem}, so files in it could have been put or "
                       "replaced by someone other than the grader; nothing was graded from it. Remove it "
                       f"(the grader makes it again, owned by uid {os.geteuid()} and writable by it alone), "
                       "or set CUDALAB_WORK_DIR to a folder of your own.")


def private_folder(path: Path, what: str, *, passable: bool) -> Path:
    """`path`, made if missing and checked (folder_problem) every time: mode 0700, or 0711
    with `passable` (another uid, the sandbox user, must pass through it to the folders in
    it, without listing or writing it). A failed check is a GraderError naming the folder."""
    path = Path(path)
    mode = 0o711 if passable else 0o700
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.mkdir(path, mode)
    except FileExistsError:
        pass
    problem = folder_problem(path)
    if problem:
        raise _refusal(path, what, problem)
    if stat.S_IMODE(os.lstat(path).st_mode) != mode:
        os.chmod(path, mode)  # ours and checked: an older grader made it 0755
    return path


_process_roots: dict[tuple[str, bool], Path] = {}
_process_roots_lock = threading.Lock()
_kept_roots: set[Path] = set()


def process_temp_root(*, passable: bool, keep: bool = False) -> Path:
    """This process's own folder in the system's temporary folder, for what has no other
    place the sandbox user can reach: a fresh mkdtemp name (never a fixed one, which another
    user could make first), checked at every use, removed when the process ends (unless
    `keep`, for debugging)."""
    key = (tempfile.gettempdir(), passable)
    with _process_roots_lock:
        root = _process_roots.get(key)
        if root is not None and folder_problem(root) == "does not exist":
            root = None  # a cleaner removed it: make another
        if root is None:
            root = Path(tempfile.mkdtemp(prefix="cudalab-"))
            _process_roots[key] = root
            atexit.register(_remove_root, root)
        if keep:
            _kept_roots.add(root)
    return private_folder(root, "temporary folder", passable=passable)


def _remove_root(root: Path) -> None:
    if root not in _kept_roots:
        remove_tree(root)
