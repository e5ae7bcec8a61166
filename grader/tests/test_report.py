"""report: the templates against stored known-good copies, and crash-safe writes."""
from __future__ import annotations

import json
import os

import pytest

from cudalab.outputs import report
from cudalab.errors import GraderError
from cudalab.record import GradeResult
from grade_results import GRADED, SCENARIOS, assert_matches_golden, not_run


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
@pytest.mark.parametrize("template, suffix", [(report.render_summary, "summary.txt"),
                                              (report.render_feedback, "feedback.md")])
def test_rendering_matches_the_stored_copy(scenario, template, suffix):
    assert_matches_golden(template(GradeResult.from_json(SCENARIOS[scenario]())), f"{scenario}.{suffix}")


def test_not_run_never_shows_a_zero():
    summary = report.render_summary(GradeResult.from_json(not_run()))
    assert "Score: none (not graded)" in summary and "0 / 100" not in summary


def test_write_outputs_is_atomic(tmp_path, monkeypatch):
    out = tmp_path / "out"
    paths, record = report.write_outputs(out, GRADED)
    assert record.to_json() == GRADED, "the record read once is the one written"
    assert json.loads(paths["result"].read_text()) == GRADED
    assert sorted(p.name for p in out.iterdir()) == ["feedback.md", "result.json"]

    def crash(*_args, **_kwargs):
        raise OSError("disk full")
    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError):
        report.write_outputs(out, not_run())
    assert json.loads(paths["result"].read_text()) == GRADED, "the old result survives a failed write"
    assert sorted(p.name for p in out.iterdir()) == ["feedback.md", "result.json"], "no temp files left"


def test_a_grade_that_cannot_be_read_back_keeps_its_result_and_says_why(tmp_path):
    """Proves: `grade`'s outputs read the result once as a typed record after result.json is
    written: one that cannot be read (a status with another status's exit code) keeps its
    result.json and stops with a sentence that names it, never a traceback or feedback
    rendered from a record it could not read."""
    out = tmp_path / "out"
    broken = {**GRADED, "exit_code": 24}
    with pytest.raises(GraderError, match=r"The grade written to .*result\.json cannot be read back \(.*'graded' "
                                          r"with exit code 24.*not of the hand-in"):
        report.write_outputs(out, broken)
    assert json.loads((out / "result.json").read_text()) == broken
    assert not (out / "feedback.md").exists()
    (out / "result.json").unlink()  # damaged on purpose: conftest's check of written grades is for real ones
