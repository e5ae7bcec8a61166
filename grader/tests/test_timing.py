"""Paced timing (cudalab/grading/timing.py): the grader's side of the auditor's protocol against an
auditor that follows it or reports a program's breaches, and the rule that scores a grade
on the grader's clock alone."""
from __future__ import annotations

import random
import socket
import threading
import time

import pytest

from cudalab.grading import pacer
from cudalab.grading.timing import (AuditorChannel, AuditorError, ChannelClosed, Floor, Pace, ProtocolError, RoundClock,
                            TooSlow, score_clock)


# --- the scoring rule -----------------------------------------------------------------------

FLOOR = Floor(floor_ms=0.2, copy_gbps=3000.0, fp32_tflops=60.0)


def rounds(reference: list[float], student: list[float], reported: float | None = None) -> list[RoundClock]:
    return [RoundClock(reference_ms=r, student_ms=s, protocol_ms=0.4, student_reported_ms=reported)
            for r, s in zip(reference, student)]


def test_only_the_graders_clock_is_scored_whatever_the_program_says():
    honest = score_clock(rounds([1.0, 1.01, 1.0], [2.0, 2.02, 2.01], reported=2.0), FLOOR, 0.8)
    boasting = score_clock(rounds([1.0, 1.01, 1.0], [2.0, 2.02, 2.01], reported=0.01), FLOOR, 0.8)
    modest = score_clock(rounds([1.0, 1.01, 1.0], [2.0, 2.02, 2.01], reported=9.0), FLOOR, 0.8)
    for scored in (honest, boasting, modest):
        assert scored.student_ms == pytest.approx(2.01) and scored.ratio == pytest.approx(2.0)  # rounds: 2.0, 2.0, 2.01
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


def test_the_ratio_is_the_median_of_the_rounds_ratios_so_drift_between_rounds_drops_out():
    # A round in which the GPU (or the reference's process) ran 8 % fast for both programs,
    # timed interleaved: each round's ratio is near 1, and so is the score. The ratio of the
    # two programs' medians over the rounds pairs the student's slow round with the
    # reference's fast one (1.00 / 0.92) or the other way round, and lands 3 % off.
    scored = score_clock(rounds([0.92, 1.0, 1.0], [0.917, 0.97, 1.001]), FLOOR, 0.8)
    assert scored.ratio == pytest.approx(0.917 / 0.92)
    assert scored.student_ms / scored.reference_ms == pytest.approx(0.97)  # what the old rule scored
    assert scored.student_ms == pytest.approx(0.97) and scored.reference_ms == pytest.approx(1.0)


def test_the_reference_agreement_is_reported():
    scored = score_clock(rounds([1.00, 1.10, 1.01], [2.0, 2.0, 2.0]), FLOOR, 0.8)
    assert scored.reference_ms == pytest.approx(1.01)
    assert scored.reference_agreement == pytest.approx(0.10 / 1.01)
    assert scored.protocol_ms == 0.4


def test_a_time_below_the_physical_floor_is_a_violation_with_a_sentence():
    below = score_clock(rounds([1.0, 1.0, 1.0], [0.1, 0.12, 0.11]), FLOOR, 0.8)
    assert below.below_floor and below.floor_ms == 0.2
    assert "below what this GPU can do at all" in below.message and "3000 GB/s" in below.message
    # Just above 80 % of the floor is no violation: honest code can beat the copy roof a little.
    near = score_clock(rounds([1.0, 1.0, 1.0], [0.17, 0.17, 0.17]), FLOOR, 0.8)
    assert not near.below_floor
    # A negative time per call (windows shorter than the protocol's cost) is below any floor.
    assert score_clock(rounds([1.0], [-0.05]), FLOOR, 0.8).below_floor


def test_a_reference_that_takes_no_time_is_an_error():
    with pytest.raises(ValueError):
        score_clock(rounds([0.0], [1.0]), FLOOR, 0.8)
    with pytest.raises(ValueError):
        score_clock([], FLOOR, 0.8)


