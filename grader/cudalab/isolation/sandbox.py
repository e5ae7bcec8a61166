"""Run processes under limits, and untrusted ones (student programs, the compile of student
code, checkers that read untrusted files) inside a bubblewrap sandbox.

Threat model: the student's code is hostile. It may try to write or replace any file it can
reach, read solutions or other students' files, leave processes behind (setsid included),
fork-bomb, exhaust memory, use the network or flood its output. Inside the sandbox it sees a
read-only /usr, a private /tmp and only the folders its caller binds under /cudalab; only its
own run folder can be written; it has no network, its own PID namespace (nothing outlives the
run), no capabilities, and runs as an unprivileged uid when the grader is root. Memory and
process counts are limited through cgroup v2 where the machine allows it (memory through a
cgroup v1 memory cgroup where the controller lives there, processes through RLIMIT_NPROC);
runs without the GPU also get RLIMIT_DATA, and a machine that can limit no run's memory gives
no official grades. Each run's folder is a tmpfs of its own, capped in bytes and files, where
the grader may mount one (as root), and the private /tmp is capped in bytes. Without bubblewrap, runs still work, unsandboxed, so students can run the labs on
their own machines.

What is and is not in force is recorded in every result (`Isolation`), never implied.
"""
from __future__ import annotations

import dataclasses
import errno
import glob
import json
import os
import posixpath
import re
import resource
import secrets
import shlex
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Sequence

from . import safe_files, trees
from ..config import Config
from ..errors import GraderError
from ..exit_codes import Harness, harness_status
from ..status import RunStatus

INSIDE_ROOT = "/cudalab"
"""Every caller-provided mount point lives under this folder inside the sandbox, so a bind can
never cover the system view (/usr, /proc, /dev, ...)."""

DEFAULT_INSIDE_PATH = "/usr/local/cuda/bin:/usr/local/bin:/usr/bin:/bin"

_READ_CHUNK = 64 * 1024
_KEPT_ENV = ("CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH")  # carried over from the grader if set
_PIPE_GRACE_S = 1.0      # how long to wait for stdout/stderr to end after the process ended
_KILL_GRACE_S = 2.0      # how long a killed sandbox gets to tear its PID namespace down
_CGROUP_DRAIN_S = 5.0    # how long a killed cgroup gets to empty before it is left behind
_PROBE_TIMEOUT_S = 30.0
_PROBE_PROGRAM = "/usr/bin/true"
_SYSTEM_ROOT_ENTRIES = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_BWRAP_BASE = ("--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
               "--clearenv")
# Stops the program from making user namespaces of its own (kernel attack surface); bubblewrap
# only allows it together with an explicit --unshare-user. Used where the probe shows it works.
_BWRAP_NO_NESTED_USERNS = ("--unshare-user", "--disable-userns")
_BWRAP_FAILED = 1        # bubblewrap's own exit code when it cannot set up or exec
_INSTALL_HINT = "install it (apt-get install bubblewrap) or set CUDALAB_BWRAP"
STAGED_BWRAP = Path(".deps", "bwrap", "usr", "bin", "bwrap")  # tools/stage-deps.sh, under the root

_SIGNAL_MEANING = {
    signal.SIGSEGV: "segmentation fault: the host code touched memory it does not own",
    signal.SIGBUS: "bus error: a bad host memory access",
    signal.SIGABRT: "aborted: an assertion failed or a C++ exception was not caught",
    signal.SIGFPE: "arithmetic error on the host, such as an integer division by zero",
    signal.SIGILL: "illegal instruction",
    signal.SIGXFSZ: "it tried to write a file larger than the file size limit",
    signal.SIGXCPU: "it used more CPU time than allowed",
    signal.SIGKILL: "killed from outside, perhaps for using too much memory",
}


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def format_bytes(count: int) -> str:
    """16 GiB, 512 MiB, 1.5 GiB: the unit a person would pick."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= size:
            return f"{count / size:.4g} {unit}"
    return f"{count} bytes"


@dataclass
class ProcessResult:
    argv: list[str]
    returncode: int          # as the OS reports it: negative for a signal
    timed_out: bool
    wall_s: float
    timeout_s: float
    stdout: str
    stderr: str
    isolation: str = "none: trusted process"   # Isolation.describe() for sandboxed runs
    oom_killed: bool = False                   # the cgroup's OOM killer ended a process
    memory_limit_bytes: int | None = None      # the memory limit in force, for the message
    limit_words: str = "the wall-clock limit"  # which limit timeout_s is, for the message
    folder_full: str | None = None             # the run's folder reached its cap (the cap in words)

    @property
    def exit_code(self) -> int:
        """The harness's code; a process the grader killed on time-out counts as 5 (timeout)."""
        return int(Harness.TIMEOUT) if self.timed_out else self.returncode

    @property
    def signal_name(self) -> str | None:
        if self.timed_out or self.returncode >= 0:
            return None
        return _signal_name(-self.returncode)

    @property
    def status(self) -> str:
        """A harness status word, or RunStatus.CRASHED (a signal) or UNEXPECTED_EXIT (a code it
        never uses): a RunStatus's word."""
        if self.returncode < 0 and not self.timed_out:
            return RunStatus.CRASHED.value
        return harness_status(self.exit_code) or RunStatus.UNEXPECTED_EXIT.value

    def describe(self) -> str:
        """What happened, in words a student can act on."""
        if self.oom_killed:
            limit = ("the memory limit" if self.memory_limit_bytes is None
                     else f"the memory limit of {format_bytes(self.memory_limit_bytes)}")
            return (f"the program was killed: it used more than {limit}; look for an "
                    "allocation that grows with a loop or a size computed wrongly")
        if self.folder_full is not None:
            return (f"the program filled its folder to the limit ({self.folder_full}) and could "
                    "write no more; write only the outputs the harness asks for")
        if self.timed_out:
            return (f"the program was killed after {self.timeout_s:g} s ({self.limit_words}); "
                    "look for a loop that never ends, a kernel that never returns, or one far slower "
                    "than it needs to be")
        if self.returncode < 0:
            meaning = _SIGNAL_MEANING.get(-self.returncode, "stopped by a signal")
            return f"the program crashed with {self.signal_name} ({meaning})"
        status = self.status
        if status == RunStatus.CUDA_ERROR:
            return "the program stopped on a CUDA error"
        if status == RunStatus.UNEXPECTED_EXIT:
            text = f"the program exited with code {self.returncode}, which the harness never uses"
            if 128 < self.returncode < 128 + 64:  # how shells report a child killed by a signal
                text += (" (a shell's way of saying a process was killed by "
                         f"{_signal_name(self.returncode - 128)})")
            return text
        return f"the program exited with code {self.returncode} ({status})"

    def stderr_head(self, lines: int = 6) -> str:
        return "\n".join(self.stderr.strip().splitlines()[:lines])


# --------------------------------------------------------------------------- what callers pass

@dataclass(frozen=True)
class Bind:
    """A host file or folder seen inside the sandbox at `inside` (under /cudalab)."""

    host: Path
    inside: str
    writable: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "host", Path(self.host))
        if (not isinstance(self.inside, str) or not self.inside.startswith(INSIDE_ROOT + "/")
                or posixpath.normpath(self.inside) != self.inside):
            raise ValueError(f"The sandbox path {self.inside!r} for {self.host} must be a "
                             f"normalised absolute path under {INSIDE_ROOT}/ (for example "
                             f"{INSIDE_ROOT}/run), so that no bind can cover the system view.")

    def to_host(self, text: str) -> str | None:
        """`text` in host coordinates when it is this bind's inside path or lies below it."""
        if text == self.inside:
            return str(self.host)
        if text.startswith(self.inside + "/"):
            return str(self.host) + text[len(self.inside):]
        return None


@dataclass(frozen=True)
class Limits:
    timeout_s: float           # wall clock; past it every process of the run is killed
    output_cap_bytes: int      # kept of stdout and of stderr each; the rest is read and dropped
    memory_bytes: int | None   # cgroup v2 memory.max (+ memory.swap.max 0), else cgroup v1
                               # memory.limit_in_bytes; RLIMIT_DATA without the GPU; None = no limit
    pids: int                  # cgroup v2 pids.max; fallback RLIMIT_NPROC
    file_size_bytes: int       # RLIMIT_FSIZE
    cpu_time_factor: float     # RLIMIT_CPU = timeout * factor
    folder_bytes: int | None = None   # the run folder's tmpfs size; None: the folder is left as it is
    folder_files: int | None = None   # the run folder's tmpfs inodes
    tmp_bytes: int | None = None      # the private /tmp's size


def run_limits(config: Config, timeout_s: float | None = None) -> Limits:
    """Limits for one run of a lab binary or checker."""
    return Limits(timeout_s=config.process_timeout_s if timeout_s is None else timeout_s,
                  output_cap_bytes=config.output_cap_bytes,
                  memory_bytes=config.run_memory_bytes or None,
                  pids=config.run_pids,
                  file_size_bytes=config.file_size_limit_bytes,
                  cpu_time_factor=config.cpu_time_factor,
                  folder_bytes=config.run_folder_bytes or None,
                  folder_files=config.run_folder_files or None,
                  tmp_bytes=config.run_folder_bytes or None)


