"""symbols: a student's object may define the lab's API and its own helpers, nothing official.

The rules and sentences are tested on hand-made indexes; the rest on objects nvcc compiles
here: a fake harness and labkit (tests/symbols/), students' files that break each rule or
keep to all of them, and every real solution, starter and ladder rung, judged against an
index of the fake official objects plus this machine's real CUDA runtime and libraries.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from cudalab.intake import symbols
from cudalab.intake.object_analysis import analyse_object
from cudalab.intake.symbols import SymbolIndex, Violation
from conftest import REPO_ROOT

FIXTURES = Path(__file__).parent / "symbols"
GRADER = REPO_ROOT / "grader"
# The flags the official build gives nvcc (cmake/CudalabLab.cmake: C++20, -O3 in release,
# line info, position-independent code).
NVCC_FLAGS = ["-c", "-std=c++20", "-O3", "-arch=sm_90", "-lineinfo", "-Xcompiler=-fPIC"]
REAL_SOURCES = sorted(str(p.relative_to(REPO_ROOT)) for pattern in
                      ("solutions/*/*.cu", "starter/*/*.cu", "solutions/*/ladder/*.cu")
                      for p in REPO_ROOT.glob(pattern))

TOY_API_SENTENCE = ("your file may define only toy_add(float const*, float*, unsigned long), "
                    "toy_workspace_bytes(unsigned long) and its own helpers (make helpers "
                    "static or put them in an anonymous namespace).")

needs_cpp_filt = pytest.mark.skipif(shutil.which("c++filt") is None,
                                    reason="needs c++filt (binutils) to demangle names")


# --- compiling the test objects --------------------------------------------------------------

def nvcc_or_skip() -> str:
    found = shutil.which("nvcc")
    if found is None and Path("/usr/local/cuda/bin/nvcc").is_file():
        found = "/usr/local/cuda/bin/nvcc"
    if found is None:
        pytest.skip("needs nvcc (the CUDA toolkit) to compile the test objects; no GPU is needed")
    return found


def _compile_all(jobs: dict[str, tuple[Path, Path, list[Path]]]) -> dict[str, Path]:
    """Compile {key: (source, object, include dirs)} in parallel; fail with nvcc's words."""
    nvcc = nvcc_or_skip()

    def compile_one(job):
        source, obj, includes = job
        obj.parent.mkdir(parents=True, exist_ok=True)
        argv = [nvcc, *NVCC_FLAGS, *(f"-I{d}" for d in includes), str(source), "-o", str(obj)]
        return subprocess.run(argv, capture_output=True, text=True)

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        results = dict(zip(jobs, pool.map(compile_one, jobs.values())))
    failed = [f"{key}:\n{result.stderr}" for key, result in results.items() if result.returncode != 0]
    if failed:
        pytest.fail("nvcc could not compile the test sources:\n" + "\n".join(failed))
    return {key: obj for key, (_, obj, _) in jobs.items()}


@pytest.fixture(scope="session")
def objects(tmp_path_factory) -> dict[str, Path]:
    """The fake official objects and the students' test files. The fake labkit's object lies
    in a folder called labkit, as the real one does, so its origin reads "labkit"."""
    out = tmp_path_factory.mktemp("symbol_objects")
    includes = [REPO_ROOT / "common", FIXTURES]
    folders = {"fake_harness": "harness", "fake_labkit": "labkit"}
    names = ["fake_harness", "fake_labkit", "student_good", "student_bad_c", "student_bad_cxx"]
    return _compile_all({name: (FIXTURES / f"{name}.cu", out / folders.get(name, "student") / f"{name}.o",
                                includes) for name in names})


