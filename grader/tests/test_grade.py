"""The grade flow end to end, with fake binaries standing in for the reference, the checker
and the submission (see fake_program.py), run through the real sandbox, so it runs on a
machine without a GPU."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from cudalab.building import build
from cudalab import cli
from cudalab.grading import grade
from cudalab.lab import labs
from cudalab.outputs import report
from cudalab.isolation import sandbox
from cudalab.record import GradeResult
from cudalab.isolation.runner import Runner
from conftest import seal, write_fake


@pytest.fixture
def fake_submission(monkeypatch, tmp_path):
    """Make the submission 'build' stage for real and then hand back a fake binary."""
    def install(**behaviour) -> Path:
        binary = write_fake(tmp_path / "fake-build" / "toy_submission", name="toy_submission",
                            **behaviour)

        def fake_build(config, spec, folder, work):
            staged = build.stage_submission(spec, folder, work / "src")
            return build.SubmissionBuild(binary, staged, "")
        monkeypatch.setattr(build, "build_submission", fake_build)
        return binary
    return install


def grade_toy(config, folder, **overrides):
    if overrides:
        config = dataclasses.replace(config, **overrides)
    return grade.grade(config, "toy", folder, seed=12345)


def case_status(result):
    return {c["name"]: c["status"] for c in result["cases"]}


def test_correct_submission_gets_full_marks(toy_config, toy_submission, fake_submission):
    fake_submission(sample_ms=1.0)
    result = grade_toy(toy_config, toy_submission)
    assert result["status"] == "graded" and result["exit_code"] == 0, result["message"]
    assert result["score"]["total"] == 100, result["performance"]
    assert set(case_status(result).values()) == {"passed"}
    perf = result["performance"]
    assert perf["status"] == "scored" and perf["ratio"] < 1.1 and perf["points"] == 40
    assert perf["flagged"] is False and not perf["clock"]["below_floor"]
    assert len(perf["rounds"]) == 2
    # The reference's timed samples take timing_target_s: at ~2.5 ms each, about 80 of them.
    assert 20 <= perf["samples"] <= 200
    # The toy's output is exact, so the auditor compared every sample bit for bit: one goes to
    # the checker, from the first round (none is kept in the last: LabSpec.kept_in_round).
    assert [len(r["kept_samples"]) for r in perf["rounds"]] == [1, 0]
    provenance = result["provenance"]
    assert provenance["seed"] == 12345 and provenance["gpu"] == "Fake GPU"
    assert provenance["isolation"]["kind"] in ("bubblewrap", "none") and provenance["finished_at"]
    assert provenance["sm_clock_mhz"] == 1975.0  # median of the reference's before/after clocks
    # Where the time went, phase by phase.
    assert set(provenance["phases_s"]) >= {"build", "device_probe", "audit_start", "correctness", "timing",
                                           "kept_sample_checks"}
    # ... and program by program: the probe, the correctness run, its check, the auditor and
    # the reference program's two processes serving every round,
    # the submission's program in each round, one check per kept sample.
    runs = [p["what"] for p in provenance["processes"]]
    assert sum(what.startswith("toy_solution --audit") for what in runs) == 1
    assert sum(what.startswith("toy_solution --paced") for what in runs) == 2
    assert sum(what.startswith("toy_submission --paced") for what in runs) == len(perf["rounds"])
    assert sum(what.startswith("checker") for what in runs) == 1 + 1
    assert all(p["wall_s"] >= 0 for p in provenance["processes"])
    assert provenance["gpu_sharing"] is None or all(w["waited_s"] == 0 for w in provenance["gpu_sharing"])


def test_wrong_case_loses_its_share_and_all_performance(toy_config, toy_submission, fake_submission):
    fake_submission(wrong_cases=["c_7"])
    result = grade_toy(toy_config, toy_submission)
    assert result["status"] == "graded"
    assert case_status(result) == {"c_1": "passed", "c_7": "failed", "c_300": "passed"}
    failed = next(c for c in result["cases"] if c["name"] == "c_7")
    assert failed["message"].startswith("c[0] is wrong: expected 1.25")
    assert result["score"]["correctness"] == 40 and result["score"]["performance"] == 0
    assert result["performance"]["status"] == "skipped"


def test_all_wrong_scores_zero_correctness(toy_config, toy_submission, fake_submission):
    fake_submission(wrong_cases=["c_1", "c_7", "c_300"])
    result = grade_toy(toy_config, toy_submission)
    assert result["score"]["total"] == 0 and result["status"] == "graded"


def test_only_the_graders_clock_is_scored_and_the_programs_claim_is_only_shown(toy_config, toy_submission,
                                                                               fake_submission):
    # Each call really takes 4 ms (twice the reference's), but the program reports 0.5 ms.
    fake_submission(sample_ms=4.0, report_ms=0.5)
    result = grade_toy(toy_config, toy_submission)
    perf = result["performance"]
    assert perf["status"] == "scored", perf["message"]
    clock = perf["clock"]
    assert clock["student_reported_ms"] == 0.5
    assert clock["student_ms"] > 3.0 and perf["ratio"] > 1.5 and perf["points"] < 30
    assert "events said 0.5 ms per call; the grade uses the grader's clock" in perf["message"]
    feedback = report.render_feedback(GradeResult.from_json(result))
    assert "grader's clock" in feedback
    # The rounds' lowest and highest ratios, and the points a regrade could land on.
    ranged = perf["regrade_range"]
    ratios = [s / r for s, r in zip(clock["student_rounds_ms"], clock["reference_rounds_ms"])]
    assert (ranged["rounds"], ranged["low_ratio"], ranged["high_ratio"]) == (2, min(ratios), max(ratios))
    assert ranged["points_at_low"] >= perf["points"] >= ranged["points_at_high"]
    assert f"Its 2 rounds ranged from {ranged['low_ratio']:.3g} to {ranged['high_ratio']:.3g} times" in feedback


def test_fast_but_wrong_in_the_timed_samples_scores_no_performance(toy_config, toy_submission,
                                                                  fake_submission):
    fake_submission(bench_wrong=True)
    result = grade_toy(toy_config, toy_submission)
    assert result["score"]["correctness"] == 60
    assert result["performance"]["status"] == "zero" and result["score"]["performance"] == 0
    assert "fast but wrong" in result["performance"]["message"]
    assert "where the course's reference computes" in result["performance"]["message"]


def test_skipping_calls_once_some_samples_were_timed_is_caught_at_the_first_skip(toy_config, toy_submission,
                                                                                fake_submission):
    # Every sample is sealed and verified by the auditor, so there is no moment after which
    # a program could stop computing unseen.
    fake_submission(skip_after=25)
    result = grade_toy(toy_config, toy_submission)
    perf = result["performance"]
    assert perf["status"] == "zero" and result["score"]["performance"] == 0
    assert "was wrong" in perf["message"] and "fast but wrong" in perf["message"]


def test_a_program_that_changes_its_inputs_scores_no_performance(toy_config, toy_submission, fake_submission):
    fake_submission(change_inputs=True)
    result = grade_toy(toy_config, toy_submission)
    assert result["performance"]["status"] == "zero"
    assert "its input in was changed" in result["performance"]["message"]


@pytest.mark.parametrize("behaviour, words", [
    ({"bad_reply": "done 0 0.001 extra"}, "instead of 'done"),
    ({"ready": "ready b_1000 c"}, "did not start with 'ready b_1000 BYTES'"),
    ({"layout": 999}, "laid the case out in 999 bytes"),
    ({"speak_unasked_at": 3}, "before it was asked for anything"),
])
def test_a_program_that_breaks_the_timing_protocol_fails_not_the_grader(toy_config, toy_submission,
                                                                       fake_submission, behaviour, words):
    fake_submission(**behaviour)
    result = grade_toy(toy_config, toy_submission)
    assert result["status"] == "graded", result["message"]
    assert result["score"]["correctness"] == 60
    perf = result["performance"]
    assert perf["status"] == "zero" and perf["flagged"] is True
    assert words in perf["message"] and "timing protocol" in perf["message"]


def test_a_time_below_the_physical_floor_is_a_flagged_violation(toy_config, toy_root, toy_submission,
                                                               fake_submission):
    # An auditor that measures this GPU's floor at 50 ms (the reference takes 60): no program can take 1 ms.
    write_fake(toy_root / "build" / "ci" / "bin" / "toy_solution", name="toy_solution", sample_ms=60.0,
               floor_ms=50.0)
    seal(toy_root)
    fake_submission(sample_ms=1.0)
    result = grade_toy(toy_config, toy_submission)
    perf = result["performance"]
    assert perf["status"] == "zero" and perf["flagged"] is True and result["score"]["performance"] == 0
    assert perf["clock"]["below_floor"] and perf["clock"]["floor_ms"] == 50.0
    assert "below what this GPU can do at all" in perf["message"]


def test_a_reference_timed_below_the_floor_in_every_round_is_the_graders_error(toy_config, toy_root,
                                                                                  toy_submission, fake_submission):
    """The course's reference measured faster than the GPU can go is the clock measuring noise
    (a busy host): never a ratio to score, stop on, or zero a student with. Each such round is
    timed again; a clock that never measures it is a grader error, graded again by the next run."""
    write_fake(toy_root / "build" / "ci" / "bin" / "toy_solution", name="toy_solution", sample_ms=2.0,
               floor_ms=50.0)
    seal(toy_root)
    fake_submission(sample_ms=30.0)  # past the early-stop ratio, were the reference's time believed
    result = grade_toy(toy_config, toy_submission)
    assert result["status"] == "error", result["message"]
    assert "could not time the reference" in result["message"] and "not the submission's fault" in result["message"]


def test_a_round_whose_reference_time_is_implausible_is_timed_again(toy_config, toy_submission, fake_submission,
                                                                   monkeypatch):
    from cudalab.grading import timing
    fake_submission(sample_ms=2.0)
    verdicts = iter([False])  # the first round's reference time is noise; the rest are as measured
    real = timing.reference_is_plausible
    monkeypatch.setattr(grade, "reference_is_plausible",
                        lambda ms, floor: next(verdicts, True) and real(ms, floor))
    result = grade_toy(toy_config, toy_submission)
    perf = result["performance"]
    assert result["status"] == "graded" and perf["status"] == "scored", perf
    assert len(perf["voided_rounds"]) == 1 and len(perf["rounds"]) == toy_config.timing_rounds


def test_an_implausible_reference_time_never_ends_a_session_early():
    from cudalab.grading.timing import PacedRun, SessionRun, TooSlow
    # Official event times of 0.05 ms a call (a GPU whose timers misbehaved), 1.0 ms of
    # protocol; the submission's windows are 0.5 ms a call.
    official = [PacedRun(wall_ms=[1.05] * 30, reported_ms=[0.05] * 30) for _ in range(2)]
    run = SessionRun(reference=official[0], second=official[1], student=PacedRun(wall_ms=[1.5] * 30))
    assert TooSlow(limit=3.75, floor_ms=0.0)(run)          # believed: ten times the reference
    assert not TooSlow(limit=3.75, floor_ms=0.2)(run)      # below 0.85 of a 0.2 ms floor: not believed


def test_much_slower_code_stops_timing_early(toy_config, toy_submission, fake_submission):
    fake_submission(sample_ms=30.0)  # ten times the reference: past the stop rule's 3.75 however busy the machine
    result = grade_toy(toy_config, toy_submission)
    perf = result["performance"]
    assert perf["status"] == "zero" and len(perf["rounds"]) == 1, perf
    assert "times as long as the reference" in perf["message"]


def test_crash_fails_the_cases_without_a_passed_verdict(toy_config, toy_submission, fake_submission):
    fake_submission(crash_after=1)
    result = grade_toy(toy_config, toy_submission)
    assert case_status(result) == {"c_1": "passed", "c_7": "failed", "c_300": "failed"}
    assert "crashed with SIGSEGV" in result["cases"][1]["message"]
    assert result["run"]["status"] == "crashed"
    assert result["score"]["correctness"] == 20


def test_timeout_is_reported_in_words(toy_config, toy_root, toy_submission, fake_submission):
    """The correctness run stops at the lab's time limit (lab.toml [scoring] time_limit_s), not
    the grader's general process limit, and the message names that limit."""
    lab_toml = toy_root / "labs" / "toy" / "lab.toml"
    lab_toml.write_text(lab_toml.read_text().replace("zero_marks_ratio = 3.00\n",
                                                     "zero_marks_ratio = 3.00\ntime_limit_s = 1.5\n"))
    fake_submission(hang=True)
    result = grade_toy(toy_config, toy_submission, process_timeout_s=60.0)
    assert set(case_status(result).values()) == {"failed"}
    assert ("killed after 1.5 s (the toy lab's time limit for one run of its cases, lab.toml [scoring] "
            "time_limit_s)") in result["cases"][0]["message"]
    assert result["run"]["wall_s"] < 30
    assert result["run"]["status"] == "timeout" and result["run"]["exit_code"] == 5


