"""`cudalab run`'s options for picture labs (sobel): --block WxH, --save-images DIR, the
difference image of a failing case kept in the feedback folder, and the throughput columns
of --bench; and the difference images a grade's feedback links. Every program a fake in
the sandbox (picture_lab.py)."""
from __future__ import annotations

import argparse
import json
import sys

import pytest

from cudalab.building import build
from cudalab import cli
from cudalab.grading import run as run_module
from cudalab.isolation import runner as runner_module
from cudalab.commands import run as run_command
from cudalab.record import GradeResult
from conftest import seal, write_fake
from picture_lab import make_picture_repo, write_picture_fake

pytest.importorskip("PIL.Image", reason="Pillow is not installed: pip install pillow (the grader depends on it)")


@pytest.fixture
def pic(tmp_path, monkeypatch):
    """The picture lab's repository, the CLI pointed at it; returns its work folder and bin folder."""
    root = make_picture_repo(tmp_path / "repo", items_per_s={"default": 1.5e9, "32x8": 3.0e9})
    for name, value in (("CUDALAB_ROOT", root), ("CUDALAB_PRESET", "ci"), ("CUDALAB_WORK_DIR", tmp_path / "work")):
        monkeypatch.setenv(name, str(value))
    monkeypatch.delenv("CUDALAB_BUILD_DIR", raising=False)
    return argparse.Namespace(root=root, work=tmp_path / "work", bin=root / "build" / "ci" / "bin", tmp=tmp_path)


@pytest.fixture
def failing_starter(pic):
    write_picture_fake(pic.bin / "pic_starter", wrong_cases=["wide"])
    seal(pic.root)
    return pic


@pytest.fixture
def checks(monkeypatch):
    """Every Runner.check call, as (cases, bench_case, whether images were asked for)."""
    calls = []
    plain = runner_module.Runner.check

    def spy(self, dump, seed, **kwargs):
        calls.append((tuple(kwargs.get("cases") or ()), kwargs.get("bench_case"), kwargs.get("images") is not None))
        return plain(self, dump, seed, **kwargs)
    monkeypatch.setattr(runner_module.Runner, "check", spy)
    return calls


def no_traceback(err: str) -> None:
    assert "Traceback" not in err


# --- --block -----------------------------------------------------------------------------

@pytest.mark.parametrize("text, shape", [("16x16", "16x16"), ("32x8", "32x8"), ("1024x1", "1024x1"),
                                         ("1x32", "1x32"), (" 64X4 ", "64x4"), ("32x32", "32x32")])
def test_block_shapes_that_are_whole_warps_are_taken(text, shape):
    assert run_module.block_argument(text) == shape


@pytest.mark.parametrize("text, said", [
    ("10x10", "is 100 threads, not a multiple of 32"),
    ("64x32", "is 2048 threads: a block has at most 1024"),
    ("0x32", "at least 1 thread wide and 1 high"),
    ("32", "is not a block shape: give WxH"),
    ("32x8x1", "is not a block shape"),
    ("-32x8", "is not a block shape"),
    ("axb", "is not a block shape"),
    ("", "is not a block shape"),
])
def test_block_shapes_are_checked_with_a_sentence(text, said):
    with pytest.raises(argparse.ArgumentTypeError, match=None) as caught:
        run_module.block_argument(text)
    assert said in str(caught.value) and "e.g. 16x16" in str(caught.value)


