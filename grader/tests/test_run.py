"""`cudalab run`: target resolution, the checker's verdicts, the binary's exit status passed
through, tables; every program in the sandbox (fake binaries, see fake_program.py)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from cudalab import build, cli
from conftest import seal, write_fake


@pytest.fixture
def env(toy_config, monkeypatch):
    monkeypatch.setenv("CUDALAB_ROOT", str(toy_config.root))
    monkeypatch.setenv("CUDALAB_PRESET", "ci")
    monkeypatch.setenv("CUDALAB_WORK_DIR", str(toy_config.work_dir))
    return toy_config


def test_run_solution_shows_the_checkers_verdicts(env, capsys):
    assert cli.main(["run", "toy", "solution"]) == 0
    out = capsys.readouterr().out
    assert "judged by the lab's checker" in out and "c_300" in out and "passed" in out


def test_run_bench_checks_the_kept_sample(env, capsys):
    assert cli.main(["run", "toy", "solution", "--bench", "--case", "b_1000", "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["status"] == "passed" and body["run"]["mode"] == "bench"
    assert [b["name"] for b in body["run"]["bench"]] == ["b_1000"]
    assert body["verdicts"]["b_1000"]["status"] == "passed"  # under the kept sample's own seed


def test_failing_starter_exits_1_with_the_checkers_words(env, capsys):
    write_fake(env.bin_dir / "toy_starter", wrong_cases=["c_1", "c_7", "c_300"])
    seal(env.root)
    assert cli.main(["run", "toy", "starter", "--seed", "3"]) == 1
    assert "c[0] is wrong: expected 1.25" in capsys.readouterr().out


def test_ladder_stems(env):
    write_fake(env.bin_dir / "toy_ladder_simple", cuda_error=True)
    seal(env.root)
    assert cli.main(["run", "toy", "simple"]) == 3
    assert cli.main(["run", "toy", "toy"]) == 0  # the rung built from the solution file


def test_no_device_is_23(env):
    write_fake(env.bin_dir / "toy_solution", no_device=True)
    seal(env.root)
    assert cli.main(["run", "toy", "solution"]) == 23


def test_a_tampered_official_binary_is_not_run(env, capsys):
    (env.bin_dir / "toy_solution").write_text("#!/bin/sh\nexit 0\n")
    assert cli.main(["run", "toy", "solution"]) == 24
    assert "not the one the build made" in capsys.readouterr().err


def test_without_a_sandbox_run_still_works_and_says_what_is_missing(env, monkeypatch, capsys):
    from cudalab import sandbox
    monkeypatch.setenv("CUDALAB_BWRAP", "/no/such/bwrap")
    monkeypatch.setattr(sandbox, "_detected", {})
    assert cli.main(["run", "toy", "solution"]) == 0
    err = capsys.readouterr().err
    assert "Running without the sandbox" in err and "bubblewrap" in err


def test_unknown_target_lists_the_valid_ones(env, capsys):
    assert cli.main(["run", "toy", "fastest"]) == 2
    assert "one of: simple, solution, starter, toy" in capsys.readouterr().err


def test_unknown_lab_is_20(env, capsys):
    assert cli.main(["run", "nolab", "solution"]) == 20
    assert "Labs in this repository: toy" in capsys.readouterr().err


def test_usage_errors_are_2(env):
    assert cli.main(["run"]) == 2
    assert cli.main(["frobnicate"]) == 2


def test_a_folder_target_is_built_as_a_submission(env, toy_submission, monkeypatch, tmp_path):
    binary = write_fake(tmp_path / "built" / "toy_submission", wrong_cases=["c_1"])
    seen = []

    def fake_build(config, spec, folder, work):
        seen.append(folder)
        return build.SubmissionBuild(binary, build.stage_submission(spec, folder, work / "src"), "")
    monkeypatch.setattr(build, "build_submission", fake_build)
    assert cli.main(["run", "toy", str(toy_submission)]) == 1
    monkeypatch.chdir(toy_submission.parent)
    (toy_submission.parent / "starter").mkdir()
    (toy_submission.parent / "starter" / "toy.cu").write_text("x")
    assert cli.main(["run", "toy", "./starter"]) == 1
    assert seen == [toy_submission, Path("./starter")]
