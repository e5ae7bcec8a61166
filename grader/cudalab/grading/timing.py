"""Paced timing: the grader times every sample on its own clock, through an auditor that
owns the timed case's inputs and outputs (docs/architecture.md, "Paced timing").

The program under test is a process of its own, and everything in it is the student's: its
memory, threads and pipes, and the harness code linked into it. So the grader never asks it
anything that matters. For each sample it asks the auditor (official code, a process the
student does not share) for sample N with a seed drawn now; the auditor fills the inputs
in device memory it shares with the program, poisons the outputs, makes the L2 cold, tells
the program "go N", waits for "done N MS", and copies the outputs away (the seal). The
grader's clock runs from asking for the sample to reading "sealed": preparation, the
program's work and the seal all fall inside it, and the GPU runs one process's work at a
time, so no work of the program's can fall outside. After the clock has stopped the
auditor verifies the sealed sample against the reference on the same inputs, and it can
keep any sample for the trusted checker: every sample is sealed and verified alike, so the
program cannot tell which were kept.

The protocol's own cost (the auditor's preparation and seal, switching the GPU between
processes, the answer's passage) is measured by the course's reference program, which runs
in two processes of its own: official code, so each one's own event times are trusted, and
its window less its event time is the protocol's cost in that process. In a timing round
the two reference processes' timed samples and the submission's are interleaved in an
order drawn in secret, so that whatever drifts during a round (clocks, the cost of the
protocol) drifts for all three alike. Each sample is timed by the auditor's own clock too,
split into its preparation, the program's answer and the seal; the submission's time per
call is a low quantile of its samples' times less the lower of the two official processes'
costs (PROTOCOL_COST and SessionRun.per_call say why that is both sharp and safe). The
event time the submission reports is shown, never scored.
"""
from __future__ import annotations

import os
import re
import secrets
import select
import statistics
import time
from dataclasses import dataclass, field

_MAX_LINE = 4096
_SPIN_S = 0.005  # how long the clock's reader spins before it sleeps: a sharp end to each sample


class ProtocolError(Exception):
    """The program did not follow the timing protocol; the message says how, in words that
    start after 'the program'. `program` names which one (REFERENCE or STUDENT)."""

    def __init__(self, message: str, program: str = ""):
        super().__init__(message)
        self.program = program


class ChannelClosed(ProtocolError):
    """The program closed its pipes: usually it ended (crashed, hit a CUDA error), and its
    exit then says more than the protocol can."""


class AuditorError(Exception):
    """The grader's auditor (official code) failed or said something the grader does not
    understand: a problem of the grader's, never the student's."""


@dataclass(frozen=True)
class KeptSample:
    number: int
    seed: int
    slot: int  # where the auditor holds its sealed outputs until the grader asks for them


@dataclass
class PacedRun:
    """One program's samples in one session, as the grader measured them."""
    wall_ms: list[float] = field(default_factory=list)       # timed samples, grader's clock
    # The program's own event times: an official program's are trusted (SessionRun.per_call),
    # a submission's only shown.
    reported_ms: list[float] = field(default_factory=list)
    # The auditor's own clock's split of each timed sample: [preparation, the program's
    # answer from 'go' to 'done', the seal], in ms (official code, see AuditorChannel).
    split_ms: list[list[float]] = field(default_factory=list)
    kept: list[KeptSample] = field(default_factory=list)
    stopped_early: bool = False
    wrong: str = ""  # what the auditor found wrong with the first sample that failed its verification

    @property
    def timed(self) -> int:
        return len(self.wall_ms)

    def reported_median_ms(self) -> float | None:
        return statistics.median(self.reported_ms) if self.reported_ms else None