def test_block_reaches_the_lab_binary(pic, capsys):
    assert cli.main(["run", "pic", "--target", "solution", "--block", "32x8", "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["block"] == "32x8" and body["run"]["block"] == "32x8"
    assert all(v["status"] == "passed" for v in body["verdicts"].values())


def test_a_bad_block_is_a_usage_error_before_anything_runs(pic, capsys):
    assert cli.main(["run", "pic", "--target", "solution", "--block", "10x10"]) == 2
    err = capsys.readouterr().err
    assert "argument --block: '10x10' is 100 threads, not a multiple of 32" in err
    no_traceback(err)


def test_block_is_only_for_labs_whose_functions_take_one(toy_env, capsys):
    assert cli.main(["run", "toy", "--target", "solution", "--block", "32x8"]) == 2
    err = capsys.readouterr().err
    assert "--block 32x8: the toy lab's functions take no block shape" in err and "takes_block = true" in err


def test_takes_block_is_read_from_lab_toml(pic, toy_env):
    from cudalab.lab import labspec
    assert labspec.load(pic.root / "labs" / "pic" / "lab.toml").takes_block
    assert not labspec.load(toy_env.root / "labs" / "toy" / "lab.toml").takes_block


# --- --save-images -----------------------------------------------------------------------

def test_save_images_writes_every_cases_pictures(pic, capsys, checks):
    out = pic.tmp / "pictures"
    assert cli.main(["run", "pic", "--target", "solution", "--save-images", str(out)]) == 0
    for case in ("small", "wide"):
        assert sorted(p.name for p in (out / case).iterdir()) == ["expected_out.png", "in.png", "out.png"]
    stdout = capsys.readouterr().out
    assert f"Images of 2 cases are in {out}/<case>/" in stdout and "diff_" not in stdout
    assert checks == [((), None, True)]  # one check, which drew the pictures


def test_save_images_of_a_failing_case_has_its_difference(failing_starter, capsys):
    out = failing_starter.tmp / "pictures"
    assert cli.main(["run", "pic", "--target", "starter", "--save-images", str(out), "--json"]) == 1
    body = json.loads(capsys.readouterr().out)
    assert body["images"]["cases"]["wide"]["mismatches"] == {"out": 14}  # 70 / 5 edge pixels of the first row
    assert body["images"]["cases"]["small"]["mismatches"] == {"out": 0}
    assert (out / "wide" / "diff_out.png").is_file() and not (out / "small" / "diff_out.png").exists()
    wide = body["verdicts"]["wide"]
    assert wide["difference_images"] == {"out": str(out / "wide" / "diff_out.png")}
    assert wide["message"].endswith(f"; difference image: {out / 'wide' / 'diff_out.png'}")
    assert "red" in body["images"]["legend"]


def test_save_images_shows_the_difference_in_the_failing_cases_message(failing_starter, capsys):
    out = failing_starter.tmp / "pictures"
    assert cli.main(["run", "pic", "--target", "starter", "--save-images", str(out)]) == 1
    stdout = capsys.readouterr().out
    assert f"difference image: {out / 'wide' / 'diff_out.png'}" in stdout
    assert "diff_<output>.png for wide" in stdout and "Difference images: black: both background" in stdout


def test_save_images_of_a_bench_run_draws_the_kept_samples(pic, capsys):
    out = pic.tmp / "pictures"
    assert cli.main(["run", "pic", "--target", "solution", "--bench", "--save-images", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["big", "bigger"]


def test_save_images_is_only_for_labs_with_pictures(toy_env, capsys, tmp_path):
    assert cli.main(["run", "toy", "--target", "solution", "--save-images", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert "--save-images: the toy lab has no images" in err
    no_traceback(err)
    assert not (tmp_path / "x").exists()


def test_save_images_into_a_file_is_a_usage_error(pic, capsys):
    (pic.tmp / "a-file").write_text("x")
    assert cli.main(["run", "pic", "--target", "solution", "--save-images", str(pic.tmp / "a-file")]) == 2
    assert "that is a file; give a folder" in capsys.readouterr().err


@pytest.fixture
def no_pillow(monkeypatch):
    for name in [m for m in sys.modules if m == "PIL" or m.startswith("PIL.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "PIL", None)


def test_save_images_without_pillow_says_pip_install_pillow_before_running(pic, capsys, no_pillow, checks):
    assert cli.main(["run", "pic", "--target", "solution", "--save-images", str(pic.tmp / "p")]) == 24
    err = capsys.readouterr().err
    assert "error: Writing PNG images needs Pillow" in err and "pip install pillow" in err
    no_traceback(err)
    assert checks == []  # nothing ran


# --- the difference image of a failing case, without --save-images ------------------------

def test_a_failing_case_gets_a_difference_image_in_the_feedback_folder(failing_starter, capsys, checks):
    assert cli.main(["run", "pic", "--target", "starter", "--json"]) == 1
    body = json.loads(capsys.readouterr().out)
    feedback = failing_starter.work / "feedback" / "pic" / "starter"
    diff = feedback / "wide" / "diff_out.png"
    assert diff.is_file() and sorted(p.name for p in feedback.iterdir()) == ["wide"]
    assert body["verdicts"]["wide"]["message"].endswith(f"difference image: {diff}")
    assert "difference_images" not in body["verdicts"]["small"]
    # the run's check, then the failing case alone again, drawn
    assert checks == [((), None, False), (("wide",), None, True)]


def test_a_run_that_passes_draws_nothing_and_clears_old_differences(failing_starter, capsys, checks):
    assert cli.main(["run", "pic", "--target", "starter"]) == 1
    feedback = failing_starter.work / "feedback" / "pic" / "starter"
    assert (feedback / "wide" / "diff_out.png").is_file()
    assert f"difference image: {feedback / 'wide' / 'diff_out.png'}" in capsys.readouterr().out
    write_picture_fake(failing_starter.bin / "pic_starter")
    seal(failing_starter.root)
    checks.clear()
    assert cli.main(["run", "pic", "--target", "starter"]) == 0
    assert not feedback.exists() and checks == [((), None, False)]
    assert "difference image" not in capsys.readouterr().out


def test_a_students_difference_image_lies_beside_their_build(pic, monkeypatch, capsys):
    from cudalab.config import Config
    binary = write_picture_fake(pic.tmp / "built" / "pic_submission", wrong_cases=["small"])
    sdk = pic.tmp / "sdk"
    sdk.mkdir()
    (sdk / "build.json").write_text(json.dumps({"compile": "true", "object": "o", "link": "true",
                                                "binary": "pic_submission"}))
    monkeypatch.setattr(build, "_sdk", lambda config, spec: sdk)
    monkeypatch.setattr(build, "build_submission", lambda config, spec, folder, work: build.SubmissionBuild(
        binary, build.stage_submission(spec, folder, work / "src"), ""))
    student = pic.tmp / "alice"
    student.mkdir()
    (student / "pic.cu").write_text("// the student's code\n")
    assert cli.main(["run", "pic", str(student)]) == 1
    diff = build.submission_work_dir(Config.load(), "pic", student) / "feedback" / "small" / "diff_out.png"
    assert diff.is_file()
    assert f"difference image: {diff}" in capsys.readouterr().out


def test_without_pillow_a_failing_run_still_says_its_verdicts(failing_starter, capsys, no_pillow):
    assert cli.main(["run", "pic", "--target", "starter"]) == 1
    captured = capsys.readouterr()
    assert "wide" in captured.out and "failed" in captured.out and "difference image" not in captured.out
    assert "No difference images: writing PNG needs Pillow" in captured.err and "pip install pillow" in captured.err
    no_traceback(captured.err)


def test_a_checker_that_cannot_draw_is_a_warning_not_the_end(failing_starter, capsys, monkeypatch):
    from cudalab.errors import GraderError
    plain = runner_module.Runner.check

    def check(self, dump, seed, **kwargs):
        if kwargs.get("images") is not None:
            raise GraderError("The checker could not judge the outputs (exited with code 2: unknown option --images).")
        return plain(self, dump, seed, **kwargs)
    monkeypatch.setattr(runner_module.Runner, "check", check)
    assert cli.main(["run", "pic", "--target", "starter"]) == 1
    assert "warning: No difference images: The checker could not judge" in capsys.readouterr().err


def test_a_lab_without_pictures_never_asks_for_them(toy_env, checks, capsys):
    write_fake(toy_env.bin_dir / "toy_starter", wrong_cases=["c_7"])
    seal(toy_env.root)
    assert cli.main(["run", "toy", "--target", "starter"]) == 1
    assert checks == [((), None, False)]
    assert not (toy_env.work_dir / "feedback").exists()


# --- throughput in --bench -----------------------------------------------------------------

BENCH_RUN_JSON = {  # what the sobel harness writes for `--bench` (its rows carry a throughput)
    "schema": "cudalab.run/1", "lab": "sobel", "mode": "bench", "status": "unchecked", "block": "32x8",
    "bench": [
        {"name": "camera_big", "status": "unchecked", "median_ms": 0.0815, "spread": 0.012, "gbps": 411.6,
         "fraction_of_baseline": 0.14, "items_name": "pixels", "items_per_s": 205.8e9,
         "library": {"name": "nppiFilterSobelHoriz", "median_ms": 0.1023, "gbps": 328.0},
         "library_items_per_s": 164.0e9, "fraction_of_library": 1.255, "checked_sample_seed": 7},
        {"name": "huge", "params": {"width": 65536, "height": 65536}, "status": "skipped",
         "reason": "needs about 8.0 GiB of GPU memory"},
    ]}


def test_bench_rows_show_the_throughput_and_the_library_ratio():
    entries = BENCH_RUN_JSON["bench"]
    assert run_module.items_name(entries) == "pixels"
    verdicts = {"camera_big": {"status": "passed"}}
    assert run_command._bench_row(entries[0], verdicts, throughput=True) == (
        "camera_big", "passed", "0.0815", "411.6", "14%", "1.2%", "205.80", "1.25x")
    assert run_command._bench_row(entries[1], verdicts, throughput=True) == ("huge", "skipped") + ("-",) * 6
    assert run_command._bench_row(entries[0], verdicts) == ("camera_big", "passed", "0.0815", "411.6", "14%", "1.2%")
    assert run_module.items_name([{"name": "x", "median_ms": 1.0}]) is None
    assert run_command.versus_library({"fraction_of_library": 0.5}) == "0.50x"
    assert run_command.versus_library({"items_per_s": 1e9}) == "-"


def test_run_bench_prints_gpixels_columns(pic, capsys):
    assert cli.main(["run", "pic", "--target", "solution", "--bench", "--block", "32x8"]) == 0
    out = capsys.readouterr().out
    assert "Benchmark (block 32x8)" in out and "Gpixels/s" in out and "vs library" in out
    big = next(line for line in out.splitlines() if line.startswith("big "))
    assert "3.00" in big and "1.50x" in big  # 3.0e9 pixels/s, against the library's 2.0e9


def test_a_grade_links_the_difference_image_of_a_failing_picture_case(failing_starter, tmp_path):
    """A grade of a picture lab draws the difference image of each failing case and the
    feedback links it, relative to feedback.md, beside which finish() copies it."""
    from cudalab.grading import grade
    from cudalab.lab import labs
    from cudalab.outputs import report
    from cudalab.config import Config

    config = Config.load()
    spec = labs.load_lab(config, "pic")
    scratch = tmp_path / "grade-scratch"
    scratch.mkdir()
    session = grade.GradingSession(config, spec, failing_starter.bin / "pic_starter", 3, scratch)
    cases, _ = session.run_correctness()
    by_name = {c["name"]: c for c in cases}
    assert by_name["wide"]["status"] == "failed"
    assert by_name["wide"]["difference_images"] == {"out": "images/wide/diff_out.png"}
    assert "difference_images" not in by_name["small"]  # it passed: nothing to draw
    out = tmp_path / "out"
    (out / "images" / "stale").mkdir(parents=True)  # an earlier grade's pictures go
    grade._copy_attachments(scratch, out)
    assert (out / "images" / "wide" / "diff_out.png").is_file() and not (out / "images" / "stale").exists()
    result = grade.new_result("pic", failing_starter.tmp, 3, config)
    result.update(status="graded", exit_code=0, cases=[dict(c, points=0.0, max_points=30.0) for c in cases],
                  score=grade.compute_score(spec.scoring, [c["status"] == "passed" for c in cases], None, 0.0).to_json(),
                  performance={"status": "skipped", "message": "fix the failing cases first", "points": 0.0,
                               "max_points": 40.0, "timing_case": "big"})
    assert "([difference image of out](images/wide/diff_out.png))" in report.render_feedback(GradeResult.from_json(result))