def test_cuda_error_quotes_stderr(toy_config, toy_submission, fake_submission):
    fake_submission(cuda_error=True)
    result = grade_toy(toy_config, toy_submission)
    assert set(case_status(result).values()) == {"failed"}
    assert result["cases"][0]["message"].startswith("CUDA error: an illegal memory access")
    assert result["run"]["exit_code"] == 3


def test_no_device_is_not_run_never_a_zero(toy_config, toy_root, toy_submission, fake_submission):
    write_fake(toy_root / "build" / "ci" / "bin" / "toy_solution", no_device=True)
    seal(toy_root)
    fake_submission()
    result = grade_toy(toy_config, toy_submission)
    assert result["status"] == "not_run" and result["exit_code"] == 23
    assert result["score"] is None and result["cases"] == []
    assert result["build"]["status"] == "built"
    assert "no CUDA device" in result["message"]
    assert "Not graded" in report.render_feedback(GradeResult.from_json(result))


def test_submission_claiming_no_device_fails(toy_config, toy_submission, fake_submission):
    fake_submission(no_device=True)
    result = grade_toy(toy_config, toy_submission)
    assert result["status"] == "graded" and result["score"]["total"] == 0
    assert "although the reference solution ran" in result["cases"][0]["message"]


def test_broken_checker_is_a_grader_error_with_a_zero_entry(toy_config, toy_root, toy_submission,
                                                            fake_submission):
    (toy_root / "build" / "ci" / "bin" / "toy_checker").write_text("#!/bin/sh\nexit 6\n")
    seal(toy_root)
    fake_submission()
    result = grade_toy(toy_config, toy_submission)
    assert result["status"] == "error" and result["exit_code"] == 24
    assert result["score"]["total"] == 0
    assert "checker could not judge" in result["message"]