def official(n: int, window_ms: float = 0.9, event_ms: float = 0.5):
    """An official process's samples: windows of `window_ms` on the grader's clock, of which
    its own (trusted) event times say `event_ms` was the call."""
    from cudalab.grading.timing import PacedRun
    return PacedRun(wall_ms=[window_ms] * n, reported_ms=[event_ms] * n)


def test_the_early_stop_rule_compares_with_the_reference_in_the_same_session():
    from cudalab.grading.timing import PacedRun, SessionRun
    reference, second = official(25), official(25)  # 0.5 ms per call, 0.4 ms of protocol
    assert TooSlow(limit=3.0)(SessionRun(reference, second, PacedRun(wall_ms=[2.4] * 25)))      # (2.4 - 0.4) / 0.5 = 4
    assert not TooSlow(limit=3.0)(SessionRun(reference, second, PacedRun(wall_ms=[1.6] * 25)))  # 2.4
    assert not TooSlow(limit=3.0)(SessionRun(reference, second, PacedRun(wall_ms=[2.4] * 5)))   # too early
    assert not TooSlow(limit=3.0)(SessionRun(reference, second, None))


def test_the_protocols_cost_is_the_lower_of_the_official_processes_own():
    # Each official process's own cost is its windows less its own event times. The
    # reference's time is its event time, whatever state its process is in; the
    # submission's is its windows less the lower official cost, so one official process
    # answering 20 us slow for a whole round moves neither.
    from cudalab.grading.timing import PacedRun, SessionRun
    usual = SessionRun(official(40), official(40), PacedRun(wall_ms=[1.0] * 40, reported_ms=[0.001] * 40))
    slow_reference = SessionRun(official(40, window_ms=0.92), official(40),
                                PacedRun(wall_ms=[1.0] * 40, reported_ms=[0.001] * 40))
    slow_second = SessionRun(official(40), official(40, window_ms=0.92),
                             PacedRun(wall_ms=[1.0] * 40, reported_ms=[0.001] * 40))
    for run in (usual, slow_reference, slow_second):
        times = run.per_call()
        assert times.reference_ms == pytest.approx(0.5) and times.protocol_ms == pytest.approx(0.4)
        assert times.student_ms == pytest.approx(0.6)  # what the submission says of itself is never used
    # Both official processes slow (a busy host): the cost subtracted is theirs, and the
    # submission's own windows, which that host slows alike, keep the ratio.
    busy = SessionRun(official(40, window_ms=0.95), official(40, window_ms=0.96), PacedRun(wall_ms=[1.05] * 40))
    assert busy.per_call().student_ms == pytest.approx(0.6)
    # A submission's process in its own slow state is scored slower, never faster.
    assert SessionRun(official(40), official(40), PacedRun(wall_ms=[1.02] * 40)).per_call().student_ms > 0.6


def test_a_lab_may_score_another_quantile_and_the_early_stop_uses_the_same():
    # A submission fast in a tenth of its calls (a shortcut): the 5th percentile scores the
    # shortcut, the median (matmul's and occupancy's quantile) scores its usual calls.
    from cudalab.grading import pacer
    from cudalab.grading.timing import PacedRun, Pace, SessionRun
    student = PacedRun(wall_ms=[0.5] * 4 + [2.4] * 36)
    run = SessionRun(official(40), official(40), student)
    assert run.per_call().student_ms == pytest.approx(0.1)
    assert run.per_call(0.5).student_ms == pytest.approx(2.0)
    assert not TooSlow(limit=3.0)(run) and TooSlow(limit=3.0, quantile=0.5)(run)
    # The pacer process gets the lab's quantile with the rest of the pace.
    pace = Pace(warmup=0, samples=40, target_s=1.0, samples_min=10, samples_max=50, keep=0, sample_timeout_s=5.0,
                student=True, stop_when=TooSlow(limit=3.0, quantile=0.5))
    assert pacer._pace_from_json(pacer._pace_json(pace)).stop_when.quantile == 0.5


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
                if line.startswith("stage "):
                    say("staged")
                    continue
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
    """Every sample costs the protocol's 0.5 ms; the reference's calls (in either of its two
    processes) 1.5 ms more, the submission's 3 ms more. Each says its event time was 1.5 ms."""
    number, program = words[1], words[2]
    time.sleep(0.0035 if program == "student" else 0.002)
    say(f"sealed {number} 1.5")
    say(f"verified {number}")