def build_limits(config: Config) -> Limits:
    """Limits for one compile of student code (nvcc runs several processes and needs more).
    Its folder gets no tmpfs: the binary it makes must outlive this process and be seen from
    other machines (a Slurm build task hands it to a GPU task), and a compiler writes only
    the files its command names, each under RLIMIT_FSIZE."""
    return Limits(timeout_s=config.build_timeout_s,
                  output_cap_bytes=config.output_cap_bytes,
                  memory_bytes=config.build_memory_bytes or None,
                  pids=config.build_pids,
                  file_size_bytes=config.file_size_limit_bytes,
                  cpu_time_factor=config.cpu_time_factor,
                  tmp_bytes=config.run_folder_bytes or None)


@dataclass(frozen=True)
class Isolation:
    """What is in force around a run, recorded in every result."""

    kind: str                  # "bubblewrap" or "none"
    uid: int | None            # the child's uid outside the sandbox (None: the grader's own)
    cgroup: bool               # cgroup v2 limits in force
    in_force: tuple[str, ...]  # sentences
    missing: tuple[str, ...]   # sentences: what is NOT in force, why, and how to get it
    memory_limited: bool = True  # every run's memory is limited (a cgroup v2 or v1 memory limit)

    @property
    def official(self) -> bool:
        """Good enough for grades that count: a sandbox, not a root-owned one, and a memory
        limit on every run (RLIMIT_DATA alone cannot limit a CUDA program)."""
        return (self.kind == "bubblewrap" and (self.uid is not None or os.geteuid() != 0)
                and self.memory_limited)

    def headline(self) -> str:
        """What kind of isolation, in a few words ("bubblewrap sandbox (official)")."""
        head = "bubblewrap sandbox" if self.kind == "bubblewrap" else "no sandbox"
        return head + (" (official)" if self.official else " (not official)")

    def describe(self) -> str:
        text = f"{self.headline()}; in force: {'; '.join(self.in_force) or 'nothing'}"
        if self.missing:
            text += f"; missing: {'; '.join(self.missing)}"
        return text

    def why_not_official(self) -> str:
        """The one reason these runs are not sandboxed as a grade's are (the first thing
        missing); the rest of `missing` follows from it and stays in the record."""
        return self.missing[0] if self.missing else "no sandbox"

    def to_json(self) -> dict:
        return {"kind": self.kind, "uid": self.uid, "cgroup": self.cgroup,
                "memory_limited": self.memory_limited, "official": self.official,
                "in_force": list(self.in_force), "missing": list(self.missing)}


# --------------------------------------------------------------------------- running a process

class _CappedReader(threading.Thread):
    """Drains a pipe to its end (so the child never blocks) and keeps the first `cap` bytes;
    `on_line`, when given, is told each line as it comes (cut at 4 KiB)."""

    def __init__(self, pipe, cap: int, on_line: Callable[[str], None] | None = None):
        super().__init__(daemon=True)
        self.pipe, self.cap, self.on_line = pipe, cap, on_line
        self.kept = bytearray()
        self.cut = False
        self._partial = b""

    def run(self) -> None:
        try:
            while chunk := self.pipe.read1(_READ_CHUNK):
                room = self.cap - len(self.kept)
                if len(chunk) > room:
                    self.cut = True
                self.kept += chunk[:max(room, 0)]
                if self.on_line is not None:
                    self._tell(chunk)
        except (OSError, ValueError):
            pass

    def _tell(self, chunk: bytes) -> None:
        *lines, self._partial = (self._partial + chunk).split(b"\n")
        self._partial = self._partial[-4096:]
        for line in lines:
            self.on_line(line[:4096].decode("utf-8", errors="replace"))

    def text(self) -> str:
        body = bytes(self.kept).decode("utf-8", errors="replace")
        if self.cut:
            body += f"\n[output cut at {self.cap // 1024} KiB]\n"
        return body


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


@dataclass
class _Finished:
    returncode: int
    timed_out: bool
    wall_s: float
    stdout: str
    stderr: str


def _supervise(argv: list[str], *, timeout_s: float, output_cap_bytes: int,
               cwd: Path | str | None, env: dict[str, str] | None,
               preexec_fn: Callable[[], None] | None, pass_fds: Sequence[int] = (),
               on_timeout: Callable[[], None] | None = None,
               during: Callable[[], bool] | None = None,
               started: Callable[[int], None] | None = None,
               on_stdout_line: Callable[[str], None] | None = None) -> _Finished:
    """Start argv in a new session, drain its output, enforce the wall clock. Raises OSError
    when it cannot start. `pass_fds` are closed here once the child holds them. `during`,
    when given, runs while the program does (the grader talks to it over descriptors it
    passed); it returns False to have the program stopped at once."""
    start = time.perf_counter()
    try:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True, preexec_fn=preexec_fn,
                                pass_fds=tuple(pass_fds))
    finally:
        for fd in pass_fds:
            os.close(fd)
    readers = [_CappedReader(proc.stdout, output_cap_bytes, on_stdout_line),
               _CappedReader(proc.stderr, output_cap_bytes)]
    for reader in readers:
        reader.start()
    if started is not None:
        started(proc.pid)
    timed_out = False
    failure: BaseException | None = None
    try:
        stop_now = during is not None and not during()
    except BaseException as err:  # a grader bug: stop the program, then let it surface
        stop_now, failure = True, err
    try:
        if stop_now:
            raise subprocess.TimeoutExpired(argv, 0)
        proc.wait(timeout=max(0.0, timeout_s - (time.perf_counter() - start)))
    except subprocess.TimeoutExpired:
        timed_out = not stop_now
        if on_timeout is not None:
            # A gentler end first (for bubblewrap: kill the namespace's init, which waits for
            # every process in it to die), so that nothing is left when we return.
            on_timeout()
            try:
                proc.wait(timeout=_KILL_GRACE_S)
            except subprocess.TimeoutExpired:
                pass
        _kill_group(proc.pid)
        proc.wait()
    wall_s = time.perf_counter() - start
    _kill_group(proc.pid)  # leftovers (background children) die with their parent
    # A leftover that left the process group may still hold the pipes; what it writes after
    # the main process ended is not worth waiting for.
    deadline = time.monotonic() + _PIPE_GRACE_S
    for reader in readers:
        reader.join(timeout=max(0.0, deadline - time.monotonic()))
    if failure is not None:
        raise failure
    return _Finished(proc.returncode, timed_out, wall_s, readers[0].text(), readers[1].text())


def run_process(argv: Sequence[str], *, timeout_s: float, output_cap_bytes: int,
                cwd: Path | None = None, env: dict[str, str] | None = None,
                preexec_fn: Callable[[], None] | None = None,
                isolation: str = "none: trusted process",
                on_stdout_line: Callable[[str], None] | None = None) -> ProcessResult:
    """Run a trusted process (CMake of the official tree, ...) in a new session; on time-out
    kill its whole process group. Never raises for the child's own failures: a program that
    cannot start is reported as exit 127. `on_stdout_line` is told each line of its output
    as it comes (a build's progress)."""
    argv = [str(a) for a in argv]
    start = time.perf_counter()
    try:
        done = _supervise(argv, timeout_s=timeout_s, output_cap_bytes=output_cap_bytes,
                          cwd=cwd, env=env, preexec_fn=preexec_fn, on_stdout_line=on_stdout_line)
    except OSError as err:
        return ProcessResult(argv, 127, False, time.perf_counter() - start, timeout_s, "",
                             f"could not start {argv[0]}: {err.strerror}\n", isolation)
    return ProcessResult(argv, done.returncode, done.timed_out, done.wall_s, timeout_s,
                         done.stdout, done.stderr, isolation)


