"""Paced timing: the grader drives a lab binary's timed samples one by one and times
each on its own clock (docs/architecture.md, "Paced timing").

For every sample the grader sends a fresh seed and hash key; the program generates that
sample's inputs, runs the code under test between CUDA events, hashes the outputs and
answers with its event time and the hashes. The grader's clock runs from sending the
sample to reading the answer, so no sample can start before its inputs are known and
nothing the program says makes that interval shorter. A few samples, drawn in secret,
are kept: the grader asks for a sample's outputs only after its answer arrived, and the
checker later holds the dumped outputs to the hashes reported and to the reference.

Timed samples are mixed, in an order drawn in secret, with as many blank ones, in which
the harness does all its own work but does not call the code under test. A process's
time per call on the grader's clock is the median of its timed samples less the median
of its blank ones: the harness's work, the pipes and the host's latency cancel within
the one process and the same seconds. The event times a submission reports are used
only while they agree with that estimate within the measured noise; when they do not,
the submission is scored on the grader's clock, with no allowance for noise.
"""
from __future__ import annotations

import math
import os
import re
import secrets
import select
import statistics
import time
from dataclasses import asdict, dataclass, field
from typing import Callable

_MAX_LINE = 4096
_HEX32 = re.compile(r"[0-9a-f]{32}")


class ProtocolError(Exception):
    """The program did not follow the paced-timing protocol; the message says how."""


class ChannelClosed(ProtocolError):
    """The program closed its control channel: usually it ended (crashed, hit a CUDA error);
    its exit then says more than the protocol can."""


@dataclass(frozen=True)
class KeptSample:
    number: int
    seed: int
    key: str                       # 32 hex digits
    hashes: dict[str, str]         # output name -> hash the program reported

    @property
    def dump_name(self) -> str:
        """The folder under the run's dump folder the harness wrote it to."""
        return f"sample-{self.number}"


@dataclass
class PacedRun:
    """One process's paced samples, as the grader measured them."""
    outputs: list[str] = field(default_factory=list)
    wall_ms: list[float] = field(default_factory=list)       # timed samples, grader's clock
    blank_ms: list[float] = field(default_factory=list)      # blank samples, grader's clock
    reported_ms: list[float] = field(default_factory=list)   # the program's own event times
    kept: list[KeptSample] = field(default_factory=list)
    stopped_early: bool = False

    @property
    def timed(self) -> int:
        return len(self.wall_ms)

    def call_ms(self) -> float:
        """One call of the code under test on the grader's clock: timed less blank."""
        return statistics.median(self.wall_ms) - (statistics.median(self.blank_ms) if self.blank_ms else 0.0)

    def reported_median_ms(self) -> float | None:
        return statistics.median(self.reported_ms) if self.reported_ms else None

    def per_call_ms(self) -> float:
        """A reference's time per call for a rough ratio: its own event median where it
        reported one, else the grader's clock."""
        return self.reported_median_ms() or self.call_ms()


