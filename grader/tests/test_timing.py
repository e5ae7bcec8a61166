"""The wall-clock cross-check of docs/architecture.md, "Grading timing"."""
from __future__ import annotations

import pytest

from cudalab.timing import BenchRun, Round, TimingSummary, cross_check, samples_for_target


def rounds(start_s: float, per_sample_ms: float, event_ms: float | None, k1=10, k2=110, n=3):
    """Process runs costing a fixed start-up plus per-sample time, reporting event_ms."""
    def run(k):
        return BenchRun(k, start_s + k * per_sample_ms / 1000.0, event_ms, 0.02)
    return [Round(run(k1), run(k2)) for _ in range(n)]


def test_wall_estimate_cancels_start_up():
    summary = TimingSummary.of(rounds(start_s=0.8, per_sample_ms=1.5, event_ms=1.0))
    assert summary.wall_ms == pytest.approx(1.5)
    assert summary.event_ms == 1.0 and summary.spread == 0.02
    assert summary.wall_round_spread == pytest.approx(0.0)


def test_honest_student_is_scored_on_their_event_time():
    reference = TimingSummary.of(rounds(0.5, per_sample_ms=1.2, event_ms=1.0))  # 0.2 ms overhead
    student = TimingSummary.of(rounds(0.9, per_sample_ms=2.2, event_ms=2.0))
    check = cross_check(reference, student, factor=1.5)
    assert check.reference_overhead_ms == pytest.approx(0.2)
    assert check.student_wall_adjusted_ms == pytest.approx(2.0)
    assert check.student_ms == pytest.approx(2.0) and check.ratio == pytest.approx(2.0)
    assert not check.flagged and check.message == ""


def test_a_lie_is_scored_on_the_wall_clock_and_flagged():
    reference = TimingSummary.of(rounds(0.5, per_sample_ms=1.2, event_ms=1.0))
    student = TimingSummary.of(rounds(0.5, per_sample_ms=5.2, event_ms=0.1))
    check = cross_check(reference, student, factor=1.5)
    # 5.0 ms on the wall clock, less the noise floor (a quarter of the reference's 1.2 ms).
    assert check.noise_ms == pytest.approx(0.3)
    assert check.student_ms == pytest.approx(4.7) and check.ratio == pytest.approx(4.7)
    assert check.flagged and check.disagreement == pytest.approx(47.0)
    assert "scored on the wall clock" in check.message


def test_small_disagreement_counts_only_beyond_the_noise():
    reference = TimingSummary.of(rounds(0.5, per_sample_ms=1.0, event_ms=1.0))
    student = TimingSummary.of(rounds(0.5, per_sample_ms=1.3, event_ms=1.0))
    check = cross_check(reference, student, factor=1.5)
    assert check.student_ms == pytest.approx(1.05) and not check.flagged


def test_honest_code_is_not_penalised_by_noisy_rounds():
    # Measured on an H200: the scan solution graded against itself, three rounds each.
    def measured(pairs):
        return [Round(BenchRun(10, lo, 0.2085), BenchRun(2000, hi, 0.2085)) for lo, hi in pairs]
    reference = TimingSummary.of(measured([(3.577, 4.932), (3.429, 4.933), (3.629, 5.236)]))
    student = TimingSummary.of(measured([(3.428, 5.183), (3.377, 5.083), (3.577, 4.984)]))
    check = cross_check(reference, student, factor=1.5)
    assert check.student_wall_adjusted_ms > 1.4 * check.student_event_ms  # noise alone
    assert check.student_ms == pytest.approx(0.2085) and check.ratio == pytest.approx(1.0)
    assert not check.flagged


def test_negative_reference_overhead_counts_as_zero():
    reference = TimingSummary.of(rounds(0.5, per_sample_ms=0.9, event_ms=1.0))
    student = TimingSummary.of(rounds(0.5, per_sample_ms=2.0, event_ms=2.0))
    check = cross_check(reference, student, factor=1.5)
    assert check.reference_overhead_ms == 0.0 and check.student_ms == pytest.approx(2.0)


def test_missing_event_time_falls_back_to_the_wall_clock():
    reference = TimingSummary.of(rounds(0.5, per_sample_ms=1.0, event_ms=1.0))
    student = TimingSummary.of(rounds(0.5, per_sample_ms=3.0, event_ms=None))
    check = cross_check(reference, student, factor=1.5)
    assert check.student_ms == pytest.approx(3.0) and check.flagged
    assert "no usable event timing" in check.message


def test_the_median_over_rounds_ignores_one_noisy_round():
    good = rounds(0.5, per_sample_ms=1.0, event_ms=1.0, n=2)
    noisy = Round(BenchRun(10, 0.51, 1.0), BenchRun(110, 2.0, 1.0))  # 14.9 ms per sample
    summary = TimingSummary.of(good + [noisy])
    assert summary.wall_ms == pytest.approx(1.0)


def test_reference_without_event_time_is_an_error():
    with pytest.raises(ValueError):
        cross_check(TimingSummary.of(rounds(0.5, 1.0, None)), TimingSummary.of(rounds(0.5, 1.0, 1.0)), 1.5)


@pytest.mark.parametrize("per_sample_ms, expected", [
    (None, 40), (100.0, 40), (1.0, 510), (0.001, 2000),
])
def test_second_run_sample_count(per_sample_ms, expected):
    assert samples_for_target(10, 40, 2000, per_sample_ms, 0.5) == expected