def scrubbed_env(home: Path, parent: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of an unsandboxed untrusted run: PATH, the CUDA variables, a UTF-8
    locale, and HOME and TMPDIR pointing at the run's own folder."""
    parent = os.environ if parent is None else parent
    env = {key: parent[key] for key in ("PATH", *_KEPT_ENV) if key in parent}
    env.setdefault("PATH", "/usr/bin:/bin")
    env.update(LANG="C.UTF-8", LC_ALL="C.UTF-8", HOME=str(home), TMPDIR=str(home))
    return env


# --------------------------------------------------------------------------- limits in the child

def _bounded(kind: int, soft: int, hard: int) -> tuple[int, int, int]:
    """(kind, soft, hard), never above the hard limit the grader already has."""
    _, current_hard = resource.getrlimit(kind)
    if current_hard != resource.RLIM_INFINITY:
        soft, hard = min(soft, current_hard), min(hard, current_hard)
    return kind, soft, hard


def _rlimits(limits: Limits, nproc: int | None, gpu: bool) -> list[tuple[int, int, int]]:
    # Never RLIMIT_AS: CUDA reserves huge address ranges, and a 4 GiB limit broke a trivial
    # CUDA program. Memory is limited by the cgroup instead, and, for runs without the GPU
    # (compilers, the checker: no CUDA program at work), also per process by RLIMIT_DATA,
    # which counts only the writable memory a process maps, so it holds where no cgroup can.
    cpu_s = max(1, int(limits.timeout_s * limits.cpu_time_factor + 0.999))
    chosen = [_bounded(resource.RLIMIT_CORE, 0, 0),
              _bounded(resource.RLIMIT_FSIZE, limits.file_size_bytes, limits.file_size_bytes),
              _bounded(resource.RLIMIT_CPU, cpu_s, cpu_s + 1)]
    if nproc is not None:
        chosen.append(_bounded(resource.RLIMIT_NPROC, nproc, nproc))
    if not gpu and limits.memory_bytes is not None:
        chosen.append(_bounded(resource.RLIMIT_DATA, limits.memory_bytes, limits.memory_bytes))
    return chosen


def _tasks_of(uid: int) -> int:
    """Processes and threads whose real uid is `uid`: what RLIMIT_NPROC counts against."""
    count = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/status", encoding="ascii", errors="replace") as f:
                fields = dict(line.split(":", 1) for line in f if ":" in line)
            if int(fields["Uid"].split()[0]) == uid:
                count += int(fields.get("Threads", "1").strip())
        except (OSError, KeyError, ValueError):
            continue  # it ended while we looked
    return count


def _child_setup(rlimits: list[tuple[int, int, int]], cgroup_procs: Sequence[str],
                 uid: int | None) -> Callable[[], None]:
    """What the child does between fork and exec. Order matters: joining the cgroups needs the
    grader's privileges, RLIMIT_NPROC must be set before setuid (which checks it), and the
    uid goes last. Only plain os calls here: the grader may have other threads."""
    def setup() -> None:
        for procs in cgroup_procs:
            fd = os.open(procs, os.O_WRONLY)
            try:
                os.write(fd, b"0")
            finally:
                os.close(fd)
        for kind, soft, hard in rlimits:
            resource.setrlimit(kind, (soft, hard))
        if uid is not None:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
    return setup


# --------------------------------------------------------------------------- cgroup v2

def _unescape_mountinfo(text: str) -> str:
    """mountinfo writes space, tab, newline and backslash as octal escapes (\\040 ...)."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), text)


def cgroup2_mounts(mountinfo: str) -> list[tuple[str, str]]:
    """(root inside the hierarchy, mount point) of every cgroup2 mount in /proc/self/mountinfo."""
    mounts = []
    for line in mountinfo.splitlines():
        left, sep, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if sep and len(fields) >= 5 and tail and tail[0] == "cgroup2":
            mounts.append((_unescape_mountinfo(fields[3]), _unescape_mountinfo(fields[4])))
    return mounts


def own_cgroup2_path(proc_cgroup: str) -> str | None:
    """The cgroup v2 path in /proc/self/cgroup (the "0::/path" line), or None under v1 only."""
    for line in proc_cgroup.splitlines():
        hierarchy, _, rest = line.partition(":")
        controllers, sep, path = rest.partition(":")
        if hierarchy == "0" and sep and controllers == "":
            return path
    return None


def locate_cgroup2(mountinfo: str, proc_cgroup: str) -> tuple[Path | None, str]:
    """The folder of this process's cgroup v2, or None and why there is none."""
    path = own_cgroup2_path(proc_cgroup)
    if path is None:
        return None, "/proc/self/cgroup has no cgroup v2 entry (this machine uses cgroup v1 only)"
    mounts = cgroup2_mounts(mountinfo)
    if not mounts:
        return None, "no cgroup2 file system is mounted"
    for root, mount_point in mounts:
        if path == root or path.startswith(root.rstrip("/") + "/"):
            return Path(mount_point) / path[len(root):].lstrip("/"), ""
    return None, (f"no cgroup2 mount shows this process's cgroup {path} "
                  f"(mounted: {', '.join(m for _, m in mounts)})")


_CONTROLLERS = ("memory", "pids")


def _write(path: Path, text: str) -> None:
    with open(path, "w", encoding="ascii") as f:
        f.write(text)


def _enable_controllers(folder: Path, controllers: Sequence[str], mount_point: Path) -> tuple[Path | None, str]:
    """Where runs can get cgroups of their own with `controllers` on: `folder` itself (its
    children), else a sibling of it (its parent already passes the controllers down, or
    `folder` would not offer them), else `folder` after moving the grader into a leaf.
    Returns (that folder, '') or (None, why not)."""
    wanted = " ".join(f"+{c}" for c in controllers)
    if set(controllers) <= set((folder / "cgroup.subtree_control").read_text().split()):
        return folder, ""
    try:
        _write(folder / "cgroup.subtree_control", wanted)
        return folder, ""
    except OSError as err:
        if err.errno != errno.EBUSY:
            return None, f"could not enable {wanted} in {folder}/cgroup.subtree_control: {err.strerror}"
    # cgroup v2 lets a cgroup with processes of its own have no controllers for its children
    # (the no-internal-processes rule). Its parent passes them down already, so runs can be
    # its siblings, which disturbs no process; failing that, move the grader into a leaf.
    parent = folder.parent
    if (folder != mount_point and os.access(parent, os.W_OK)
            and set(controllers) <= set((parent / "cgroup.subtree_control").read_text().split())):
        return parent, ""
    leaf = folder / "cudalab-grader"
    try:
        leaf.mkdir(exist_ok=True)
        _write(leaf / "cgroup.procs", str(os.getpid()))
        _write(folder / "cgroup.subtree_control", wanted)
        return folder, ""
    except OSError as err:
        try:  # it did not help: leave the grader where it was
            _write(folder / "cgroup.procs", str(os.getpid()))
            leaf.rmdir()
        except OSError:
            pass
        return None, (f"could not enable {wanted} in {folder} even after moving the grader into "
                      f"{leaf} ({err.strerror}): other processes share the grader's cgroup; start "
                      "the grader in a cgroup of its own (e.g. systemd-run --scope -p Delegate=yes)")


@dataclass(frozen=True)
class _Cgroups:
    """What cgroup v2 can do for the runs here."""

    parent: Path | None           # where each run gets its own cgroup; None: no cgroup v2 use
    controllers: tuple[str, ...]  # of memory and pids, those in force
    reason: str                   # why the others (or all of them) are not


def _prepare_cgroup2(mountinfo: str | None = None, proc_cgroup: str | None = None) -> _Cgroups:
    """Find the grader's cgroup v2 and make it able to limit its runs' memory and processes,
    as far as the machine allows; say why not where it does not."""
    try:
        mountinfo = Path("/proc/self/mountinfo").read_text() if mountinfo is None else mountinfo
        proc_cgroup = Path("/proc/self/cgroup").read_text() if proc_cgroup is None else proc_cgroup
    except OSError as err:
        return _Cgroups(None, (), f"could not read /proc/self: {err.strerror}")
    folder, why = locate_cgroup2(mountinfo, proc_cgroup)
    if folder is None:
        return _Cgroups(None, (), why)
    mount_point = next(Path(m) for _, m in cgroup2_mounts(mountinfo)
                       if folder == Path(m) or Path(m) in folder.parents)
    try:
        offered = (folder / "cgroup.controllers").read_text().split()
    except OSError as err:
        return _Cgroups(None, (), f"could not read {folder}/cgroup.controllers: {err.strerror}")
    usable = tuple(c for c in _CONTROLLERS if c in offered)
    lacking = [c for c in _CONTROLLERS if c not in offered]
    lacking_reason = ""
    if lacking:
        them = "them" if len(lacking) > 1 else "it"
        lacking_reason = (f"{folder} does not offer the {' and '.join(lacking)} controller"
                          f"{'s' if len(lacking) > 1 else ''}: a parent cgroup does not pass "
                          f"{them} down, or this machine keeps {them} in cgroup v1")
    if not usable:
        return _Cgroups(None, (), lacking_reason)
    if not os.access(folder, os.W_OK):
        return _Cgroups(None, (), f"{folder} is not writable by uid {os.geteuid()}: run the "
                        "grader as root or in a cgroup delegated to its user")
    folder, why = _enable_controllers(folder, usable, mount_point)
    if folder is None:
        return _Cgroups(None, (), why)
    probe = folder / f"cudalab-probe-{secrets.token_hex(4)}"
    try:
        probe.mkdir()
        try:
            missing = [c for c in usable
                       if c not in (probe / "cgroup.controllers").read_text().split()]
            if missing:
                return _Cgroups(None, (), f"a child cgroup of {folder} lacks "
                                f"{' and '.join(missing)}")
        finally:
            probe.rmdir()
    except OSError as err:
        return _Cgroups(None, (), f"could not create a test cgroup in {folder}: {err.strerror}")
    return _Cgroups(folder, usable, lacking_reason)


class _RunCgroup:
    """One run's cgroup: its limits, its kill switch, and the OOM record read at the end."""

    def __init__(self, cgroups: _Cgroups, limits: Limits):
        self.path = cgroups.parent / f"cudalab-run-{secrets.token_hex(6)}"
        try:
            self.path.mkdir()
            if "memory" in cgroups.controllers:
                if limits.memory_bytes is not None:
                    _write(self.path / "memory.max", str(limits.memory_bytes))
                    if (self.path / "memory.swap.max").exists():  # absent without swap accounting
                        _write(self.path / "memory.swap.max", "0")
                if (self.path / "memory.oom.group").exists():
                    _write(self.path / "memory.oom.group", "1")  # an OOM ends the whole run
            if "pids" in cgroups.controllers:
                _write(self.path / "pids.max", str(limits.pids))
        except OSError as err:
            self._remove()
            raise GraderError(f"Could not set up the cgroup {self.path} for a sandboxed run: "
                              f"{err.strerror}.") from None

    @property
    def procs_file(self) -> str:
        return str(self.path / "cgroup.procs")

    def kill(self) -> None:
        """SIGKILL every process in the cgroup, including ones that left the process group."""
        try:
            if (self.path / "cgroup.kill").exists():  # Linux 5.14 and later
                _write(self.path / "cgroup.kill", "1")
                return
            for pid in (self.path / "cgroup.procs").read_text().split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except ProcessLookupError:
                    pass
        except OSError:
            pass

    def _populated(self) -> bool:
        try:
            for line in (self.path / "cgroup.events").read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "populated":
                    return value.strip() != "0"
        except OSError:
            return False
        return False

    def oom_killed(self) -> bool:
        try:
            for line in (self.path / "memory.events").read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value) > 0
        except (OSError, ValueError):
            pass
        return False

    def _remove(self) -> None:
        try:
            self.path.rmdir()
        except OSError:
            pass

    def close(self) -> bool:
        """Kill what is left, wait until the cgroup is empty, remove it. True if the OOM
        killer struck during the run."""
        deadline = time.monotonic() + _CGROUP_DRAIN_S
        self.kill()
        while self._populated() and time.monotonic() < deadline:
            time.sleep(0.01)
            self.kill()
        oom = self.oom_killed()
        self._remove()
        return oom


