"""Paced timing (cudalab/timing.py): the protocol driver against a peer that follows it or
breaks it, and the cross-check that decides what a submission is scored on."""
from __future__ import annotations

import os
import random
import threading
import time

import pytest

from cudalab.timing import ChannelClosed, Pace, PacedChannel, ProtocolError, RoundTimes, TooSlow, cross_check, drive


# --- the cross-check ---------------------------------------------------------------------

def rounds(wall: list[float], event: float | None) -> list[RoundTimes]:
    return [RoundTimes(w, event) for w in wall]


# Times per call on the grader's clock (timed less blank samples) around a 1 ms reference.
REFERENCE = rounds([1.00, 1.01, 1.00], 1.0)


def test_honest_code_is_scored_on_its_own_event_time():
    student = rounds([2.01, 2.00, 2.02], 2.0)
    check = cross_check(REFERENCE, student, agreement=0.03, noise_floor=0.01)
    assert check.student_wall_ms == pytest.approx(2.01)
    assert not check.flagged and check.message == ""
    assert check.student_ms == 2.0 and check.ratio == pytest.approx(2.0)
    assert check.reference_agreement == pytest.approx(0.01)


def test_a_lie_is_scored_on_the_clock_with_no_allowance_for_noise():
    student = rounds([5.00, 5.01, 4.99], 0.1)  # reports 0.1 ms, takes 5 ms
    check = cross_check(REFERENCE, student, agreement=0.03, noise_floor=0.01)
    assert check.flagged
    assert check.student_ms == check.student_wall_ms == pytest.approx(5.0)
    assert check.ratio == pytest.approx(5.0)
    assert "grader's clock" in check.message


def test_a_small_gap_within_agreement_and_noise_is_not_a_lie():
    student = rounds([1.03, 1.02, 1.03], 1.0)  # 2-3 % above its event time
    check = cross_check(REFERENCE, student, agreement=0.03, noise_floor=0.01)
    assert not check.flagged and check.student_ms == 1.0


def test_reporting_more_than_the_clock_shows_is_scored_on_the_larger_figure():
    student = rounds([1.00, 1.00, 1.00], 3.0)
    check = cross_check(REFERENCE, student, agreement=0.03, noise_floor=0.01)
    assert check.flagged and check.student_ms == 3.0
    assert "your own, larger figure" in check.message


def test_no_event_time_is_scored_on_the_clock():
    check = cross_check(REFERENCE, rounds([3.0, 3.0, 3.0], None), agreement=0.03, noise_floor=0.01)
    assert check.flagged and check.student_ms == pytest.approx(3.0)
    assert "no usable event times" in check.message


def test_noisy_rounds_widen_the_noise_and_the_agreement_is_reported():
    reference = rounds([1.00, 1.10, 1.01], 1.0)
    check = cross_check(reference, rounds([2.0, 2.0, 2.0], 2.0), agreement=0.03, noise_floor=0.01)
    assert check.noise_ms == pytest.approx(0.10)
    assert check.reference_agreement == pytest.approx(0.10)
    assert len(check.reference_round_estimates_ms) == 3


def test_a_reference_without_event_time_is_an_error():
    with pytest.raises(ValueError):
        cross_check(rounds([1.0], None), rounds([1.0], 1.0), agreement=0.03, noise_floor=0.01)


# --- the protocol driver -----------------------------------------------------------------

class Peer:
    """A stand-in for the harness's end of the control channel, on a thread."""

    def __init__(self, answer):
        self.to_peer_r, self.to_peer_w = os.pipe()
        self.from_peer_r, self.from_peer_w = os.pipe()
        self.answer = answer  # answer(words, say, read_line) handles one 'sample' message
        self.seen: list[str] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self):
        reader = os.fdopen(self.to_peer_r, "r")
        writer = os.fdopen(self.from_peer_w, "w")

        def say(line):
            writer.write(line + "\n")
            writer.flush()
        try:
            say("ready b_1000 c")
            while True:
                line = reader.readline().strip()
                self.seen.append(line)
                if line in ("end", ""):
                    return
                self.answer(line.split(), say, reader.readline)
        except (BrokenPipeError, ValueError, OSError):
            pass
        finally:
            writer.close()

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        for fd in (self.from_peer_r, self.to_peer_w):
            try:
                os.close(fd)
            except OSError:
                pass
        self.thread.join(timeout=5)