def test_a_replaced_official_binary_is_never_used(toy_config, toy_root, toy_submission, fake_submission):
    """Second line of defence: a checker replaced after the build (here by hand, in the
    hostile suite by a submission) fails its hash check before it can pass anything."""
    forged = toy_root / "build" / "ci" / "bin" / "toy_checker"
    forged.write_text("#!/bin/sh\necho '{\"all_passed\": true, \"cases\": []}' > \"$6\"\n")
    fake_submission(wrong_cases=["c_1", "c_7", "c_300"])
    result = grade_toy(toy_config, toy_submission)
    assert result["status"] == "error" and result["score"]["total"] == 0
    assert "not the one the build made" in result["message"]


def test_missing_file_is_a_submission_error(toy_config, tmp_path, fake_submission):
    fake_submission()
    empty = tmp_path / "bob"
    empty.mkdir()
    result = grade_toy(toy_config, empty)
    assert result["status"] == "submission_error" and result["exit_code"] == 21
    assert "toy.cu" in result["message"] and str(empty) in result["message"]


def test_extra_files_are_ignored_with_a_warning(toy_config, toy_submission, fake_submission):
    """An extra file is worth a warning (it may be meant as part of the work); a folder beside
    the source (a build folder, the course's ladder/) is only recorded."""
    (toy_submission / "ladder").mkdir()
    (toy_submission / "notes.txt").write_text("hi")
    fake_submission()
    result = grade_toy(toy_config, toy_submission)
    assert result["status"] == "graded"
    assert result["build"]["ignored"] == ["ladder/", "notes.txt"]
    assert "notes.txt was ignored: the toy lab only takes toy.cu." in result["warnings"]
    assert not any("ladder/" in w for w in result["warnings"])