# --------------------------------------------------------------------------- cgroup v1 memory

def locate_memory_v1(mountinfo: str, proc_cgroup: str) -> tuple[Path | None, str]:
    """The folder of this process's cgroup v1 memory cgroup (machines that keep the memory
    controller in cgroup v1), or None and why there is none."""
    path = None
    for line in proc_cgroup.splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3 and "memory" in parts[1].split(","):
            path = parts[2]
    if path is None:
        return None, "/proc/self/cgroup has no cgroup v1 memory entry"
    for line in mountinfo.splitlines():
        left, sep, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if sep and len(fields) >= 5 and len(tail) >= 3 and tail[0] == "cgroup" and "memory" in tail[2].split(","):
            root, mount_point = _unescape_mountinfo(fields[3]), _unescape_mountinfo(fields[4])
            if path == root or path.startswith(root.rstrip("/") + "/"):
                return Path(mount_point) / path[len(root):].lstrip("/"), ""
    return None, f"no cgroup v1 memory hierarchy is mounted that shows this process's memory cgroup {path}"


def _prepare_memory_v1(mountinfo: str | None = None, proc_cgroup: str | None = None) -> tuple[Path | None, str]:
    """Where runs get cgroup v1 memory cgroups of their own, or None and why not."""
    try:
        mountinfo = Path("/proc/self/mountinfo").read_text() if mountinfo is None else mountinfo
        proc_cgroup = Path("/proc/self/cgroup").read_text() if proc_cgroup is None else proc_cgroup
    except OSError as err:
        return None, f"could not read /proc/self: {err.strerror}"
    folder, why = locate_memory_v1(mountinfo, proc_cgroup)
    if folder is None:
        return None, why
    probe = folder / f"cudalab-probe-{secrets.token_hex(4)}"
    try:
        probe.mkdir()
        try:
            _write(probe / "memory.limit_in_bytes", str(64 * 1024 * 1024))
        finally:
            probe.rmdir()
    except OSError as err:
        return None, (f"could not make a cgroup v1 memory cgroup with a limit in {folder} ({err.strerror}): "
                      "run the grader as root or in a memory cgroup delegated to its user")
    return folder, ""


class _RunMemoryV1(_RunCgroup):
    """One run's cgroup v1 memory cgroup: its limit (swap included where the kernel accounts
    it), its kill switch, and the OOM record read at the end."""

    def __init__(self, parent: Path, memory_bytes: int):
        self.path = parent / f"cudalab-run-{secrets.token_hex(6)}"
        try:
            self.path.mkdir()
            _write(self.path / "memory.limit_in_bytes", str(memory_bytes))
            if (self.path / "memory.memsw.limit_in_bytes").exists():  # no swap beyond the limit
                _write(self.path / "memory.memsw.limit_in_bytes", str(memory_bytes))
        except OSError as err:
            self._remove()
            raise GraderError(f"Could not set up the cgroup v1 memory cgroup {self.path} for a sandboxed "
                              f"run: {err.strerror}.") from None

    def _populated(self) -> bool:
        try:
            return bool((self.path / "cgroup.procs").read_text().split())
        except OSError:
            return False

    def oom_killed(self) -> bool:
        try:
            for line in (self.path / "memory.oom_control").read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value) > 0
            return int((self.path / "memory.failcnt").read_text()) > 0  # kernels before 4.13
        except (OSError, ValueError):
            return False


# --------------------------------------------------------------------------- the run folder

def _probe_run_tmpfs() -> str:
    """'' when this process can give each run folder a tmpfs of its own, else why not."""
    folder = Path(tempfile.mkdtemp(prefix="cudalab-tmpfs-probe-"))
    try:
        trees.mount_tmpfs(folder, 1024 * 1024, 16)
        return ""
    except OSError as err:
        return (f"could not mount a tmpfs for a run folder ({os.strerror(err.errno) if err.errno else err}): "
                "that needs the grader to run as root")
    finally:
        trees.remove_tree(folder)