@pytest.fixture(scope="session")
def real_objects(tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("real_objects")
    jobs = {}
    for source in REAL_SOURCES:
        lab = Path(source).parts[1]
        jobs[source] = (REPO_ROOT / source, out / (source.replace("/", "_") + ".o"),
                        [REPO_ROOT / "common", REPO_ROOT / "labs" / lab])
    return _compile_all(jobs)


@pytest.fixture(scope="session")
def index(objects) -> SymbolIndex:
    """The fake officials with this machine's real runtime archives and shared libraries."""
    return symbols.build_index(harness_main=objects["fake_harness"], official_objects=[objects["fake_labkit"]],
                               runtime_archives=symbols.default_runtime_archives(),
                               shared_libraries=symbols.default_shared_libraries())


def defined(obj: Path) -> list[tuple[str, str]]:
    """What a build judges: the object's symbol table read whole (object_analysis)."""
    return analyse_object(obj).defined


# --- reading nm ---------------------------------------------------------------------------------

def test_parse_nm_keeps_defined_external_symbols_only():
    text = "\n".join([
        "/usr/lib/gcc/x86_64-linux-gnu/12/libgcc.a[_popcountsi2.o]:",  # an archive member's header
        "_Z10vector_addPKfS0_Pfm T 510 19b",
        "_Unwind_Resume U         ",                 # undefined
        "__gmon_start__ w         ",                 # weak undefined
        "_ZL24__sti____cudaRegisterAllv t 0 18f",    # local
        "_ZN6labkit6detail10check_cudaE9cudaErrorPKcS3_i W 0 156b",
        "_ZTVN6labkit9CudaErrorE V 0 28",
        "_ZZNSt8__detail18__to_chars_10_implIjEEvPcjT_E8__digits u 0 c9",
        "memcpy@@GLIBC_2.14 i 9be70 109",
        "__dso_handle D 0 ",                          # no size: the line ends in a space
        "__avx_savms64_15 T c 46",                    # a value that looks like a type letter
        "odd name T 0 4",                             # a name with a space (an asm label)
        "",
    ])
    assert symbols.parse_nm(text) == [
        ("_Z10vector_addPKfS0_Pfm", "T"),
        ("_ZN6labkit6detail10check_cudaE9cudaErrorPKcS3_i", "W"),
        ("_ZTVN6labkit9CudaErrorE", "V"),
        ("_ZZNSt8__detail18__to_chars_10_implIjEEvPcjT_E8__digits", "u"),
        ("memcpy@@GLIBC_2.14", "i"),
        ("__dso_handle", "D"),
        ("__avx_savms64_15", "T"),
        ("odd name", "T"),
    ]


def test_nm_defined_argv_asks_for_defined_external_symbols_in_posix_format():
    argv = symbols.nm_defined_argv(Path("/work/x.o"))
    assert Path(argv[0]).name == "nm" and argv[-1] == "/work/x.o"
    assert {"-P", "--defined-only", "--extern-only"} <= set(argv)


# --- the rules, on a hand-made index ---------------------------------------------------------------

VECTOR_ADD = "_Z10vector_addPKfS0_Pfm"
HAND_INDEX = SymbolIndex(api=frozenset({VECTOR_ADD}),
                         strong={"cudaEventElapsedTime": "the CUDA runtime", "official_strong": "labkit",
                                 "memcpy": "the C library"},
                         weak={"official_weak": "labkit"})


@pytest.mark.parametrize("name, kind, refused", [
    ("official_strong", "T", True),    # two strong definitions
    ("official_weak", "T", True),      # a strong one would replace the official weak copy
    ("official_weak", "D", True),
    ("official_weak", "i", True),      # an indirect function is a strong definition
    ("official_strong", "W", True),    # a weak one would still interpose on a shared library's
    ("official_weak", "W", False),     # two weak copies: ordinary C++, the official one is linked first
    ("official_weak", "V", False),
    ("official_weak", "u", False),     # a GNU unique object lives in a COMDAT group like W and V
    ("own_helper", "T", False),
    ("own_helper", "W", False),
    (VECTOR_ADD, "T", False),
    (VECTOR_ADD, "W", False),
    ("main", "T", True),
    ("main", "W", True),
    ("memcpy@@GLIBC_2.14", "T", True),  # versioned names compare by the part before '@'
    ("official_weak@VER_1", "W", False),
])
def test_the_rules(name, kind, refused):
    assert bool(symbols.check_symbols([(name, kind)], HAND_INDEX, "toy.cu")) == refused


@needs_cpp_filt
def test_each_violation_gets_a_sentence_the_student_can_act_on():
    violations = symbols.check_symbols([("cudaEventElapsedTime", "T"), ("own_helper", "T"), ("main", "T")],
                                       HAND_INDEX, "vector_add.cu")
    assert violations == [
        Violation("main", "main", None,
                  "vector_add.cu defines main(): remove it; the harness provides main and calls your "
                  "vector_add()."),
        Violation("cudaEventElapsedTime", "cudaEventElapsedTime", "the CUDA runtime",
                  "vector_add.cu defines cudaEventElapsedTime, which the CUDA runtime defines: remove it; "
                  "your file may define only vector_add(float const*, float const*, float*, unsigned long) "
                  "and its own helpers (make helpers static or put them in an anonymous namespace)."),
    ]


@needs_cpp_filt
def test_sentences_name_every_api_function_demangled():
    index = SymbolIndex(api=frozenset({"_Z10reduce_sumPKfPfmPv", "_Z26reduce_sum_workspace_bytesm"}),
                        strong={"_ZN6labkit9summariseERKSt6vectorIdSaIdEE": "labkit"}, weak={})
    violations = symbols.check_symbols([("_ZN6labkit9summariseERKSt6vectorIdSaIdEE", "T"), ("main", "T")],
                                       index, "reduction.cu")
    assert [v.sentence for v in violations] == [
        "reduction.cu defines main(): remove it; the harness provides main and calls your reduce_sum() "
        "and reduce_sum_workspace_bytes().",
        "reduction.cu defines labkit::summarise(std::vector<double, std::allocator<double> > const&), "
        "which labkit defines: remove it; your file may define only reduce_sum(float const*, float*, "
        "unsigned long, void*), reduce_sum_workspace_bytes(unsigned long) and its own helpers (make "
        "helpers static or put them in an anonymous namespace).",
    ]
    assert violations[1].symbol == "_ZN6labkit9summariseERKSt6vectorIdSaIdEE"


def test_a_kernel_and_its_host_stub_make_one_sentence():
    kernel, stub = "_ZN6labkit4fillEPfm", "_Z33__device_stub__ZN6labkit4fillEPfmPfm"
    index = SymbolIndex(api=frozenset(), strong={kernel: "labkit", stub: "labkit"}, weak={})
    both = symbols.check_symbols([(stub, "T"), (kernel, "T")], index, "toy.cu")
    assert [v.symbol for v in both] == [kernel]
    # A stub defined without its kernel would replace the official launch: still refused.
    alone = symbols.check_symbols([(stub, "T")], index, "toy.cu")
    assert [v.symbol for v in alone] == [stub]


def test_a_clean_object_costs_no_subprocess(monkeypatch):
    monkeypatch.setattr(symbols.subprocess, "run", lambda *a, **k: pytest.fail("ran a process"))
    assert symbols.check_symbols([(VECTOR_ADD, "T"), ("own_helper", "T"), ("official_weak", "W")],
                                 HAND_INDEX, "vector_add.cu") == []


@needs_cpp_filt
def test_demangle_uses_one_cpp_filt_call_and_falls_back_to_raw_names(monkeypatch, tmp_path):
    assert symbols.demangle(["_Znwm", "main", "_Znwm"]) == {"_Znwm": "operator new(unsigned long)",
                                                            "main": "main"}
    monkeypatch.setenv("PATH", str(tmp_path))  # no c++filt
    assert symbols.demangle(["_Znwm"]) == {"_Znwm": "_Znwm"}
    assert symbols.demangle([]) == {}


@needs_cpp_filt
def test_a_name_with_a_line_break_keeps_the_others_in_step():
    # c++filt reads a name per line: a name split in two would shift every later one, and
    # a forbidden library's names would be judged undemangled.
    names = ["_Znwm", "odd\nname", "_ZN3cub12DeviceReduce3SumEv"]
    expected = {"_Znwm": "operator new(unsigned long)", "odd\nname": "odd\nname",
                "_ZN3cub12DeviceReduce3SumEv": "cub::DeviceReduce::Sum()"}
    assert symbols.demangle(names) == expected
    assert symbols.demangle(names, strict=True) == expected


def test_strict_demangling_never_falls_back_to_raw_names(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no c++filt
    with pytest.raises(symbols.SymbolToolError, match="c\\+\\+filt was not found"):
        symbols.demangle(["_Znwm"], strict=True)
    (tmp_path / "c++filt").write_text("#!/bin/sh\nhead -n 1\n")  # answers for one name only
    (tmp_path / "c++filt").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    with pytest.raises(symbols.SymbolToolError, match="c\\+\\+filt gave 1 names for 2"):
        symbols.demangle(["_Znwm", "_Znam"], strict=True)
    assert symbols.demangle(["_Znwm", "_Znam"]) == {"_Znwm": "_Znwm", "_Znam": "_Znam"}


# --- the index file -----------------------------------------------------------------------------------

def test_the_index_survives_json_and_is_written_atomically(tmp_path):
    path = tmp_path / "out" / "toy.symbols.json"
    symbols.write_index(HAND_INDEX, path)
    assert symbols.read_index(path) == HAND_INDEX
    assert json.loads(path.read_text())["schema"] == "cudalab.symbols/1"
    assert [p.name for p in path.parent.iterdir()] == ["toy.symbols.json"]  # no temporary file left
    assert path.stat().st_mode & 0o444 == 0o444  # readable by a grader running as another user


@pytest.mark.parametrize("data", [{"schema": "cudalab.symbols/0", "api": [], "strong": {}, "weak": {}},
                                  {"schema": "cudalab.symbols/1", "api": []}, []])
def test_an_index_of_another_shape_is_refused(data):
    with pytest.raises(ValueError, match="rebuild the official tree"):
        SymbolIndex.from_json(data)


# --- finding the libraries ----------------------------------------------------------------------------

@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc, the host compiler nvcc links with")
def test_the_default_libraries_are_found_on_this_machine():
    runtime, shared = symbols.default_runtime_archives(), symbols.default_shared_libraries()
    assert all(path.is_file() for path, _ in runtime + shared)
    assert {"the C library", "the math library", "the GCC runtime", "the C++ library"} <= {l for _, l in shared}
    assert {"the C library", "the GCC runtime", "the C start-up code"} <= {l for _, l in runtime}
    if shutil.which("nvcc"):
        assert "the CUDA runtime" in {label for _, label in runtime}
        assert "the CUDA driver" in {label for _, label in shared}


def test_missing_libraries_are_skipped(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no compiler, no nvcc
    monkeypatch.setenv("CUDA_PATH", str(tmp_path / "no-cuda"))
    runtime, shared = symbols.default_runtime_archives(), symbols.default_shared_libraries()
    # Only /usr/local/cuda, the last place looked, can still answer.
    assert {label for _, label in runtime} <= {"the CUDA runtime"}
    assert {label for _, label in shared} <= {"the CUDA driver"}


# --- real objects ------------------------------------------------------------------------------------

@needs_cpp_filt
def test_the_index_reads_the_official_side(index, objects):
    assert sorted(symbols.demangle(index.api).values()) == [
        "toy_add(float const*, float*, unsigned long)", "toy_workspace_bytes(unsigned long)"]
    assert index.strong["main"] == "the harness"
    assert index.strong["_Z14harness_bannerv"] == "the harness"
    assert index.strong["_ZN6labkit9summariseERKSt6vectorIfSaIfEE"] == "labkit"
    assert index.strong["cudaEventElapsedTime"] == "the CUDA runtime"
    assert index.strong["cuInit"] == "the CUDA driver"
    assert index.strong["malloc"] == "the C library"
    assert index.weak["write"] == "the C library"  # glibc's write is a weak alias of __write
    assert index.strong["atexit"] == "the C library"  # from libc_nonshared.a, not libc.so.6
    assert index.strong["_Znwm"] == "the C++ library"
    assert index.strong["_start"] == "the C start-up code"
    # Inline functions, template instantiations and static locals of inline functions: weak.
    assert index.weak["_ZN6labkit14count_positiveERKSt6vectorIfSaIfEE"] == "the harness"
    assert index.weak["_ZNSt6vectorIfSaIfEE9push_backERKf"] == "the harness"
    assert index.weak["_ZZN6labkit5callsEvE5count"] == "the harness"
    assert "_GLOBAL_OFFSET_TABLE_" not in index.api  # the PIC harness refers to it; the linker defines it


def test_origins_come_from_the_object_path_or_an_explicit_label(objects, tmp_path):
    elsewhere = tmp_path / "labs" / "toy" / "problem.o"
    elsewhere.parent.mkdir(parents=True)
    shutil.copy(objects["fake_labkit"], elsewhere)
    for official, origin in [([objects["fake_labkit"]], "labkit"), ([elsewhere], "the lab library"),
                             ([(elsewhere, "the toy library")], "the toy library")]:
        index = symbols.build_index(harness_main=objects["fake_harness"], official_objects=official,
                                    runtime_archives=[], shared_libraries=[])
        assert index.strong["_ZN6labkit8describeEv"] == origin


def test_a_harness_main_that_calls_no_api_is_refused(objects):
    with pytest.raises(symbols.SymbolToolError, match="no lab API"):
        symbols.build_index(harness_main=objects["fake_labkit"], official_objects=[],
                            runtime_archives=symbols.default_runtime_archives(),
                            shared_libraries=symbols.default_shared_libraries())


@pytest.mark.parametrize("source", REAL_SOURCES)
def test_real_student_files_pass(source, real_objects, index):
    assert symbols.check_symbols(defined(real_objects[source]), index, Path(source).name) == []


@needs_cpp_filt
def test_a_file_that_keeps_to_the_rules_passes(objects, index):
    symbols_defined = defined(objects["student_good"])
    shown = symbols.demangle(name for name, _ in symbols_defined)
    kinds = {shown[name]: kind for name, kind in symbols_defined}
    # What it holds: the API, its own global helper and variable, nvcc's host stubs (an
    # anonymous namespace's kernel made global under a per-file name), and weak copies of
    # what the harness also emits.
    assert kinds["toy_add(float const*, float*, unsigned long)"] == "T"
    assert kinds["aligned16(void const*)"] == "T" and kinds["launches"] == "B"
    assert kinds["(anonymous namespace)::add_one(float const*, float*, unsigned long)"] == "T"
    assert any(name.startswith("__device_stub__") for name in kinds)
    assert kinds["labkit::count_positive(std::vector<float, std::allocator<float> > const&)"] == "W"
    assert kinds["labkit::calls()::count"] == "u"
    assert sum(name in index.weak for name, _ in symbols_defined) > 50  # std::vector<float>, labkit
    assert symbols.check_symbols(symbols_defined, index, "toy.cu") == []


@needs_cpp_filt
def test_replacing_c_and_cuda_functions_is_refused(objects, index):
    violations = symbols.check_symbols(defined(objects["student_bad_c"]), index, "toy.cu")
    assert [(v.symbol, v.origin) for v in violations] == [
        ("main", None), ("cudaEventElapsedTime", "the CUDA runtime"),
        ("malloc", "the C library"), ("write", "the C library")]
    assert violations[0].sentence == ("toy.cu defines main(): remove it; the harness provides main "
                                      "and calls your toy_add() and toy_workspace_bytes().")
    assert violations[3].sentence == f"toy.cu defines write, which the C library defines: remove it; {TOY_API_SENTENCE}"


@needs_cpp_filt
def test_replacing_cxx_and_official_functions_is_refused(objects, index):
    violations = symbols.check_symbols(defined(objects["student_bad_cxx"]), index, "toy.cu")
    assert [(v.demangled, v.origin) for v in violations] == [
        ("harness_banner()", "the harness"),  # inline, kept: weak against the harness's strong one
        ("labkit::describe()", "labkit"),  # [[gnu::weak]] against labkit's strong one
        ("labkit::detail::check_cuda(cudaError, char const*, char const*, int)", "the harness"),
        ("labkit::fill(float*, unsigned long)", "labkit"),  # the kernel; its host stub is not repeated
        ("labkit::summarise(std::vector<float, std::allocator<float> > const&)", "labkit"),
        ("operator new(unsigned long)", "the C++ library"),
    ]
    assert violations[5].symbol == "_Znwm"
    assert violations[5].sentence == (f"toy.cu defines operator new(unsigned long), which the C++ "
                                      f"library defines: remove it; {TOY_API_SENTENCE}")


# --- the command line ------------------------------------------------------------------------------

def _cli(*args: str, cwd: Path, module: str = "cudalab.intake.symbols") -> subprocess.CompletedProcess:
    # -S: no site-packages, so the module must manage with the standard library, as under CMake.
    return subprocess.run([sys.executable, "-S", "-m", module, *args], cwd=cwd,
                          env={**os.environ, "PYTHONPATH": str(GRADER)}, capture_output=True, text=True)


@needs_cpp_filt
def test_the_cli_writes_the_index_and_checks_an_object(objects, index, tmp_path):
    out = tmp_path / "index" / "toy.symbols.json"
    made = _cli("index", "--out", str(out), "--harness-main", str(objects["fake_harness"]),
                "--official", str(objects["fake_labkit"]), cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert symbols.read_index(out) == index
    assert [p.name for p in out.parent.iterdir()] == ["toy.symbols.json"]

    bad = _cli("--index", str(out), "--name", "toy.cu", str(objects["student_bad_c"]), cwd=tmp_path,
               module="cudalab.intake.symbol_check")
    assert bad.returncode == 1
    expected = symbols.check_symbols(defined(objects["student_bad_c"]), index, "toy.cu")
    assert bad.stdout.splitlines() == [v.sentence for v in expected]
    good = _cli("--index", str(out), str(objects["student_good"]), cwd=tmp_path, module="cudalab.intake.symbol_check")
    assert (good.returncode, good.stdout) == (0, "")


def test_the_cli_takes_explicit_libraries_with_labels(objects, tmp_path):
    runtime = [p for p, label in symbols.default_runtime_archives() if label == "the CUDA runtime"]
    shared = [p for p, label in symbols.default_shared_libraries() if label == "the C library"]
    if not runtime or not shared:
        pytest.skip("needs libcudart_static.a and libc.so.6 on this machine")
    out = tmp_path / "toy.symbols.json"
    made = _cli("index", "--out", str(out), "--harness-main", str(objects["fake_harness"]),
                "--official", str(objects["fake_labkit"]), "--runtime", str(runtime[0]), "my runtime",
                "--shared", str(shared[0]), "my libc", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    index = symbols.read_index(out)
    assert (index.strong["cudaEventElapsedTime"], index.strong["malloc"]) == ("my runtime", "my libc")
    assert "_Znwm" in index.api  # libstdc++ was left out, so operator new looks like the lab's API


def test_the_cli_explains_an_unreadable_object(tmp_path):
    result = _cli("index", "--out", str(tmp_path / "x.json"), "--harness-main", str(tmp_path / "missing.o"),
                  "--runtime", str(tmp_path / "none.a"), "x", "--shared", str(tmp_path / "none.so"), "y",
                  cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith(f"error: nm could not read {tmp_path / 'missing.o'}")
    assert not (tmp_path / "x.json").exists()
