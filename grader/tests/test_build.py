"""build: staging a hand-in, the official build's CMake command lines, compiler feedback,
and real submission builds in the sandbox (symbol check, hostile names, no reference)."""
from __future__ import annotations

import dataclasses
import json
import os
import sys
import tracemalloc
from pathlib import Path

import pytest

from cudalab.building import build
from cudalab import cli
from cudalab.grading import grade
from cudalab.lab import labs
from cudalab.config import MIB
from cudalab.errors import CompileError, ForbiddenError, GraderError, SubmissionError
from test_object_analysis import (DEFINES_READ, GLOBAL_PADDING, HIDDEN_CUB_REDUCE, HIDDEN_CUBLAS_MATMUL, LOCAL_PADDING,
                                  MANY_STRINGS, MANY_SYMBOLS)

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


def test_a_misnamed_file_is_named_as_check_names_it(spec, tmp_path):
    """Proves: `run`, `build` and `grade` of a folder whose file is misnamed say which file
    it was meant to be, in check's words."""
    folder = tmp_path / "bob"
    folder.mkdir()
    (folder / "Toy.cu").write_text("// the student's code\n")
    with pytest.raises(SubmissionError) as err:
        build.stage_submission(spec, folder, tmp_path / "copy")
    assert str(err.value) == (f"The submission folder {folder} has no toy.cu. Toy.cu: did you mean toy.cu? "
                              "The toy lab needs a file called exactly toy.cu; rename it.")


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
    # What the lab needs (its solution, checker and SDK), not every lab and the tests.
    lab_targets = ["--target", "toy_solution", "toy_checker", "toy_sdk"]
    assert fake_cmake() == [["--preset", "ci"], ["--build", str(toy_config.build_dir), *lab_targets]]
    build.ensure_official(toy_config, spec)  # configured: just brought up to date
    assert fake_cmake()[-1] == ["--build", str(toy_config.build_dir), *lab_targets]


def test_official_build_uses_a_build_preset_when_there_is_one(toy_config, spec, fake_cmake, toy_root):
    (toy_root / "build").rename(toy_root / "prebuilt")
    (toy_root / "CMakePresets.json").write_text(json.dumps({"buildPresets": [{"name": "ci"}]}))
    build.build_official(toy_config)
    assert fake_cmake()[-1] == ["--build", "--preset", "ci"]


def test_a_build_says_how_far_it_is_from_ninjas_step_lines():
    said, now = [], [0.0]
    progress = build.BuildProgress("building them", every_s=5.0, clock=lambda: now[0], say=said.append)
    for step, at in ((1, 0.5), (2, 1.0), (40, 6.0), (41, 7.0), (99, 13.0), (120, 13.5)):
        now[0] = at
        progress(f"[{step}/120] Building CUDA object CMakeFiles/x.dir/x.cu.o")
    progress("some compiler warning that is not a step")
    assert said == ["  building them: step 40 of 120", "  building them: step 99 of 120",
                    "  building them: step 120 of 120"]


def test_a_build_with_nothing_to_do_says_nothing_and_one_with_work_says_what_first():
    said = []
    idle = build.BuildProgress("building them", say=said.append, heading=["Building x", "$ cmake --build b"])
    idle("[0/2] Re-checking globbed directories...")  # what ninja says first where CMake globs
    idle("ninja: no work to do.")
    assert said == []  # every command after the first: silent
    busy = build.BuildProgress("building them", say=said.append, heading=["Building x", "$ cmake --build b"])
    busy("[1/2] Building CUDA object a.o")
    busy("[2/2] Linking b")
    assert said == ["Building x", "$ cmake --build b", "  building them: step 2 of 2"]


def test_a_trusted_process_tells_its_output_line_by_line():
    from cudalab.isolation.sandbox import run_process
    lines = []
    result = run_process(["/bin/sh", "-c", "printf '[1/2] a\\n[2/2] b\\nno newline'"], timeout_s=30,
                         output_cap_bytes=1 << 16, on_stdout_line=lines.append)
    assert result.exit_code == 0 and lines == ["[1/2] a", "[2/2] b"]
    assert result.stdout.endswith("no newline")


