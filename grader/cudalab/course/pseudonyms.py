"""A student's pseudonym: the name the leaderboards show instead of theirs. Its rule and the
choosing of one live here once, for the JSON API (service.py) and the student's page
(pages.py), so the two can never accept different names."""
from __future__ import annotations

import re

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import sessionmaker

from .store import Student

# ASCII only: a pseudonym is shown to the whole class, so it may not hide a control
# character, a right-to-left mark or a letter that only looks like another's.
PSEUDONYM = re.compile(r"[A-Za-z0-9_-]{3,32}")
RULE = ("A pseudonym is 3 to 32 letters (a-z, A-Z), digits, '-' or '_': it is what the leaderboard shows "
        "instead of your name.")


class PseudonymRefused(Exception):
    """A pseudonym not taken: `status` is 400 (breaks the rule) or 409 (another student's)."""

    def __init__(self, status: int, sentence: str):
        super().__init__(sentence)
        self.status, self.sentence = status, sentence


def check(chosen: object) -> str:
    """The pseudonym, when it keeps the rule; PseudonymRefused (400) in a sentence when not."""
    if not isinstance(chosen, str) or not PSEUDONYM.fullmatch(chosen):
        raise PseudonymRefused(400, RULE)
    return chosen


def choose(sessions: sessionmaker, student_id: str, chosen: object) -> str:
    """Gives the student the pseudonym and commits; PseudonymRefused when it breaks the rule or
    another student has it. Names that differ only in letter case are the same name here, so
    nobody can pass for a classmate on the board."""
    chosen = check(chosen)
    taken = PseudonymRefused(409, f"The pseudonym {chosen!r} is taken: choose another.")
    with sessions() as session:
        holder = session.scalar(select(Student.id).where(func.lower(Student.pseudonym) == chosen.lower(),
                                                         Student.id != student_id))
        if holder is not None:
            raise taken
        session.get(Student, student_id).pseudonym = chosen
        try:
            session.commit()
        except IntegrityError:  # the same name chosen at once by another student: theirs
            raise taken from None
    return chosen
