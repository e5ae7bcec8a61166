"""The timed case's auditor and the course's reference program, kept for every timing round
that uses them (docs/architecture.md, "Paced timing").

The auditor is official code in a process of its own: it owns the timed case's inputs and
outputs in device memory it shares (a file descriptor) with the program being timed, it
prepares, seals and verifies every sample, and it keeps the samples the grader draws for
the checker. The reference program is the lab's scoring reference, timed through the same
auditor in the same way as a submission, in two processes whose own event times measure
the protocol's cost beside their windows (timing.PROTOCOL_COST). All three are official,
so one process of each serves every round of a grade, and in a batch every round of every
grade on its GPU; a submission's program is a fresh process in every round, attached to
the auditor for its session.

Between sessions they wait on their pipes, running nothing, and the GPU's idle check
ignores them (pids()). A server is replaced once it is MAX_AGE_S old, and one whose
processes failed is replaced at its next session.
"""
from __future__ import annotations

import os
import re
import secrets
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from ..isolation import cpus, safe_files
from ..lab import labs
from . import pacer
from ..errors import GraderError
from ..isolation.runner import (Runner, audit_argv, failure_reason, fresh_dir, paced_argv, read_untrusted_json,
                     why_nothing_ran)
from .timing import (OFFICIAL, REFERENCE, SECOND, STUDENT, AuditorChannel, AuditorError, Floor, LineReader, Pace,
                     ProtocolError, SessionRun, send_line)
from ..isolation.trees import remove_tree

MAX_AGE_S = 1800.0
_START_TIMEOUT_S = 120.0   # an auditor lays its case out twice and measures the copy roof first
_ANSWER_TIMEOUT_S = 60.0   # attach, detach and dump (a kept sample of a few GB to disk)
_READY = re.compile(r"ready (\S+) (\d+)( signal)?")
_OFFICIAL_WORDS = {REFERENCE: "the reference program", SECOND: "the reference program's second process"}
_AUDITOR_READY = re.compile(r"ready (\S+) (\d+) (\d+) (\S+) (\S+) (\S+)")


@dataclass(frozen=True)
class ProgramPipes:
    """The grader's ends of a timed program's control pipes, and its signal page where the
    program said it answers through one."""
    to_program: int     # write end of the program's --control-in
    from_program: int   # read end of the program's --control-out
    signal: int | None = None  # the grader's descriptor of the program's --signal page


SIGNAL_PAGE_BYTES = 4096  # labkit::SignalPage::kBytes


def signal_page() -> tuple[int, int] | None:
    """A fresh page for one timed program to share with the auditor (labkit/signal_page.hpp:
    "go" and "done" pass through it without a system call): the grader's descriptor, for the
    auditor with 'attach', and the program's, for its --signal. None where the system has no
    memfd (the program then answers over its pipe)."""
    try:
        fd = os.memfd_create("cudalab-signal", os.MFD_CLOEXEC)
    except (AttributeError, OSError):
        return None
    try:
        os.ftruncate(fd, SIGNAL_PAGE_BYTES)
        return fd, os.dup(fd)
    except OSError:
        os.close(fd)
        return None


class _Kept:
    """An official program run by a thread of its own until stop(): the sandbox is a
    child of the grader, and its folder is known before it starts."""

    def __init__(self, runner: Runner, binary: Path, argv: list, pass_fds: tuple[int, ...], name: str):
        self.folder = fresh_dir(runner.scratch, name)
        self.pid: int | None = None
        self.outcome = None
        self.error = ""
        self._stop = threading.Event()

        def during() -> bool:
            self._stop.wait()
            return _ends_by_itself(self.pid)

        def body() -> None:
            try:
                with cpus.on_timing_cpus(runner.config):
                    self.outcome, _ = runner.run(binary, argv, pass_fds=pass_fds, during=during,
                                                 timeout_s=2 * MAX_AGE_S, started=self._started, hold_gpu=False,
                                                 folder=self.folder)
            except BaseException as err:  # the sandbox could not start it: a grader problem
                self.error = str(err)

        self.thread = threading.Thread(target=body, daemon=True, name=name)
        self.thread.start()

    def _started(self, pid: int) -> None:
        self.pid = pid

    def alive(self) -> bool:
        return self.thread.is_alive()

    def stop(self) -> None:
        self._stop.set()
        self.thread.join()

    def why_it_failed(self) -> str:
        if self.error:
            return self.error
        if self.outcome is not None:
            said = why_nothing_ran(read_untrusted_json(self.folder / "run.json"))
            return said or failure_reason(self.outcome)
        return "it did not start"