def test_prebuilt_tree_without_a_cache_is_used_as_it_is(toy_config, spec, fake_cmake):
    build.ensure_official(toy_config, spec)
    assert fake_cmake() == []


def test_overridden_build_dir_is_configured_there(toy_config, spec, fake_cmake, tmp_path):
    import dataclasses
    config = dataclasses.replace(toy_config, build_dir=tmp_path / "elsewhere")
    build.ensure_official(config, spec)
    assert fake_cmake()[0] == ["--preset", "ci", "-B", str(tmp_path / "elsewhere")]


def test_submission_build_needs_the_sdk(toy_config, spec, toy_submission, tmp_path):
    with pytest.raises(GraderError, match="has no SDK for toy"):
        build.build_submission(toy_config, spec, toy_submission, tmp_path / "work")


# --- a compile stopped by its limits (fake compilers in the real sandbox) -----------------------

def sdk_compiling_with(tmp_path: Path, compile_command: str) -> Path:
    """An SDK whose recorded compile command is `compile_command` (a fake compiler)."""
    sdk = tmp_path / "limited-sdk"
    sdk.mkdir()
    sdk.chmod(0o755)
    (sdk / "build.json").write_text(json.dumps({"compile": compile_command, "object": "CMakeFiles/toy.dir/toy.cu.o",
                                                "link": "true CMakeFiles/toy.dir/toy.cu.o", "binary": "toy_submission"}))
    return sdk


def grade_with_compiler(config, submission: Path, monkeypatch, tmp_path: Path, compile_command: str) -> dict:
    monkeypatch.setattr(build, "_sdk", lambda config, spec: sdk_compiling_with(tmp_path, compile_command))
    return grade.finish(grade.begin(config, "toy", submission, allow_unisolated=True))


def test_a_compile_past_its_time_limit_is_the_submissions_zero(toy_config, toy_submission, tmp_path, monkeypatch):
    """Proves: a compile that runs past its time limit is the submission's failure (status
    compile_error, a zero, a sentence naming the limit), not a grader error."""
    config = dataclasses.replace(toy_config, build_timeout_s=1.0)
    result = grade_with_compiler(config, toy_submission, monkeypatch, tmp_path, "sleep 30")
    assert result["status"] == "compile_error", result["message"]
    assert result["score"]["total"] == 0 and result["score"]["total_max"] == 100
    assert result["message"].startswith("toy.cu did not compile: the compile ran past its 1 s limit and was "
                                        "stopped.")
    assert result["build"]["status"] == "compile_error"


ALLOCATING_COMPILER = ("/usr/bin/python3 -c 'import sys\ntry:\n    block = bytearray(1 << 30)\nexcept MemoryError:\n"
                       "    sys.exit(\"cc1plus: out of memory allocating 1073741824 bytes\")'")


def test_a_compile_that_runs_out_of_memory_is_the_submissions_zero(toy_config, toy_submission, tmp_path,
                                                                    monkeypatch):
    """Proves: a compiler that grows past the build's memory limit is stopped (by RLIMIT_DATA
    even where no cgroup exists) and that is the submission's failure, told in a sentence
    that names the limit, not a grader error."""
    config = dataclasses.replace(toy_config, build_memory_bytes=256 * MIB)
    result = grade_with_compiler(config, toy_submission, monkeypatch, tmp_path, ALLOCATING_COMPILER)
    assert result["status"] == "compile_error", result["message"]
    assert result["score"]["total"] == 0
    assert result["message"].startswith("toy.cu did not compile: the compile ran out of memory (its limit is "
                                        "256 MiB) and was stopped.")