def _cap_folder(folder: Path, limits: Limits) -> None:
    """Give the run folder a tmpfs of its own, of the run's size and file count, unless it
    has one already (the steps of one build share their folder)."""
    if limits.folder_bytes is None or trees.is_run_tmpfs(folder):
        return
    try:
        trees.mount_tmpfs(folder, limits.folder_bytes, limits.folder_files or limits.folder_bytes // 4096)
    except OSError as err:
        raise GraderError(f"Could not mount a tmpfs on the run folder {folder}: {err}.") from None


_FOLDER_SLACK_BYTES = 1024 * 1024  # less free than this: the program filled its folder
_FOLDER_SLACK_FILES = 8


def _folder_cap_reached(folder: Path, limits: Limits) -> str | None:
    """The run folder's cap in words when the run left it (nearly) full, else None."""
    if limits.folder_bytes is None or not trees.is_run_tmpfs(folder):
        return None
    try:
        room = os.statvfs(folder)
    except OSError:
        return None
    if room.f_bavail * room.f_frsize >= _FOLDER_SLACK_BYTES and room.f_favail >= _FOLDER_SLACK_FILES:
        return None
    files = f" and {limits.folder_files} files and folders" if limits.folder_files else ""
    return f"{format_bytes(limits.folder_bytes)}{files}"


# --------------------------------------------------------------------------- the sandbox

def _system_view(tmp_bytes: int | None = None) -> list[str]:
    """A read-only view of what programs and compilers need, and nothing else from /etc or
    /home. /usr/local/nvidia and /usr/local/cuda come along with /usr."""
    view = ["--ro-bind", "/usr", "/usr"]
    for entry in _SYSTEM_ROOT_ENTRIES:
        if os.path.islink(entry):  # merged /usr: /lib -> usr/lib
            view += ["--symlink", os.readlink(entry), entry]
        elif os.path.isdir(entry):
            view += ["--ro-bind", entry, entry]
    view += ["--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache",
             "--ro-bind-try", "/etc/alternatives", "/etc/alternatives",  # cc, c++ and friends
             "--proc", "/proc", "--dev", "/dev"]
    if tmp_bytes is not None:
        view += ["--size", str(tmp_bytes)]  # a /tmp that cannot take the machine's memory
    view += ["--tmpfs", "/tmp"]
    return view


def _gpu_view() -> list[str]:
    """What the CUDA driver needs: /sys (read-only) and the NVIDIA character devices."""
    view = ["--ro-bind", "/sys", "/sys"]
    for device in sorted(glob.glob("/dev/nvidia*") + glob.glob("/dev/nvidia-caps/*")):
        try:
            if stat.S_ISCHR(os.stat(device).st_mode):
                view += ["--dev-bind", device, device]
        except OSError:
            continue
    return view


def _cover_view(covers: Sequence[tuple[Path, str]], toolchain: Sequence[Path], uid: int | None) -> list[str]:
    """bubblewrap arguments that show each grader-owned source read-only in place of a path
    of the system view (/usr or a toolchain folder). A path no longer there has nothing to
    cover; one whose kind changed (a file where a folder was) means the library scan is out
    of date, and the run is refused rather than shown the library."""
    visible = [str(root) + "/" for root in toolchain] + ["/usr/"]
    view: list[str] = []
    for source, target in covers:
        if not target.startswith(tuple(visible)) or os.path.islink(target) or not os.path.exists(target):
            continue
        if source.is_dir() != os.path.isdir(target):
            raise GraderError(f"Cannot hide {target} from the sandbox with {source}: one is a folder and the "
                              "other is not. The library scan is out of date; delete the library-scan-*.json "
                              "files in the grader's work folder and run again.")
        if uid is not None and _unreachable_reason(source, uid):
            source = _staged_copy(source)
        view += ["--ro-bind", str(source), target]
    return view


_SYSTEM_PREFIXES = ("/usr/", "/lib/", "/lib64/", "/lib32/", "/libx32/", "/bin/", "/sbin/")


def toolchain_roots(paths: Iterable[str | Path], protect: Sequence[Path] = ()) -> tuple[Path, ...]:
    """The folders, outside /usr, that hold tools or libraries a sandboxed run needs (a
    compiler under /opt/gcc, say): for each absolute path, the top two levels of its real
    location (/opt/gcc). Never a folder that holds anything in `protect` (the repository,
    the grading folders), so no bind can bring solutions or submissions into view."""
    roots: set[Path] = set()
    protected = [Path(os.path.realpath(p)) for p in protect]
    for path in paths:
        real = Path(os.path.realpath(path))
        if not real.is_absolute() or not real.exists() or str(real).startswith(_SYSTEM_PREFIXES):
            continue
        parts = real.parts
        if len(parts) < 3 or parts[1] in ("proc", "dev", "sys", "tmp", "cudalab", "etc", "root", "home"):
            continue
        root = Path(*parts[:3])
        if any(root == p or root in p.parents for p in protected):
            continue
        roots.add(root)
    return tuple(sorted(roots))


def _permits(st: os.stat_result, uid: int, gid: int, bits: int) -> bool:
    if st.st_uid == uid:
        mode = st.st_mode >> 6
    elif st.st_gid == gid:
        mode = st.st_mode >> 3
    else:
        mode = st.st_mode
    return mode & bits == bits


def _unreachable_reason(host: Path, uid: int, *, itself: bool = True) -> str:
    """'' if uid `uid` (gid the same) can reach `host` and, with `itself`, read it; else a
    sentence why not. bubblewrap resolves bind sources as the user it runs as (an fd opened
    by the grader does not help: bubblewrap 0.8 resolves it back to its path), so every
    folder above counts."""
    real = Path(os.path.realpath(host))
    for folder in reversed(real.parents):
        st = os.stat(folder)
        if not _permits(st, uid, uid, 0o1):
            return (f"uid {uid} (the sandbox user) cannot reach {host}: the folder {folder} "
                    f"(mode {stat.S_IMODE(st.st_mode):04o}, owner uid {st.st_uid}) does not let "
                    "it pass. Keep grading folders where that user can reach them (every folder "
                    "above needs o+x), or set CUDALAB_SANDBOX_UID to a user who can")
    if not itself:
        return ""
    st = os.stat(real)
    needed = 0o5 if stat.S_ISDIR(st.st_mode) else 0o4
    if not _permits(st, uid, uid, needed):
        return (f"uid {uid} (the sandbox user) cannot read {host} (mode "
                f"{stat.S_IMODE(st.st_mode):04o}, owner uid {st.st_uid}); make it readable "
                "by others")
    return ""


_staged: dict[tuple[str, int, int], tuple[Path, dict[str, str]]] = {}
_staging_lock = threading.Lock()


def _staged_copy(host: Path) -> Path:
    """A copy of a read-only bind's source that the sandbox user can reach, for a source it
    cannot (a checkout under a private home folder, say). Made once per source and
    modification time and process, in a private folder of this process (safe_files), and only
    of what the grader or root owns: never of a link, nor of anything a student's program
    wrote. The copy is made in a folder nobody else can enter, checked against the sha256 of
    every file read from the source, and only then opened to the sandbox user; it is checked
    again before every later use."""
    source = Path(os.path.realpath(host.parent)) / host.name  # its own last component is never followed
    info = os.lstat(source)
    if stat.S_ISLNK(info.st_mode):
        raise GraderError(f"Cannot show {host} in the sandbox: it is a symbolic link, and the grader never "
                          "copies through a link. Bind the file or folder itself.")
    if info.st_uid not in (0, os.geteuid()):
        raise GraderError(f"Cannot show {host} in the sandbox: the sandbox user cannot reach it, and it belongs "
                          f"to uid {info.st_uid}; the grader copies for the sandbox only what it or root owns. "
                          "Keep grading files where the sandbox user can reach them.")
    key = (str(source), info.st_mtime_ns, info.st_ino)
    with _staging_lock:
        known = _staged.get(key)
        if known is not None:
            target, hashes = known
            _check_staged(host, target, hashes)
            return target
        root = safe_files.private_folder(safe_files.process_temp_root(passable=True) / "staged",
                                         "folder of staged copies", passable=True)
        place = Path(tempfile.mkdtemp(prefix=".staging-", dir=root))  # 0700 until it is checked
        target = place / source.name
        try:
            hashes = safe_files.copy_tree(source, target)
        except safe_files.NotPlainError as err:
            trees.remove_tree(place)
            raise GraderError(f"Cannot show {host} in the sandbox through a copy: {err.why}; the grader copies "
                              "only plain files and folders.") from None
        _check_staged(host, target, hashes)
        top = os.lstat(target)
        os.chmod(target, _readable_mode(top))
        if stat.S_ISDIR(top.st_mode):
            for _, folder_fd, name, entry in safe_files.walk(target):
                os.chmod(name, _readable_mode(entry), dir_fd=folder_fd)
        os.chmod(place, 0o755)  # only now may the sandbox user read it
        _staged[key] = (target, hashes)
        return target


def _readable_mode(entry: os.stat_result) -> int:
    return 0o755 if stat.S_ISDIR(entry.st_mode) or entry.st_mode & 0o100 else 0o644


def _check_staged(host: Path, target: Path, hashes: dict[str, str]) -> None:
    """The staged copy is still what was read from the source, file for file."""
    try:
        now = safe_files.hash_tree(target)
    except (OSError, safe_files.NotPlainError):
        now = None
    if now != hashes:
        _staged.pop(next((k for k, v in _staged.items() if v[0] == target), None), None)
        raise GraderError(f"The staged copy {target} of {host} no longer matches what was copied (the sha256 of "
                          "its files changed): something on this machine modified it. Nothing was run with it; "
                          "find out what changed it before grading again.")


def scratch_root(config: Config) -> Path:
    """Where runs get their folders, checked at every use (safe_files.private_folder): the
    grading work folder's tmp/ when the sandbox user can reach it, else this process's own
    temporary folder (a checkout under a private home, for instance, is out of that user's
    reach). Never a folder of a fixed name that another user could have made first."""
    passable = os.geteuid() == 0  # only root hands its runs to another uid, which must pass through
    preferred = config.temp_dir
    if not passable:
        return safe_files.private_folder(preferred, "scratch folder", passable=False)
    probe = preferred
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    # The sandbox user must pass through every folder down to the run folders (made 0711 by
    # the grader); it need not read any of them.
    if not _unreachable_reason(probe / "run", config.sandbox_uid, itself=False):
        return safe_files.private_folder(preferred, "scratch folder", passable=True)
    return safe_files.private_folder(safe_files.process_temp_root(passable=True, keep=config.keep_temp) / "scratch",
                                     "scratch folder", passable=True)


def _chown_tree(top: Path, uid: int) -> None:
    """Hand the run's writable folder to the sandbox user; never follow links it holds, nor
    a linked top (safe_files.chown_tree)."""
    safe_files.chown_tree(top, uid)


def _status_documents(raw: bytes) -> list[dict]:
    """bubblewrap's --json-status-fd output: one JSON object per line."""
    documents = []
    for line in raw.decode("utf-8", errors="replace").splitlines():
        try:
            documents.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return documents


def _status_value(raw: bytes, key: str) -> int | None:
    for document in _status_documents(raw):
        if isinstance(document.get(key), int):
            return document[key]
    return None


# An inside path where a command line can name one: a whole word, or the value of an option
# (`--out=/cudalab/run/x`, `-I/cudalab/sdk/include`, a `,`-separated list). Not a path that
# merely has "cudalab" in it (`CMakeFiles/x.dir/cudalab/src/a.o` is relative to the cwd).
_INSIDE_PATH_IN_TEXT = re.compile(r"(?P<before>^|[\s=,]|(?:^|(?<=\s))-[A-Za-z]+)"
                                  rf"(?P<path>{re.escape(INSIDE_ROOT)}(?:/[^\s=,:;&|'\"]*)?)")
_SHELLS = ("sh", "bash", "dash")


def _is_shell_script(argv: Sequence[str]) -> bool:
    return len(argv) >= 3 and posixpath.basename(argv[0]) in _SHELLS and argv[1] == "-c"


def host_paths_in(text: str, binds: Sequence[Bind], *, for_shell: bool = False) -> str:
    """`text` with every inside path it names (see _INSIDE_PATH_IN_TEXT) turned into the host
    path the deepest bind gives it, as its mount would inside the sandbox; paths no bind
    covers are left as they are. `for_shell`: `text` is a shell command line, so a host path
    with characters the shell would split or expand is quoted."""
    by_depth = sorted(binds, key=lambda b: b.inside.count("/"), reverse=True)

    def host(match: re.Match) -> str:
        path = match["path"]
        for bind in by_depth:
            mapped = bind.to_host(path)
            if mapped is not None:
                return match["before"] + (shlex.quote(mapped) if for_shell else mapped)
        return match[0]
    return _INSIDE_PATH_IN_TEXT.sub(host, text)


def _one_line(text: str) -> str:
    return " / ".join(line.strip() for line in text.strip().splitlines() if line.strip())


def _find_bwrap(config: Config) -> tuple[str | None, str]:
    if config.bwrap:
        if os.path.isfile(config.bwrap) and os.access(config.bwrap, os.X_OK):
            return config.bwrap, ""
        return None, (f"bubblewrap not found at {config.bwrap} (set by CUDALAB_BWRAP): point it "
                      "at the bwrap program, or leave it empty to search PATH")
    found = shutil.which("bwrap")
    if found:
        return found, ""
    staged = Path(config.root) / STAGED_BWRAP
    if staged.is_file() and os.access(staged, os.X_OK):
        return str(staged), ""
    return None, f"bubblewrap not found: {_INSTALL_HINT}"


def _probe_bwrap(bwrap: str, options: Sequence[str], uid: int | None, tmp_bytes: int | None = None) -> str:
    """Run /usr/bin/true under the full option set; '' if it worked, else bubblewrap's words."""
    argv = [bwrap, *options, *_system_view(tmp_bytes), "--remount-ro", "/", "--", _PROBE_PROGRAM]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=_PROBE_TIMEOUT_S, check=False,
                              env={"PATH": "/usr/bin:/bin"}, cwd="/",
                              preexec_fn=_child_setup([], (), uid))
    except subprocess.TimeoutExpired:
        return f"{bwrap} did not finish within {_PROBE_TIMEOUT_S:g} s"
    except (OSError, subprocess.SubprocessError) as err:
        return f"could not start {bwrap}: {err}"
    if done.returncode == 0:
        return ""
    said = _one_line(done.stderr.decode("utf-8", errors="replace"))
    return said or f"{bwrap} exited with code {done.returncode}"


