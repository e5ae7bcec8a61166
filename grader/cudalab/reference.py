"""The reference's paced program, kept alive for every timing round that uses it.

A grade times the reference and the submission in each of its rounds, back to back, with
the GPU to itself. The submission's program is a fresh process in every round (a grade
judges one secretly drawn sample from each of its processes), but the reference is official
code, so one process of it can serve every round of a grade, and in a batch every round of
every grade on its GPU: each round is one session over the same control pipes
(timing.PacedChannel), with exactly the warm-ups and samples a fresh process would run. A
round then no longer pays for the reference's start (sandbox, CUDA context, buffers: about
0.25 s on an H100) and end (about 0.1 s).

Between sessions the program sits blocked on its control pipe: it holds its GPU memory but
runs nothing, so it cannot disturb the submission's timing, and timing ignores it where it
looks for other processes on the GPU (pids()). A server is replaced once it is MAX_AGE_S
old, and one whose program failed is replaced at its next session.
"""
from __future__ import annotations

import os
import queue
import shutil
import threading
import time
from pathlib import Path

from . import gpu
from .errors import GraderError
from .exit_codes import Harness
from .runner import Runner, paced_argv, read_untrusted_json
from .sandbox import ProcessResult
from .timing import ChannelClosed, Pace, PacedChannel, PacedRun, ProtocolError

MAX_AGE_S = 1800.0


class ReferenceServer:
    """Paced sessions of `binary` (the lab's scoring reference) on `case`, one process for as
    many sessions as its owner asks for, run through `runner` (which says on which GPU)."""

    def __init__(self, runner: Runner, binary: Path, case: str, sample_timeout_s: float):
        self.runner, self.binary, self.case, self.sample_timeout_s = runner, binary, case, sample_timeout_s
        self.clocks: list[float] = []  # the SM clock readings of every program that ended
        self._thread: threading.Thread | None = None

    @classmethod
    def for_lab(cls, config, spec, scratch: Path) -> "ReferenceServer | None":
        """A server of the lab's scoring reference on config.gpu_device, its runs' folders in
        `scratch`; None when the official build lacks it (each grade then says so itself)."""
        from . import labs
        runner = Runner(config, spec, scratch)
        try:
            binary = runner.official(labs.scoring_reference(spec))
        except GraderError:
            return None
        return cls(runner, binary, spec.scoring.timing_case, config.sample_timeout_s)

    # -- the program ---------------------------------------------------------------------
    def _start(self) -> None:
        to_child_read, to_child_write = os.pipe()
        from_child_read, from_child_write = os.pipe()
        self._requests: queue.Queue = queue.Queue()
        self._replies: queue.Queue = queue.Queue()
        self._pid: int | None = None
        self._born = time.monotonic()
        self._outcome: tuple[ProcessResult, Path] | None = None
        self._error = ""

        def serve() -> bool:
            """Runs while the program does: True lets it end by itself, False stops it now."""
            try:
                try:
                    channel = PacedChannel(from_child_read, to_child_write, self.case, self.sample_timeout_s)
                except ProtocolError as err:
                    return self._failed(err)
                self._replies.put("ready")
                while (pace := self._requests.get()) is not None:
                    try:
                        self._replies.put(channel.session_apart(pace))  # the clock in a process of its own
                    except ProtocolError as err:
                        return self._failed(err)
                channel.end()
                return True
            finally:
                os.close(from_child_read)
                os.close(to_child_write)

        def body() -> None:
            try:
                self._outcome = self.runner.run(
                    self.binary, paced_argv(self.case, to_child_read, from_child_write),
                    pass_fds=(to_child_read, from_child_write), during=serve, timeout_s=2 * MAX_AGE_S,
                    started=self._started, hold_gpu=False)
            except BaseException as err:  # the sandbox could not start it: a grader problem
                self._error = str(err)
            finally:
                self._replies.put("ended")

        self._thread = threading.Thread(target=body, daemon=True, name="reference-server")
        self._thread.start()
        if self._replies.get() != "ready":
            self._raise()

    def _started(self, pid: int) -> None:
        self._pid = pid

    def _failed(self, err: ProtocolError) -> bool:
        self._error = "" if isinstance(err, ChannelClosed) else f"the program {err}"
        self._replies.put("failed")
        return isinstance(err, ChannelClosed)  # ended by itself: its exit says why

    def _ended(self) -> None:
        """After the program ended: its clocks, its folder removed, the server empty."""
        if self._thread is not None:
            self._thread.join()
        self._thread = None
        if self._outcome is None:
            return
        result, folder = self._outcome
        self._outcome = None
        entry = next(iter((read_untrusted_json(folder / "run.json") or {}).get("bench", [])), {})
        for key in ("sm_clock_mhz_before", "sm_clock_mhz_after"):
            if result.exit_code == Harness.PASSED and isinstance(entry.get(key), (int, float)):
                self.clocks.append(float(entry[key]))
        if not self.runner.config.keep_temp:
            shutil.rmtree(folder, ignore_errors=True)

    def _raise(self) -> None:
        from .grade import failure_reason
        if self._thread is not None:
            self._thread.join()
        outcome = self._outcome
        why = self._error or (failure_reason(outcome[0]) if outcome else "it did not start")
        self._ended()
        raise GraderError(f"The reference solution's timed run failed ({why}).")

    # -- what its owner calls --------------------------------------------------------------
    def session(self, pace: Pace) -> PacedRun:
        """One timing round's reference run; GraderError when the reference fails (the
        next session starts it afresh)."""
        if self._thread is not None and time.monotonic() - self._born > MAX_AGE_S:
            self.close()
        if self._thread is None:
            self._start()
        self._requests.put(pace)
        reply = self._replies.get()
        if not isinstance(reply, PacedRun):
            self._raise()
        if not reply.wall_ms:
            self.close()
            raise GraderError("The reference solution's timed run failed (it timed no sample).")
        return reply

    def pids(self) -> frozenset[int]:
        """The program's processes (host pids), while it runs."""
        pid = self._pid if self._thread is not None else None
        return gpu.process_tree(pid) if pid is not None else frozenset()

    def close(self) -> list[float]:
        """End the program (it says 'end' and exits); returns every SM clock reading so far."""
        if self._thread is not None:
            if self._thread.is_alive():
                self._requests.put(None)
            self._ended()
        return list(self.clocks)