@pytest.mark.skipif(not os.path.exists("/usr/local/cuda/bin/nvcc"), reason="needs nvcc at /usr/local/cuda/bin")
def test_a_compile_of_dev_zero_is_stopped_and_is_the_submissions_zero(toy_config, tmp_path, monkeypatch):
    """Proves: the real nvcc on `#include "/dev/zero"` is stopped at the build's memory limit
    (a second or two at 512 MiB) and the grade is the submission's zero, with the sentence."""
    folder = tmp_path / "zero"
    folder.mkdir()
    (folder / "toy.cu").write_text('#include "/dev/zero"\n')
    config = dataclasses.replace(toy_config, build_memory_bytes=512 * MIB)
    result = grade_with_compiler(config, folder, monkeypatch, tmp_path,
                                 f"/usr/local/cuda/bin/nvcc -c {build._SRC}/toy.cu -o CMakeFiles/toy.dir/toy.cu.o")
    assert result["status"] == "compile_error", result["message"]
    assert "the compile ran out of memory (its limit is 512 MiB)" in result["message"]


def test_safe_names_keep_plain_names_and_tame_the_rest(tmp_path):
    assert build.safe_name(tmp_path / "alice") == "alice"
    assert build.safe_name(tmp_path / "bob.v2_final-1") == "bob.v2_final-1"
    odd = build.safe_name(tmp_path / "x$(touch PWNED)")
    assert odd.startswith("x_touch_PWNED-") and len(odd) == len("x_touch_PWNED-") + 8
    assert build.safe_name(tmp_path / "x$(touch PWNED)") == odd  # stable
    assert build.safe_name(tmp_path / "x$(touch PWNED) ") != odd  # distinct names stay distinct
    assert build.safe_name(tmp_path / "ünïcödé").endswith(tuple("0123456789abcdef"))
    assert build.safe_name(tmp_path / "...").startswith("submission-")


# --- real builds in the sandbox (need the official tree: nvcc, no GPU) ------------------------

REPO = TESTS.parents[1]


def real_config(tmp_path):
    from cudalab.config import Config
    return Config.load(root=REPO, work_dir=tmp_path / "work")


def hand_in(tmp_path, name: str, source: str) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "vector_add.cu").write_text(source)
    return folder


@pytest.mark.needs_build
def test_a_submission_builds_in_the_sandbox_against_the_sdk(tmp_path):
    config = real_config(tmp_path)
    spec = labs.load_lab(config, "vector_add")
    folder = hand_in(tmp_path, "alice", (REPO / "starter" / "vector_add" / "vector_add.cu").read_text())
    built = build.build_submission(config, spec, folder, tmp_path / "work" / "alice")
    assert built.binary.is_file() and built.binary.name == "vector_add_submission"
    # The compiler only ever sees the sandbox's fixed paths, never the hand-in's own.
    commands = json.loads((config.build_dir / "sdk" / "vector_add" / "build.json").read_text())
    assert "-c /cudalab/src/vector_add.cu" in commands["compile"]
    assert str(config.root) not in commands["compile"] + commands["link"]
    assert str(folder) not in built.log


@pytest.mark.needs_build
def test_a_compile_error_gives_the_compilers_lines_and_exit_22(tmp_path):
    config = real_config(tmp_path)
    spec = labs.load_lab(config, "vector_add")
    folder = hand_in(tmp_path, "bob", '#include "vector_add.hpp"\nvoid vector_add(const float* a, const float* b, '
                     'float* c, std::size_t n) { undefined_name(); }\n')
    with pytest.raises(CompileError) as err:
        build.build_submission(config, spec, folder, tmp_path / "work" / "bob")
    assert err.value.exit_code == 22
    assert err.value.feedback[0].startswith("vector_add.cu(2): error: identifier \"undefined_name\" is undefined")


@pytest.mark.needs_build
def test_solutions_are_out_of_reach_of_an_include(tmp_path):
    config = real_config(tmp_path)
    spec = labs.load_lab(config, "vector_add")
    solution = REPO / "solutions" / "vector_add" / "vector_add.cu"
    folder = hand_in(tmp_path, "eve", f'#include "{solution}"\n')
    with pytest.raises(CompileError) as err:
        build.build_submission(config, spec, folder, tmp_path / "work" / "eve")
    assert any("No such file or directory" in line for line in err.value.feedback)


