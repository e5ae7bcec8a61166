"""Paced timing (cudalab/timing.py): the grader's side of the auditor's protocol against an
auditor that follows it or reports a program's breaches, and the rule that scores a grade
on the grader's clock alone."""
from __future__ import annotations

import random
import socket
import threading
import time

import pytest

from cudalab.timing import (AuditorChannel, AuditorError, ChannelClosed, Floor, Pace, ProtocolError, RoundClock,
                            TooSlow, score_clock)


# --- the scoring rule -----------------------------------------------------------------------

FLOOR = Floor(floor_ms=0.2, copy_gbps=3000.0, fp32_tflops=60.0)


def rounds(reference: list[float], student: list[float], reported: float | None = None) -> list[RoundClock]:
    return [RoundClock(reference_ms=r, student_ms=s, blank_ms=0.4, student_reported_ms=reported)
            for r, s in zip(reference, student)]


def test_only_the_graders_clock_is_scored_whatever_the_program_says():
    honest = score_clock(rounds([1.0, 1.01, 1.0], [2.0, 2.02, 2.01], reported=2.0), FLOOR, 0.8)
    boasting = score_clock(rounds([1.0, 1.01, 1.0], [2.0, 2.02, 2.01], reported=0.01), FLOOR, 0.8)
    modest = score_clock(rounds([1.0, 1.01, 1.0], [2.0, 2.02, 2.01], reported=9.0), FLOOR, 0.8)
    for scored in (honest, boasting, modest):
        assert scored.student_ms == pytest.approx(2.01) and scored.ratio == pytest.approx(2.01)
        assert not scored.below_floor
    assert boasting.student_reported_ms == 0.01
    assert "events said 0.01 ms per call; the grade uses the grader's clock: 2.01 ms" in boasting.message


def test_the_students_own_spread_never_widens_anything_in_its_favour():
    # A student whose rounds scatter is scored on their median, like anyone else: no noise
    # allowance exists that its spread could stretch.
    steady = score_clock(rounds([1.0, 1.0, 1.0], [1.5, 1.5, 1.5]), FLOOR, 0.8)
    scattered = score_clock(rounds([1.0, 1.0, 1.0], [0.3, 1.5, 5.0]), FLOOR, 0.8)
    assert steady.ratio == scattered.ratio == pytest.approx(1.5)
    assert scattered.student_rounds_ms == [0.3, 1.5, 5.0]


def test_the_reference_agreement_is_reported():
    scored = score_clock(rounds([1.00, 1.10, 1.01], [2.0, 2.0, 2.0]), FLOOR, 0.8)
    assert scored.reference_ms == pytest.approx(1.01)
    assert scored.reference_agreement == pytest.approx(0.10 / 1.01)
    assert scored.blank_ms == 0.4


def test_a_time_below_the_physical_floor_is_a_violation_with_a_sentence():
    below = score_clock(rounds([1.0, 1.0, 1.0], [0.1, 0.12, 0.11]), FLOOR, 0.8)
    assert below.below_floor and below.floor_ms == 0.2
    assert "below what this GPU can do at all" in below.message and "3000 GB/s" in below.message
    # Just above 80 % of the floor is no violation: honest code can beat the copy roof a little.
    near = score_clock(rounds([1.0, 1.0, 1.0], [0.17, 0.17, 0.17]), FLOOR, 0.8)
    assert not near.below_floor
    # A negative time per call (timed samples faster than the blank ones) is below any floor.
    assert score_clock(rounds([1.0], [-0.05]), FLOOR, 0.8).below_floor


def test_a_reference_that_takes_no_time_is_an_error():
    with pytest.raises(ValueError):
        score_clock(rounds([0.0], [1.0]), FLOOR, 0.8)
    with pytest.raises(ValueError):
        score_clock([], FLOOR, 0.8)


def test_the_early_stop_rule_uses_the_references_blank_samples():
    from cudalab.timing import PacedRun
    run = PacedRun(wall_ms=[2.4] * 25)
    assert TooSlow(reference_ms=0.5, blank_ms=0.4, limit=3.0)(run)          # (2.4 - 0.4) / 0.5 = 4
    assert not TooSlow(reference_ms=0.5, blank_ms=1.0, limit=3.0)(run)      # (2.4 - 1.0) / 0.5 = 2.8
    assert not TooSlow(reference_ms=0.5, blank_ms=0.4, limit=3.0)(PacedRun(wall_ms=[2.4] * 5))  # too early


