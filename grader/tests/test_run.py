"""`cudalab run`: target resolution, the checker's verdicts, the binary's exit status passed
through, tables; every program in the sandbox (fake binaries, see fake_program.py)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from cudalab.building import build
from cudalab import cli
from conftest import seal, write_fake


@pytest.fixture
def env(toy_config, monkeypatch):
    monkeypatch.setenv("CUDALAB_ROOT", str(toy_config.root))
    monkeypatch.setenv("CUDALAB_PRESET", "ci")
    monkeypatch.setenv("CUDALAB_WORK_DIR", str(toy_config.work_dir))
    return toy_config


def test_run_solution_shows_the_checkers_verdicts(env, capsys):
    assert cli.main(["run", "toy", "--target", "solution"]) == 0
    out = capsys.readouterr().out
    assert "judged by the lab's checker" in out and "c_300" in out and "passed" in out


def test_run_bench_checks_the_kept_sample(env, capsys):
    assert cli.main(["run", "toy", "--target", "solution", "--bench", "--case", "b_1000", "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["status"] == "passed" and body["run"]["mode"] == "bench"
    assert [b["name"] for b in body["run"]["bench"]] == ["b_1000"]
    assert body["verdicts"]["b_1000"]["status"] == "passed"  # under the kept sample's own seed


def test_failing_starter_exits_1_with_the_checkers_words(env, capsys):
    write_fake(env.bin_dir / "toy_starter", wrong_cases=["c_1", "c_7", "c_300"])
    seal(env.root)
    assert cli.main(["run", "toy", "--target", "starter", "--seed", "3"]) == 1
    assert "c[0] is wrong: expected 1.25" in capsys.readouterr().out


def test_ladder_stems(env):
    write_fake(env.bin_dir / "toy_ladder_simple", cuda_error=True)
    seal(env.root)
    assert cli.main(["run", "toy", "--target", "simple"]) == 3
    assert cli.main(["run", "toy", "--target", "toy"]) == 0  # the rung built from the solution file


def test_no_device_is_23(env):
    write_fake(env.bin_dir / "toy_solution", no_device=True)
    seal(env.root)
    assert cli.main(["run", "toy", "--target", "solution"]) == 23


def test_a_tampered_official_binary_is_not_run(env, capsys):
    (env.bin_dir / "toy_solution").write_text("#!/bin/sh\nexit 0\n")
    assert cli.main(["run", "toy", "--target", "solution"]) == 24
    assert "not the one the build made" in capsys.readouterr().err


def test_without_a_sandbox_run_still_works_and_says_what_is_missing(env, monkeypatch, capsys):
    from cudalab.isolation import sandbox
    monkeypatch.setenv("CUDALAB_BWRAP", "/no/such/bwrap")
    monkeypatch.setattr(sandbox, "_detected", {})
    assert cli.main(["run", "toy", "--target", "solution"]) == 0
    err = capsys.readouterr().err
    assert "Running without the sandbox" in err and "bubblewrap" in err


def test_unknown_target_lists_the_valid_ones(env, capsys):
    assert cli.main(["run", "toy", "--target", "fastest"]) == 2
    assert "not one of the toy lab's own builds: simple, solution, starter, toy" in capsys.readouterr().err


def test_a_word_that_is_no_folder_is_never_taken_for_a_build(env, capsys, monkeypatch, tmp_path):
    """`cudalab run toy solution` with no folder called solution is an error that names
    --target; it never runs the course's solution in its place."""
    monkeypatch.chdir(tmp_path)
    assert cli.main(["run", "toy", "solution"]) == 21
    assert "solution does not exist" in (err := capsys.readouterr().err) and "--target solution" in err
    assert cli.main(["run", "toy", "x", "--target", "solution"]) == 2
    assert "not both" in capsys.readouterr().err


def test_unknown_lab_is_20(env, capsys):
    assert cli.main(["run", "nolab", "solution"]) == 20
    assert "Labs in this repository: toy" in capsys.readouterr().err


def test_usage_errors_are_2(env):
    assert cli.main(["run"]) == 2
    assert cli.main(["frobnicate"]) == 2


def fake_builds(monkeypatch, binary):
    """Submission builds that return `binary`, against a stand-in SDK (the toy has none)."""
    seen = []
    monkeypatch.setattr(build, "_sdk", lambda config, spec: fake_sdk(binary.parent.parent))

    def fake_build(config, spec, folder, work):
        seen.append(folder)
        return build.SubmissionBuild(binary, build.stage_submission(spec, folder, work / "src"), "")
    monkeypatch.setattr(build, "build_submission", fake_build)
    return seen


def test_a_folder_is_always_the_students_whatever_its_name(env, toy_submission, monkeypatch, tmp_path, capsys):
    """A folder called like a built-in target (`cp -r starter/toy .` makes ./toy) is the
    student's, and the output says which source ran."""
    seen = fake_builds(monkeypatch, write_fake(tmp_path / "built" / "toy_submission", wrong_cases=["c_1"]))
    assert cli.main(["run", "toy", str(toy_submission)]) == 1
    for name in ("toy", "solution", "starter"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "toy.cu").write_text("x")
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert cli.main(["run", "toy", "toy"]) == 1
    assert cli.main(["run", "toy", "solution"]) == 1
    assert cli.main(["run", "toy", "./starter"]) == 1
    monkeypatch.chdir(tmp_path / "toy")
    assert cli.main(["run", "toy"]) == 1  # the current folder
    assert seen == [toy_submission, Path("toy"), Path("solution"), Path("./starter"), Path(".")]
    err = capsys.readouterr().err
    assert f"Running your toy.cu from {tmp_path / 'solution'}" in err
    assert "Running the course solution" not in err


