"""build: staging a hand-in, the CMake command lines, compiler feedback."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from cudalab import build, cli, labs
from cudalab.errors import CompileError, GraderError, SubmissionError

TESTS = Path(__file__).parent


@pytest.fixture
def spec(toy_config):
    return labs.load_lab(toy_config, "toy")


@pytest.fixture
def fake_cmake(tmp_path, monkeypatch):
    """Put a fake `cmake` first on PATH; return a function reading the calls it got."""
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir()
    (bin_dir / "cmake").write_text(f"#!{sys.executable}\nimport runpy\n"
                                   f"runpy.run_path({str(TESTS / 'fake_cmake.py')!r}, run_name='__main__')\n")
    (bin_dir / "cmake").chmod(0o755)
    log = tmp_path / "cmake.log"
    log.write_text("")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_CMAKE_LOG", str(log))
    return lambda: [json.loads(line) for line in log.read_text().splitlines()]


# --- staging ------------------------------------------------------------------------------

def test_only_the_listed_files_are_copied(spec, toy_submission, tmp_path):
    (toy_submission / "CMakeLists.txt").write_text("evil")
    (toy_submission / "ladder").mkdir()
    staged = build.stage_submission(spec, toy_submission, tmp_path / "copy")
    assert sorted(p.name for p in staged.copy_dir.iterdir()) == ["toy.cu"]
    assert staged.ignored == ["CMakeLists.txt", "ladder/"]
    assert (tmp_path / "copy" / "toy.cu").read_text() == "// the student's code\n"


def test_missing_file_names_the_file_and_the_folder(spec, tmp_path):
    folder = tmp_path / "bob"
    folder.mkdir()
    with pytest.raises(SubmissionError) as err:
        build.stage_submission(spec, folder, tmp_path / "copy")
    assert f"The submission folder {folder} has no toy.cu" in str(err.value)
    assert err.value.exit_code == 21


def test_missing_folder(spec, tmp_path):
    with pytest.raises(SubmissionError, match="does not exist"):
        build.stage_submission(spec, tmp_path / "nobody", tmp_path / "copy")


def test_symlinks_are_refused(spec, tmp_path):
    folder = tmp_path / "eve"
    folder.mkdir()
    (tmp_path / "elsewhere.cu").write_text("x")
    (folder / "toy.cu").symlink_to(tmp_path / "elsewhere.cu")
    with pytest.raises(SubmissionError, match="is a symbolic link"):
        build.stage_submission(spec, folder, tmp_path / "copy")


def test_dangling_symlink_is_a_symlink_not_a_missing_file(spec, tmp_path):
    folder = tmp_path / "eve"
    folder.mkdir()
    (folder / "toy.cu").symlink_to(tmp_path / "nowhere")
    with pytest.raises(SubmissionError, match="is a symbolic link"):
        build.stage_submission(spec, folder, tmp_path / "copy")


def test_oversized_file_is_refused(spec, toy_submission, tmp_path):
    (toy_submission / "toy.cu").write_text("x" * 1001)  # the toy lab allows 1000 bytes
    with pytest.raises(SubmissionError, match="larger than the lab's limit of 1000 bytes"):
        build.stage_submission(spec, toy_submission, tmp_path / "copy")


def test_a_folder_in_place_of_the_file_is_refused(spec, tmp_path):
    folder = tmp_path / "eve"
    (folder / "toy.cu").mkdir(parents=True)
    with pytest.raises(SubmissionError, match="not a plain file"):
        build.stage_submission(spec, folder, tmp_path / "copy")


# --- compiler feedback ---------------------------------------------------------------------

NVCC_LOG = """\
[1/3] Building CUDA object CMakeFiles/toy_submission.dir/tmp/x/src/toy.cu.o
FAILED: CMakeFiles/toy_submission.dir/tmp/x/src/toy.cu.o
/usr/local/cuda/bin/nvcc -I/x -O3 -x cu -c /tmp/x/src/toy.cu -o CMakeFiles/toy_submission.dir/toy.cu.o
/tmp/x/src/toy.cu(3): error: identifier "blocks" is undefined
    add<<<blocks, 256>>>(a, b, c, n);
          ^

