"""Whether the GPU is free for timing: timings are taken only when no other process is
computing on it (the driver's list of compute processes, through NVML, else nvidia-smi), and
a result says when timing had to wait, or went ahead on a busy GPU."""
from __future__ import annotations

import functools
import subprocess
import threading
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

_QUERY = ["nvidia-smi", "--query-compute-apps=gpu_uuid,pid,process_name,used_memory", "--format=csv,noheader"]
_locks: dict[str, threading.RLock] = {}
_locks_guard = threading.Lock()


@contextmanager
def exclusive(device: str):
    """Holds `device` (a CUDA_VISIBLE_DEVICES value; '' is the default GPU) while one of the
    lab's programs runs on it: grades that share a GPU in one grader process (a batch) take
    turns, so every program, and every timing round above all, has the GPU to itself. A
    thread that holds it may take it again (a timing round holds it across its two runs)."""
    with _locks_guard:
        lock = _locks.setdefault(device, threading.RLock())
    with lock:
        yield


def _smi(argv: list[str]) -> list[str] | None:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    return [line.strip() for line in done.stdout.splitlines() if line.strip()]


@functools.cache
def _nvml():
    """NVIDIA's NVML binding (nvidia-ml-py), initialised once, or None where it cannot run (not
    installed, no driver). The idle check comes before every timing round: on an H100 host NVML
    answered in under a millisecond (7 ms at most), nvidia-smi in 21 ms."""
    try:
        import pynvml
        pynvml.nvmlInit()
    except Exception:  # ImportError, or NVMLError of any kind: nvidia-smi answers instead
        return None
    return pynvml


def _text(value) -> str:
    """A string NVML gave: bytes in older bindings, str in newer ones."""
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _process_name(nvml, pid: int) -> str:
    try:
        return _text(nvml.nvmlSystemGetProcessName(pid))
    except Exception:
        return "?"


def _nvml_rows(nvml) -> list[str]:
    """What nvidia-smi's _QUERY prints, a line per compute process: 'uuid, pid, name, N MiB'."""
    rows = []
    for index in range(nvml.nvmlDeviceGetCount()):
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
        uuid = _text(nvml.nvmlDeviceGetUUID(handle))
        for process in nvml.nvmlDeviceGetComputeRunningProcesses(handle):
            used = process.usedGpuMemory
            memory = f"{used // (1024 * 1024)} MiB" if isinstance(used, int) else "[N/A]"
            rows.append(f"{uuid}, {process.pid}, {_process_name(nvml, process.pid)}, {memory}")
    return rows


def _compute_rows() -> list[str] | None:
    """Every compute process on every GPU, a line each ('uuid, pid, name, memory'), or None
    when neither NVML nor nvidia-smi can say."""
    nvml = _nvml()
    if nvml is not None:
        try:
            return _nvml_rows(nvml)
        except Exception:  # an NVML error now (a GPU fell off the bus): ask nvidia-smi
            pass
    return _smi(_QUERY)


_uuids: dict[str, str] = {}  # a GPU's index -> its UUID, once known (it does not change)


def _uuid_of_index(device: str) -> str | None:
    nvml = _nvml()
    if nvml is not None:
        try:
            return _text(nvml.nvmlDeviceGetUUID(nvml.nvmlDeviceGetHandleByIndex(int(device))))
        except Exception:
            pass
    found = _smi(["nvidia-smi", "-i", device, "--query-gpu=uuid", "--format=csv,noheader"])
    return found[0] if found else None


def device_uuid(device: str) -> str | None:
    """The UUID of the GPU a CUDA_VISIBLE_DEVICES value names (an index or a UUID)."""
    if device.startswith("GPU-"):
        return device
    if device not in _uuids:
        uuid = _uuid_of_index(device)
        if uuid is None:
            return None  # not known now: asked again next time
        _uuids[device] = uuid
    return _uuids[device]


