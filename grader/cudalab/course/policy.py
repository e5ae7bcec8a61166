"""A course's rules as pure functions of the course's offer and the service's clock: how late
a hand-in is and what that costs (assess), which of a student's hand-ins is graded
(counted), and how many tries a student has left (tries_left, a token bucket).

Every comparison is exact to the microsecond (no rounding of times), so that the edges a
student can see -- the deadline, the end of the grace period, a day late, the cut-off -- fall
where the course says, and a test can hold them to the second.
"""
from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from fractions import Fraction

from .spec import LabOffer, TryBudget

EARLY, ON_TIME, LATE, CLOSED = "early", "on_time", "late", "closed"
ACCEPTED = (ON_TIME, LATE)  # the statuses under which a hand-in is taken
_DAY = dt.timedelta(days=1)
_MICROSECONDS_PER_HOUR = 3_600_000_000


@dataclass(frozen=True)
class Lateness:
    status: str                 # "early" (before opens: refused), "on_time", "late", "closed" (after cutoff: refused)
    days_late: int              # started days after deadline+grace (0 when not late)
    penalty: float              # fraction off (0..1)
    sentence: str               # what the student is told, e.g. "late by 1 day: 10 % off"

    @property
    def accepted(self) -> bool:
        return self.status in ACCEPTED

    def to_json(self) -> dict:
        return {"status": self.status, "days_late": self.days_late, "penalty": self.penalty,
                "sentence": self.sentence}

    @classmethod
    def from_json(cls, body: dict) -> "Lateness":
        """What to_json wrote (a HandIn row's lateness); ValueError for anything else."""
        if not isinstance(body, dict) or body.get("status") not in (EARLY, ON_TIME, LATE, CLOSED):
            raise ValueError(f"not a lateness: {body!r}"[:200])
        days, penalty = body.get("days_late"), body.get("penalty")
        if isinstance(days, bool) or not isinstance(days, int) or days < 0:
            raise ValueError(f"a lateness with days_late {days!r}")
        if isinstance(penalty, bool) or not isinstance(penalty, (int, float)) or not 0 <= penalty <= 1:
            raise ValueError(f"a lateness with penalty {penalty!r}")
        return cls(body["status"], days, float(penalty), str(body.get("sentence") or ""))


def _when(at: dt.datetime) -> str:
    return at.astimezone(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _percent(fraction: float) -> str:
    return f"{round(fraction * 100, 2):g} %"


def assess(offer: LabOffer, at: dt.datetime) -> Lateness:
    """How a hand-in received at `at` (the service's clock) stands: before the lab opens and
    after the cut-off it is refused; up to the deadline plus the grace period (inclusive) it
    is on time; after that it is late by the days started since, each costing the policy's
    penalty (at most all of the grade)."""
    if at.tzinfo is None:
        raise ValueError("assess needs a time with its time zone (the service's clock is UTC)")
    if at < offer.opens:
        return Lateness(EARLY, 0, 0.0, f"the lab is not open yet: it opens at {_when(offer.opens)}")
    if at > offer.closes:
        return Lateness(CLOSED, 0, 0.0, f"hand-ins are closed: they were accepted until {_when(offer.closes)}")
    if at <= offer.on_time_until:
        return Lateness(ON_TIME, 0, 0.0, "on time")
    days = math.ceil((at - offer.on_time_until) / _DAY)  # started days: 1 s late is 1 day
    penalty = min(1.0, days * offer.late.penalty_per_day)
    return Lateness(LATE, days, penalty, f"late by {days} day{'s' if days != 1 else ''}: {_percent(penalty)} off")


@dataclass(frozen=True)
class HandInView:
    """What the policy needs of one accepted hand-in (a HandIn row, or a test's)."""
    student: str
    sha256: str
    received_at: dt.datetime    # the service's clock
    lateness: Lateness
    grade: float | None = None  # its grade as a fraction of full marks before the penalty, once graded
    handin_id: int | None = None

    @property
    def grade_after_penalty(self) -> float | None:
        return None if self.grade is None else self.grade * (1 - self.lateness.penalty)


def counted(offer: LabOffer, handins: list[HandInView]) -> HandInView | None:
    """The hand-in that is graded, of one student's for one lab: only accepted ones (on time,
    or late before the cut-off: the late policy's penalty then applies to it) are in the
    running. "last": the last received. "best": the one with the best grade after its late
    penalty (the later on a tie); while none is graded yet, the last, so that it is graded.
    None when the student has none."""
    accepted = sorted((h for h in handins if h.lateness.accepted), key=lambda h: (h.received_at, h.handin_id or 0))
    if not accepted:
        return None
    if offer.counts == "best":
        graded = [h for h in accepted if h.grade is not None]
        if graded:
            return max(reversed(graded), key=lambda h: h.grade_after_penalty)  # max keeps the first: the later
    return accepted[-1]


def tries_left(budget: TryBudget, charged_at: list[dt.datetime], now: dt.datetime) -> tuple[int, dt.datetime | None]:
    """A token bucket: a student starts with `capacity` tries, each try charged takes one, and
    they come back at `refill_per_hour` up to the capacity. Returns the whole tries in hand
    now and when the next one comes (None when the bucket is full, or never refills). A
    refunded try is not in `charged_at`; charges after `now` are not counted yet."""
    rate = Fraction(budget.refill_per_hour).limit_denominator(10**6) / _MICROSECONDS_PER_HOUR  # tries per µs
    capacity = Fraction(budget.capacity)
    tokens, last = capacity, None
    for at in sorted(t for t in charged_at if t <= now):
        if last is not None:
            tokens = min(capacity, tokens + rate * _microseconds(at - last))
        tokens -= 1  # may go below zero: a charge the service let through is paid back by the refill
        last = at
    if last is not None:
        tokens = min(capacity, tokens + rate * _microseconds(now - last))
    whole = max(0, math.floor(tokens))
    if tokens >= capacity or rate == 0:
        return whole, None
    wait = math.ceil((math.floor(tokens) + 1 - tokens) / rate)  # µs, rounded up: by then the try is there
    return whole, now + dt.timedelta(microseconds=wait)


def _microseconds(span: dt.timedelta) -> int:
    return (span.days * 86_400 + span.seconds) * 1_000_000 + span.microseconds