@pytest.mark.needs_build
def test_the_symbol_check_refuses_main_with_a_sentence(tmp_path):
    config = real_config(tmp_path)
    spec = labs.load_lab(config, "vector_add")
    source = (REPO / "solutions" / "vector_add" / "vector_add.cu").read_text() + "\nint main() { return 0; }\n"
    folder = hand_in(tmp_path, "mallory", source)
    with pytest.raises(CompileError) as err:
        build.build_submission(config, spec, folder, tmp_path / "work" / "mallory")
    assert err.value.feedback == ["vector_add.cu defines main(): remove it; the harness provides main and "
                                  "calls your vector_add()."]
    assert not (tmp_path / "work" / "mallory" / "build" / "vector_add_submission").exists()  # never linked


@pytest.mark.needs_build
@pytest.mark.parametrize("name", ["x$(touch PWNED)", "with space", "ünïcödé", "semi;colon'\"quote"])
def test_hostile_folder_names_are_only_data(tmp_path, name, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = real_config(tmp_path)
    spec = labs.load_lab(config, "vector_add")
    folder = hand_in(tmp_path, name, (REPO / "starter" / "vector_add" / "vector_add.cu").read_text())
    built = build.build_submission(config, spec, folder, build.submission_work_dir(config, spec.name, folder))
    assert built.binary.is_file()
    assert name not in str(built.binary)  # staged under a name the grader chose
    assert not list(tmp_path.rglob("PWNED")) and not (REPO / "PWNED").exists()


@pytest.mark.needs_build
def test_no_lab_binary_contains_the_reference(tmp_path):
    """The CPU reference lives only in the checker: not in the SDK a submission links, nor in
    any binary built from it (official or a student's)."""
    config = real_config(tmp_path)
    for lab in labs.available_labs(REPO):
        def symbols_of(path: Path) -> str:
            import subprocess
            return subprocess.run(["nm", "-C", str(path)], capture_output=True, text=True, check=True).stdout
        reference = f"lab_{lab}::reference("
        assert reference in symbols_of(labs.official_binary(config, lab, "checker")), "the test can see it"
        for implementation in ("solution", "starter"):
            assert reference not in symbols_of(labs.official_binary(config, lab, implementation))
        for obj in (config.build_dir / "sdk" / lab / "objects").iterdir():
            assert reference not in symbols_of(obj), obj


@pytest.mark.needs_build
def test_grade_reports_a_compile_error(tmp_path, capsys):
    folder = hand_in(tmp_path, "carol", "this is not C++\n")
    out = tmp_path / "out"
    code = cli.main(["grade", "vector_add", str(folder), "--out", str(out)])
    assert code == 22
    result = json.loads((out / "result.json").read_text())
    assert result["status"] == "compile_error" and result["score"]["total"] == 0
    assert result["build"]["feedback"][0].startswith("vector_add.cu(1): error")
    assert "vector_add.cu(1): error" in (out / "feedback.md").read_text()
    assert "did not compile" in capsys.readouterr().out


def test_build_verb_reports_errors_as_json_too(toy_config, monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("CUDALAB_ROOT", str(toy_config.root))
    monkeypatch.setenv("CUDALAB_PRESET", "ci")
    assert cli.main(["build", "toy", str(tmp_path / "nobody"), "--json"]) == 21
    body = json.loads(capsys.readouterr().out)
    assert body["status"] == "submission_error" and "does not exist" in body["message"]
    assert cli.main(["build", "nolab", "--json"]) == 20


# --- libraries by allowlist -----------------------------------------------------------------

def lab_hand_in(tmp_path, lab: str, name: str, source: str) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / f"{lab}.cu").write_text(source)
    return folder


def build_refusal(tmp_path, lab: str, name: str, source: str) -> CompileError:
    config = real_config(tmp_path)
    folder = lab_hand_in(tmp_path, lab, name, source)
    with pytest.raises(CompileError) as err:
        build.build_submission(config, labs.load_lab(config, lab), folder, tmp_path / "work" / name)
    return err.value


@pytest.mark.needs_build
@pytest.mark.parametrize("lab", ["vector_add", "reduction", "scan", "transpose", "matmul", "occupancy", "sobel", "sort"])
def test_the_solution_and_the_starter_compile_in_the_labs_view(tmp_path, lab):
    """Proves: hiding every library a lab does not allow leaves what its own code needs (the
    runtime's headers and what they include from libcu++)."""
    config = real_config(tmp_path)
    spec = labs.load_lab(config, lab)
    for kind in ("solutions", "starter"):
        folder = lab_hand_in(tmp_path, lab, kind, (REPO / kind / lab / f"{lab}.cu").read_text())
        builder = build.SubmissionBuilder(config, spec, folder, tmp_path / "work" / kind)
        builder.compile()


@pytest.mark.needs_build
def test_a_header_reached_through_a_macro_built_include_is_refused_by_the_compile(tmp_path):
    """Proves: cuda_occupancy.h included through a name built by macros (no trace in the
    source or the object) does not compile, and the refusal names the calculator."""
    solution = (REPO / "solutions" / "occupancy" / "occupancy.cu").read_text()
    source = ("#define STRING(x) #x\n#define EXPAND(x) STRING(x)\n#define JOIN(a, b) a##b\n"
              "#include EXPAND(JOIN(cuda_occ, upancy.h))\n" + solution)
    err = build_refusal(tmp_path, "occupancy", "occ", source)
    assert err.status == "forbidden"
    assert str(err).startswith("occupancy.cu includes a header of CUDA's occupancy calculator (cuda_occupancy.h), "
                               "a library the occupancy lab does not allow")
    assert err.feedback[0].startswith("CUDA's occupancy calculator (cuda_occupancy.h) is not allowed in the "
                                      "occupancy lab: cuda_occupancy.h's cudaOccMaxActiveBlocksPerMultiprocessor")


@pytest.mark.needs_build
def test_cusparse_on_no_forbidden_list_is_invisible_to_the_compile(tmp_path):
    """Proves: a library no lab names (cuSPARSE) is refused all the same, its header reached
    through a macro-built name."""
    from cudalab.isolation import libraries
    config = real_config(tmp_path)
    if not any(f.library == "cusparse" and f.kind == "header" for f in libraries.machine_libraries(config)):
        pytest.skip("this machine has no cuSPARSE header to hide")
    solution = (REPO / "solutions" / "vector_add" / "vector_add.cu").read_text()
    err = build_refusal(tmp_path, "vector_add", "sparse", "#define HEADER(x) <x.h>\n#include HEADER(cusparse)\n" + solution)
    assert err.status == "forbidden" and "includes a header of cuSPARSE" in str(err)
    assert err.feedback[0] == ("cuSPARSE is not allowed in the vector_add lab: this lab allows only the CUDA "
                               "runtime and the C++ standard library. Write this part yourself.")


@pytest.mark.needs_build
def test_cub_reached_through_cccl_paths_is_named_cub(tmp_path):
    """Proves: a CUB sort included through <cccl/cub/...> is refused as CUB (not as Thrust,
    whose symbols CUB's headers bring along)."""
    source = ("#include <cccl/cub/device/device_radix_sort.cuh>\n#include \"sort.hpp\"\n"
              "void sort_keys(std::uint32_t* keys, std::size_t n) {\n"
              "    std::size_t bytes = 0;\n"
              "    cub::DeviceRadixSort::SortKeys(nullptr, bytes, keys, keys, static_cast<int>(n));\n}\n")
    err = build_refusal(tmp_path, "sort", "cccl", source)
    assert err.status == "forbidden"
    assert "CUB" in str(err) and "Thrust" not in str(err) + " ".join(err.feedback)
    assert err.feedback[0].startswith("sort.cu:1 includes <cccl/cub/device/device_radix_sort.cuh>. CUB is not allowed")


@pytest.mark.needs_build
def test_the_library_baselines_loaders_are_not_in_a_submissions_link(tmp_path):
    """Proves: the cuBLAS and NPP loaders (dlopen of the libraries, their function pointers)
    are in the official solution only; a submission links the SDK's objects, which hold
    loaders that load nothing."""
    import subprocess
    config = real_config(tmp_path)

    def symbols_of(path: Path) -> str:
        return subprocess.run(["nm", "-C", str(path)], capture_output=True, text=True, check=True).stdout
    for lab in [lab for lab in ("transpose", "sobel", "matmul") if (config.build_dir / "sdk" / lab).is_dir()]:
        objects = sorted((config.build_dir / "sdk" / lab / "objects").iterdir())
        listed = "".join(symbols_of(obj) for obj in objects)
        assert "labkit::CublasLoader" not in listed and "labkit::NppLoader" not in listed, lab
        assert not any(b"libcublas.so" in obj.read_bytes() or b"libnpp" in obj.read_bytes() for obj in objects), lab
    assert "labkit::CublasLoader" in symbols_of(labs.official_binary(config, "transpose", "solution"))
    assert "labkit::CublasLoader" not in symbols_of(labs.official_binary(config, "transpose", "starter"))


# --- the compiled object is read whole (cudalab/intake/object_analysis.py) ------------------------------------

def hand_in_file(tmp_path, name: str, file_name: str, source: str) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / file_name).write_text(source)
    return folder