class KeptDump:
    """A kept sample's outputs where the auditor wrote them (`path`), until release(): the
    checker reads them there, and the auditor's folder outlives the auditor until every
    dump of it is released."""

    def __init__(self, server: "AuditServer", auditor_folder: Path, path: Path):
        self.server, self.auditor_folder, self.path = server, auditor_folder, path
        self._released = False
        self._lock = threading.Lock()

    def release(self) -> None:
        """Removes the dump; a second call does nothing."""
        with self._lock:
            if self._released:
                return
            self._released = True
        self.server._release(self)


def _ends_by_itself(pid: int | None, wait_s: float = 15.0) -> bool:
    """After it was told to end: True once the process has exited (or turned zombie), False
    to have it stopped at once when it has not within wait_s."""
    if pid is None:
        return True
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.02)
    return False


def read_ready(from_program: int, case: str, layout_bytes: int, timeout_s: float) -> bool:
    """A timed program's first line, 'ready CASE LAYOUT [signal]': it must have laid the case
    out in the shared arena exactly as the auditor did. ProtocolError (the program's fault) if
    not. True when it answers through its signal page."""
    line = LineReader(from_program).read_line(timeout_s, what="the program")
    ready = _READY.fullmatch(line)
    if not ready or ready.group(1) != case:
        raise ProtocolError(f"did not start with 'ready {case} BYTES' (it said {line[:80]!r})")
    if int(ready.group(2)) != layout_bytes:
        raise ProtocolError(f"laid the case out in {ready.group(2)} bytes of the shared memory where the grader's "
                            f"auditor laid it out in {layout_bytes}: its harness is not the official one")
    return ready.group(3) is not None


class ProgramStart:
    """What one timed program is started with beside the auditor (AuditServer.program_start):
    `argv` and `pass_fds` (its two control pipes, a descriptor of the shared arena and its
    signal page, under the same numbers; the sandbox closes the grader's copies once the
    program holds them), and the grader's ends of its pipes and page."""

    def __init__(self, case: str, layout_bytes: int, arena_bytes: int, arena_fd: int):
        self.case, self.layout_bytes = case, layout_bytes
        to_read, self.to_program = os.pipe()
        self.from_program, from_write = os.pipe()
        page = signal_page()
        self.page = page[0] if page else None
        theirs = page[1] if page else None
        self.argv = paced_argv(case, to_read, from_write, arena_fd, arena_bytes, theirs)
        self.pass_fds = (to_read, from_write, arena_fd) + ((theirs,) if page else ())

    def ready(self, timeout_s: float) -> ProgramPipes:
        """Reads the program's ready line (read_ready: ProtocolError if it is wrong) and
        returns the grader's ends to attach, with its page where it said it answers there."""
        signals = read_ready(self.from_program, self.case, self.layout_bytes, timeout_s)
        return ProgramPipes(self.to_program, self.from_program, self.page if signals else None)

    def pipes(self) -> ProgramPipes:
        """The grader's ends of its pipes, without its page (a program that never said ready)."""
        return ProgramPipes(self.to_program, self.from_program)

    def close_page(self) -> None:
        """Closes the grader's descriptor of its page: the auditor and the program hold their own."""
        if self.page is not None:
            os.close(self.page)
            self.page = None

    def close(self) -> None:
        """Closes every end the grader holds (after the program's session)."""
        os.close(self.to_program)
        os.close(self.from_program)
        self.close_page()