def pace(**overrides) -> Pace:
    values = dict(warmup=2, samples=30, target_s=1.0, samples_min=10, samples_max=500, keep=2,
                  sample_timeout_s=5.0, student=True, stop_when=None)
    values.update(overrides)
    return Pace(**values)


def samples_seen(auditor: FakeAuditor) -> list[list[str]]:
    return [line.split() for line in auditor.seen if line.startswith("sample")]


def test_a_round_interleaves_the_references_samples_and_the_submissions_in_secret_order():
    auditor = FakeAuditor(honest)
    with auditor as channel:
        run = channel.session(pace(keep=0), rng=random.Random(4))
    reference, second, student = run.reference, run.second, run.student
    assert reference.timed == second.timed == student.timed == 30
    assert student.reported_ms == [1.5] * 30
    times = run.per_call()
    assert times.reference_ms == 1.5 and 0.3 < times.protocol_ms < 20  # the officials' own event times
    assert times.student_ms > times.reference_ms + 1.0  # its 3 ms on the grader's clock, not the 1.5 it said
    turns = [s[2] for s in samples_seen(auditor)]
    assert turns[:6] == ["reference", "second", "student"] * 2  # the warm-ups
    main = turns[6:]
    assert main.count("reference") == main.count("second") == main.count("student") == 30
    # Every program has one sample in every turn: none is the GPU's more recent tenant more
    # often than the others.
    triples = [main[i:i + 3] for i in range(0, 90, 3)]
    assert all(set(triple) == {"reference", "second", "student"} for triple in triples)
    assert len({tuple(t) for t in triples}) > 1  # the order is drawn anew each time, not fixed
    stages = [line for line in auditor.seen if line.startswith("stage ")]
    assert len(stages) == len(turns) and len(set(stages)) == len(stages)  # fresh inputs for every sample


def test_a_reference_alone_has_its_two_processes_and_no_submission():
    auditor = FakeAuditor(honest)
    with auditor as channel:
        run = channel.session(pace(student=False, keep=3))
    assert run.student is None and run.reference.timed == run.second.timed == 30 and run.reference.kept == []
    assert {s[2] for s in samples_seen(auditor)} == {"reference", "second"}
    assert all(int(s[3]) == -1 for s in samples_seen(auditor))


def test_the_submissions_kept_samples_are_drawn_in_secret_among_its_timed_ones():
    auditor = FakeAuditor(honest)
    with auditor as channel:
        run = channel.session(pace(keep=3), rng=random.Random(7))
    samples = {int(s[1]): s for s in samples_seen(auditor)}
    assert sorted(k.slot for k in run.student.kept) == [0, 1, 2]
    assert all(samples[k.number][2] == "student" and int(samples[k.number][3]) == k.slot for k in run.student.kept)
    assert sum(int(s[3]) >= 0 for s in samples.values()) == 3  # every other sample goes to the spare slot
    stages = [int(line.split()[1]) for line in auditor.seen if line.startswith("stage ")]
    numbers = sorted(samples)
    seed_of = dict(zip(numbers, stages))
    assert all(seed_of[k.number] == k.seed for k in run.student.kept)


def test_a_session_calibrates_to_the_target_when_the_count_is_open():
    with FakeAuditor(honest) as channel:
        run = channel.session(pace(samples=None, target_s=0.05, samples_min=10, keep=0))
    assert 10 <= run.reference.timed < 60  # about 20 samples of the reference's just over 2 ms