class LineReader:
    """Reads newline-terminated ASCII lines from a descriptor, with a deadline and a length
    cap; it spins for `spin_s` before it sleeps, so that a quick answer is seen at once."""

    def __init__(self, fd: int, buffer: bytes = b""):
        self.fd, self.buffer = fd, buffer

    def read_line(self, timeout_s: float, spin_s: float = 0.0, closed: type[Exception] = ChannelClosed,
                  what: str = "the other side", bad: type[Exception] = ProtocolError) -> str:
        """The next line; `closed` at the end of input, `bad` for a line too long, not ASCII
        or not there in time (ProtocolError: the program's fault; AuditorError: the auditor's)."""
        started = time.monotonic()
        deadline, spin_until = started + timeout_s, started + spin_s
        while b"\n" not in self.buffer:
            if len(self.buffer) > _MAX_LINE:
                raise bad("sent a control line longer than the harness ever writes")
            now = time.monotonic()
            if now >= deadline:
                raise bad(f"gave no answer within {timeout_s:g} s")
            ready, _, _ = select.select([self.fd], [], [], 0 if now < spin_until else deadline - now)
            if not ready:
                continue
            chunk = os.read(self.fd, _MAX_LINE)
            if not chunk:
                raise closed(f"{what} closed its control channel")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        if len(line) > _MAX_LINE:
            raise bad("sent a control line longer than the harness ever writes")
        try:
            return line.decode("ascii")
        except UnicodeDecodeError:
            raise bad("sent a control line that is not ASCII text") from None


def send_line(fd: int, line: str, closed: type[Exception] = ChannelClosed) -> None:
    data = (line + "\n").encode("ascii")
    try:
        while data:
            data = data[os.write(fd, data):]
    except OSError as err:
        raise closed(f"stopped reading its control channel ({err.strerror or err})") from None


# The names the auditor knows the programs of a session by: the reference program's two
# processes and the submission's. Each of the three has one sample in every turn, so none
# of them is the GPU's (or a CPU's) more recent tenant more often than another
# (docs/architecture.md, "Paced timing").
REFERENCE, SECOND, STUDENT = "reference", "second", "student"
OFFICIAL = (REFERENCE, SECOND)


@dataclass(frozen=True)
class Pace:
    """What one session (a timing round) is asked to do."""
    warmup: int
    samples: int | None            # None: sample until target_s of the reference's timed samples have run
    target_s: float
    samples_min: int
    samples_max: int
    keep: int                      # the submission's timed samples to keep for the checker
    sample_timeout_s: float
    student: bool = False          # a submission is attached beside the reference
    stop_when: "TooSlow | None" = None   # ends the session early


# What a round scores (docs/architecture.md, "Paced timing"). Each sample's time is the
# auditor's own clock's window for it: its preparation, the program's answer (from 'go' to
# 'done') and its seal. Work of a program's that spills past its 'done' (or into its
# preparation) lengthens that window and is counted whole: there is no allowance to move
# work into. (Counting the preparation and seal at no less than the official samples'
# median, to drop half their jitter, paid a program that moved all its work past 'done'
# 0.3 to 3.7 % of its call at the 20th percentile, measured on an H100, and more at lower
# quantiles: its sample then showed its own low preparations and seals.)
#
# A program's time per call comes from SCORED_QUANTILE of its samples' times (less the
# protocol's cost: PROTOCOL_COST): every sample is verified, so a fast sample did the whole
# work. A low quantile keeps out of the score what slows a process's samples without being
# its work: the host's wake-up stalls, and stretches of a round in which one process's
# answers run some 20 microseconds slow, for a second and more at a time (measured on an
# H100: in one round 78 % of the submission's samples, then none). On the same raw samples,
# 16 rounds of reduction's 0.1 ms call on an H100 and 6 of Sobel's 0.2 ms one, the 5th
# percentile spread the rounds' ratios with a standard deviation of 0.5 to 1.6 %, the 20th
# percentile 0.9 to 3.1 %, the median 0.8 to 5.9 %.
SCORED_QUANTILE = 0.05

# The protocol's cost, and whose. Every sample's window holds, beside the program's call,
# the auditor's preparation and seal, the program's answer to 'go' and the GPU's switch to
# the program's context (0.65 to 1.2 ms on an H100, of which about 0.15 ms is the answer),
# and for a whole round one process can pay 5 to 20 microseconds more of it than the
# others, the reference's as often as the submission's (docs/architecture.md, "Grading
# timing"). The reference program runs in two processes of its own, both timing the
# reference: official code, so each one's own event times are trusted, and its own cost is
# its windows' quantile less its event times'. The reference's time per call is its event
# times' quantile (both processes' together), which no process's state moves; the
# submission's is its windows' quantile less the lower of the two official costs, the cost
# of a process in its usual state. A submission cannot lower either official cost; work it
# leaves running into the officials' samples raises their windows, but it runs in its own
# samples' windows first, where it is counted whole (the suite's GPU-queue entry). What is
# left is the submission's own process's state: a round in which it answers slowly is
# scored slower, never faster, and the median of the rounds outvotes it.