class _LineReader:
    """Reads newline-terminated lines from a pipe, with a deadline and a length cap."""

    def __init__(self, fd: int):
        self.fd, self.buffer = fd, b""

    def read_line(self, timeout_s: float) -> str:
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self.buffer:
            if len(self.buffer) > _MAX_LINE:
                raise ProtocolError("sent a control line longer than the harness ever writes")
            left = deadline - time.monotonic()
            if left <= 0:
                raise ProtocolError(f"gave no answer within {timeout_s:g} s")
            ready, _, _ = select.select([self.fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(self.fd, _MAX_LINE)
            if not chunk:
                raise ChannelClosed("closed its control channel before the grader said end")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        if len(line) > _MAX_LINE:
            raise ProtocolError("sent a control line longer than the harness ever writes")
        try:
            return line.decode("ascii")
        except UnicodeDecodeError:
            raise ProtocolError("sent a control line that is not ASCII text") from None


def _send(fd: int, line: str) -> None:
    data = (line + "\n").encode("ascii")
    try:
        while data:
            data = data[os.write(fd, data):]
    except (BrokenPipeError, OSError) as err:
        raise ChannelClosed(f"stopped reading its control channel ({err.strerror or err})") from None


@dataclass(frozen=True)
class Pace:
    """What one paced run is asked to do."""
    warmup: int
    samples: int | None            # None: sample until target_s of timed samples have run
    target_s: float
    samples_min: int
    samples_max: int
    keep: int                      # how many timed samples to keep for the checker
    sample_timeout_s: float
    stop_when: Callable[[PacedRun], bool] | None = None   # True ends the run early (a TooSlow)


@dataclass(frozen=True)
class TooSlow:
    """Ends a submission's run once its time per call on the grader's clock is clearly past
    `limit` times the reference's (`reference_ms`): the rest of its samples could not earn
    it a point. Data, not a function, so that the pacer process can apply it."""
    reference_ms: float
    limit: float
    after: int = 20  # timed samples before it may stop a run

    def __call__(self, run: "PacedRun") -> bool:
        return (run.timed >= self.after and bool(run.blank_ms) and self.reference_ms > 0
                and run.call_ms() / self.reference_ms > self.limit)


class PacedChannel:
    """The grader's end of one paced program: it reads the program's 'ready' line, then runs
    any number of sessions (a timing round's warm-ups and samples) over the same pipes, and
    says 'end'. One session per process is a submission's round; an official program (the
    reference) may serve every round of a grade, or of a batch, from one process. Sample
    numbers run on across sessions, so the program can never answer one sample for another.
    A channel made with `outputs` given continues one whose 'ready' line was already read
    (the pacer process's, for one session)."""

    def __init__(self, read_fd: int, write_fd: int, case: str, timeout_s: float,
                 outputs: list[str] | None = None, number: int = 0, buffer: bytes = b""):
        self.reader, self.write_fd, self.case = _LineReader(read_fd), write_fd, case
        self.read_fd = read_fd
        self.reader.buffer = buffer
        if outputs is None:
            ready = self.reader.read_line(timeout_s).split()
            if len(ready) < 3 or ready[0] != "ready" or ready[1] != case:
                raise ProtocolError(f"did not start with 'ready {case} OUTPUT...' (it said {' '.join(ready)[:80]!r})")
            outputs = ready[2:]
        self.outputs = list(outputs)
        self.number = number

    def session_apart(self, pace: Pace) -> PacedRun:
        """session(pace), run by a process of its own (`python -m cudalab.pacer`): the
        grader's clock then never waits for this process's other threads (a batch's builds
        and checks) to hand it the interpreter. Raises ProtocolError (ChannelClosed) as
        session() does."""
        from . import pacer
        return pacer.session_in_process(self, pace)

    def session(self, pace: Pace, rng=secrets.SystemRandom()) -> PacedRun:
        """One paced session; raises ProtocolError on any deviation."""
        reader, write_fd = self.reader, self.write_fd
        run = PacedRun()
        run.outputs = list(self.outputs)
        planned = pace.samples if pace.samples is not None else pace.samples_max
        # The kept samples are drawn now, in secret, among those the run will surely reach.
        drawable = pace.samples if pace.samples is not None else pace.samples_min
        keep_at = set(rng.sample(range(drawable), min(pace.keep, drawable)))
        timed_s = 0.0

        def sample(kind: str) -> tuple[float, list[str], int, str]:
            number = self.number
            seed, key = rng.getrandbits(64), f"{rng.getrandbits(128):032x}"
            started = time.perf_counter_ns()
            _send(write_fd, f"sample {number} {seed} {key} {kind}")
            answer = reader.read_line(pace.sample_timeout_s)
            wall_ms = (time.perf_counter_ns() - started) / 1e6
            words = answer.split()
            if (len(words) != 3 + len(run.outputs) or words[0] != "done" or words[1] != str(number)
                    or not all(_HEX32.fullmatch(h) for h in words[3:])):
                raise ProtocolError(f"answered sample {number} with {answer[:80]!r}, not 'done {number} MS HASH...'")
            try:
                float(words[2])
            except ValueError:
                raise ProtocolError(f"reported the time {words[2][:20]!r} for sample {number}") from None
            self.number += 1
            return wall_ms, words, seed, key

        def drop() -> None:
            _send(write_fd, "drop")

        for _ in range(pace.warmup):
            sample("warmup")
            drop()
        index = 0
        while index < planned and not (pace.samples is None and index >= pace.samples_min and timed_s >= pace.target_s):
            # A timed sample and a blank one, in an order drawn in secret.
            for kind in rng.sample(["timed", "blank"], 2):
                wall_ms, words, seed, key = sample(kind)
                if kind == "blank":
                    run.blank_ms.append(wall_ms)
                    drop()
                    continue
                run.wall_ms.append(wall_ms)
                timed_s += wall_ms / 1000.0
                reported = float(words[2])
                if math.isfinite(reported) and reported >= 0:
                    run.reported_ms.append(reported)
                if index in keep_at:
                    _send(write_fd, "keep")
                    kept = reader.read_line(pace.sample_timeout_s)
                    if kept != f"kept {words[1]}":
                        raise ProtocolError(f"answered 'keep' for sample {words[1]} with {kept[:80]!r}")
                    run.kept.append(KeptSample(int(words[1]), seed, key, dict(zip(run.outputs, words[3:]))))
                else:
                    drop()
            index += 1
            if pace.stop_when is not None and pace.stop_when(run):
                run.stopped_early = True
                break
        return run

    def end(self) -> None:
        _send(self.write_fd, "end")


def drive(read_fd: int, write_fd: int, pace: Pace, case: str, rng=secrets.SystemRandom()) -> PacedRun:
    """A whole paced run of one session over the two pipes, until 'end'; raises
    ProtocolError on any deviation. The caller starts and ends the process."""
    channel = PacedChannel(read_fd, write_fd, case, pace.sample_timeout_s)
    run = channel.session(pace, rng)
    channel.end()
    return run


# --- summaries and the cross-check ---------------------------------------------------------

@dataclass(frozen=True)
class RoundTimes:
    """One round of one program: its time per call on the grader's clock (timed less blank
    samples) and its own event time (None when it reported none)."""
    wall_ms: float
    event_ms: float | None

    @classmethod
    def of(cls, run: PacedRun) -> "RoundTimes":
        return cls(run.call_ms(), run.reported_median_ms())


def spread(values: list[float]) -> float:
    """(max - min) / median; 0 for fewer than two values."""
    if len(values) < 2:
        return 0.0
    middle = statistics.median(values)
    return (max(values) - min(values)) / middle if middle > 0 else math.inf


@dataclass(frozen=True)
class CrossCheck:
    reference_ms: float               # the reference's event median: the denominator
    reference_wall_ms: float          # its time per call on the grader's clock (median of rounds)
    reference_round_estimates_ms: list[float]   # that, round by round
    reference_agreement: float        # (max - min) / reference_ms of those estimates
    student_reported_ms: float | None
    student_wall_ms: float            # the student's time per call on the grader's clock
    noise_ms: float                   # how far a round's estimate moves by itself
    student_ms: float                 # what the student is scored on
    ratio: float                      # student_ms / reference_ms
    flagged: bool
    message: str

    def to_json(self) -> dict:
        return asdict(self)


def cross_check(reference: list[RoundTimes], student: list[RoundTimes], *, agreement: float,
                noise_floor: float) -> CrossCheck:
    """Compare the student's reported event time with its time on the grader's clock.

    agreement: a relative gap (of the student's own time) that never counts as a lie;
    noise_floor: the least noise assumed, as a fraction of the reference's event time."""
    if not reference or not student:
        raise ValueError("cross_check needs at least one round of each")
    if any(r.event_ms is None or r.event_ms <= 0 for r in reference):
        raise ValueError("the reference reported no event timing")
    ref_event = statistics.median(r.event_ms for r in reference)
    ref_estimates = [r.wall_ms for r in reference]
    stu_walls = [r.wall_ms for r in student]
    noise = max(max(ref_estimates) - min(ref_estimates), max(stu_walls) - min(stu_walls),
                noise_floor * ref_event)
    wall = max(statistics.median(stu_walls), 0.0)
    claims = [r.event_ms for r in student if r.event_ms is not None]
    reported = statistics.median(claims) if claims else None
    message = ""
    if reported is None or reported <= 0:
        flagged, scored = True, wall
        message = (f"Your program reported no usable event times, so it is scored on the grader's "
                   f"clock: {wall:.4g} ms per run.")
    elif wall > reported * (1 + agreement) + noise:
        flagged, scored = True, wall
        message = (f"Your program reports {reported:.4g} ms per run, but the grader's clock shows "
                   f"{wall:.4g} ms per run (measurement noise here: {noise:.2g} ms). Work the CUDA "
                   "events do not see still takes time: you are scored on the grader's clock.")
    elif reported > wall * (1 + agreement) + noise:
        flagged, scored = True, reported
        message = (f"Your program reports {reported:.4g} ms per run, more than the {wall:.4g} ms "
                   "the grader's clock shows; you are scored on your own, larger figure.")
    else:
        flagged, scored = False, reported
    return CrossCheck(reference_ms=ref_event, reference_wall_ms=statistics.median(ref_estimates),
                      reference_round_estimates_ms=ref_estimates,
                      reference_agreement=(max(ref_estimates) - min(ref_estimates)) / ref_event,
                      student_reported_ms=reported, student_wall_ms=wall, noise_ms=noise,
                      student_ms=scored, ratio=scored / ref_event, flagged=flagged, message=message)