@pytest.fixture
def unsandboxed(monkeypatch, toy_config):
    """This machine as if it had no bubblewrap."""
    config = dataclasses.replace(toy_config, bwrap="/no/such/bwrap")
    monkeypatch.setattr(sandbox, "_detected", {})
    return config


def test_grade_refuses_without_isolation(unsandboxed, toy_submission, fake_submission):
    fake_submission()
    result = grade.grade(unsandboxed, "toy", toy_submission, seed=1)
    assert result["status"] == "not_isolated" and result["exit_code"] == 25
    assert result["score"] is None and result["cases"] == []
    assert "bubblewrap" in result["message"] and "--allow-unisolated" in result["message"]
    assert result["provenance"]["isolation"]["official"] is False


def test_allow_unisolated_grades_and_says_it_is_not_official(unsandboxed, toy_submission, fake_submission):
    fake_submission(sample_ms=1.0)
    result = grade.grade(unsandboxed, "toy", toy_submission, seed=1, allow_unisolated=True)
    assert result["status"] == "graded" and result["score"]["correctness"] == 60
    assert any("not an official grade" in w for w in result["warnings"])
    assert "not an official grade" in report.render_feedback(GradeResult.from_json(result))
    assert result["provenance"]["isolation"]["kind"] == "none"
    assert "isolation: no sandbox (not official)" in report.render_summary(GradeResult.from_json(result))