# --- the grader's side of the auditor's protocol ----------------------------------------------

class FakeAuditor:
    """The auditor's end of the control socket, on a thread: `answer(words, say)` handles one
    'sample' line; every line the grader sent is kept in `seen`."""

    def __init__(self, answer):
        self.ours, self.theirs = socket.socketpair()
        self.answer = answer
        self.seen: list[str] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self):
        reader = self.theirs.makefile("r")

        def say(line):
            self.theirs.sendall((line + "\n").encode())
        try:
            for line in reader:
                line = line.strip()
                self.seen.append(line)
                if self.answer(line.split(), say) is False:
                    return
        except OSError:
            pass
        finally:
            self.theirs.close()

    def __enter__(self):
        self.thread.start()
        return AuditorChannel(self.ours.fileno())

    def __exit__(self, *exc):
        self.ours.close()
        self.thread.join(timeout=5)


def honest(words, say):
    """Blank samples cost the protocol's 0.5 ms, timed ones 1.5 ms more."""
    time.sleep(0.0005 if words[3] == "blank" else 0.002)
    say(f"sealed {words[1]} 1.5")
    say(f"verified {words[1]}")


def pace(**overrides) -> Pace:
    values = dict(warmup=2, samples=30, target_s=1.0, samples_min=10, samples_max=500, keep=2,
                  sample_timeout_s=5.0, blanks=False, stop_when=None)
    values.update(overrides)
    return Pace(**values)


def samples_seen(auditor: FakeAuditor) -> list[list[str]]:
    return [line.split() for line in auditor.seen if line.startswith("sample")]


def test_a_reference_session_pairs_every_timed_sample_with_a_blank_in_secret_order():
    auditor = FakeAuditor(honest)
    with auditor as channel:
        run = channel.session(pace(blanks=True, keep=0), rng=random.Random(4))
    assert run.timed == 30 and len(run.blank_ms) == 30 and run.reported_ms == [1.5] * 30
    assert 1.3 < run.call_ms(run.blank_median_ms()) < 20  # timed less blank: the 1.5 ms, give or take the host
    kinds = [s[3] for s in samples_seen(auditor)]
    assert kinds[:2] == ["warmup", "warmup"] and kinds[2:].count("timed") == kinds[2:].count("blank") == 30
    assert kinds[2:12] != ["timed", "blank"] * 5 and kinds[2:12] != ["blank", "timed"] * 5  # drawn, not fixed
    seeds = [s[2] for s in samples_seen(auditor)]
    assert len(set(seeds)) == len(seeds)  # a fresh seed for every sample


def test_a_submissions_session_has_no_blanks_and_keeps_secretly_drawn_timed_samples():
    auditor = FakeAuditor(honest)
    with auditor as channel:
        run = channel.session(pace(keep=3), rng=random.Random(7))
    samples = samples_seen(auditor)
    assert {s[3] for s in samples} == {"warmup", "timed"} and not run.blank_ms
    slots = {int(s[1]): int(s[4]) for s in samples}
    assert sorted(k.slot for k in run.kept) == [0, 1, 2]
    assert all(slots[k.number] == k.slot for k in run.kept)
    assert sum(slot >= 0 for slot in slots.values()) == 3  # every other sample is sealed into the spare slot
    kinds = {int(s[1]): s[3] for s in samples}
    assert all(kinds[k.number] == "timed" for k in run.kept)
    assert all(int(s[2]) == k.seed for s in samples for k in run.kept if int(s[1]) == k.number)


def test_a_session_calibrates_to_the_target_when_the_count_is_open():
    with FakeAuditor(honest) as channel:
        run = channel.session(pace(samples=None, target_s=0.05, samples_min=10, keep=0))
    assert 10 <= run.timed < 60  # about 25 timed samples of just over 2 ms