def builder_for(tmp_path, lab: str, name: str, source: str) -> build.SubmissionBuilder:
    """A submission's builder with its file compiled in the sandbox, the checks not yet run."""
    config = real_config(tmp_path)
    spec = labs.load_lab(config, lab)
    builder = build.SubmissionBuilder(config, spec, hand_in_file(tmp_path, name, spec.source_file, source),
                                      tmp_path / "work" / name)
    builder.compile()
    return builder


def refused_as_forbidden(tmp_path, lab: str, source: str) -> ForbiddenError:
    """The ForbiddenError of building `source` as a hand-in of `lab`."""
    config = real_config(tmp_path)
    spec = labs.load_lab(config, lab)
    with pytest.raises(ForbiddenError) as err:
        build.build_submission(config, spec, hand_in_file(tmp_path, "mallory", spec.source_file, source),
                               tmp_path / "work" / "mallory")
    return err.value


@pytest.mark.needs_build
def test_a_cub_call_behind_4096_labels_is_refused_and_named(tmp_path):
    # The labels pushed every symbol the compiler emits past the 64 KiB of nm's listing that
    # the sandbox kept, and no line of the source says "cub": it was accepted, linked and
    # graded. The compile no longer sees CUB's headers, so it stops there, naming CUB.
    err = refused_as_forbidden(tmp_path, "reduction", LOCAL_PADDING + '#include "reduction.hpp"\n' + HIDDEN_CUB_REDUCE)
    assert str(err).startswith("reduction.cu includes a header of CUB, a library the reduction lab does not allow")
    assert err.feedback[0].startswith("CUB is not allowed in the reduction lab: cub::DeviceReduce")


