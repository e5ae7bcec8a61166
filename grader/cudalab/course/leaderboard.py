"""A lab's leaderboard: each student's best fully correct benchmarked try, by its speed ratio
(the student's time over the reference's on the same GPU: lower is faster), ranked so that
ratios closer than the measured noise share a rank instead of ranking noise.

The grouping is made well-defined by a leader: rows are sorted by ratio (pseudonym breaks
exact ties); the fastest row leads the first group; each next row joins the current group
when it is the leader's ratio, or within the larger relative noise of the two of the
leader's ratio; otherwise it leads a new group. So a long chain of rows each close to the
one before cannot drag a clearly slower row into the leader's rank. Ranks count rows, as
sports do (1, 1, 3): a group's rank is one more than the number of rows above it. Within a
group rows are listed in pseudonym order.

A student without a pseudonym is left off the board (the pages say so and show how to
choose one): the board shows pseudonyms only, never a name, id or email.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable

from sqlalchemy import select
from sqlalchemy.orm import Session

from .store import Job, JobKind, JobState, Student


@dataclass(frozen=True)
class Entry:
    """One student's best try: what the board ranks."""
    pseudonym: str
    ratio: float
    noise: float        # relative (0.02: the ratio is known to within 2 %)


@dataclass(frozen=True)
class Ranked:
    rank: int
    pseudonym: str
    ratio: float
    noise: float

    def to_json(self) -> dict:
        return {"rank": self.rank, "pseudonym": self.pseudonym, "ratio": self.ratio, "noise": self.noise}


def _usable(ratio: float | None) -> bool:
    return ratio is not None and math.isfinite(ratio) and ratio > 0


def _noise(noise: float | None) -> float:
    """A missing or nonsensical noise counts as none measured: only equal ratios then tie."""
    return noise if noise is not None and math.isfinite(noise) and noise > 0 else 0.0


def best_per_student(entries: Iterable[Entry]) -> list[Entry]:
    """Each pseudonym's fastest entry (at equal ratios, the one with the smaller noise)."""
    best: dict[str, Entry] = {}
    for entry in entries:
        if not _usable(entry.ratio):
            continue
        entry = Entry(entry.pseudonym, entry.ratio, _noise(entry.noise))
        held = best.get(entry.pseudonym)
        if held is None or (entry.ratio, entry.noise) < (held.ratio, held.noise):
            best[entry.pseudonym] = entry
    return list(best.values())


def shares_rank(leader: Entry, other: Entry) -> bool:
    """Whether `other` (no faster than `leader`) is within the measured noise of `leader`:
    the larger relative noise of the two, taken of the leader's ratio."""
    if other.ratio == leader.ratio:
        return True
    return other.ratio - leader.ratio < max(leader.noise, other.noise) * leader.ratio


def rank(entries: Iterable[Entry]) -> list[Ranked]:
    """The board: best entry per pseudonym, grouped by noise, in rank then pseudonym order."""
    ordered = sorted(best_per_student(entries), key=lambda e: (e.ratio, e.pseudonym))
    groups: list[list[Entry]] = []
    for entry in ordered:
        if groups and shares_rank(groups[-1][0], entry):
            groups[-1].append(entry)
        else:
            groups.append([entry])
    board: list[Ranked] = []
    for group in groups:
        place = len(board) + 1
        board += [Ranked(place, e.pseudonym, e.ratio, e.noise) for e in sorted(group, key=lambda e: e.pseudonym)]
    return board


def lab_board(session: Session, lab: str) -> list[Ranked]:
    """The board of `lab` from the course's records: finished benchmarked tries that passed
    every case and have a ratio, of students who chose a pseudonym."""
    rows = session.execute(
        select(Student.pseudonym, Job.ratio, Job.noise)
        .join(Student, Student.id == Job.student_id)
        .where(Job.lab == lab, Job.kind == JobKind.TRY, Job.bench.is_(True), Job.state == JobState.DONE,
               Job.exit_code == 0, Job.ratio.is_not(None), Student.pseudonym.is_not(None)))
    return rank(Entry(pseudonym, ratio, noise) for pseudonym, ratio, noise in rows)