def test_a_session_stops_early_when_the_rule_says_so():
    with FakeAuditor(honest) as channel:
        run = channel.session(pace(keep=0, stop_when=TooSlow(reference_ms=0.01, blank_ms=0.0, limit=3.0, after=5)))
    assert run.stopped_early and run.timed == 5


def test_a_sample_that_fails_its_verification_ends_the_session_and_says_what_was_wrong():
    def wrong_at_five(words, say):
        say(f"sealed {words[1]} 1.5")
        say(f"differs {words[1]} c[3] is 0 where the course's reference computes 1.5" if int(words[1]) == 5
            else f"verified {words[1]}")
    auditor = FakeAuditor(wrong_at_five)
    with auditor as channel:
        run = channel.session(pace())
    assert run.wrong == "sample 5 was wrong: c[3] is 0 where the course's reference computes 1.5"
    assert len(samples_seen(auditor)) == 6  # nothing after it


@pytest.mark.parametrize("answer, error, words", [
    (lambda n: [f"breach {n} answered 'go {n}' with 'done 7 0.5' instead of 'done {n} MS'"], ProtocolError,
     "answered 'go 2' with 'done 7 0.5'"),
    (lambda n: [f"closed {n}"], ChannelClosed, "closed its control channel"),
    (lambda n: ["sealed 99 1.0"], AuditorError, "the auditor answered sample 2"),
    (lambda n: [f"sealed {n} 1.0", "verified 99"], AuditorError, "verification"),
    (lambda n: ["\u00e9t\u00e9"], AuditorError, "not ASCII"),
])
def test_a_programs_breaches_are_its_own_and_an_auditors_nonsense_is_the_graders(answer, error, words):
    def at_two(w, say):
        for line in (answer(w[1]) if w[1] == "2" else [f"sealed {w[1]} 1.0", f"verified {w[1]}"]):
            say(line)
    with FakeAuditor(at_two) as channel, pytest.raises(error, match=words):
        channel.session(pace(keep=0))


def test_the_auditor_falling_silent_is_the_graders_problem():
    with FakeAuditor(lambda w, say: time.sleep(2)) as channel, pytest.raises(AuditorError, match="no answer"):
        channel.session(pace(sample_timeout_s=-9.8))  # waits 0.2 s (the grader adds 10 s to the program's limit)


# --- the pacer: a session in a process of its own ---------------------------------------------

def test_a_session_apart_is_a_session_and_the_channel_carries_on():
    auditor = FakeAuditor(honest)
    with auditor as channel:
        first = channel.session_apart(pace(samples=10, keep=1, blanks=True))
        second = channel.session_apart(pace(samples=10, keep=0, warmup=0))
    assert first.timed == second.timed == 10 and len(first.blank_ms) == 10 and not second.blank_ms
    assert len(first.kept) == 1 and second.kept == []
    numbers = [int(s[1]) for s in samples_seen(auditor)]
    assert numbers == list(range(2 + 20 + 10)) and channel.number == 32


def test_a_session_apart_applies_the_stop_rule_and_reports_each_kind_of_error():
    with FakeAuditor(honest) as channel:
        run = channel.session_apart(pace(samples=100, keep=0, stop_when=TooSlow(reference_ms=0.01, blank_ms=0.0,
                                                                                 limit=3.0, after=5)))
    assert run.stopped_early and run.timed == 5
    for line, error in (("breach 0 gave no answer to 'go 0' within 5 s", ProtocolError),
                        ("closed 0", ChannelClosed), ("nonsense", AuditorError)):
        with FakeAuditor(lambda w, say, line=line: say(line)) as channel, pytest.raises(error) as raised:
            channel.session_apart(pace(keep=0))
        assert type(raised.value) is error


def test_what_the_auditor_sent_past_a_line_is_not_lost_between_processes():
    ours, theirs = socket.socketpair()
    theirs.sendall(b"attached\nsealed 0 1.0\n")
    channel = AuditorChannel(ours.fileno())
    channel.expect("attached", 5.0)
    assert channel.reader.buffer == b"sealed 0 1.0\n"
    theirs.sendall(b"verified 0\n")
    run = channel.session_apart(pace(warmup=1, samples=0, keep=0))
    assert run.timed == 0 and channel.number == 1 and channel.reader.buffer == b""
    ours.close()
    theirs.close()
