"""report: the templates against stored known-good copies, and crash-safe writes."""
from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import pytest

from cudalab import report

GOLDEN = Path(__file__).parent / "golden"

GRADED = {
    "schema": "cudalab.grade/1", "cudalab_version": "0.1.0", "lab": "vector_add",
    "lab_title": "Vector addition", "submission": {"name": "alice", "folder": "/subs/alice"},
    "status": "graded", "exit_code": 0, "message": "2 of 3 cases passed.",
    "score": {"correctness": 46.6667, "correctness_max": 70.0, "performance": 0.0,
              "performance_max": 30.0, "total": 46.6667, "total_max": 100.0},
    "build": {"status": "built", "copied": ["vector_add.cu"], "ignored": ["notes.txt"], "feedback": []},
    "cases": [
        {"name": "n_1", "params": {"n": 1}, "status": "passed", "checker_status": "passed",
         "message": "", "points": 23.3333, "max_points": 23.3333},
        {"name": "n_257", "params": {"n": 257}, "status": "failed", "checker_status": "failed",
         "message": "c[256] is wrong: expected 1.25, got 0 (allowed difference 0); 1 of 257 elements differ",
         "points": 0.0, "max_points": 23.3333},
        {"name": "n_1025", "params": {"n": 1025}, "status": "passed", "checker_status": "passed",
         "message": "", "points": 23.3333, "max_points": 23.3333},
    ],
    "performance": {"status": "skipped", "timing_case": "n_2p26", "points": 0.0, "max_points": 30.0,
                    "message": "Performance is measured only when every case passes; fix the failing cases first."},
    "run": {"status": "failed", "exit_code": 1, "wall_s": 1.2, "description": "", "stderr_head": ""},
    "warnings": ["notes.txt was ignored: the vector_add lab only takes vector_add.cu."],
    "provenance": {"seed": 42, "started_at": "2025-01-01T00:00:00+00:00",
                   "finished_at": "2025-01-01T00:01:00+00:00", "cudalab_version": "0.1.0",
                   "preset": "gpu", "official_build": "/repo/build/gpu", "host": "node1",
                   "python": "3.12.0",
                   "isolation": {"kind": "bubblewrap", "uid": 65534, "cgroup": True, "official": True,
                                 "in_force": ["own PID namespace: every process ends with the run"],
                                 "missing": [], "summary": "bubblewrap sandbox (official)",
                                 "description": "bubblewrap sandbox (official); in force: own PID namespace: "
                                                "every process ends with the run", "allowed_without": False},
                   "gpu": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0",
                   "driver_version": 13000, "runtime_version": 13000, "sm_clock_mhz": 1980.0,
                   "spread": None},
}


def _full_marks_flagged():
    result = copy.deepcopy(GRADED)
    for case in result["cases"]:
        case.update(status="passed", checker_status="passed", message="", points=23.3333)
    result["message"] = "3 of 3 cases passed."
    result["score"].update(correctness=70.0, performance=12.0, total=82.0)
    result["performance"] = {
        "status": "scored", "timing_case": "n_2p26", "points": 12.0, "max_points": 30.0,
        "ratio": 2.24, "samples": 1800,
        "message": "Your program reports 0.01 ms per run, but the grader's clock shows 0.6048 ms per run "
                   "(measurement noise here: 0.0033 ms). Work the CUDA events do not see still takes time: "
                   "you are scored on the grader's clock.",
        "cross_check": {"reference_ms": 0.27, "reference_wall_ms": 0.272,
                        "reference_round_estimates_ms": [0.272, 0.2725, 0.2708], "reference_agreement": 0.0063,
                        "student_reported_ms": 0.01, "student_wall_ms": 0.6048, "noise_ms": 0.0033,
                        "student_ms": 0.6048, "ratio": 2.24, "flagged": True, "message": "..."},
        "rounds": [], "spread": None}
    return result


def _not_run():
    result = copy.deepcopy(GRADED)
    result.update(status="not_run", exit_code=23, score=None, cases=[], performance=None, run=None,
                  warnings=[], message="There is no CUDA device on this machine (the reference "
                  "solution exits with 'no device'), so the submission was built but not run. No "
                  "grade was given; grade it on a machine with a GPU.")
    result["provenance"].update(gpu=None, isolation=None)
    return result


def _compile_error():
    result = _not_run()
    result.update(status="compile_error", exit_code=22,
                  score={"correctness": 0.0, "correctness_max": 70.0, "performance": 0.0,
                         "performance_max": 30.0, "total": 0.0, "total_max": 100.0},
                  message="vector_add.cu did not compile against the official vector_add harness. "
                          "Fix the first error below, then build again.")
    result["build"].update(status="compile_error", feedback=[
        'vector_add.cu(12): error: expected a ";"', "      c[i] = a[i] + b[i]", "                        ^"])
    return result


SCENARIOS = {"graded": lambda: copy.deepcopy(GRADED), "flagged": _full_marks_flagged,
             "not_run": _not_run, "compile_error": _compile_error}


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
@pytest.mark.parametrize("template, suffix", [(report.render_summary, "summary.txt"),
                                              (report.render_feedback, "feedback.md")])
def test_rendering_matches_the_stored_copy(scenario, template, suffix):
    rendered = template(SCENARIOS[scenario]())
    golden = GOLDEN / f"{scenario}.{suffix}"
    if os.environ.get("CUDALAB_UPDATE_GOLDEN"):
        golden.write_text(rendered)
    assert rendered == golden.read_text(), "set CUDALAB_UPDATE_GOLDEN=1 to accept a deliberate change"


def test_not_run_never_shows_a_zero():
    summary = report.render_summary(_not_run())
    assert "Score: none (not graded)" in summary and "0 / 100" not in summary


def test_write_outputs_is_atomic(tmp_path, monkeypatch):
    out = tmp_path / "out"
    paths = report.write_outputs(out, GRADED)
    assert json.loads(paths["result"].read_text()) == GRADED
    assert sorted(p.name for p in out.iterdir()) == ["feedback.md", "result.json"]

    def crash(*_args, **_kwargs):
        raise OSError("disk full")
    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError):
        report.write_outputs(out, _not_run())
    assert json.loads(paths["result"].read_text()) == GRADED, "the old result survives a failed write"
    assert sorted(p.name for p in out.iterdir()) == ["feedback.md", "result.json"], "no temp files left"