@pytest.mark.needs_build
def test_a_cublas_call_behind_4096_labels_is_refused_and_named(tmp_path):
    # The same padding before a cuBLAS call whose name macros build (no header, nothing in the
    # source): only the object's symbols tell, and they are all read.
    err = refused_as_forbidden(tmp_path, "matmul", LOCAL_PADDING + '#include "matmul.hpp"\n' + HIDDEN_CUBLAS_MATMUL)
    assert len(err.feedback) == 1
    assert err.feedback[0].startswith("The compiled matmul.cu uses cuBLAS (")
    assert "cuBLAS is not allowed in the matmul lab: cublasSgemm computes the whole product" in err.feedback[0]


@pytest.mark.needs_build
def test_a_definition_of_read_behind_4096_labels_is_refused(tmp_path):
    # read() is what the harness's control channel calls: the student's copy would answer it.
    source = GLOBAL_PADDING + (REPO / "solutions" / "reduction" / "reduction.cu").read_text() + DEFINES_READ
    builder = builder_for(tmp_path, "reduction", "mallory", source)
    with pytest.raises(CompileError) as err:
        builder.check_symbols()
    assert [line.split(":", 1)[0] for line in err.value.feedback] == [
        "reduction.cu defines read, which the C library defines"]


@pytest.mark.needs_build
@pytest.mark.parametrize("lab, padding, reason", [
    ("vector_add", MANY_SYMBOLS, "it has 262,"),
    ("reduction", MANY_STRINGS, "it holds more than the 1,000,000 strings the grader reads."),
], ids=["too_many_symbols", "too_many_strings"])
def test_an_object_that_cannot_be_read_whole_is_refused_with_a_sentence(tmp_path, lab, padding, reason):
    source = padding + (REPO / "solutions" / lab / f"{lab}.cu").read_text()
    config = real_config(tmp_path)
    spec = labs.load_lab(config, lab)
    tracemalloc.start()
    try:
        with pytest.raises(CompileError) as err:
            build.build_submission(config, spec, hand_in_file(tmp_path, "mallory", spec.source_file, source),
                                   tmp_path / "work" / "mallory")
        _, grader_peak_bytes = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert not isinstance(err.value, ForbiddenError)
    assert err.value.feedback[0].startswith(f"The object compiled from {spec.source_file} was refused: {reason}")
    assert err.value.feedback[0].endswith(f"look for inline assembly (asm) or generated data in {spec.source_file}.")
    assert grader_peak_bytes < 16 * MIB  # read in a process of its own: the grader holds none of it
    assert not (tmp_path / "work" / "mallory" / "build" / f"{lab}_submission").exists()  # never linked