def compute_processes(device: str = "", ignore: frozenset[int] = frozenset()) -> list[str] | None:
    """One line per process computing now on the GPU `device` names (every GPU when it is
    empty), but those of the process trees rooted at the pids in `ignore`, or None when this
    cannot be known (neither NVML nor nvidia-smi could say)."""
    found = _compute_rows()
    if found is None:
        return None
    if device:
        uuid = device_uuid(device)
        if uuid is None:
            return None
        found = [line for line in found if line.split(",", 1)[0].strip() == uuid]
    rows = [line.split(",", 1)[1].strip() if "," in line else line for line in found]
    return [row for row in rows if not descends_from(_pid(row), ignore)]


def _pid(row: str) -> int | None:
    first = row.split(",", 1)[0].strip()
    return int(first) if first.isdigit() else None


def parent_of(pid: int, proc: Path = Path("/proc")) -> int | None:
    """The pid of `pid`'s parent, or None once it is gone."""
    try:
        stat = (proc / str(pid) / "stat").read_text()
    except OSError:
        return None
    # pid (comm) state ppid ...: comm may hold spaces and parentheses, so split after the last ')'
    fields = stat[stat.rfind(")") + 2:].split()
    return int(fields[1]) if len(fields) > 1 and fields[1].isdigit() else None


def descends_from(pid: int | None, roots: frozenset[int], proc: Path = Path("/proc")) -> bool:
    """Whether `pid` (a host pid, as NVML lists it) is one of `roots` or descends from one,
    read up its chain of parents. Only the few processes on the GPU are looked up, never the
    whole of /proc: before each timing round the grader's thread does this beside the
    threads that start the kept samples' checks, and reading every process's stat, three
    times, took 20 to 150 ms beside nine busy threads (10 ms alone), each read waiting for
    Python's interpreter lock."""
    for _ in range(64):  # a chain deeper than this is no process tree of the grader's
        if pid is None or pid <= 1:
            return False
        if pid in roots:
            return True
        pid = parent_of(pid, proc)
    return False


@dataclass
class GpuWait:
    """What timing found on the GPU before one round."""
    known: bool                     # nvidia-smi could say
    waited_s: float = 0.0
    busy_with: list[str] = field(default_factory=list)  # other processes still there when timing began

    def to_json(self) -> dict:
        return asdict(self)


def wait_until_idle(timeout_s: float, poll_s: float = 1.0, probe=compute_processes, clock=time.monotonic,
                    sleep=time.sleep, device: str = "", ignore: frozenset[int] = frozenset()) -> GpuWait:
    """Wait (up to timeout_s) until no process computes on the GPU (`device`, when given),
    but the grader's own idle ones (`ignore`: the roots of their process trees, the auditor
    and the reference kept for the timing rounds)."""
    started = clock()
    first = True
    while True:
        found = probe(device, ignore)
        if found is None:
            return GpuWait(known=False)
        waited = 0.0 if first else clock() - started  # the query itself is no wait
        if not found or waited >= timeout_s:
            return GpuWait(known=True, waited_s=round(waited, 2), busy_with=found)
        first = False
        sleep(poll_s)


def describe(waits: list[GpuWait]) -> str:
    """A sentence for the result, or '' when the GPU was free every time."""
    busy = [w for w in waits if w.busy_with]
    waited = sum(w.waited_s for w in waits)
    if busy:
        return ("Other processes were computing on the GPU while it was timed "
                f"({'; '.join(busy[0].busy_with)[:200]}), after waiting {waited:.0f} s for them: "
                "these timings are less reliable than usual; grade again on an idle GPU.")
    if waited > 0:
        return f"Timing waited {waited:.0f} s for other processes to leave the GPU."
    if waits and not any(w.known for w in waits):
        return ("Whether other processes used the GPU during timing could not be checked (neither NVML nor "
                "nvidia-smi answered).")
    return ""


def driver_release() -> str | None:
    """The NVIDIA driver's own version ("580.95.05"), as nvidia-smi reports it for the first
    GPU, or None when it cannot say."""
    try:
        done = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = [line.strip() for line in done.stdout.splitlines() if line.strip()]
    return lines[0] if done.returncode == 0 and lines else None
