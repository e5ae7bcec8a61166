"""Points from verdicts and timing ratios, as lab.toml's [scoring] says. Pure functions."""
from __future__ import annotations

from dataclasses import dataclass

from ..lab.labspec import Scoring


def performance_fraction(ratio: float, full_marks_ratio: float, zero_marks_ratio: float) -> float:
    """1 at or below full_marks_ratio, 0 at or above zero_marks_ratio, linear in between."""
    if ratio <= full_marks_ratio:
        return 1.0
    if ratio >= zero_marks_ratio:
        return 0.0
    return (zero_marks_ratio - ratio) / (zero_marks_ratio - full_marks_ratio)


def case_points(scoring: Scoring, case_count: int) -> float:
    """Each correctness case's equal share of the correctness points."""
    return scoring.correctness_points / case_count if case_count else 0.0


@dataclass(frozen=True)
class Score:
    correctness: float
    correctness_max: float
    performance: float
    performance_max: float
    sanitizer_penalty: float = 0.0  # points taken off for compute-sanitizer errors (lab.toml)

    @property
    def total(self) -> float:
        return max(0.0, self.correctness + self.performance - self.sanitizer_penalty)

    @property
    def total_max(self) -> float:
        return self.correctness_max + self.performance_max

    def to_json(self) -> dict:
        return {"correctness": round(self.correctness, 4),
                "correctness_max": self.correctness_max,
                "performance": round(self.performance, 4),
                "performance_max": self.performance_max,
                "sanitizer_penalty": round(self.sanitizer_penalty, 4),
                "total": round(self.total, 4), "total_max": self.total_max}


def score(scoring: Scoring, passed: list[bool], ratio: float | None, sanitizer_penalty: float = 0.0) -> Score:
    """`passed`: one flag per correctness case. `ratio`: student/reference time, or None when
    performance was not measured or the timed output was wrong. Performance points only
    when every case passed. `sanitizer_penalty` comes off the total (never below 0)."""
    correctness = case_points(scoring, len(passed)) * sum(passed)
    performance = 0.0
    if passed and all(passed) and ratio is not None:
        performance = scoring.performance_points * performance_fraction(
            ratio, scoring.full_marks_ratio, scoring.zero_marks_ratio)
    return Score(correctness, scoring.correctness_points, performance, scoring.performance_points,
                 sanitizer_penalty)


def regrade_range(scoring: Scoring, student_rounds_ms: list[float], reference_rounds_ms: list[float]) -> dict | None:
    """The lowest and highest of a grade's rounds' ratios (student / reference, each round's
    own), and the performance points each would earn: a regrade of the same code on the same
    machine scores the median of rounds like these, so the student sees how far the points
    could move (with seven rounds the next median lands between the two in about 93 % of
    regrades where the rounds vary at random; with three, in about 60 %). None for fewer
    than two rounds."""
    ratios = [max(s, 0.0) / r for s, r in zip(student_rounds_ms, reference_rounds_ms) if r > 0]
    if len(ratios) < 2:
        return None
    low, high = min(ratios), max(ratios)

    def points(ratio: float) -> float:
        return round(scoring.performance_points * performance_fraction(ratio, scoring.full_marks_ratio,
                                                                       scoring.zero_marks_ratio), 4)
    return {"rounds": len(ratios), "low_ratio": low, "high_ratio": high,
            "points_at_low": points(low), "points_at_high": points(high)}


def zero(scoring: Scoring) -> Score:
    return Score(0.0, scoring.correctness_points, 0.0, scoring.performance_points)
