"""Run a process under limits: wall clock, CPU, file size, output size; untrusted ones also in
their own temp folder with a scrubbed environment and, where the machine allows, no network.

What is and is not in force is recorded in every result (`isolation`), never implied.
"""
from __future__ import annotations

import functools
import os
import resource
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from .config import Config
from .exit_codes import Harness, harness_status

_READ_CHUNK = 64 * 1024
_KEPT_ENV = ("PATH", "CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH")
_UNSHARE = ["unshare", "--net", "--map-root-user"]

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


@dataclass
class ProcessResult:
    argv: list[str]
    returncode: int          # as the OS reports it: negative for a signal
    timed_out: bool
    wall_s: float
    timeout_s: float
    stdout: str
    stderr: str
    isolation: str = "none: trusted process"

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
        """A harness status word, or 'crashed' (a signal) or 'unexpected_exit' (a code it never uses)."""
        if self.returncode < 0 and not self.timed_out:
            return "crashed"
        return harness_status(self.exit_code) or "unexpected_exit"

    def describe(self) -> str:
        """What happened, in words a student can act on."""
        if self.timed_out:
            return (f"the program was killed after {self.timeout_s:g} s (the wall-clock limit); "
                    "look for a loop that never ends or a kernel that never returns")
        if self.returncode < 0:
            meaning = _SIGNAL_MEANING.get(-self.returncode, "stopped by a signal")
            return f"the program crashed with {self.signal_name} ({meaning})"
        status = self.status
        if status == "cuda_error":
            return "the program stopped on a CUDA error"
        if status == "unexpected_exit":
            text = f"the program exited with code {self.returncode}, which the harness never uses"
            if 128 < self.returncode < 128 + 64:  # how shells report a child killed by a signal
                text += (" (a shell's way of saying a process was killed by "
                         f"{_signal_name(self.returncode - 128)})")
            return text
        return f"the program exited with code {self.returncode} ({status})"

    def stderr_head(self, lines: int = 6) -> str:
        return "\n".join(self.stderr.strip().splitlines()[:lines])


class _CappedReader(threading.Thread):
    """Drains a pipe to its end (so the child never blocks) and keeps the first `cap` bytes."""

    def __init__(self, pipe, cap: int):
        super().__init__(daemon=True)
        self.pipe, self.cap = pipe, cap
        self.kept = bytearray()
        self.cut = False

    def run(self) -> None:
        try:
            while chunk := self.pipe.read1(_READ_CHUNK):
                room = self.cap - len(self.kept)
                if len(chunk) > room:
                    self.cut = True
                self.kept += chunk[:max(room, 0)]
        except (OSError, ValueError):
            pass

    def text(self) -> str:
        body = self.kept.decode("utf-8", errors="replace")
        if self.cut:
            body += f"\n[output cut at {self.cap // 1024} KiB]\n"
        return body


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_process(argv: Sequence[str], *, timeout_s: float, output_cap_bytes: int,
                cwd: Path | None = None, env: dict[str, str] | None = None,
                preexec_fn: Callable[[], None] | None = None,
                isolation: str = "none: trusted process") -> ProcessResult:
    """Run argv in a new session; on time-out kill its whole process group. Never raises for
    the child's own failures: a program that cannot start is reported as exit 127."""
    argv = [str(a) for a in argv]
    start = time.perf_counter()
    try:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True, preexec_fn=preexec_fn)
    except OSError as err:
        return ProcessResult(argv, 127, False, time.perf_counter() - start, timeout_s, "",
                             f"could not start {argv[0]}: {err.strerror}\n", isolation)
    readers = [_CappedReader(proc.stdout, output_cap_bytes),
               _CappedReader(proc.stderr, output_cap_bytes)]
    for reader in readers:
        reader.start()
    timed_out = False
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(proc.pid)
        proc.wait()
    wall_s = time.perf_counter() - start
    _kill_group(proc.pid)  # leftovers (background children) die with their parent
    for reader in readers:
        reader.join(timeout=5)
    return ProcessResult(argv, proc.returncode, timed_out, wall_s, timeout_s,
                         readers[0].text(), readers[1].text(), isolation)


@functools.cache
def network_isolation_available() -> bool:
    """True when `unshare --net --map-root-user true` works on this machine."""
    if shutil.which("unshare") is None:
        return False
    try:
        done = subprocess.run(_UNSHARE + ["true"], capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def scrubbed_env(home: Path, parent: dict[str, str] | None = None) -> dict[str, str]:
    parent = os.environ if parent is None else parent
    env = {key: parent[key] for key in _KEPT_ENV if key in parent}
    env.setdefault("PATH", "/usr/bin:/bin")
    env.update(LANG="C.UTF-8", LC_ALL="C.UTF-8", HOME=str(home), TMPDIR=str(home))
    return env


def _limits(timeout_s: float, cpu_time_factor: float, fsize_bytes: int) -> Callable[[], None]:
    cpu_s = max(1, int(timeout_s * cpu_time_factor + 0.999))

    def bounded(limit_kind: int, soft: int, hard: int) -> None:
        _, current_hard = resource.getrlimit(limit_kind)
        if current_hard != resource.RLIM_INFINITY:
            soft, hard = min(soft, current_hard), min(hard, current_hard)
        resource.setrlimit(limit_kind, (soft, hard))

    def apply() -> None:  # runs in the child between fork and exec
        bounded(resource.RLIMIT_CORE, 0, 0)
        bounded(resource.RLIMIT_FSIZE, fsize_bytes, fsize_bytes)
        bounded(resource.RLIMIT_CPU, cpu_s, cpu_s + 1)
    return apply


def run_untrusted(argv: Sequence[str], config: Config, *, network_isolation: bool | None = None,
                  timeout_s: float | None = None, scrub_env: bool = True) -> ProcessResult:
    """Run a student (or lab) binary: own temp folder as cwd and HOME, scrubbed environment,
    wall-clock/CPU/file-size/output limits, no network where `unshare` allows it."""
    timeout_s = config.process_timeout_s if timeout_s is None else timeout_s
    wanted = config.network_isolation if network_isolation is None else network_isolation
    if not wanted:
        isolation, prefix = "none: network isolation turned off", []
    elif network_isolation_available():
        isolation, prefix = "network namespace (unshare --net --map-root-user)", _UNSHARE + ["--"]
    else:
        isolation, prefix = "none: unshare unavailable", []
    config.temp_dir.mkdir(parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix="sandbox-", dir=config.temp_dir))
    try:
        env = scrubbed_env(home) if scrub_env else None
        return run_process(prefix + list(argv), timeout_s=timeout_s,
                           output_cap_bytes=config.output_cap_bytes, cwd=home, env=env,
                           preexec_fn=_limits(timeout_s, config.cpu_time_factor,
                                              config.file_size_limit_bytes),
                           isolation=isolation)
    finally:
        shutil.rmtree(home, ignore_errors=True)