def quantile(values: list[float], q: float) -> float:
    """The q-quantile of `values`, interpolated between order statistics (0 when empty)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    low = int(position)
    if low + 1 >= len(ordered):
        return ordered[-1]
    return ordered[low] + (ordered[low + 1] - ordered[low]) * (position - low)


@dataclass(frozen=True)
class PerCall:
    """A round's times per call, after the protocol's own cost (PROTOCOL_COST)."""
    reference_ms: float
    student_ms: float | None
    protocol_ms: float          # the protocol's cost subtracted from the submission's samples


@dataclass
class SessionRun:
    """A session's samples: the reference's two processes' and the submission's."""
    reference: PacedRun = field(default_factory=PacedRun)
    second: PacedRun = field(default_factory=PacedRun)
    student: PacedRun | None = None

    def per_call(self, scored_quantile: float = SCORED_QUANTILE) -> PerCall:
        """Each program's time per call in this round (PROTOCOL_COST says how), from
        `scored_quantile` of its samples (SCORED_QUANTILE, above, unless the lab asks for
        another). A sample's time is the auditor's whole window for it where every sample of
        the round has the auditor's split, else the grader's own clock."""
        officials = [self.reference, self.second]
        runs = officials + ([self.student] if self.student is not None else [])
        split = all(len(r.split_ms) == len(r.wall_ms) and all(len(x) == 3 for x in r.split_ms) for r in runs)

        def window(run: PacedRun) -> float:
            return quantile([sum(x) for x in run.split_ms] if split else run.wall_ms, scored_quantile)

        cost = min(window(run) - quantile(run.reported_ms, scored_quantile) for run in officials)
        reference_ms = quantile(self.reference.reported_ms + self.second.reported_ms, scored_quantile)
        student = self.student
        student_ms = window(student) - cost if student is not None and student.wall_ms else None
        return PerCall(reference_ms=reference_ms, student_ms=student_ms, protocol_ms=cost)


# The course's reference is official code: its own event times cannot be much faster than
# the physical floor (the lab's byte model at the copy bandwidth measured now; a tuned
# kernel beats a device-to-device copy by a few per cent: vector_add's reference measured
# 0.966 of it on an H100 and on an H200). A round that puts it below this fraction of the
# floor measured something other than the reference's work (a GPU whose clocks or timers
# misbehaved while it ran), so it counts for nothing: it ends no session early and is
# timed again (Grading.measure_performance).
REFERENCE_FLOOR_FRACTION = 0.85


def reference_is_plausible(reference_ms: float, floor_ms: float) -> bool:
    """Whether a round's reference time per call is one the GPU could give (see above)."""
    return reference_ms >= REFERENCE_FLOOR_FRACTION * floor_ms


@dataclass(frozen=True)
class TooSlow:
    """Ends a session once the submission's time per call on the grader's clock is clearly
    past `limit` times the reference's, measured in the same session: the rest of its
    samples could not earn it a point. Only while the reference's own time is plausible
    (`floor_ms`, the physical floor: see REFERENCE_FLOOR_FRACTION): a ratio over a reference
    time made of noise says nothing about the submission. Data, not a function, so that the
    pacer process can apply it."""
    limit: float
    after: int = 20  # timed samples of the submission before it may stop a session
    floor_ms: float = 0.0
    quantile: float = SCORED_QUANTILE  # what a round scores (SessionRun.per_call)

    def __call__(self, run: SessionRun) -> bool:
        student = run.student
        if student is None or student.timed < self.after or not run.reference.wall_ms or not run.second.wall_ms:
            return False
        times = run.per_call(self.quantile)
        return (times.reference_ms > 0 and reference_is_plausible(times.reference_ms, self.floor_ms)
                and times.student_ms is not None and times.student_ms / times.reference_ms > self.limit)


_SEALED = re.compile(r"sealed (\d+) (\S+)(?: (\d+) (\d+) (\d+))?")
_VERDICT = re.compile(r"(verified|differs) (\d+)(?: (.*))?")