def test_a_session_stops_early_when_the_submission_is_far_too_slow():
    with FakeAuditor(honest) as channel:
        run = channel.session(pace(samples=100, keep=0, stop_when=TooSlow(limit=1.1, after=5)))
    assert run.student.stopped_early and run.student.timed == 5


def test_a_sample_that_fails_its_verification_ends_the_session_and_says_what_was_wrong():
    def wrong_at_eight(words, say):
        time.sleep(0.0003)
        say(f"sealed {words[1]} 1.5")
        say(f"differs {words[1]} c[3] is 0 where the course's reference computes 1.5"
            if int(words[1]) >= 8 and words[2] == "student" else f"verified {words[1]}")
    auditor = FakeAuditor(wrong_at_eight)
    with auditor as channel:
        run = channel.session(pace())
    assert run.student.wrong.endswith("was wrong: c[3] is 0 where the course's reference computes 1.5")
    assert samples_seen(auditor)[-1][2] == "student"  # nothing after it



def test_a_reference_sample_that_fails_its_verification_is_the_graders_problem():
    def reference_wrong(words, say):
        say(f"sealed {words[1]} 1.0")
        say(f"differs {words[1]} c[0] is 2 where the course's reference computes 1"
            if words[2] == "reference" and int(words[1]) >= 6 else f"verified {words[1]}")
    with FakeAuditor(reference_wrong) as channel, pytest.raises(AuditorError, match="reference program's sample"):
        channel.session(pace())

@pytest.mark.parametrize("answer, error, program, words", [
    (lambda n, p: [f"breach {n} {p} answered 'go {n}' with 'done 7 0.5' instead of 'done {n} MS'"], ProtocolError,
     "student", r"answered 'go \d+' with 'done 7 0.5'"),
    (lambda n, p: [f"closed {n} {p}"], ChannelClosed, "student", "closed its control channel"),
    (lambda n, p: ["sealed 99 1.0"], AuditorError, "", r"the auditor answered sample \d+"),
    (lambda n, p: [f"sealed {n} 1.0", "verified 99"], AuditorError, "", "verification"),
    (lambda n, p: ["\u00e9t\u00e9"], AuditorError, "", "not ASCII"),
])
def test_a_programs_breaches_are_its_own_and_an_auditors_nonsense_is_the_graders(answer, error, program, words):
    def at_the_tenth(w, say):  # the first of the submission's samples from number 10 on
        for line in (answer(w[1], w[2]) if int(w[1]) >= 10 and w[2] == "student"
                     else [f"sealed {w[1]} 1.0", f"verified {w[1]}"]):
            say(line)
    with FakeAuditor(at_the_tenth) as channel, pytest.raises(error, match=words) as raised:
        channel.session(pace(keep=0))
    assert getattr(raised.value, "program", "") == program


def test_the_auditor_falling_silent_is_the_graders_problem():
    with FakeAuditor(lambda w, say: time.sleep(2)) as channel, pytest.raises(AuditorError, match="no answer"):
        channel.session(pace(sample_timeout_s=-9.8))  # waits 0.2 s (the grader adds 10 s to the program's limit)


# --- the pacer: a session in a process of its own ---------------------------------------------

def test_a_session_apart_is_a_session_and_the_channel_carries_on():
    auditor = FakeAuditor(honest)
    with auditor as channel:
        first = pacer.session_in_process(channel, pace(samples=10, keep=1))
        second = pacer.session_in_process(channel, pace(samples=10, keep=0, warmup=0, student=False))
    assert first.reference.timed == second.reference.timed == first.student.timed == 10
    assert first.second.timed == second.second.timed == 10 and second.student is None
    assert len(first.student.kept) == 1
    numbers = [int(s[1]) for s in samples_seen(auditor)]
    assert numbers == list(range(6 + 30 + 20)) and channel.number == 56