def honest(words, say, read_line):
    time.sleep(0.001)
    say(f"done {words[1]} 0.5 {'ab' * 16}")
    if read_line().strip() == "keep":
        say(f"kept {words[1]}")


def pace(**overrides) -> Pace:
    values = dict(warmup=2, samples=30, target_s=1.0, samples_min=10, samples_max=500, keep=2,
                  sample_timeout_s=5.0, stop_when=None)
    values.update(overrides)
    return Pace(**values)


def honest_with_blanks(words, say, read_line):
    time.sleep(0.0005 if words[4] == "blank" else 0.002)  # 0.5 ms of harness work, 1.5 ms of code
    say(f"done {words[1]} 1.5 {'ab' * 16}")
    if read_line().strip() == "keep":
        say(f"kept {words[1]}")


def test_drive_times_each_sample_and_keeps_secret_draws():
    with Peer(honest_with_blanks) as peer:
        run = drive(peer.from_peer_r, peer.to_peer_w, pace(), "b_1000", rng=random.Random(4))
    assert run.outputs == ["c"] and run.timed == 30 and len(run.blank_ms) == 30 and len(run.reported_ms) == 30
    assert 1.3 < run.call_ms() < 2.5  # timed less blank: the code's 1.5 ms, give or take the host
    assert len(run.kept) == 2 and all(k.hashes == {"c": "ab" * 16} for k in run.kept)
    samples = [line.split() for line in peer.seen if line.startswith("sample")]
    assert [s[4] for s in samples[:2]] == ["warmup", "warmup"]
    kinds = [s[4] for s in samples[2:]]
    assert kinds.count("timed") == kinds.count("blank") == 30
    assert kinds[:10] != ["timed", "blank"] * 5 and kinds[:10] != ["blank", "timed"] * 5  # drawn, not fixed
    kept_kinds = {s[1]: s[4] for s in samples}
    assert all(kept_kinds[str(k.number)] == "timed" for k in run.kept)  # never a warm-up or a blank
    assert len({s[2] for s in samples}) == len(samples)  # a fresh seed for every sample
    assert len({s[3] for s in samples}) == len(samples)  # and a fresh key
    assert peer.seen[-1] == "end"


def test_drive_calibrates_to_the_target_when_the_count_is_open():
    with Peer(honest) as peer:
        run = drive(peer.from_peer_r, peer.to_peer_w, pace(samples=None, target_s=0.05, samples_min=10), "b_1000")
    assert 10 <= run.timed < 60  # about 50 timed samples of just over 1 ms


def test_drive_stops_early_when_asked():
    with Peer(honest) as peer:
        run = drive(peer.from_peer_r, peer.to_peer_w, pace(stop_when=lambda r: r.timed >= 5), "b_1000")
    assert run.stopped_early and run.timed == 5


@pytest.mark.parametrize("reply, words", [
    ("done 7 0.5 " + "ab" * 16, "not 'done 2 MS HASH"),      # the wrong sample number
    ("done 2 0.5 nothex", "not 'done 2 MS HASH"),           # not a hash
    ("done 2 fast " + "ab" * 16, "reported the time 'fast'"),
    ("x" * 5000, "longer than the harness ever writes"),
])
def test_drive_rejects_answers_that_break_the_protocol(reply, words):
    def broken(w, say, read_line):
        say(reply if w[1] == "2" else f"done {w[1]} 0.5 {'ab' * 16}")
        read_line()
    with Peer(broken) as peer, pytest.raises(ProtocolError, match=words.replace("2", r"\d+")):
        drive(peer.from_peer_r, peer.to_peer_w, pace(keep=0), "b_1000")