def _cli_env(monkeypatch, config):
    monkeypatch.setenv("CUDALAB_ROOT", str(config.root))
    monkeypatch.setenv("CUDALAB_PRESET", "ci")
    monkeypatch.setenv("CUDALAB_WORK_DIR", str(config.work_dir))
    monkeypatch.setenv("CUDALAB_TIMING_ROUNDS", "1")
    monkeypatch.setenv("CUDALAB_TIMING_TARGET_S", "0.05")
    monkeypatch.setenv("CUDALAB_SAMPLES_MIN", "10")


def test_cli_grade_writes_result_and_feedback(toy_config, toy_submission, fake_submission,
                                              monkeypatch, capsys, tmp_path):
    _cli_env(monkeypatch, toy_config)
    fake_submission(sample_ms=1.0)
    out = tmp_path / "out"
    code = cli.main(["grade", "toy", str(toy_submission), "--json", "--seed", "9", "--out", str(out)])
    assert code == 0
    printed = json.loads(capsys.readouterr().out)
    on_disk = json.loads((out / "result.json").read_text())
    assert printed == on_disk and on_disk["schema"] == "cudalab.grade/1"
    assert on_disk["provenance"]["seed"] == 9
    assert "# Toy lab: feedback for alice" in (out / "feedback.md").read_text()


def test_cli_grade_default_out_dir_and_summary(toy_config, toy_submission, fake_submission,
                                               monkeypatch, capsys):
    _cli_env(monkeypatch, toy_config)
    fake_submission(wrong_cases=["c_1"])
    assert cli.main(["grade", "toy", str(toy_submission)]) == 0
    assert "FAIL  c_1" in capsys.readouterr().out
    assert (toy_config.work_dir / "results" / "toy" / build.submission_key(toy_submission) / "result.json").is_file()