class AuditServer:
    """The auditor of the lab's timing case and its reference program, on the GPU that
    `runner` runs on, for as many sessions as its owner asks for."""

    def __init__(self, runner: Runner, binary: Path, case: str, sample_timeout_s: float, slots: int):
        self.runner, self.binary, self.case = runner, binary, case
        self.sample_timeout_s, self.slots = sample_timeout_s, slots
        self.clocks: list[float] = []  # the SM clock readings of every reference program that ended
        self._lock = threading.RLock()
        self._auditor: _Kept | None = None
        self._officials: dict[str, tuple[_Kept, ProgramPipes]] = {}  # REFERENCE and SECOND
        self._socket: socket.socket | None = None
        self._arena_fd: int | None = None
        self.channel: AuditorChannel | None = None
        self._held: dict[Path, int] = {}  # auditor folders -> their kept samples not yet released
        self._retired: set[Path] = set()  # folders of ended auditors, removed with their last release

    @classmethod
    def for_lab(cls, config, spec, scratch: Path) -> "AuditServer | None":
        """A server of the lab's scoring reference on config.gpu_device, its folders in
        `scratch`; None when the official build lacks it (each grade then says so itself)."""
        runner = Runner(config, spec, scratch)
        try:
            binary = runner.official(labs.scoring_reference(spec))
        except GraderError:
            return None
        return cls(runner, binary, spec.scoring.timing_case, config.sample_timeout_s,
                   spec.scoring.kept(config.kept_samples))

    # -- the two processes -------------------------------------------------------------------
    def _start(self) -> None:
        ours, theirs = socket.socketpair()
        self._socket = ours
        inside = os.dup(theirs.fileno())
        theirs.close()
        self._born = time.monotonic()
        self._auditor = _Kept(self.runner, self.binary, audit_argv(self.case, inside, self.slots), (inside,), "auditor")
        try:
            line, fds, rest = _first_line_with_fds(ours, _START_TIMEOUT_S)
        except AuditorError as err:
            self._fail(f"it did not start ({err})")
        ready = _AUDITOR_READY.fullmatch(line)
        if not ready or ready.group(1) != self.case or len(fds) != 1:
            for fd in fds:
                os.close(fd)
            self._fail(f"it started with {line[:120]!r}")
        self.layout_bytes, self.arena_bytes = int(ready.group(2)), int(ready.group(3))
        self.floor = Floor(floor_ms=float(ready.group(4)), copy_gbps=float(ready.group(5)),
                           fp32_tflops=float(ready.group(6)))
        self._arena_fd = fds[0]
        self.channel = AuditorChannel(ours.fileno(), buffer=rest)
        for name in OFFICIAL:  # two processes of the reference program, in the same arena
            self._start_official(name)

    def _start_official(self, name: str) -> None:
        start = self._program_start(os.dup(self._arena_fd))
        self._officials[name] = (_Kept(self.runner, self.binary, start.argv, start.pass_fds, name), start.pipes())
        try:
            self._attach(name, start.ready(_START_TIMEOUT_S), "official")
        except ProtocolError as err:
            self._fail(f"{_OFFICIAL_WORDS[name]} {err}", culprit=name)
        except (AuditorError, OSError) as err:
            self._fail(f"the auditor failed ({err})")
        finally:
            start.close_page()

    def _attach(self, name: str, program: ProgramPipes, role: str) -> None:
        page = [program.signal] if program.signal is not None else []
        socket.send_fds(self._socket, [f"attach {name} {int(self.sample_timeout_s * 1000)} {role}\n".encode()],
                        [program.to_program, program.from_program] + page)
        self.channel.expect(f"attached {name}", _ANSWER_TIMEOUT_S)

    def _fail(self, why: str, culprit: str = "auditor") -> None:
        """Ends every program and raises GraderError: `why`, and how the culprit (the auditor,
        or the reference program's REFERENCE or SECOND process) ended."""
        kept = self._officials[culprit][0] if culprit in self._officials else self._auditor
        self.close()
        if kept is not None and (kept.error or kept.outcome is not None):
            why += f" ({kept.why_it_failed()})"
        raise GraderError(f"The grader's timing could not run: {why}. This is a problem with the grader or the "
                          "machine, not with the submission.")

    def _ensure(self) -> None:
        if self._auditor is not None and (time.monotonic() - self._born > MAX_AGE_S or not self._auditor.alive()
                                          or not all(kept.alive() for kept, _ in self._officials.values())):
            self.close()
        if self._auditor is None:
            self._start()

    def start(self) -> None:
        """Starts the auditor and the reference's two processes now, if they are not running
        (a grade starts them while the submission builds). GraderError if they cannot."""
        with self._lock:
            self._ensure()

    def _program_start(self, arena_fd: int) -> ProgramStart:
        return ProgramStart(self.case, self.layout_bytes, self.arena_bytes, arena_fd)

    def program_start(self) -> ProgramStart:
        """What a submission's timed program is started with, in this server's arena (which
        starts the auditor and the reference first where needed)."""
        with self._lock:
            self._ensure()
            return self._program_start(os.dup(self._arena_fd))

    # -- what its owners call ---------------------------------------------------------------
    def round(self, pace: Pace, student: ProgramPipes | None = None) -> SessionRun:
        """One timing round: the reference's samples and, when `student` is given (pace.student),
        a submission's, interleaved. Raises ProtocolError (ChannelClosed) for the submission's
        faults, GraderError for the auditor's or the reference's (the next round starts both
        afresh)."""
        with self._lock:
            self._ensure()
            try:
                if student is not None:
                    self._attach(STUDENT, student, "student")
                try:
                    with cpus.on_timing_cpus(self.runner.config):  # the grader's clock beside the programs
                        run = pacer.session_in_process(self.channel, pace)
                finally:
                    if student is not None:
                        self.channel.send(f"detach {STUDENT}")
                        self.channel.expect(f"detached {STUDENT}", _ANSWER_TIMEOUT_S)
            except ProtocolError as err:
                if err.program in self._officials:
                    self._fail(f"{_OFFICIAL_WORDS[err.program]} {err}", culprit=err.program)
                raise
            except (AuditorError, OSError) as err:
                self._fail(f"the auditor failed ({err})")
            if (not run.reference.wall_ms or not run.second.wall_ms) and not (run.student and run.student.wrong):
                self._fail("the reference's own samples were not timed")
            return run

    def dump(self, slot: int) -> "KeptDump":
        """The outputs of the sealed sample in `slot`, written by the auditor into its own run
        folder and judged there (no copy: a bench case's gigabyte took seconds to copy out of
        the auditor's tmpfs). Nothing but official code can write there: the auditor's
        folder is bound into no sandbox but its own, and the checker sees the dump read-only
        (docs/architecture.md, "Trust"). The caller releases it once it is checked."""
        with self._lock:
            name = f"kept-{secrets.token_hex(8)}"
            try:
                self.channel.send(f"dump {name} {slot}")
                self.channel.expect(f"dumped {name}", _ANSWER_TIMEOUT_S)
            except AuditorError as err:
                self._fail(f"the auditor could not write a kept sample ({err})")
            # The auditor's folder belongs to the sandbox user: the dump must be reached
            # without a link at any component (the checker's bind would follow one).
            try:
                os.close(safe_files.open_below(self._auditor.folder, f"dump/{name}"))
            except (OSError, safe_files.NotPlainError) as err:
                self._fail(f"the auditor's kept sample could not be found in its folder ({err})")
            folder = self._auditor.folder
            self._held[folder] = self._held.get(folder, 0) + 1
            return KeptDump(self, folder, folder / "dump" / name)

    def _release(self, dump: "KeptDump") -> None:
        """A checked dump goes, and with the last of them the folder of an auditor that has
        ended (its removal waited for them)."""
        with self._lock:
            remove_tree(dump.path)
            self._held[dump.auditor_folder] -= 1
            if self._held[dump.auditor_folder] == 0:
                del self._held[dump.auditor_folder]
                if dump.auditor_folder in self._retired:
                    self._retired.discard(dump.auditor_folder)
                    self._remove_folder(dump.auditor_folder)

    def pids(self) -> frozenset[int]:
        """The host pids of the auditor's and the reference program's sandboxes, while they
        run: the roots of the process trees that are the grader's own on the GPU."""
        return frozenset(kept.pid for kept in (self._auditor, *(kept for kept, _ in self._officials.values()))
                         if kept is not None and kept.pid is not None and kept.alive())

    def close(self) -> list[float]:
        """End every program; returns every SM clock reading of the reference so far."""
        with self._lock:
            officials, auditor = self._officials, self._auditor
            self._officials, self._auditor = {}, None
            for name, (kept, pipes) in officials.items():
                try:
                    send_line(pipes.to_program, "end")
                except ProtocolError:
                    pass
                kept.stop()
                if name == REFERENCE:
                    self._record_clocks(kept)
                else:
                    self._discard(kept)
                os.close(pipes.to_program)
                os.close(pipes.from_program)
            if self.channel is not None:
                try:
                    self.channel.send("end")
                except AuditorError:
                    pass
                self.channel = None
            if self._socket is not None:
                self._socket.close()
                self._socket = None
            if auditor is not None:
                auditor.stop()
                self._discard(auditor)
            if self._arena_fd is not None:
                os.close(self._arena_fd)
                self._arena_fd = None
            return list(self.clocks)

    def _record_clocks(self, reference: _Kept) -> None:
        entry = next(iter((read_untrusted_json(reference.folder / "run.json") or {}).get("bench", [])), {})
        if reference.outcome is not None and reference.outcome.exit_code == 0:
            self.clocks += [float(entry[k]) for k in ("sm_clock_mhz_before", "sm_clock_mhz_after")
                            if isinstance(entry.get(k), (int, float))]
        self._discard(reference)

    def _discard(self, kept: _Kept) -> None:
        """An ended program's folder goes now, or, for an auditor whose kept samples are still
        being checked where it wrote them, once the last of them is released."""
        if kept.folder in self._held:
            self._retired.add(kept.folder)
        else:
            self._remove_folder(kept.folder)

    def _remove_folder(self, folder: Path) -> None:
        if not self.runner.config.keep_temp:
            remove_tree(folder)


def _first_line_with_fds(sock: socket.socket, timeout_s: float) -> tuple[str, list[int], bytes]:
    """The first line on `sock` with the descriptors that came with it, and what followed it."""
    sock.settimeout(timeout_s)
    data, fds = b"", []
    try:
        while b"\n" not in data:
            chunk, got, _, _ = socket.recv_fds(sock, 4096, 4)
            fds += got
            if not chunk:
                raise AuditorError("it closed its control socket")
            data += chunk
            if len(data) > 4096:
                raise AuditorError("its first line is too long")
    except (socket.timeout, OSError) as err:
        raise AuditorError(f"no answer ({err})") from None
    finally:
        sock.settimeout(None)
    line, rest = data.split(b"\n", 1)
    return line.decode("ascii", "replace"), fds, rest