def test_drive_gives_up_on_a_silent_program():
    with Peer(lambda w, say, read_line: time.sleep(2)) as peer, pytest.raises(ProtocolError, match="no answer"):
        drive(peer.from_peer_r, peer.to_peer_w, pace(sample_timeout_s=0.2), "b_1000")


def test_drive_tells_a_closed_channel_apart():
    def dies(w, say, read_line):
        raise BrokenPipeError
    with Peer(dies) as peer, pytest.raises(ChannelClosed):
        drive(peer.from_peer_r, peer.to_peer_w, pace(), "b_1000")


# --- the pacer: a session in a process of its own ------------------------------------------

def test_a_session_apart_is_a_session_and_the_channel_carries_on():
    """Two sessions by pacer processes over one channel: the samples are numbered on, kept
    samples come back, and the program sees exactly the protocol an in-process session speaks."""
    with Peer(honest_with_blanks) as peer:
        channel = PacedChannel(peer.from_peer_r, peer.to_peer_w, "b_1000", 5.0)
        first = channel.session_apart(pace(samples=10, keep=1))
        second = channel.session_apart(pace(samples=10, keep=0, warmup=0))
        channel.end()
    assert first.outputs == second.outputs == ["c"]
    assert first.timed == second.timed == 10 and len(first.blank_ms) == 10 and 1.3 < first.call_ms() < 2.5
    assert len(first.kept) == 1 and first.kept[0].hashes == {"c": "ab" * 16} and second.kept == []
    numbers = [int(line.split()[1]) for line in peer.seen if line.startswith("sample")]
    assert numbers == list(range(2 + 20 + 20)) and channel.number == 42
    assert peer.seen[-1] == "end"


def test_a_session_apart_applies_the_stop_rule_and_reports_protocol_errors():
    with Peer(honest_with_blanks) as peer:
        channel = PacedChannel(peer.from_peer_r, peer.to_peer_w, "b_1000", 5.0)
        # Each call takes about 1.5 ms against a 0.01 ms reference: far past 3 times.
        run = channel.session_apart(pace(samples=100, keep=0, stop_when=TooSlow(reference_ms=0.01, limit=3.0, after=5)))
    assert run.stopped_early and run.timed == 5

    def broken(w, say, read_line):
        say("done 7 0.5 " + "ab" * 16)
        read_line()
    with Peer(broken) as peer, pytest.raises(ProtocolError, match="answered sample 0 with 'done 7"):
        PacedChannel(peer.from_peer_r, peer.to_peer_w, "b_1000", 5.0).session_apart(pace(keep=0))

    def dies(w, say, read_line):
        raise BrokenPipeError
    with Peer(dies) as peer, pytest.raises(ChannelClosed):
        PacedChannel(peer.from_peer_r, peer.to_peer_w, "b_1000", 5.0).session_apart(pace())


def test_what_the_program_sent_past_a_line_is_not_lost_between_processes():
    """Bytes read past the 'ready' line go to the pacer with the channel: a program that
    answers a sample before it is asked is caught as it is in one process."""
    to_r, to_w = os.pipe()
    from_r, from_w = os.pipe()
    os.write(from_w, b"ready b_1000 c\ndone 0 0.5 " + b"ab" * 16 + b"\n")
    channel = PacedChannel(from_r, to_w, "b_1000", 5.0)
    assert channel.reader.buffer.startswith(b"done 0")
    os.write(from_w, b"kept 0\n")  # the answer to the keep the grader never sent: 'done 1' expected next
    with pytest.raises(ProtocolError, match="answered sample 1 with 'kept 0'"):
        channel.session_apart(pace(warmup=2, keep=0))
    for fd in (to_r, to_w, from_r, from_w):
        os.close(fd)
