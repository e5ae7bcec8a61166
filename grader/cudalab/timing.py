"""The wall-clock cross-check of a submission's own event timing (docs/architecture.md,
"Grading timing").

Each binary runs twice per round, with K1 and K2 samples; (wall_2 - wall_1) / (K2 - K1) is
what one sample really cost, overhead included. The reference's overhead (its wall-clock
estimate minus its event median) is subtracted from the student's wall-clock estimate, and
the student is scored on the larger of that and their own event median: a process can
report any time it likes, but it cannot make the wall clock run faster.

Process start-up and input generation make each wall-clock estimate noisy, so the wall
clock counts against a student only beyond the measured noise: the larger of the spread
of either binary's per-round estimates and a floor (a fraction of the reference's wall
time per sample). Honest code is never scored above its own event time by noise alone,
while hidden work larger than the noise still shows.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class BenchRun:
    samples: int
    wall_s: float
    event_median_ms: float | None  # from the run JSON; None when it reported none
    spread: float | None = None


@dataclass(frozen=True)
class Round:
    low: BenchRun
    high: BenchRun

    @property
    def wall_per_sample_ms(self) -> float:
        extra = self.high.samples - self.low.samples
        if extra <= 0:
            raise ValueError("the second run of a round needs more samples than the first")
        return (self.high.wall_s - self.low.wall_s) * 1000.0 / extra


@dataclass(frozen=True)
class TimingSummary:
    """One binary's timing over all rounds: medians over rounds."""
    event_ms: float | None
    wall_ms: float
    spread: float | None         # median of the runs' own spreads (IQR / median)
    wall_round_spread: float     # (max - min) / median of the per-round wall estimates

    @classmethod
    def of(cls, rounds: list[Round]) -> "TimingSummary":
        if not rounds:
            raise ValueError("no timing rounds")
        events = [r.event_median_ms for rd in rounds for r in (rd.low, rd.high)
                  if r.event_median_ms is not None]
        spreads = [r.spread for rd in rounds for r in (rd.low, rd.high) if r.spread is not None]
        walls = [rd.wall_per_sample_ms for rd in rounds]
        wall = statistics.median(walls)
        return cls(event_ms=statistics.median(events) if events else None, wall_ms=wall,
                   spread=statistics.median(spreads) if spreads else None,
                   wall_round_spread=(max(walls) - min(walls)) / wall if wall > 0 else math.inf)


@dataclass(frozen=True)
class CrossCheck:
    reference_ms: float               # the reference's event median: the denominator
    reference_wall_ms: float
    reference_overhead_ms: float      # per sample, never below 0
    student_event_ms: float | None
    student_wall_ms: float
    student_wall_adjusted_ms: float   # student wall estimate minus the reference's overhead
    noise_ms: float                   # how much the wall-clock estimate moves by itself
    student_ms: float                 # what the student is scored on
    ratio: float                      # student_ms / reference_ms
    disagreement: float | None        # how far event and wall clock differ, as a factor >= 1
    flagged: bool
    message: str

    def to_json(self) -> dict:
        return asdict(self)


def samples_for_target(samples_low: int, samples_high: int, samples_max: int,
                       per_sample_ms: float | None, target_s: float) -> int:
    """K2: at least `samples_high`, and enough that the extra samples take about `target_s`."""
    wanted = samples_high
    if per_sample_ms and per_sample_ms > 0:
        wanted = max(wanted, samples_low + math.ceil(target_s * 1000.0 / per_sample_ms))
    return max(samples_low + 1, min(wanted, samples_max))


def wall_noise_ms(reference: TimingSummary, student: TimingSummary, floor_fraction: float) -> float:
    """How far a wall-clock estimate moves with no change in the code measured."""
    spreads = [t.wall_round_spread * t.wall_ms for t in (reference, student)
               if math.isfinite(t.wall_round_spread)]
    return max(spreads + [floor_fraction * reference.wall_ms])


def cross_check(reference: TimingSummary, student: TimingSummary, factor: float,
                noise_floor_fraction: float = 0.25) -> CrossCheck:
    if reference.event_ms is None or reference.event_ms <= 0:
        raise ValueError("the reference reported no event timing")
    overhead = max(0.0, reference.wall_ms - reference.event_ms)
    noise = wall_noise_ms(reference, student, noise_floor_fraction)
    adjusted = student.wall_ms - overhead
    event = student.event_ms
    if event is None or event <= 0:
        scored = max(adjusted, 0.0)
        disagreement, flagged = None, True
        message = (f"Your program reported no usable event timing, so it is scored on the "
                   f"wall clock alone: {scored:.4g} ms per run.")
    else:
        beyond_noise = adjusted - noise
        scored = max(event, beyond_noise)
        disagreement = (beyond_noise / event if beyond_noise > event
                        else (event / (adjusted + noise) if adjusted + noise > 0 else math.inf))
        disagreement = max(disagreement, 1.0)
        flagged = disagreement > factor
        message = ""
        if flagged and beyond_noise > event:
            message = (f"Your program reports {event:.4g} ms per run, but the wall clock shows "
                       f"{adjusted:.4g} ms per run (after the overhead the reference also shows, "
                       f"{noise:.2g} ms of it within measurement noise). "
                       "Work the CUDA events do not see (another stream, the host, a later "
                       "kernel) still takes time: you are scored on the wall clock.")
        elif flagged:
            message = (f"Your program reports {event:.4g} ms per run, more than the "
                       f"{adjusted:.4g} ms the wall clock shows; you are scored on your own, "
                       "larger figure.")
    return CrossCheck(reference_ms=reference.event_ms, reference_wall_ms=reference.wall_ms,
                      reference_overhead_ms=overhead, student_event_ms=event,
                      student_wall_ms=student.wall_ms, student_wall_adjusted_ms=adjusted,
                      noise_ms=noise,
                      student_ms=scored, ratio=scored / reference.event_ms,
                      disagreement=disagreement, flagged=flagged, message=message)
