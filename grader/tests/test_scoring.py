"""scoring: the bands' edges, the linear middle, performance only when all correct."""
from __future__ import annotations

import pytest

from cudalab.lab.labspec import Scoring
from cudalab.grading.scoring import performance_fraction, regrade_range, score

SCORING = Scoring(correctness_points=70, performance_points=30, timing_case="t",
                  full_marks_ratio=1.10, zero_marks_ratio=3.00)


@pytest.mark.parametrize("ratio, fraction", [
    (0.5, 1.0), (1.10, 1.0), (2.05, 0.5), (3.00, 0.0), (10.0, 0.0),
])
def test_bands(ratio, fraction):
    assert performance_fraction(ratio, 1.10, 3.00) == pytest.approx(fraction)


def test_linear_between_the_edges():
    points = [performance_fraction(1.10 + 0.19 * i, 1.10, 3.00) for i in range(11)]
    steps = [a - b for a, b in zip(points, points[1:])]
    assert steps == pytest.approx([0.1] * 10)


def test_all_correct_and_fast_is_full_marks():
    result = score(SCORING, [True] * 10, 1.0)
    assert (result.correctness, result.performance, result.total) == (70, 30, 100)


def test_each_case_is_an_equal_share():
    assert score(SCORING, [True] * 7 + [False] * 3, None).correctness == pytest.approx(49)


def test_performance_only_when_every_case_passes():
    assert score(SCORING, [True] * 9 + [False], 0.5).performance == 0
    assert score(SCORING, [], 0.5).performance == 0


def test_performance_in_the_middle_band():
    assert score(SCORING, [True], 2.05).performance == pytest.approx(15)


def test_no_ratio_no_performance():
    assert score(SCORING, [True], None).performance == 0


def test_sanitizer_points_come_off_the_total_never_below_zero():
    full = score(SCORING, [True] * 4, 1.0, sanitizer_penalty=10)
    assert (full.correctness, full.performance, full.total) == (70, 30, 90)
    assert full.to_json()["sanitizer_penalty"] == 10
    none_passed = score(SCORING, [False] * 4, None, sanitizer_penalty=10)
    assert none_passed.total == 0


def test_regrade_range_is_the_rounds_lowest_and_highest_ratio_and_their_points():
    ranged = regrade_range(SCORING, [2.0, 4.2, 1.1, 0.0], [1.0, 2.0, 1.0, 1.0])
    assert ranged == {"rounds": 4, "low_ratio": 0.0, "high_ratio": pytest.approx(2.1),
                      "points_at_low": 30.0, "points_at_high": pytest.approx(14.2105, abs=1e-4)}
    # A reference time of zero (never measured) leaves that round out; one round is no range.
    assert regrade_range(SCORING, [1.0, 1.0], [1.0, 0.0]) is None
    assert regrade_range(SCORING, [], []) is None