def test_a_session_apart_applies_the_stop_rule_and_reports_each_kind_of_error():
    with FakeAuditor(honest) as channel:
        run = pacer.session_in_process(channel, pace(samples=100, keep=0, stop_when=TooSlow(limit=1.1, after=5)))
    assert run.student.stopped_early and run.student.timed == 5
    for line, error, program in (("breach 0 reference gave no answer to 'go 0' within 5 s", ProtocolError, "reference"),
                                 ("closed 0 reference", ChannelClosed, "reference"), ("nonsense", AuditorError, "")):
        with FakeAuditor(lambda w, say, line=line: say(line)) as channel, pytest.raises(error) as raised:
            pacer.session_in_process(channel, pace(keep=0))
        assert type(raised.value) is error and getattr(raised.value, "program", "") == program


def test_what_the_auditor_sent_past_a_line_is_not_lost_between_processes():
    ours, theirs = socket.socketpair()
    theirs.sendall(b"attached student\nstaged\nsealed 0 1.0\n")
    channel = AuditorChannel(ours.fileno())
    channel.expect("attached student", 5.0)
    assert channel.reader.buffer == b"staged\nsealed 0 1.0\n"
    theirs.sendall(b"verified 0\nstaged\nsealed 1 1.0\nverified 1\n")  # the second process's warm-up
    run = pacer.session_in_process(channel, pace(warmup=1, samples=0, keep=0, student=False))
    assert run.reference.timed == 0 and channel.number == 2 and channel.reader.buffer == b""
    ours.close()
    theirs.close()


# --- what a round scores: the auditor's split of every sample ---------------------------------

def _session(reference: list[list[float]], second: list[list[float]], student: list[list[float]],
             event_ms: float):
    """A round of the auditor's splits [preparation, answer, seal] for each program; the two
    official processes' own event times say `event_ms` (the submission's say nothing)."""
    from cudalab.grading.timing import PacedRun, SessionRun

    def paced(splits, reported):
        walls = [sum(x) + 0.03 for x in splits]  # the grader's own clock: a little more
        return PacedRun(wall_ms=walls, split_ms=splits, reported_ms=[reported] * len(splits))

    return SessionRun(paced(reference, event_ms), paced(second, event_ms), paced(student, 0.001))


