"""Whether the GPU is free for timing: timings are taken only when no other process is
computing on it (the driver's list of compute processes, through nvidia-smi), and a
result says when timing had to wait, or went ahead on a busy GPU."""
from __future__ import annotations

import subprocess
import time
from dataclasses import asdict, dataclass, field

_QUERY = ["nvidia-smi", "--query-compute-apps=pid,process_name,used_memory", "--format=csv,noheader"]


def compute_processes() -> list[str] | None:
    """One line per process computing on a GPU now, or None when this cannot be known
    (no nvidia-smi, or it failed)."""
    try:
        done = subprocess.run(_QUERY, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    return [line.strip() for line in done.stdout.splitlines() if line.strip()]


@dataclass
class GpuWait:
    """What timing found on the GPU before one round."""
    known: bool                     # nvidia-smi could say
    waited_s: float = 0.0
    busy_with: list[str] = field(default_factory=list)  # other processes still there when timing began

    def to_json(self) -> dict:
        return asdict(self)


def wait_until_idle(timeout_s: float, poll_s: float = 1.0, probe=compute_processes, clock=time.monotonic,
                    sleep=time.sleep) -> GpuWait:
    """Wait (up to timeout_s) until no process computes on the GPU."""
    started = clock()
    first = True
    while True:
        found = probe()
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
        return "Whether other processes used the GPU during timing could not be checked (no nvidia-smi)."
    return ""
