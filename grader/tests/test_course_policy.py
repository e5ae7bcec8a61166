"""course/policy.py: the late policy, which hand-in counts, and the try budget, each at the
edges a student can meet, to the second."""
from __future__ import annotations

import datetime as dt

import pytest

from cudalab.course import policy
from cudalab.course.spec import LabOffer, LatePolicy, TryBudget

UTC = dt.timezone.utc
OPENS = dt.datetime(2026, 3, 1, 9, tzinfo=UTC)
DEADLINE = dt.datetime(2026, 3, 15, 23, 59, tzinfo=UTC)
GRACE = dt.timedelta(minutes=10)
SECOND = dt.timedelta(seconds=1)
DAY = dt.timedelta(days=1)
CUTOFF = DEADLINE + dt.timedelta(days=3)


def offer(counts="last", cutoff=CUTOFF, penalty=0.1, grace=10) -> LabOffer:
    return LabOffer("toy", OPENS, DEADLINE, LatePolicy(grace, penalty, cutoff), counts, TryBudget(3, 2.0))


@pytest.mark.parametrize("at, status, days, penalty", [
    (OPENS - SECOND, "early", 0, 0.0),
    (OPENS, "on_time", 0, 0.0),
    (DEADLINE, "on_time", 0, 0.0),
    (DEADLINE + GRACE, "on_time", 0, 0.0),
    (DEADLINE + GRACE + SECOND, "late", 1, 0.1),
    (DEADLINE + GRACE + DAY, "late", 1, 0.1),
    (DEADLINE + GRACE + DAY + SECOND, "late", 2, 0.2),
    (CUTOFF, "late", 3, 0.3),
    (CUTOFF + SECOND, "closed", 0, 0.0),
])
def test_assess_at_its_edges(at, status, days, penalty):
    said = policy.assess(offer(), at)
    assert (said.status, said.days_late) == (status, days)
    assert said.penalty == pytest.approx(penalty)
    assert said.accepted == (status in ("on_time", "late"))
    assert policy.Lateness.from_json(said.to_json()) == said


def test_assess_says_it_in_words_and_caps_the_penalty():
    assert policy.assess(offer(), DEADLINE + GRACE + SECOND).sentence == "late by 1 day: 10 % off"
    assert policy.assess(offer(), DEADLINE + GRACE + DAY + SECOND).sentence == "late by 2 days: 20 % off"
    steep = policy.assess(offer(penalty=0.4), CUTOFF)
    assert (steep.days_late, steep.penalty, steep.sentence) == (3, 1.0, "late by 3 days: 100 % off")
    assert "opens at 2026-03-01 09:00:00 UTC" in policy.assess(offer(), OPENS - SECOND).sentence
    assert "accepted until 2026-03-18 23:59:00 UTC" in policy.assess(offer(), CUTOFF + SECOND).sentence


def test_without_a_cutoff_nothing_after_the_grace_is_accepted():
    no_late = offer(cutoff=None)
    assert policy.assess(no_late, DEADLINE + GRACE).status == "on_time"
    assert policy.assess(no_late, DEADLINE + GRACE + SECOND).status == "closed"


def test_assess_refuses_a_time_without_its_zone():
    with pytest.raises(ValueError):
        policy.assess(offer(), DEADLINE.replace(tzinfo=None))


def view(student, at, grade=None, the_offer=None, id=None):
    return policy.HandInView(student, f"sha-{at.isoformat()}", at, policy.assess(the_offer or offer(), at), grade, id)


def test_counted_last_is_the_last_accepted_with_its_penalty():
    early = view("s", OPENS - SECOND)
    first = view("s", DEADLINE - DAY)
    late = view("s", DEADLINE + GRACE + SECOND)
    closed = view("s", CUTOFF + SECOND)
    assert policy.counted(offer(), [late, first, early, closed]) == late
    assert policy.counted(offer(), [first, early]) == first
    assert policy.counted(offer(), [early, closed]) is None
    assert policy.counted(offer(), []) is None


def test_counted_best_is_the_best_grade_after_its_penalty():
    best = offer("best")
    on_time = view("s", DEADLINE - DAY, grade=0.85, the_offer=best)
    late = view("s", DEADLINE + GRACE + SECOND, grade=0.9, the_offer=best)  # 0.9 less 10 % = 0.81
    assert policy.counted(best, [late, on_time]) == on_time
    tie = view("s", DEADLINE - SECOND, grade=0.85, the_offer=best)
    assert policy.counted(best, [on_time, tie]) == tie  # a tie: the later
    ungraded = [view("s", DEADLINE - DAY, the_offer=best), view("s", DEADLINE - SECOND, the_offer=best)]
    assert policy.counted(best, ungraded) == ungraded[1]  # none graded yet: the last, to be graded


T0 = dt.datetime(2026, 3, 10, 12, tzinfo=UTC)
HALF_HOUR = dt.timedelta(minutes=30)  # one try's refill at 2 an hour


def test_tries_left_starts_full_and_spends():
    budget = TryBudget(3, 2.0)
    assert policy.tries_left(budget, [], T0) == (3, None)
    assert policy.tries_left(budget, [T0], T0) == (2, T0 + HALF_HOUR)
    assert policy.tries_left(budget, [T0, T0, T0], T0) == (0, T0 + HALF_HOUR)


def test_tries_left_refills_at_the_rate_exactly():
    budget = TryBudget(3, 2.0)
    spent = [T0, T0, T0]
    tiny = dt.timedelta(microseconds=1)
    assert policy.tries_left(budget, spent, T0 + HALF_HOUR - tiny) == (0, T0 + HALF_HOUR)
    assert policy.tries_left(budget, spent, T0 + HALF_HOUR) == (1, T0 + 2 * HALF_HOUR)
    assert policy.tries_left(budget, spent, T0 + 3 * HALF_HOUR - SECOND) == (2, T0 + 3 * HALF_HOUR)
    assert policy.tries_left(budget, spent, T0 + 3 * HALF_HOUR) == (3, None)
    assert policy.tries_left(budget, spent, T0 + 100 * HALF_HOUR) == (3, None)  # never over the capacity


def test_tries_left_a_full_bucket_does_not_bank_refills():
    budget = TryBudget(3, 2.0)
    later = T0 + dt.timedelta(hours=10)
    assert policy.tries_left(budget, [T0, later, later, later], later) == (0, later + HALF_HOUR)


def test_tries_left_refunds_and_future_charges_do_not_count():
    budget = TryBudget(2, 1.0)
    # a refunded try is simply not among the charges: the student keeps it
    assert policy.tries_left(budget, [T0], T0 + SECOND) == (1, T0 + dt.timedelta(hours=1))
    assert policy.tries_left(budget, [T0 + DAY], T0) == (2, None)


def test_tries_left_without_refill_never_says_when():
    assert policy.tries_left(TryBudget(1, 0.0), [T0], T0 + DAY) == (0, None)
