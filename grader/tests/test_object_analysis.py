"""object_analysis: the student's object is read whole, in a child process with limits of its
own, and every object that cannot be read whole is refused with a sentence, never judged on
the part that could be read.

The objects are compiled here with nvcc -c (no GPU needed): students' files that pad their
object with inline assembly, blow it up, or hide a call behind thousands of labels."""
from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import pytest

from cudalab.intake import symbols
from cudalab.config import KIB, MIB
from cudalab.errors import GraderError
from cudalab.intake.object_analysis import ObjectLimits, ObjectRefused, analyse_object
from conftest import REPO_ROOT
from test_symbols import NVCC_FLAGS, nvcc_or_skip, objects  # noqa: F401  (objects: a fixture)

# 4096 labels from one top-level asm statement (16 x 16 x 16 .irp rounds), each line of nm's
# listing some 20 bytes: 80 KiB of listing before the first symbol the compiler emits, past
# the 64 KiB of output the sandbox keeps of a program.
_IRP = "".join(f".irp {v},0,1,2,3,4,5,6,7,8,9,a,b,c,d,e,f\\n" for v in "abc")
_ENDR = ".endr\\n" * 3
LOCAL_PADDING = f'asm("{_IRP}padding_label_\\\\a\\\\b\\\\c:\\n{_ENDR}");\n'
GLOBAL_PADDING = f'asm("{_IRP}.globl padding_label_\\\\a\\\\b\\\\c\\npadding_label_\\\\a\\\\b\\\\c:\\n{_ENDR}");\n'
# CUB, named so that no line of the source says "cub" (what the source check looks for).
HIDDEN_CUB_REDUCE = """\
#include <cstddef>
#define LIBRARY c##ub
#define HEADER <LIBRARY/device/device_reduce.cuh>
#include HEADER
std::size_t reduce_sum_workspace_bytes(std::size_t n) {
    std::size_t bytes = 0;
    LIBRARY::DeviceReduce::Sum(nullptr, bytes, (const float*)nullptr, (float*)nullptr, (int)n);
    return bytes;
}
void reduce_sum(const float* in, float* out, std::size_t n, void* workspace) {
    std::size_t bytes = reduce_sum_workspace_bytes(n);
    LIBRARY::DeviceReduce::Sum(workspace, bytes, in, out, (int)n);
}
"""
# cuBLAS's SGEMM declared and called by a name macros build: nothing in the source says
# "cublas", no header of it is included (the compile sees none), and only the object's
# symbol table tells.
HIDDEN_CUBLAS_MATMUL = """\
#include <cstddef>
#define NAME(a, b) a##b
extern "C" int NAME(cubl, asSgemm_v2)(void*, int, int, int, int, int, const float*, const float*, int,
                                      const float*, int, const float*, float*, int);
void matmul(const float* a, const float* b, float* c, std::size_t m, std::size_t n, std::size_t k) {
    const float one = 1.0f, zero = 0.0f;
    NAME(cubl, asSgemm_v2)(nullptr, 0, 0, (int)n, (int)m, (int)k, &one, b, (int)n, a, (int)k, &zero, c, (int)n);
}
"""
DEFINES_READ = """\
#include <sys/types.h>
extern "C" ssize_t read(int, void*, size_t n) { return (ssize_t)n; }
"""
# 262,144 labels: past the 200,000 symbols the grader reads.
MANY_SYMBOLS = ('asm("' + "".join(f".irp {v},0,1,2,3,4,5,6,7,8,9,a,b,c,d,e,f\\n" for v in "abcd")
                + "".join(f"{p}\\\\a\\\\b\\\\c\\\\d:\\n" for p in "wxyz") + ".endr\\n" * 4 + '");\n')
# 1.1 million strings ("aaaaa", six bytes each) in 6.6 MB: a hand-in of a few lines whose
# object made the grader list 44 million strings when repeated 40 times more.
MANY_STRINGS = 'asm(".section .rodata\\n.rept 1100\\n.rept 1000\\n.ascii \\"aaaaa\\\\0\\"\\n.endr\\n.endr\\n.text\\n");\n'
CUBLAS_STRINGS = [r"libcublas(Lt)?\.so(\.\d+)*", r"^cublas[A-Z]\w+$"]


