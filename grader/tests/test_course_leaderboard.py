"""course/leaderboard.py: ratios closer than the measured noise share a rank, the grouping
is led by each group's fastest row (so chains cannot drift), best try per student, and the
board read from the course's records holds fully correct benchmarked tries under
pseudonyms only."""
from __future__ import annotations

import datetime as dt

from sqlalchemy import create_engine
from sqlalchemy.orm import sessionmaker

from cudalab.course import leaderboard, store
from cudalab.course.leaderboard import Entry


def table(board) -> list[tuple[int, str]]:
    return [(row.rank, row.pseudonym) for row in board]


def test_ratios_within_the_larger_noise_share_a_rank_and_are_listed_by_pseudonym():
    """Proves: 1.00 (1 % noise) and 1.04 (5 % noise) differ by less than the larger noise and
    share rank 1, listed by pseudonym; 1.20 is beyond it and ranks 3 (ranks count rows)."""
    board = leaderboard.rank([Entry("zeta", 1.00, 0.01), Entry("alpha", 1.04, 0.05), Entry("mid", 1.20, 0.01)])
    assert table(board) == [(1, "alpha"), (1, "zeta"), (3, "mid")]


def test_a_chain_of_close_ratios_does_not_drag_a_slow_one_into_the_leaders_rank():
    """Proves: with 3 % noise, 1.00, 1.02, 1.04 and 1.06 are each close to the one before,
    but a new rank starts once a ratio is beyond the noise of its group's leader: the
    grouping does not depend on the order of comparisons."""
    entries = [Entry(name, ratio, 0.03) for name, ratio in
               [("a", 1.00), ("b", 1.02), ("c", 1.04), ("d", 1.06), ("e", 1.08)]]
    assert table(leaderboard.rank(entries)) == [(1, "a"), (1, "b"), (3, "c"), (3, "d"), (5, "e")]
    assert table(leaderboard.rank(reversed(entries))) == table(leaderboard.rank(entries))


def test_equal_ratios_share_a_rank_even_without_noise_and_distinct_ones_do_not():
    """Proves: zero (or missing) noise ranks every distinct ratio apart, and equal ratios
    still share a rank, in pseudonym order."""
    board = leaderboard.rank([Entry("b", 0.5, 0.0), Entry("a", 0.5, None), Entry("c", 0.5000001, 0.0)])
    assert table(board) == [(1, "a"), (1, "b"), (3, "c")]


def test_only_each_students_best_try_counts():
    """Proves: a student's slower tries and unusable ratios (NaN, zero, negative) are not
    on the board; one row per pseudonym."""
    board = leaderboard.rank([Entry("a", 2.0, 0.01), Entry("a", 1.5, 0.01), Entry("a", float("nan"), 0.01),
                              Entry("b", 0.0, 0.01), Entry("b", -1.0, 0.0), Entry("b", 1.9, 0.0)])
    assert [(row.pseudonym, row.ratio) for row in board] == [("a", 1.5), ("b", 1.9)]
    assert board[0].to_json() == {"rank": 1, "pseudonym": "a", "ratio": 1.5, "noise": 0.01}


def test_the_board_from_the_records_holds_passed_bench_tries_under_pseudonyms_only():
    """Proves: only finished, passed (exit 0), benchmarked tries with a ratio count; a
    student without a pseudonym is left off; another lab's tries are not mixed in."""
    engine = create_engine("sqlite://")
    store.Base.metadata.create_all(engine)
    sessions = sessionmaker(engine)
    at = dt.datetime(2026, 3, 1, tzinfo=dt.timezone.utc)
    with sessions.begin() as session:
        session.add_all([store.Student(id="s1", name="Ann", pseudonym="fast_ann"),
                         store.Student(id="s2", name="Bob", pseudonym="bob"),
                         store.Student(id="s3", name="Cy", pseudonym=None),
                         store.Upload(sha256="0" * 64, size=1)])
        session.flush()

        def job(student, ratio, *, lab="vector_add", bench=True, state=store.JobState.DONE, code=0):
            session.add(store.Job(kind=store.JobKind.TRY, student_id=student, lab=lab, upload_sha256="0" * 64,
                                  bench=bench, ordinal=1, state=state, exit_code=code, ratio=ratio, noise=0.01,
                                  created_at=at))
        job("s1", 1.2)
        job("s1", 0.9, bench=False)                      # not benchmarked
        job("s2", 1.5)
        job("s2", 0.5, code=1)                           # failed a case
        job("s2", 0.4, state=store.JobState.GRADER_FAILED)
        job("s2", 0.3, lab="sobel")                      # another lab
        job("s3", 0.1)                                   # no pseudonym
    with sessions() as session:
        board = leaderboard.lab_board(session, "vector_add")
    assert [(row.rank, row.pseudonym, row.ratio) for row in board] == [(1, "fast_ann", 1.2), (2, "bob", 1.5)]