def test_results_of_folders_with_the_same_name_never_overwrite_each_other(toy_config, tmp_path, fake_submission,
                                                                        monkeypatch):
    """c1/alice, c2/alice and nested/alice are three students."""
    _cli_env(monkeypatch, toy_config)
    fake_submission(wrong_cases=["c_1"])
    for parent in ("c1", "c2", "nested/deeper"):
        (tmp_path / parent / "alice").mkdir(parents=True)
        (tmp_path / parent / "alice" / "toy.cu").write_text(f"// {parent}\n")
        assert cli.main(["grade", "toy", str(tmp_path / parent / "alice")]) == 0
    folders = sorted((toy_config.work_dir / "results" / "toy").iterdir())
    assert len(folders) == 3 and all(f.name.startswith("alice-") for f in folders)
    assert {json.loads((f / "result.json").read_text())["submission"]["folder"] for f in folders} == \
        {str((tmp_path / p / "alice").resolve()) for p in ("c1", "c2", "nested/deeper")}


def test_out_must_be_a_folder(toy_config, toy_submission, monkeypatch, tmp_path, capsys):
    _cli_env(monkeypatch, toy_config)
    (tmp_path / "a-file").write_text("x")
    assert cli.main(["grade", "toy", str(toy_submission), "--out", str(tmp_path / "a-file")]) == 2
    assert "is a file; give a folder" in capsys.readouterr().err


def test_cli_grade_of_an_oddly_named_folder_keeps_the_name_as_data(toy_config, tmp_path, fake_submission,
                                                                   monkeypatch):
    _cli_env(monkeypatch, toy_config)
    fake_submission(wrong_cases=["c_1"])
    odd = tmp_path / "x$(touch PWNED); rm -rf ü"
    odd.mkdir()
    (odd / "toy.cu").write_text("// code\n")
    assert cli.main(["grade", "toy", str(odd)]) == 0
    [folder] = (toy_config.work_dir / "results" / "toy").iterdir()
    assert folder.name.startswith("x_touch_PWNED") and folder.name != odd.name
    result = json.loads((folder / "result.json").read_text())
    assert result["submission"]["name"] == odd.name  # recorded as data, exactly
    assert not list(tmp_path.rglob("PWNED")) and not Path("PWNED").exists()


def test_cli_unknown_lab_still_writes_a_result(toy_config, toy_submission, monkeypatch, tmp_path):
    _cli_env(monkeypatch, toy_config)
    out = tmp_path / "out"
    assert cli.main(["grade", "nosuchlab", str(toy_submission), "--out", str(out)]) == 20
    result = json.loads((out / "result.json").read_text())
    assert result["status"] == "unknown_lab" and "toy" in result["message"]
    assert result["score"]["total"] == 0


def test_the_checker_sees_the_gpu_only_for_the_cases_that_ask_it(toy_config, toy_root, monkeypatch, tmp_path):
    """[checker] gpu = [cases]: judging a kept timed sample of a case that does not ask the
    GPU neither holds the GPU nor shows it to the checker (so a batch's other grade can use it)."""
    lab_toml = toy_root / "labs" / "toy" / "lab.toml"
    lab_toml.write_text(lab_toml.read_text() + '\n[checker]\ngpu = ["c_7"]\n')
    spec = labs.load_lab(toy_config, "toy")
    runner = Runner(toy_config, spec, tmp_path / "scratch")
    seen: list[bool] = []
    real_run = runner.sandbox.run
    monkeypatch.setattr(runner.sandbox, "run", lambda argv, **kw: seen.append(kw["gpu"]) or real_run(argv, **kw))
    held: list[bool] = []
    real_on_gpu = runner._on_gpu
    monkeypatch.setattr(runner, "_on_gpu", lambda gpu: held.append(gpu) or real_on_gpu(gpu))
    empty = tmp_path / "dump"
    empty.mkdir()
    runner.check(empty, 1, bench_case="b_1000")
    runner.check(empty, 1, cases=["c_1", "c_300"])
    runner.check(empty, 1, cases=["c_7"])
    runner.check(empty, 1)
    assert seen == held == [False, False, True, True]