def compile_object(tmp_path: Path, name: str, source: str) -> Path:
    """nvcc -c of `source` with the official build's flags; fails with nvcc's words."""
    nvcc = nvcc_or_skip()
    (tmp_path / f"{name}.cu").write_text(source)
    obj = tmp_path / f"{name}.o"
    result = subprocess.run([nvcc, *NVCC_FLAGS, str(tmp_path / f"{name}.cu"), "-o", str(obj)],
                            capture_output=True, text=True)
    if result.returncode != 0:
        pytest.fail(f"nvcc could not compile {name}.cu:\n{result.stderr}")
    return obj


def nm_listing(obj: Path, *extra: str) -> str:
    return subprocess.run(["nm", "-P", "--no-sort", *extra, str(obj)], capture_output=True, text=True,
                          check=True).stdout


# --- reading every symbol ----------------------------------------------------------------------

@pytest.mark.parametrize("fixture", ["student_good", "student_bad_c", "student_bad_cxx"])
def test_the_defined_symbols_are_those_nm_lists_with_the_same_letters(fixture, objects):
    obj = objects[fixture]
    expected = symbols.parse_nm(nm_listing(obj, "--defined-only", "--extern-only"))
    analysis = analyse_object(obj)
    assert analysis.defined == expected
    assert len(analysis.defined_demangled) == len(expected)


def test_a_definition_behind_4096_global_labels_is_read(tmp_path):
    obj = compile_object(tmp_path, "padded_read", GLOBAL_PADDING + DEFINES_READ)
    listing = nm_listing(obj, "--defined-only", "--extern-only")
    assert listing.index("\nread T ") > 64 * KIB  # what the sandbox's output cap used to cut away
    assert ("read", "T") in analyse_object(obj).defined


def test_library_symbols_behind_4096_local_labels_are_read(tmp_path):
    # A local label with CUB's mangled name stands for the instantiations a CUB call makes
    # (tests/test_build.py compiles the real call); this one compiles in a second.
    cub_label = 'asm("_ZN3cub12DeviceReduce3SumEPvRmPKfPfi:\\n");\n'
    obj = compile_object(tmp_path, "padded_cub", LOCAL_PADDING + cub_label)
    listing = nm_listing(obj)
    assert listing.index("_ZN3cub12DeviceReduce") > 64 * KIB
    found = analyse_object(obj, symbol_patterns=[r"\bcub::"]).library_symbols
    assert found == ["cub::DeviceReduce::Sum(void*, unsigned long&, float const*, float*, int)"]


# --- refusing what cannot be read whole -----------------------------------------------------------

def refusal(obj: Path, **kwargs) -> str:
    with pytest.raises(ObjectRefused) as refused:
        analyse_object(obj, **kwargs)
    return refused.value.reason


def test_an_object_with_too_many_symbols_is_refused(tmp_path):
    obj = compile_object(tmp_path, "many_symbols", MANY_SYMBOLS)
    reason = refusal(obj)
    assert reason.startswith("it has 262,") and reason.endswith("symbols, more than the 200,000 the grader reads")


def test_an_object_over_the_size_limit_is_refused(tmp_path):
    obj = compile_object(tmp_path, "big_section", 'asm(".section .rodata\\n.zero 70000000\\n.text\\n");\n')
    assert obj.stat().st_size > 64 * MIB
    assert refusal(obj) == "it is larger than the 64 MiB the grader reads of a compiled lab file"


def test_too_many_strings_are_refused_and_the_grader_keeps_none_of_them(tmp_path):
    obj = compile_object(tmp_path, "many_strings", MANY_STRINGS)
    tracemalloc.start()
    started = time.perf_counter()
    try:
        reason = refusal(obj, string_patterns=CUBLAS_STRINGS)
        _, peak_bytes = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert reason == "it holds more than the 1,000,000 strings the grader reads"
    assert peak_bytes < 4 * MIB  # the grader's own process: no list of strings
    assert time.perf_counter() - started < 30


def test_strings_are_matched_without_a_list_of_them(tmp_path):
    obj = compile_object(tmp_path, "dlopen", 'const char* volatile name = "libcublas.so.13";\n'
                                             'const char* volatile call = "cublasSgemm_v2";\n'
                                             'const char* volatile said = "use:cublasSgemm:here";\n')
    found = analyse_object(obj, string_patterns=CUBLAS_STRINGS).library_strings
    assert sorted(found) == ["cublasSgemm_v2", "libcublas.so.13"]


