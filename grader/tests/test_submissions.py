"""The suite of buggy and cheating vector_add submissions in submissions/vector_add/, each
with an expect.toml saying how it must be graded (and why)."""
from __future__ import annotations

import os
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from cudalab import build, grade, labs
from cudalab.config import Config
from cudalab.errors import CompileError
from conftest import REPO_ROOT

SUITE = Path(__file__).parent / "submissions" / "vector_add"
SUBMISSIONS = sorted(p.name for p in SUITE.iterdir() if (p / "expect.toml").is_file())
CORRECTNESS = {"none": lambda passed, total: passed == 0,
               "partial": lambda passed, total: 0 < passed < total,
               "full": lambda passed, total: passed == total,
               "any": lambda passed, total: True}


def expectation(name: str) -> dict:
    return tomllib.loads((SUITE / name / "expect.toml").read_text(encoding="utf-8"))


def repo_config(tmp_path: Path, **overrides) -> Config:
    return Config.load(root=REPO_ROOT, work_dir=tmp_path / "work", **overrides)


@pytest.mark.parametrize("name", SUBMISSIONS)
def test_expectations_are_well_formed(name):
    expect = expectation(name)
    assert (SUITE / name / "vector_add.cu").is_file()
    assert expect["status"] in ("graded", "compile_error")
    assert len(expect["why"]) > 40, "say what the submission demonstrates"
    if expect["status"] == "graded":
        assert expect["correctness"] in CORRECTNESS
        assert expect["performance"] in ("any", "zero")


@pytest.mark.needs_build
def test_each_submission_compiles_except_compile_error(tmp_path):
    config = repo_config(tmp_path)
    spec = labs.load_lab(config, "vector_add")

    def attempt(name: str):
        try:
            build.build_submission(config, spec, SUITE / name, tmp_path / name)
        except CompileError as err:
            return err
        return None

    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        outcomes = dict(zip(SUBMISSIONS, pool.map(attempt, SUBMISSIONS)))
    for name, outcome in outcomes.items():
        if expectation(name)["status"] == "compile_error":
            assert outcome is not None and outcome.exit_code == 22, f"{name} should not compile"
            assert outcome.feedback[0].startswith("vector_add.cu("), outcome.feedback
            assert not any(str(tmp_path) in line for line in outcome.feedback), "paths are shortened"
        else:
            assert outcome is None, f"{name} should compile:\n" + "\n".join(outcome.feedback)


@pytest.mark.gpu
@pytest.mark.needs_build
@pytest.mark.parametrize("name", SUBMISSIONS)
def test_grading_matches_the_expectation(name, tmp_path):
    expect = expectation(name)
    # One timing round keeps the suite short; the cross-check logic is the same for any count.
    config = repo_config(tmp_path, process_timeout_s=float(os.environ.get("CUDALAB_PROCESS_TIMEOUT_S", 60)),
                         timing_rounds=1)
    result = grade.grade(config, "vector_add", SUITE / name)
    why = f"{name}: {expect['why']}\nresult: {result['message']}"
    assert result["status"] == expect["status"], why
    if expect["status"] != "graded":
        return
    passed = sum(c["status"] == "passed" for c in result["cases"])
    assert CORRECTNESS[expect["correctness"]](passed, len(result["cases"])), why
    if expect["performance"] == "zero":
        assert result["score"]["performance"] == 0, why
    if "run_status" in expect:
        assert result["run"]["status"] == expect["run_status"], why
    if expect.get("timing_flagged"):
        assert result["performance"]["status"] == "scored", why
        assert result["performance"]["cross_check"]["flagged"], why
        assert result["performance"]["message"], why