def test_a_rounds_kept_sample_is_checked_while_the_next_round_runs(toy_config, toy_submission, fake_submission,
                                                                   monkeypatch):
    """The check of round 1's kept sample does not wait for the last round (it runs on the
    work CPUs meanwhile: cpus.py); the grade still waits for every verdict."""
    import threading
    fake_submission(sample_ms=1.0)
    in_round = {"number": 0, "running": threading.Event()}
    seen: list[tuple[int, bool]] = []
    real_paced, real_check = grade.GradingSession.paced, grade.GradingSession._check_kept_sample

    def paced(self, *args, **kwargs):
        in_round["number"] += 1
        in_round["running"].set()
        try:
            return real_paced(self, *args, **kwargs)
        finally:
            in_round["running"].clear()

    def check(self, dump, sample):
        if not seen:  # round 1's: wait (a little) for round 2 to be under way
            for _ in range(100):
                if in_round["number"] == 2 and in_round["running"].is_set():
                    break
                threading.Event().wait(0.05)
        seen.append((in_round["number"], in_round["running"].is_set()))
        return real_check(self, dump, sample)

    monkeypatch.setattr(grade.GradingSession, "paced", paced)
    monkeypatch.setattr(grade.GradingSession, "_check_kept_sample", check)
    result = grade_toy(toy_config, toy_submission)
    assert result["performance"]["status"] == "scored", result["performance"]["message"]
    assert seen == [(2, True)]  # the toy's one kept sample (its output is exact)



def _kept_checks_after_the_auditor_ended(monkeypatch, verdict: str | None = None) -> list[Path]:
    """Holds every kept sample's check until the grade's auditor has ended (its last round is
    over), then judges it (or gives `verdict` instead); returns the dumps the checker got."""
    import threading
    from cudalab.grading import audit
    ended = threading.Event()
    judged: list[Path] = []
    real_close, real_check = audit.AuditServer.close, Runner.check

    def close(self):
        try:
            return real_close(self)
        finally:
            ended.set()

    def check(self, dump, seed, *, bench_case=None, **kwargs):
        if bench_case is None:
            return real_check(self, dump, seed, bench_case=bench_case, **kwargs)
        assert ended.wait(30)
        judged.append(dump)
        assert (dump / f"{bench_case}.c.bin").is_file()  # still there, the auditor gone
        if verdict is None:
            return real_check(self, dump, seed, bench_case=bench_case, **kwargs)
        return {bench_case: {"name": bench_case, "status": verdict, "message": "c[3] is wrong"}}

    monkeypatch.setattr(audit.AuditServer, "close", close)
    monkeypatch.setattr(Runner, "check", check)
    return judged


def test_a_kept_sample_is_judged_where_the_auditor_wrote_it_and_outlives_the_auditor(
        toy_config, toy_submission, fake_submission, monkeypatch):
    """No copy of a kept sample (a bench case's gigabyte took seconds): the checker reads it in
    the auditor's own run folder, which stays until the last check is done even though the
    auditor ends with the last round; then nothing of it is left."""
    fake_submission(sample_ms=1.0)
    judged = _kept_checks_after_the_auditor_ended(monkeypatch)
    result = grade_toy(toy_config, toy_submission, keep_temp=False)
    assert result["performance"]["status"] == "scored", result["performance"]["message"]
    assert len(judged) == 1 and judged[0].parent.name == "dump" and judged[0].parent.parent.name.startswith("auditor-")
    assert not judged[0].parent.parent.exists()  # released, and the ended auditor's folder with it


def test_a_wrong_kept_sample_still_zeroes_performance_when_its_check_outlasts_the_rounds(
        toy_config, toy_submission, fake_submission, monkeypatch):
    """A kept sample's check runs beside the later rounds and may end after them: its verdict
    still decides, and the grade waits for it."""
    fake_submission(sample_ms=1.0)
    judged = _kept_checks_after_the_auditor_ended(monkeypatch, verdict="failed")
    result = grade_toy(toy_config, toy_submission)
    perf = result["performance"]
    assert len(judged) == 1 and perf["status"] == "zero" and result["score"]["performance"] == 0
    assert "output in timed sample" in perf["message"] and "c[3] is wrong" in perf["message"]