def test_an_unchanged_folder_reuses_its_build(env, toy_submission, monkeypatch, tmp_path, capsys):
    built = []
    binary = write_fake(tmp_path / "built" / "toy_submission")

    def fake_build(config, spec, folder, work):
        built.append(folder)
        (work / "build").mkdir(parents=True, exist_ok=True)
        target = work / "build" / "toy_submission"
        target.write_bytes(binary.read_bytes())
        target.chmod(0o755)
        return build.SubmissionBuild(target, build.stage_submission(spec, folder, work / "src"), "")
    monkeypatch.setattr(build, "build_submission", fake_build)
    monkeypatch.setattr(build, "_sdk", lambda config, spec: fake_sdk(tmp_path))
    assert cli.main(["run", "toy", str(toy_submission)]) == 0
    assert cli.main(["run", "toy", str(toy_submission)]) == 0
    assert len(built) == 1 and "(unchanged since its last build)" in capsys.readouterr().err
    (toy_submission / "toy.cu").write_text("// edited\n")
    assert cli.main(["run", "toy", str(toy_submission)]) == 0
    assert len(built) == 2


def fake_sdk(tmp_path: Path) -> Path:
    sdk = tmp_path / "sdk"
    sdk.mkdir(exist_ok=True)
    (sdk / "build.json").write_text(json.dumps({"compile": "true", "object": "o", "link": "true",
                                                "binary": "toy_submission"}))
    return sdk


def test_the_official_tree_is_built_first_with_a_progress_line(env, toy_submission, monkeypatch, capsys):
    """A fresh clone has no official build: `run` builds it, saying so, instead of sending
    the student to `cudalab build`."""
    calls = []
    missing = env.bin_dir / "toy_checker"
    kept = missing.read_bytes()
    missing.unlink()

    def fake_build_official(config, targets=()):
        calls.append((config.build_dir, tuple(targets)))
        missing.write_bytes(kept)
        missing.chmod(0o755)
    monkeypatch.setattr(build, "build_official", fake_build_official)
    assert cli.main(["run", "toy", "--target", "solution"]) == 0
    assert calls == [(env.build_dir, ("toy_solution", "toy_checker", "toy_sdk"))]  # this lab's, nothing else
    assert "Building what the toy lab needs first" in capsys.readouterr().err


def test_a_shared_install_is_used_as_it_is(env, monkeypatch, capsys):
    """An official tree the user cannot write is never rebuilt; one that lacks the lab's
    binaries says whom to ask, and that it is not the student's fault."""
    monkeypatch.setattr(build, "official_tree_is_writable", lambda config: False)
    monkeypatch.setattr(build, "build_official", lambda config, targets=(): pytest.fail("rebuilt a shared tree"))
    (env.build_dir / "CMakeCache.txt").write_text("# configured\n")
    assert cli.main(["run", "toy", "--target", "solution"]) == 0
    (env.bin_dir / "toy_checker").unlink()
    assert cli.main(["run", "toy", "--target", "solution"]) == 24
    err = capsys.readouterr().err
    assert "not yours to build (a shared course install)" in err and "not a problem with your code" in err


def test_a_bench_case_too_large_for_the_gpu_is_shown_skipped_with_its_reason(env, capsys, monkeypatch):
    """On a small GPU the harness skips a bench case that cannot fit; run says why, and a
    run whose every case was skipped is 'cannot run here' (23), not a failure."""
    from cudalab.commands import run as run_module
    skipped = {"name": "b_1000", "params": {"n": 1000}, "status": "skipped",
               "reason": "needs about 3.0 GiB of GPU memory, 1.9 GiB free on a laptop GPU"}
    row = run_module._bench_row(skipped, {})
    assert row == ("b_1000", "skipped", "-", "-", "-", "-")
    monkeypatch.setattr(run_module, "read_untrusted_json",
                        lambda path: {"mode": "bench", "bench": [skipped]} if path.name == "run.json" else None)
    assert cli.main(["run", "toy", "--target", "solution", "--bench"]) == 23
    assert "b_1000 was skipped: needs about 3.0 GiB of GPU memory" in capsys.readouterr().err


def test_a_driver_too_old_is_said_in_the_programs_words():
    from cudalab.commands import run as run_module
    said = run_module.not_run_sentence({"reason": "driver_too_old", "message": "your NVIDIA driver supports CUDA up "
                                        "to 12.2, older than the CUDA 13.0 runtime: update the NVIDIA driver."})
    assert said.startswith("your NVIDIA driver supports CUDA up to 12.2") and "not a failure of your code" in said
    assert "No CUDA device here" in run_module.not_run_sentence(None)


def test_run_with_case_judges_only_the_cases_it_ran(env, capsys):
    """--case runs one case; the checker is asked about that case alone, so the others are
    not shown as missing outputs."""
    assert cli.main(["run", "toy", "--target", "solution", "--case", "c_7", "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert list(body["verdicts"]) == ["c_7"] and body["verdicts"]["c_7"]["status"] == "passed"