@dataclass(frozen=True)
class _Bubblewrap:
    """The bubblewrap set-up the probe found to work here."""

    program: str
    options: tuple[str, ...]
    uid: int | None       # the uid it runs as; None: the grader's own
    missing: tuple[str, ...]  # what the better set-ups it tried first could not do, and why
    sized_tmp: bool = True    # it takes --size for the private /tmp (bubblewrap 0.7 and later)


def _choose_bubblewrap(config: Config) -> tuple[_Bubblewrap | None, str]:
    """The best set-up that runs /usr/bin/true here, or None and why none does."""
    program, not_found = _find_bwrap(config)
    if program is None:
        return None, not_found
    as_root = os.geteuid() == 0
    # Best first: as the unprivileged uid with no nested user namespaces; then without that
    # extra; as root (capabilities dropped) only where the uid switch cannot work at all.
    failures: list[tuple[int | None, bool, str, str]] = []  # uid, nested, the sentence, bubblewrap's words
    for uid in ([config.sandbox_uid, None] if as_root else [None]):
        for extra in (_BWRAP_NO_NESTED_USERNS, ()):
            said = _probe_bwrap(program, _BWRAP_BASE + extra, uid)
            if said:
                who = f"as uid {uid}" if uid is not None else "as the grader's own user"
                tried = " ".join(_BWRAP_BASE + extra)
                failures.append((uid, bool(extra), f"{tried} {who}: {said}", said))
                continue
            missing = []
            if as_root and uid is None:
                missing.append(f"could not run bubblewrap as uid {config.sandbox_uid} ("
                               + "; ".join(f for u, _, f, _ in failures if u is not None)
                               + "): the program runs as root, with all capabilities dropped; "
                               "let unprivileged users create user namespaces (sysctl "
                               "kernel.unprivileged_userns_clone=1 or user.max_user_namespaces)")
            if not extra:
                said = next((f for u, nested, f, _ in failures if u == uid and nested), "")
                missing.append("the program may create user namespaces of its own: bubblewrap "
                               f"refused --disable-userns ({said})")
            sized = not _probe_bwrap(program, _BWRAP_BASE + extra, uid, tmp_bytes=1024 * 1024)
            if not sized:
                missing.append("the private /tmp has no size limit: this bubblewrap does not take "
                               "--size (it came in bubblewrap 0.7)")
            return _Bubblewrap(program, _BWRAP_BASE + extra, uid, tuple(missing), sized), ""
    return None, unusable_bubblewrap(program, failures)


# The step that lets bubblewrap make its user namespace, where a system turns that off.
USERNS_FIX = ("let unprivileged users create user namespaces: on Ubuntu 23.10 and later `sudo sysctl "
              "kernel.apparmor_restrict_unprivileged_userns=0` (or an AppArmor profile for bwrap), on "
              "older Debian `sudo sysctl kernel.unprivileged_userns_clone=1`, in a container start it "
              "with user namespaces allowed; or grade on a machine where bubblewrap works")


def unusable_bubblewrap(program: str, failures: list[tuple[int | None, bool, str, str]]) -> str:
    """Why bubblewrap cannot sandbox here, in one sentence: each distinct thing it said once,
    with the ways that ended so (as which user, with or without --disable-userns)."""
    said: dict[str, list[str]] = {}
    for uid, nested, _, message in failures:
        who = f"as uid {uid}" if uid is not None else "as the grader's own user"
        said.setdefault(message, []).append(who + (" with --disable-userns" if nested else ""))
    if len(said) == 1:
        (message, ways), = said.items()
        reasons = f'it said "{message}" every way it was tried ({", ".join(ways)})'
    else:
        reasons = "; ".join(f'"{message}" ({", ".join(ways)})' for message, ways in said.items())
    text = f"bubblewrap at {program} cannot create a sandbox here: {reasons}; runs go unsandboxed"
    if any(word in message for message in said for word in ("uid map", "namespace", "Operation not permitted")):
        text += ". The system does not let this user create user namespaces"
    return text


_ENVIRONMENT_SENTENCE = ("scrubbed environment: only PATH, HOME, TMPDIR, LANG, LC_ALL, "
                         "CUDA_VISIBLE_DEVICES, LD_LIBRARY_PATH and the caller's variables")
_CGROUP_SENTENCE = "cgroup v2 per run"        # isolation_for() puts the numbers in
_NPROC_SENTENCE = "RLIMIT_NPROC per run"
_MEMORY_V1_SENTENCE = "cgroup v1 memory per run"
_DATA_SENTENCE = "RLIMIT_DATA per process of a run without the GPU (compiles, the checker)"
_FOLDER_SENTENCE = "run folder capped"