def _samples(answer_ms: float, n: int = 200, stalled: float = 0.0, seed: int = 1, seal_ms: float = 0.28,
             spill: float = 0.0, spill_share: float = 0.0) -> list[list[float]]:
    """n samples [preparation, answer, seal]: preparation and seal jitter by a few µs; a
    share `stalled` of the answers wakes 0.15 ms late; a share `spill_share` moves `spill`
    ms of the answer past 'done' into the seal."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        answer = answer_ms + rng.gauss(0, 0.001) + (0.15 if rng.random() < stalled else 0.0)
        seal = seal_ms + rng.gauss(0, 0.002)
        if rng.random() < spill_share:
            answer, seal = answer - spill, seal + spill
        out.append([0.36 + rng.gauss(0, 0.002), answer, seal])
    return out


def test_a_round_scores_the_auditors_split_and_wake_up_stalls_do_not_move_it():
    # The same code as the reference, its samples stalled in a third (or a half) of them at
    # random: its time per call stays within 1 % of the reference's. The medians of the same
    # samples (what the grader scored before) move by most of the call.
    for stalled in (0.0, 0.35, 0.5):
        run = _session(_samples(0.34, seed=1, stalled=0.3), _samples(0.34, seed=2, stalled=0.3),
                       _samples(0.34, seed=3, stalled=stalled), event_ms=0.19)
        times = run.per_call()
        assert times.reference_ms == pytest.approx(0.19, rel=0.02)
        assert times.student_ms / times.reference_ms == pytest.approx(1.0, abs=0.01)
    stalled_half = _session(_samples(0.34, seed=1), _samples(0.34, seed=2), _samples(0.34, seed=3, stalled=0.55),
                            event_ms=0.19)
    import statistics
    median_ratio = ((statistics.median(stalled_half.student.wall_ms) - statistics.median(stalled_half.reference.wall_ms)
                     + 0.19) / 0.19)
    assert median_ratio > 1.5  # the old statistic: a correct submission scored as 1.5 times slower


def _measured(answer_ms: float, n: int, seed: int, slow_share: float = 0.0) -> list[list[float]]:
    """n samples [preparation, answer, seal] shaped as an H100 measured them for reduction:
    each part has a sharp lower edge and a tail above it (exponential, a microsecond or two);
    the first `slow_share` of the answers run 20 µs slow (a slow stretch of the process)."""
    rng = random.Random(seed)
    return [[0.225 + rng.expovariate(1000.0), answer_ms + rng.expovariate(500.0) + (0.02 if k < slow_share * n else 0.0),
             0.150 + rng.expovariate(1000.0)] for k in range(n)]


def test_a_slow_stretch_of_one_process_does_not_move_its_round():
    # Measured on an H100: for a second and more of a round one process's answers ran about
    # 20 µs slow (78 % of the submission's samples in one round, then none). On samples shaped
    # like those, the 5th percentile keeps the same code within 1 % of the reference on a
    # 0.1 ms call while the stretch holds up to half the round, and moves it less than a
    # third as far as the 20th percentile (scored before) once it holds most of it.
    from cudalab.grading import timing

    def ratio(slow_share: float, quantile: float) -> float:
        times = _session(_measured(0.25, 380, seed=1), _measured(0.25, 380, seed=2),
                         _measured(0.25, 380, seed=3, slow_share=slow_share), event_ms=0.1).per_call(quantile)
        assert times.reference_ms == pytest.approx(0.1, rel=0.03)
        return times.student_ms / times.reference_ms
    assert timing.SCORED_QUANTILE == 0.05
    for share in (0.0, 0.5):
        assert ratio(share, 0.05) == pytest.approx(1.0, abs=0.01)
    for share in (0.78, 0.9):
        assert ratio(share, 0.05) - 1 < (ratio(share, 0.2) - 1) / 3
    assert ratio(0.9, 0.2) > 1.15


def test_work_moved_past_done_into_the_seal_is_counted_whole():
    # A program that says 'done' before its work is over, in some or all of its samples,
    # moves that work into the auditor's seal: the low quantile of the answers alone would
    # pay it (0.1 ms a call off), the auditor's whole window counts it back.
    honest = _session(_samples(0.34, seed=1), _samples(0.34, seed=2), _samples(0.34, seed=3), event_ms=0.19).per_call()
    for share in (0.25, 0.5, 1.0):
        early = _session(_samples(0.34, seed=1), _samples(0.34, seed=2),
                         _samples(0.34, seed=3, spill=0.1, spill_share=share), event_ms=0.19).per_call()
        assert early.student_ms == pytest.approx(honest.student_ms, abs=0.0005)  # the same window, to its jitter


def test_without_the_auditors_split_a_round_falls_back_to_the_graders_clock():
    run = _session(_samples(0.34, seed=1), _samples(0.34, seed=2), _samples(0.68, seed=3), event_ms=0.19)
    run.student.split_ms = []  # one program's split missing: every program's window is the grader's clock
    times = run.per_call()
    assert times.student_ms / times.reference_ms == pytest.approx((0.68 - 0.34 + 0.19) / 0.19, rel=0.03)


def test_the_auditors_sealed_line_carries_its_split(monkeypatch):
    mine, theirs = socket.socketpair()
    channel = AuditorChannel(mine.fileno())
    theirs.sendall(b"staged\nsealed 0 1.5 360000 190000 280000\nverified 0\n")
    number, wall_ms, reported, wrong, split = channel._sample("reference", -1, 7, 5.0)
    assert (number, reported, wrong) == (0, 1.5, None)
    assert split == pytest.approx([0.36, 0.19, 0.28])
    mine.close(), theirs.close()