@pytest.mark.needs_build
def test_a_malformed_object_fails_closed_in_both_checks(tmp_path):
    builder = builder_for(tmp_path, "reduction", "mallory",
                          (REPO / "solutions" / "reduction" / "reduction.cu").read_text())
    builder.object.write_bytes(builder.object.read_bytes()[:4096])
    with pytest.raises(CompileError) as err:
        builder.check_symbols()
    assert err.value.feedback[0].startswith("The object compiled from reduction.cu was refused: it is not a "
                                            "well-formed object (")
    [finding] = builder.forbidden_in_object()
    assert finding.severity == "error" and finding.message.startswith(
        "The compiled reduction.cu could not be searched for the libraries the reduction lab forbids. The "
        "object compiled from reduction.cu was refused: it is not a well-formed object (")


class _BuilderBesideItsLink:
    """A SubmissionBuilder whose steps only record what ran when: the link takes until the
    object's checks are over, and writes its binary then."""
    refuse = False

    def __init__(self, config, spec, folder, work):
        import threading
        self.build_dir, self.commands, self.log = work / "build", {"binary": "toy_submission"}, ""
        self.build_dir.mkdir(parents=True)
        self.staged = type("Staged", (), {"ignored_files": lambda self, spec: []})()
        self.link_started, self.checks_done = threading.Event(), threading.Event()

    def compile(self):
        pass

    def run_link(self):
        self.link_started.set()
        self.checks_done.wait(10)
        (self.build_dir / "toy_submission").write_text("linked\n")
        return "linked"

    def check_symbols(self):
        assert self.link_started.wait(10), "the link did not start beside the object's checks"
        if self.refuse:
            self.checks_done.set()  # (as a real refusal: the link is not waited for)
            raise CompileError("toy.cu compiled, but it defines 1 symbol that only the harness may define",
                               ["toy.cu defines main()"])

    def check_forbidden(self):
        self.checks_done.set()

    def linked(self, result):
        assert result == "linked" and self.checks_done.is_set()
        return self.build_dir / "toy_submission"


def test_the_link_runs_beside_the_objects_checks_and_is_taken_once_they_pass(spec, toy_submission, tmp_path,
                                                                            monkeypatch):
    monkeypatch.setattr(build, "SubmissionBuilder", _BuilderBesideItsLink)
    built = build.build_submission(None, spec, toy_submission, tmp_path / "work")
    assert built.binary.read_text() == "linked\n"


def test_a_refused_object_is_refused_although_its_link_ran_beside_the_check(spec, toy_submission, tmp_path,
                                                                           monkeypatch):
    """The symbol check's refusal is the build's error, and the binary linked meanwhile is
    removed: a refused object never runs."""
    monkeypatch.setattr(build, "SubmissionBuilder", type("Refusing", (_BuilderBesideItsLink,), {"refuse": True}))
    with pytest.raises(CompileError, match="defines 1 symbol"):
        build.build_submission(None, spec, toy_submission, tmp_path / "work")
    assert not (tmp_path / "work" / "build" / "toy_submission").exists()