def test_a_symbol_table_section_past_the_end_of_the_file_is_refused(tmp_path):
    obj = compile_object(tmp_path, "plain", DEFINES_READ)
    data = bytearray(obj.read_bytes())
    shoff, shentsize, shnum = struct.unpack_from("<Q", data, 0x28)[0], *struct.unpack_from("<HH", data, 0x3A)
    for index in range(shnum):
        header = shoff + index * shentsize
        if struct.unpack_from("<I", data, header + 4)[0] == 2:  # SHT_SYMTAB
            struct.pack_into("<Q", data, header + 0x20, 24 << 36)  # sh_size: 1.6 TB of symbols
            break
    obj.write_bytes(bytes(data))
    assert refusal(obj) == f"it is not a well-formed object: section {index} ends past the end of the file"


@pytest.mark.parametrize("damage, reason", [
    (lambda data: data[:len(data) // 2], "it is not a well-formed object ("),
    (lambda data: data[:40], "it is not a well-formed object ("),
    (lambda data: b"\x7fELF" + b"\xff" * 60, "it is not a well-formed object ("),
    (lambda data: b"#!/bin/sh\n" * 100, "it is not a well-formed object ("),
    (lambda data: b"", "it is not a well-formed object ("),
])
def test_a_truncated_or_foreign_file_is_refused(damage, reason, tmp_path):
    obj = compile_object(tmp_path, "plain", DEFINES_READ)
    obj.write_bytes(damage(obj.read_bytes()))
    assert refusal(obj).startswith(reason)


def test_a_link_in_place_of_the_object_is_refused(tmp_path):
    obj = compile_object(tmp_path, "plain", DEFINES_READ)
    link = tmp_path / "link.o"
    link.symlink_to(obj)
    assert refusal(link).startswith("it could not be opened")


def test_the_time_limit_refuses(tmp_path):
    obj = compile_object(tmp_path, "plain", DEFINES_READ)
    assert refusal(obj, limits=ObjectLimits(timeout_s=0.01)) == "reading it took longer than 0.01 s"


def test_the_memory_limit_refuses(tmp_path):
    obj = compile_object(tmp_path, "many_symbols", MANY_SYMBOLS)
    reason = refusal(obj, symbol_patterns=[r"\bcub::"], limits=ObjectLimits(symbols=300_000, memory_bytes=48 * MIB))
    assert reason == "reading it needed more than the 48 MiB of memory the grader allows"


# --- pyelftools where there is no package registry -------------------------------------------------

SYSTEM_PYTHON = "/usr/bin/python3"


@pytest.mark.skipif(not os.access(SYSTEM_PYTHON, os.X_OK) or subprocess.run(
    [SYSTEM_PYTHON, "-c", "import elftools"], capture_output=True).returncode == 0,
    reason=f"needs {SYSTEM_PYTHON} without pyelftools, as on a lent GPU machine")
def test_a_python_without_pyelftools_finds_the_staged_copy_or_says_what_to_do(tmp_path):
    obj = compile_object(tmp_path, "plain", DEFINES_READ)
    import elftools
    staged = tmp_path / "deps" / "python"
    shutil.copytree(Path(elftools.__file__).parent, staged / "elftools")
    script = ("import sys; from pathlib import Path; from cudalab.intake.object_analysis import analyse_object\n"
              "from cudalab.errors import GraderError\n"
              "try: print(analyse_object(Path(sys.argv[1]), deps=[Path(p) for p in sys.argv[2:]]).defined)\n"
              "except GraderError as err: print(err)\n")
    # A copy of the package, so that no staged copy beside this checkout is found either (run
    # from its folder: `python -c` puts the working folder, this checkout's grader/, first).
    shutil.copytree(REPO_ROOT / "grader" / "cudalab", tmp_path / "grader" / "cudalab",
                    ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "grader")}
    with_copy = subprocess.run([SYSTEM_PYTHON, "-c", script, str(obj), str(staged)], env=env, cwd=tmp_path,
                               capture_output=True, text=True)
    assert with_copy.stdout.strip() == "[('read', 'T')]", with_copy.stderr
    without = subprocess.run([SYSTEM_PYTHON, "-c", script, str(obj)], env=env, cwd=tmp_path, capture_output=True,
                             text=True)
    assert without.stdout.startswith("pyelftools is not installed for the Python the grader runs"), without.stderr
    assert "tools/stage-deps.sh" in without.stdout


def test_a_missing_cpp_filt_is_the_graders_trouble_not_the_students(tmp_path, monkeypatch):
    obj = compile_object(tmp_path, "plain", DEFINES_READ)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))
    with pytest.raises(GraderError, match="c\\+\\+filt was not found: install binutils"):
        analyse_object(obj)
    assert sys.executable  # the child itself was found: only c++filt was missing