def test_a_grade_times_while_the_checker_judges_and_drops_the_timing_when_a_case_fails(
        toy_config, toy_submission, fake_submission):
    """One grade has the GPU to itself, so it times the submission while the checker judges
    the correctness run; a failing case still leaves performance unmeasured and unscored."""
    fake_submission(sample_ms=1.0, wrong_cases=["c_7"])
    result = grade_toy(toy_config, toy_submission)
    assert result["performance"]["status"] == "skipped" and result["score"]["performance"] == 0
    assert "correctness_check" in result["provenance"]["phases_s"]
    runs = [p["what"] for p in result["provenance"]["processes"]]
    assert any(what.startswith("toy_submission --paced") for what in runs)  # it was timed, then dropped
    # A batch's grade (finish without early_timing) does not spend the GPU on it.
    pending = grade.begin(toy_config, "toy", toy_submission, seed=5)
    late = grade.finish(pending)
    assert late["performance"]["status"] == "skipped"
    assert not any("--paced" in p["what"] for p in late["provenance"]["processes"])


def test_a_pending_grade_ships_as_json_and_comes_back_the_same(toy_config, tmp_path):
    """What a grade's build step hands its GPU step (grade.Handoff) goes through JSON, as an
    executor ships it between machines, unchanged; anything else is refused in words."""
    result = {"status": "pending", "score": {"total": 0}, "provenance": {"slurm": {"submission": "t"}}}
    handoff = grade.Handoff("alice-1a2b", result, tmp_path / "grade" / "build" / "prog", tmp_path / "grade", 12.5)
    shipped = grade.Handoff.from_json(json.loads(json.dumps(handoff.to_json())))
    assert shipped == handoff and isinstance(shipped.binary, Path) and isinstance(shipped.tmp, Path)
    pending = shipped.pending(toy_config, None, tmp_path / "node" / "prog", tmp_path / "node")
    assert pending.result is shipped.result and pending.binary == tmp_path / "node" / "prog" and pending.error is None
    for broken, said in (([], "not a pending grade"), ({"schema": "cudalab.other/1"}, "not a pending grade"),
                         ({**handoff.to_json(), "built_at": "soon"}, "a field is not what a pending grade holds"),
                         ({k: v for k, v in handoff.to_json().items() if k != "tmp"}, "'tmp' is missing"),
                         ({**handoff.to_json(), "result": "graded"}, "result is not an object")):
        with pytest.raises(ValueError, match=said):
            grade.Handoff.from_json(broken)


def test_one_grade_reads_lab_toml_once(toy_config, toy_submission, fake_submission, monkeypatch):
    """A grade reads its lab.toml once and hands the spec on: two reads could disagree when
    the file changes mid-grade, and each costs a parse and a validation."""
    from cudalab.lab import labspec
    fake_submission(sample_ms=1.0)
    reads = []
    real_load = labspec.load
    monkeypatch.setattr(labspec, "load", lambda path: reads.append(path) or real_load(path))
    result = grade_toy(toy_config, toy_submission)
    assert result["status"] == "graded", result["message"]
    assert len(reads) == 1, reads


def test_grades_and_checks_draw_their_seed_from_one_policy(toy_config, toy_submission, fake_submission,
                                                          monkeypatch):
    """Where no --seed is given, a grade and a hand-in check take the seed labs.choose_seed
    draws (in secret, 0 to MAX_SEED); a student's run repeats STUDENT_RUN_SEED."""
    import types
    from cudalab.intake import check
    fake_submission(sample_ms=1.0)
    monkeypatch.setattr(labs, "secrets", types.SimpleNamespace(randbits=lambda bits: 2 ** bits - 7))
    result = grade.grade(toy_config, "toy", toy_submission)
    assert result["provenance"]["seed"] == labs.MAX_SEED - 6
    spec = labs.load_lab(toy_config, "toy")
    assert check.HandInChecking(toy_config, spec, toy_submission).context.seed == labs.MAX_SEED - 6
    assert check.HandInChecking(toy_config, spec, toy_submission, seed=5).context.seed == 5
    assert labs.choose_seed(0) == 0
    assert cli.make_parser().parse_args(["run", "toy", str(toy_submission)]).seed == labs.STUDENT_RUN_SEED