def _describe_isolation(bubblewrap: _Bubblewrap | None, not_sandboxed: str, cgroups: _Cgroups,
                        memory_v1: Path | None = None, memory_v1_reason: str = "",
                        tmpfs_reason: str = "") -> Isolation:
    as_root = os.geteuid() == 0
    if bubblewrap is None:
        child_is_root = as_root
        in_force = ["wall-clock limit (the process group is killed on time-out), RLIMIT_CPU, "
                    "RLIMIT_FSIZE, no core dumps, stdout and stderr capped",
                    _ENVIRONMENT_SENTENCE]
        missing = [not_sandboxed,
                   "no file-system isolation: the program can read and write whatever the "
                   "grading user can",
                   "no network isolation"]
        if cgroups.parent is None:
            missing.append("processes that start their own session (setsid) can outlive the run")
    else:
        child_is_root = as_root and bubblewrap.uid is None
        if bubblewrap.uid is not None:
            who = f"runs as uid {bubblewrap.uid}"
        else:
            who = "runs as root (uid 0)" if as_root else f"runs as the grader's uid {os.getuid()}"
        if _BWRAP_NO_NESTED_USERNS[-1] in bubblewrap.options:
            who += ", no nested user namespaces"
        in_force = ["read-only view of /usr (with /usr/local/cuda), the system library links, "
                    "/etc/ld.so.cache, /etc/alternatives and the caller's binds under "
                    f"{INSIDE_ROOT}; only the run's folder and binds marked writable can be "
                    "written; private /tmp",
                    "no network (own network namespace, loopback only)",
                    "own PID namespace: every process ends with the run",
                    f"{who}, all capabilities dropped, no new privileges",
                    _ENVIRONMENT_SENTENCE,
                    "wall-clock limit (the whole sandbox is killed on time-out), RLIMIT_CPU, "
                    "RLIMIT_FSIZE, no core dumps, stdout and stderr capped"]
        missing = list(bubblewrap.missing)
    if cgroups.parent is not None:
        in_force.append(f"{_CGROUP_SENTENCE}: {' and '.join(cgroups.controllers)} limits, "
                        "every process killed at the end")
    memory_limited = "memory" in cgroups.controllers or memory_v1 is not None
    if memory_v1 is not None:
        in_force.append(f"{_MEMORY_V1_SENTENCE} (no cgroup v2 memory controller here: {cgroups.reason})")
    elif not memory_limited:
        missing.append("no memory limit on a run that uses the GPU, so grades here are not official: "
                       f"cgroup v2 is not usable for it here ({cgroups.reason}), nor cgroup v1 "
                       f"({memory_v1_reason}); RLIMIT_DATA limits only runs without the GPU")
    in_force.append(_DATA_SENTENCE)
    if tmpfs_reason:
        missing.append("the run's folder has no size or file-count limit (only each file's, "
                       f"RLIMIT_FSIZE): {tmpfs_reason}")
    else:
        in_force.append(_FOLDER_SENTENCE)
    if "pids" not in cgroups.controllers:
        if child_is_root:
            missing.append("no process-count limit: RLIMIT_NPROC does not bind root, and cgroup "
                           f"v2 is not usable for it here ({cgroups.reason})")
        else:
            lacking = "cgroup v2" if cgroups.parent is None else "cgroup v2 pids controller"
            in_force.append(f"{_NPROC_SENTENCE} (no {lacking} here: {cgroups.reason})")
    return Isolation(kind="none" if bubblewrap is None else "bubblewrap",
                     uid=None if bubblewrap is None else bubblewrap.uid,
                     cgroup=cgroups.parent is not None, in_force=tuple(in_force),
                     missing=tuple(missing), memory_limited=memory_limited)


def _close_all(cgroups: list[_RunCgroup]) -> bool:
    """Close every cgroup of a run; True if an OOM killer struck in any of them."""
    return any([cgroup.close() for cgroup in cgroups])


_detected: dict[tuple, "Sandbox"] = {}
_detect_lock = threading.Lock()