/work/labs/toy/harness.cu(10): warning: something in the harness
1 error detected in the compilation of "/tmp/x/src/toy.cu".
ninja: build stopped: subcommand failed.
"""


def test_feedback_keeps_the_lines_about_the_students_file():
    assert build.compile_feedback(NVCC_LOG, ("toy.cu",), Path("/tmp/x/src"), 40) == [
        'toy.cu(3): error: identifier "blocks" is undefined',
        "    add<<<blocks, 256>>>(a, b, c, n);",
        "          ^",
        "",
        '1 error detected in the compilation of "toy.cu".',
    ]


def test_feedback_is_capped():
    log = "".join(f"/tmp/x/src/toy.cu({i}): error: e{i}\n" for i in range(100))
    feedback = build.compile_feedback(log, ("toy.cu",), Path("/tmp/x/src"), 40)
    assert len(feedback) == 40 and feedback[0] == "toy.cu(0): error: e0"


def test_link_errors_are_kept_although_they_name_no_source():
    log = ("[3/3] Linking CUDA executable toy_submission\nFAILED: toy_submission\n"
           "/usr/bin/ld: harness.o: in function `main':\n"
           "harness.cu:(.text+0x1): undefined reference to `toy(float const*, float*)'\n"
           "collect2: error: ld returned 1 exit status\n")
    feedback = build.compile_feedback(log, ("toy.cu",), Path("/tmp/x/src"), 40)
    assert feedback == ["harness.cu:(.text+0x1): undefined reference to `toy(float const*, float*)'",
                        "collect2: error: ld returned 1 exit status"]


# --- CMake command lines (fake cmake) -------------------------------------------------------

def test_official_build_configures_then_builds(toy_config, spec, fake_cmake, toy_root):
    (toy_root / "build").rename(toy_root / "prebuilt")  # start from nothing
    build.ensure_official(toy_config, spec)
    assert fake_cmake() == [["--preset", "ci"], ["--build", str(toy_config.build_dir)]]
    build.ensure_official(toy_config, spec)  # configured: just brought up to date
    assert fake_cmake()[-1] == ["--build", str(toy_config.build_dir)]


def test_official_build_uses_a_build_preset_when_there_is_one(toy_config, spec, fake_cmake, toy_root):
    (toy_root / "build").rename(toy_root / "prebuilt")
    (toy_root / "CMakePresets.json").write_text(json.dumps({"buildPresets": [{"name": "ci"}]}))
    build.build_official(toy_config)
    assert fake_cmake()[-1] == ["--build", "--preset", "ci"]


def test_prebuilt_tree_without_a_cache_is_used_as_it_is(toy_config, spec, fake_cmake):
    build.ensure_official(toy_config, spec)
    assert fake_cmake() == []


def test_overridden_build_dir_is_configured_there(toy_config, spec, fake_cmake, tmp_path):
    import dataclasses
    config = dataclasses.replace(toy_config, build_dir=tmp_path / "elsewhere")
    build.ensure_official(config, spec)
    assert fake_cmake()[0] == ["--preset", "ci", "-B", str(tmp_path / "elsewhere")]


def test_submission_build_command_line(toy_config, spec, fake_cmake, toy_submission, tmp_path):
    (toy_config.build_dir / "cudalab-exports.cmake").write_text("# prebuilt\n")
    built = build.build_submission(toy_config, spec, toy_submission, tmp_path / "work")
    configure, compile_ = fake_cmake()
    assert configure == ["-S", str(toy_config.root / "cmake" / "submission"), "-B",
                         str(tmp_path / "work" / "build"), "-G", "Ninja",
                         f"-DCUDALAB_OFFICIAL_BUILD={toy_config.build_dir}", "-DCUDALAB_LAB=toy",
                         f"-DCUDALAB_SUBMISSION_DIR={tmp_path / 'work' / 'src'}"]
    assert compile_ == ["--build", str(tmp_path / "work" / "build")]
    assert built.binary == tmp_path / "work" / "build" / "toy_submission"


def test_submission_build_needs_the_exports_file(toy_config, spec, toy_submission, tmp_path):
    with pytest.raises(GraderError, match="has no cudalab-exports.cmake"):
        build.build_submission(toy_config, spec, toy_submission, tmp_path / "work")


def test_compile_error_gives_feedback_and_exit_22(toy_config, spec, fake_cmake, toy_submission,
                                                  tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_CMAKE_MODE", "compile_error")
    (toy_config.build_dir / "cudalab-exports.cmake").write_text("# prebuilt\n")
    with pytest.raises(CompileError) as err:
        build.build_submission(toy_config, spec, toy_submission, tmp_path / "work")
    assert err.value.exit_code == 22
    assert err.value.feedback[0] == 'toy.cu(3): error: identifier "blocks" is undefined'


def test_grade_reports_a_compile_error(toy_config, fake_cmake, toy_submission, monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("FAKE_CMAKE_MODE", "compile_error")
    monkeypatch.setenv("CUDALAB_ROOT", str(toy_config.root))
    monkeypatch.setenv("CUDALAB_PRESET", "ci")
    (toy_config.build_dir / "cudalab-exports.cmake").write_text("# prebuilt\n")
    out = tmp_path / "out"
    assert cli.main(["grade", "toy", str(toy_submission), "--out", str(out)]) == 22
    result = json.loads((out / "result.json").read_text())
    assert result["status"] == "compile_error" and result["score"]["total"] == 0
    assert result["build"]["feedback"][0].startswith("toy.cu(3): error")
    feedback = (out / "feedback.md").read_text()
    assert 'toy.cu(3): error: identifier "blocks" is undefined' in feedback
    assert "did not compile" in capsys.readouterr().out


def test_build_verb_json(toy_config, fake_cmake, toy_submission, monkeypatch, capsys):
    monkeypatch.setenv("CUDALAB_ROOT", str(toy_config.root))
    monkeypatch.setenv("CUDALAB_PRESET", "ci")
    monkeypatch.setenv("CUDALAB_WORK_DIR", str(toy_config.work_dir))
    (toy_config.build_dir / "cudalab-exports.cmake").write_text("# prebuilt\n")
    assert cli.main(["build", "toy", str(toy_submission), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["status"] == "built" and report["binary"].endswith("toy/alice/build/toy_submission")


def test_build_verb_reports_errors_as_json_too(toy_config, monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("CUDALAB_ROOT", str(toy_config.root))
    monkeypatch.setenv("CUDALAB_PRESET", "ci")
    assert cli.main(["build", "toy", str(tmp_path / "nobody"), "--json"]) == 21
    body = json.loads(capsys.readouterr().out)
    assert body["status"] == "submission_error" and "does not exist" in body["message"]
    assert cli.main(["build", "nolab", "--json"]) == 20