class AuditorChannel:
    """The grader's end of the auditor's control socket, for sessions: 'sample' lines out,
    'sealed'/'verified' answers in. Sample numbers run on across sessions and programs, so
    that no answer can stand for another; a channel made with `number` and `buffer` carries
    on one whose state another process (the pacer) had."""

    def __init__(self, fd: int, number: int = 0, buffer: bytes = b""):
        self.fd, self.number = fd, number
        self.reader = LineReader(fd, buffer)

    def expect(self, answer: str, timeout_s: float) -> None:
        """Reads the auditor's one-word answer to a command of the grader's."""
        line = self.reader.read_line(timeout_s, closed=AuditorError, what="the auditor", bad=AuditorError)
        if line != answer:
            raise AuditorError(f"the auditor answered {line[:120]!r} where {answer!r} was due")

    def send(self, line: str) -> None:
        send_line(self.fd, line, closed=AuditorError)

    def _sample(self, program: str, slot: int, seed: int,
                timeout_s: float) -> tuple[int, float, float, str | None, list[float]]:
        """One sample: its number, its time on the grader's clock in ms, the time the
        program reported, what its verification found wrong (None: nothing), and the
        auditor's split of it (preparation, answer, seal in ms; empty when not given).
        ProtocolError for a program's faults, AuditorError for the auditor's."""
        self.send(f"stage {seed}")  # its inputs, made off the clock where the program cannot see them
        self.expect("staged", timeout_s + 10)
        number = self.number
        self.number += 1
        started = time.perf_counter_ns()
        self.send(f"sample {number} {program} {slot}")
        # The program's own deadline is the auditor's; ours waits a little longer for it.
        line = self.reader.read_line(timeout_s + 10, _SPIN_S, closed=AuditorError, what="the auditor",
                                     bad=AuditorError)
        wall_ms = (time.perf_counter_ns() - started) / 1e6
        sealed = _SEALED.fullmatch(line)
        if sealed and int(sealed.group(1)) == number:
            reported = float(sealed.group(2))
            split = [int(part) / 1e6 for part in sealed.groups()[2:]] if sealed.group(3) else []
        elif line.startswith(f"breach {number} {program} "):
            raise ProtocolError(line[len(f"breach {number} {program} "):], program)
        elif line == f"closed {number} {program}":
            raise ChannelClosed("closed its control channel in the middle of the timed runs", program)
        else:
            raise AuditorError(f"the auditor answered sample {number} with {line[:120]!r}")
        line = self.reader.read_line(timeout_s + 10, closed=AuditorError, what="the auditor", bad=AuditorError)
        verdict = _VERDICT.fullmatch(line)
        if not verdict or int(verdict.group(2)) != number:
            raise AuditorError(f"the auditor answered sample {number}'s verification with {line[:120]!r}")
        wrong = f"sample {number} was wrong: {verdict.group(3)}" if verdict.group(1) == "differs" else None
        return number, wall_ms, reported, wrong, split

    def session(self, pace: Pace, rng=secrets.SystemRandom()) -> SessionRun:
        """One session: the timed samples of the reference's two processes and, with
        pace.student, the submission's, interleaved in an order drawn in secret. Raises
        ProtocolError for a program's faults, AuditorError for the auditor's. A submission's
        sample that fails its verification ends the session (SessionRun.student.wrong)."""
        run = SessionRun(PacedRun(), PacedRun(), PacedRun() if pace.student else None)
        planned = pace.samples if pace.samples is not None else pace.samples_max
        # The kept samples are drawn now, in secret, among those the session will surely reach.
        drawable = pace.samples if pace.samples is not None else pace.samples_min
        keep_at = sorted(rng.sample(range(drawable), min(pace.keep, drawable))) if pace.student else []
        slots = {index: slot for slot, index in enumerate(keep_at)}
        programs = [*OFFICIAL] + ([STUDENT] if pace.student else [])
        into = {REFERENCE: run.reference, SECOND: run.second, STUDENT: run.student}
        timed_s = 0.0

        def sample(program: str, slot: int = -1, warmup: bool = False) -> bool:
            """One sample recorded where it belongs; False once the submission was wrong."""
            seed = rng.getrandbits(64)
            number, wall_ms, reported, wrong, split = self._sample(program, slot, seed, pace.sample_timeout_s)
            if wrong and program != STUDENT:  # the reference disagreed with itself: the grader's problem
                raise AuditorError(f"the reference program's {wrong} (checked against the auditor's own run)")
            if wrong:
                run.student.wrong = wrong
                return False
            if warmup:
                return True
            ran = into[program]
            ran.wall_ms.append(wall_ms)
            ran.reported_ms.append(reported)
            ran.split_ms.append(split)
            if slot >= 0:
                ran.kept.append(KeptSample(number, seed, slot))
            return True

        for _ in range(pace.warmup):
            for program in programs:
                if not sample(program, warmup=True):
                    return run
        index = 0
        while index < planned and not (pace.samples is None and index >= pace.samples_min and timed_s >= pace.target_s):
            for program in rng.sample(programs, len(programs)):  # in an order drawn in secret
                if not sample(program, slots.get(index, -1) if program == STUDENT else -1):
                    return run
                if program == REFERENCE:
                    timed_s += run.reference.wall_ms[-1] / 1000.0
            index += 1
            if pace.stop_when is not None and pace.stop_when(run):
                run.student.stopped_early = True
                break
        return run