class Sandbox:
    """Runs untrusted processes. Get one with `Sandbox.detect(config)`, which probes the
    machine once per process; `isolation` says what its runs get."""

    def __init__(self, bubblewrap: _Bubblewrap | None, cgroups: _Cgroups, isolation: Isolation,
                 memory_v1: Path | None = None, folders_capped: bool = False):
        self.isolation = isolation
        self._bubblewrap = bubblewrap
        self._cgroups = cgroups
        self._memory_v1 = memory_v1          # where runs get cgroup v1 memory cgroups, if they do
        self._folders_capped = folders_capped  # each run folder gets a tmpfs of its own

    @classmethod
    def detect(cls, config: Config) -> "Sandbox":
        key = (config.bwrap, config.sandbox_uid, str(config.root), os.geteuid())
        with _detect_lock:
            if key not in _detected:
                cgroups = _prepare_cgroup2()
                memory_v1, memory_v1_reason = (None, "") if "memory" in cgroups.controllers else _prepare_memory_v1()
                tmpfs_reason = _probe_run_tmpfs()
                bubblewrap, not_sandboxed = _choose_bubblewrap(config)
                _detected[key] = cls(bubblewrap, cgroups,
                                     _describe_isolation(bubblewrap, not_sandboxed, cgroups, memory_v1,
                                                         memory_v1_reason, tmpfs_reason),
                                     memory_v1, folders_capped=not tmpfs_reason)
            return _detected[key]

    # ----------------------------------------------------------------------- one run

    def _child_uid(self) -> int:
        return self.isolation.uid if self.isolation.uid is not None else os.geteuid()

    def _nproc(self, limits: Limits) -> int | None:
        """RLIMIT_NPROC where cgroup v2 cannot count processes. It counts every process of the
        user, so it allows what that user has now plus the run's share. Root ignores it."""
        if "pids" in self._cgroups.controllers or self._child_uid() == 0:
            return None
        return _tasks_of(self._child_uid()) + limits.pids

    def _run_cgroups(self, limits: Limits) -> list[_RunCgroup]:
        """The run's own cgroups: cgroup v2 where usable, and a cgroup v1 memory one where
        the memory controller is there instead."""
        made: list[_RunCgroup] = []
        try:
            if self._cgroups.parent is not None:
                made.append(_RunCgroup(self._cgroups, limits))
            if self._memory_v1 is not None and limits.memory_bytes is not None:
                made.append(_RunMemoryV1(self._memory_v1, limits.memory_bytes))
        except GraderError:
            for cgroup in made:
                cgroup.close()
            raise
        return made

    def isolation_for(self, limits: Limits) -> Isolation:
        """`isolation` with the limits of one run in numbers."""
        def with_numbers(sentence: str) -> str:
            if sentence.startswith(_CGROUP_SENTENCE):
                parts = []
                if "memory" in self._cgroups.controllers:
                    parts.append("no memory.max" if limits.memory_bytes is None else
                                 f"memory.max {format_bytes(limits.memory_bytes)}, "
                                 "memory.swap.max 0")
                if "pids" in self._cgroups.controllers:
                    parts.append(f"pids.max {limits.pids}")
                return f"cgroup v2: {', '.join(parts)}"
            if sentence.startswith(_NPROC_SENTENCE):
                return f"RLIMIT_NPROC {limits.pids}" + sentence[len(_NPROC_SENTENCE):]
            if sentence.startswith(_MEMORY_V1_SENTENCE):
                limit = "no limit" if limits.memory_bytes is None else format_bytes(limits.memory_bytes)
                return f"cgroup v1: memory.limit_in_bytes {limit}, no swap" + sentence[len(_MEMORY_V1_SENTENCE):]
            if sentence == _DATA_SENTENCE:
                limit = "no limit" if limits.memory_bytes is None else format_bytes(limits.memory_bytes)
                return f"RLIMIT_DATA {limit} per process of a run without the GPU (compiles, the checker)"
            if sentence == _FOLDER_SENTENCE:
                if limits.folder_bytes is None:
                    return "the folder is not capped (a compile's, or run_folder_bytes 0)"
                return (f"run folder: a tmpfs of its own of {format_bytes(limits.folder_bytes)} and "
                        f"{limits.folder_files} files and folders")
            return sentence
        return dataclasses.replace(self.isolation,
                                   in_force=tuple(map(with_numbers, self.isolation.in_force)))

    def run(self, argv: Sequence[str], *, workdir: Bind, binds: Sequence[Bind] = (),
            limits: Limits, gpu: bool = False, env: dict[str, str] | None = None,
            pass_fds: Sequence[int] = (), during: Callable[[], bool] | None = None,
            toolchain: Sequence[Path] = (), hide: Sequence[Path] = (),
            cover: Sequence[tuple[Path, str]] = (),
            started: Callable[[int], None] | None = None) -> ProcessResult:
        """Run argv (in inside coordinates) with `workdir` as its writable cwd and HOME and
        `binds` as the only other folders it sees. Never raises for the program's own
        failures; raises GraderError when the sandbox itself cannot be set up.

        `pass_fds` reach the program under the same numbers (the grader's copies are closed
        once it has them); `during()` runs while the program does, and returning False stops
        the program at once (paced timing talks to the program this way). `toolchain`
        folders (from toolchain_roots) are shown read-only at their own paths, their bin/
        folders first on PATH. `hide` files (absolute paths in the system view, such as a
        library the lab forbids) give nothing to read or load inside: /dev/null is bound
        over each, on a mount without devices; without bubblewrap nothing is hidden.
        `cover` pairs (a grader-owned file or folder, a path of the system view) show the
        first, read-only, in place of the second (libraries.compile_covers: a header of a
        library the lab does not allow becomes an #error, its folder an empty one).

        The workdir's files are the program's: read them afterwards without following links
        (or inside another sandbox), since it may have replaced any of them. Where the grader
        may mount, the workdir becomes a tmpfs of the limits' size and file count (its
        contents kept): remove it with trees.remove_tree, which unmounts it."""
        argv = [str(a) for a in argv]
        if not argv:
            raise ValueError("Sandbox.run needs a program to run; argv is empty.")
        workdir = dataclasses.replace(workdir, writable=True)
        every_bind = [workdir, *binds]
        insides = [b.inside for b in every_bind]
        if len(set(insides)) != len(insides):
            raise GraderError(f"Two binds share one sandbox path: {sorted(insides)}; give each "
                              "its own path under /cudalab.")
        for bind in every_bind:
            if bind.host.is_symlink():  # bubblewrap would follow it: a bind is what the grader named
                raise GraderError(f"Cannot bind {bind.host} into the sandbox at {bind.inside}: it is a "
                                  "symbolic link, and the grader binds only plain files and folders.")
            if not bind.host.exists():
                raise GraderError(f"Cannot bind {bind.host} into the sandbox at {bind.inside}: "
                                  "it does not exist.")
        if self._folders_capped:
            _cap_folder(workdir.host, limits)
        isolation = self.isolation_for(limits)
        talk = {"pass_fds": tuple(pass_fds), "during": during, "started": started, "toolchain": tuple(toolchain),
                "hide": tuple(Path(p) for p in hide), "cover": tuple((Path(h), str(t)) for h, t in cover), "gpu": gpu}
        if self._bubblewrap is None:
            result = self._run_unsandboxed(argv, workdir, every_bind, limits, env, isolation, talk)
        else:
            result = self._run_in_bubblewrap(argv, workdir, every_bind, limits, gpu, env, isolation, talk)
        result.folder_full = _folder_cap_reached(workdir.host, limits)
        return result

    def _inside_env(self, workdir: Bind, env: dict[str, str] | None) -> dict[str, str]:
        inside = {"PATH": DEFAULT_INSIDE_PATH, "HOME": workdir.inside, "TMPDIR": "/tmp",
                  "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
        inside.update({key: os.environ[key] for key in _KEPT_ENV if key in os.environ})
        inside.update(env or {})
        return inside

    def _run_in_bubblewrap(self, argv: list[str], workdir: Bind, every_bind: list[Bind],
                           limits: Limits, gpu: bool, env: dict[str, str] | None,
                           isolation: Isolation, talk: dict) -> ProcessResult:
        uid = self.isolation.uid
        if uid is not None:
            for index, bind in enumerate(every_bind):
                # A writable bind is handed to the sandbox user below; its parents must let
                # that user through all the same. A read-only one it cannot reach is copied
                # to where it can.
                why = _unreachable_reason(bind.host, uid, itself=not bind.writable)
                if why and not bind.writable:
                    every_bind[index] = dataclasses.replace(bind, host=_staged_copy(bind.host))
                elif why:
                    raise GraderError(f"Cannot bind {bind.host} into the sandbox: {why}.")
            for bind in every_bind:
                if bind.writable:
                    _chown_tree(bind.host, uid)
        tmp_bytes = limits.tmp_bytes if self._bubblewrap.sized_tmp else None
        command = [self._bubblewrap.program, *self._bubblewrap.options, *_system_view(tmp_bytes)]
        for root in talk["toolchain"]:
            command += ["--ro-bind", str(root), str(root)]
        if gpu:
            command += _gpu_view()
        for path in talk["hide"]:
            if path.is_absolute() and not path.is_symlink() and path.is_file():
                command += ["--ro-bind", "/dev/null", str(path)]
        command += _cover_view(talk["cover"], talk["toolchain"], uid)
        # Shallow mount points first, so a bind inside another one lands on top of it.
        for bind in sorted(every_bind, key=lambda b: b.inside.count("/")):
            command += ["--bind" if bind.writable else "--ro-bind", str(bind.host), bind.inside]
        command += ["--chdir", workdir.inside]
        inside_env = self._inside_env(workdir, env)
        tool_bins = [str(root / "bin") for root in talk["toolchain"] if (root / "bin").is_dir()]
        if tool_bins:
            inside_env["PATH"] = ":".join(tool_bins + [inside_env["PATH"]])
        for key, value in inside_env.items():
            command += ["--setenv", key, value]
        cgroups = self._run_cgroups(limits)
        # bubblewrap says on this pipe the host pid of the namespace's init, and the program's
        # exit code, which tells "the program exited 1" from "bubblewrap failed".
        status_read, status_write = os.pipe()
        # Last, so that bubblewrap could still create every mount point: writes anywhere but
        # the binds and /tmp then fail instead of filling a hidden tmpfs.
        command += ["--json-status-fd", str(status_write), "--remount-ro", "/", "--", *argv]
        status = _CappedReader(os.fdopen(status_read, "rb"), _READ_CHUNK)
        status.start()

        def stop() -> None:
            for cgroup in cgroups:
                cgroup.kill()
            # Killing the namespace's init makes the kernel kill and reap every process in it
            # before bubblewrap sees init end, so nothing outlives the run.
            init_pid = _status_value(bytes(status.kept), "child-pid")
            if init_pid is not None:
                try:
                    os.kill(init_pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass

        try:
            done = _supervise(command, timeout_s=limits.timeout_s,
                              output_cap_bytes=limits.output_cap_bytes, cwd="/",
                              env={"PATH": "/usr/bin:/bin"},
                              preexec_fn=_child_setup(_rlimits(limits, self._nproc(limits), gpu),
                                                      [c.procs_file for c in cgroups], uid),
                              pass_fds=(status_write, *talk["pass_fds"]), on_timeout=stop,
                              during=talk["during"], started=talk["started"])
        except (OSError, subprocess.SubprocessError) as err:
            raise GraderError(f"Could not start bubblewrap ({self._bubblewrap.program}) for "
                              f"{argv[0]}: {err}. Check CUDALAB_BWRAP, and that the grader may "
                              "join its cgroup and switch user.") from None
        finally:
            oom_killed = _close_all(cgroups)
        status.join(timeout=_PIPE_GRACE_S)
        exit_code = _status_value(bytes(status.kept), "exit-code")

        returncode, stderr = done.returncode, done.stderr
        if done.timed_out:
            pass  # bubblewrap's own SIGKILL; exit_code says it was the grader's doing
        elif exit_code is not None:
            # bubblewrap reports a program killed by signal N as exit code 128 + N; turn it back
            # into the signal, as the OS would report it without the sandbox in between. (A
            # program that itself exits with 128 + N is reported as killed by N: no harness
            # code is that high, so either way it is a failure.)
            returncode = -(exit_code - 128) if 128 < exit_code < 128 + signal.NSIG else exit_code
        elif done.returncode == _BWRAP_FAILED and not oom_killed:
            # The program never ran: either it could not be executed, or the sandbox could not
            # be set up (the grader's fault, not the student's).
            said = _one_line(done.stderr)
            if "execvp" not in said:
                raise GraderError(f"bubblewrap could not set up the sandbox for {argv[0]}: {said}")
            returncode, stderr = 127, f"could not start {argv[0]}: {said}\n"
        return ProcessResult(argv, returncode, done.timed_out, done.wall_s, limits.timeout_s,
                             done.stdout, stderr, isolation.describe(), oom_killed,
                             limits.memory_bytes)

    def _run_unsandboxed(self, argv: list[str], workdir: Bind, every_bind: list[Bind],
                         limits: Limits, env: dict[str, str] | None,
                         isolation: Isolation, talk: dict) -> ProcessResult:
        """The same run without bubblewrap: inside paths become host paths, so callers need
        not know which one they got."""
        host_env = scrubbed_env(workdir.host)
        host_env.update({key: host_paths_in(value, every_bind) for key, value in (env or {}).items()})
        host_argv = [host_paths_in(a, every_bind) for a in argv]
        if _is_shell_script(argv):
            # A shell command line (CMake's compile and link commands) names inside paths
            # within its text: each becomes its host path, quoted for the shell.
            host_argv[2] = host_paths_in(argv[2], every_bind, for_shell=True)
        cgroups = self._run_cgroups(limits)

        def kill_cgroups() -> None:
            for cgroup in cgroups:
                cgroup.kill()
        start = time.perf_counter()
        try:
            done = _supervise(host_argv, timeout_s=limits.timeout_s,
                              output_cap_bytes=limits.output_cap_bytes, cwd=workdir.host,
                              env=host_env,
                              preexec_fn=_child_setup(_rlimits(limits, self._nproc(limits), talk["gpu"]),
                                                      [c.procs_file for c in cgroups], None),
                              on_timeout=kill_cgroups if cgroups else None,
                              pass_fds=talk["pass_fds"], during=talk["during"], started=talk["started"])
        except OSError as err:
            return ProcessResult(argv, 127, False, time.perf_counter() - start, limits.timeout_s,
                                 "", f"could not start {host_argv[0]}: {err.strerror}\n",
                                 isolation.describe(), False, limits.memory_bytes)
        except subprocess.SubprocessError as err:
            raise GraderError(f"Could not prepare {host_argv[0]} to run (joining its cgroup or "
                              f"setting its limits failed: {err}).") from None
        finally:
            oom_killed = _close_all(cgroups)
        return ProcessResult(argv, done.returncode, done.timed_out, done.wall_s, limits.timeout_s,
                             done.stdout, done.stderr, isolation.describe(), oom_killed,
                             limits.memory_bytes)