# --- what a grade is scored on -----------------------------------------------------------

def spread(values: list[float]) -> float:
    """(max - min) / median; 0 for fewer than two values."""
    if len(values) < 2:
        return 0.0
    middle = statistics.median(values)
    return (max(values) - min(values)) / middle if middle > 0 else float("inf")


@dataclass(frozen=True)
class Floor:
    """The fastest this GPU could possibly run the timed case, measured by the auditor: the
    lab's byte model at the device-to-device copy bandwidth, or its FLOP model at the FP32
    peak, whichever takes longer."""
    floor_ms: float
    copy_gbps: float
    fp32_tflops: float


@dataclass(frozen=True)
class RoundClock:
    """One round on the grader's clock: each program's time per call, after the protocol's
    cost measured by the reference's processes in the same round (PROTOCOL_COST)."""
    reference_ms: float
    student_ms: float
    protocol_ms: float
    student_reported_ms: float | None = None  # the student's own event time: shown, never scored


@dataclass(frozen=True)
class ClockScore:
    reference_ms: float                 # median of the rounds' reference times per call
    reference_rounds_ms: list[float]
    reference_agreement: float          # (max - min) / median of those
    student_ms: float                   # median of the rounds' student times per call: what is scored
    student_rounds_ms: list[float]
    student_reported_ms: float | None   # what the student's program said of itself (median)
    protocol_ms: float                  # median of the rounds' protocol cost
    ratio: float                        # median of the rounds' ratios (student / reference): what is scored
    floor_ms: float
    below_floor: bool
    message: str

    def to_json(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def score_clock(rounds: list[RoundClock], floor: Floor, floor_fraction: float) -> ClockScore:
    """The grader's clock alone decides: the median over the rounds of the ratio of the
    submission's time per call to the reference's in the same round (the two are timed
    interleaved, so whatever drifts between rounds, clocks or the protocol's cost, drifts
    for both and drops out of each round's ratio), and whether the student's time (the
    median of its rounds) is below the physical floor (more than 1/floor_fraction times
    faster than the GPU can go), which is a violation."""
    if not rounds:
        raise ValueError("score_clock needs at least one round")
    reference = [r.reference_ms for r in rounds]
    student = [r.student_ms for r in rounds]
    reference_ms, student_ms = statistics.median(reference), statistics.median(student)
    if min(reference) <= 0:
        raise ValueError(f"the reference's time per call came out at {min(reference):.4g} ms")
    claims = [r.student_reported_ms for r in rounds if r.student_reported_ms is not None]
    reported = statistics.median(claims) if claims else None
    below = student_ms < floor_fraction * floor.floor_ms
    message = ""
    if below:
        message = (f"Your code's time per call on the grader's clock, {max(student_ms, 0):.4g} ms, is below what "
                   f"this GPU can do at all for this case ({floor.floor_ms:.4g} ms: the lab's byte model at "
                   f"{floor.copy_gbps:.0f} GB/s, the copy bandwidth measured now, or its FLOP model at "
                   f"{floor.fp32_tflops:.1f} TFLOP/s, the FP32 peak). Part of the work was not timed (run "
                   "before or after the timed call, or on another stream), so it earns no performance points.")
    elif reported is not None:
        message = (f"Your program's own CUDA events said {reported:.4g} ms per call; the grade uses the grader's "
                   f"clock: {student_ms:.4g} ms per call.")
    return ClockScore(reference_ms=reference_ms, reference_rounds_ms=reference, reference_agreement=spread(reference),
                      student_ms=student_ms, student_rounds_ms=student, student_reported_ms=reported,
                      protocol_ms=statistics.median(r.protocol_ms for r in rounds),
                      ratio=statistics.median(max(r.student_ms, 0.0) / r.reference_ms for r in rounds),
                      floor_ms=floor.floor_ms, below_floor=below,
                      message=message)
