"""cudalab.grading.sanitizer: compute-sanitizer's command line, and its reports read into findings at
the student's line.

The sample reports are real where a source is named above them (NVIDIA's Compute Sanitizer
manual, docs.nvidia.com/compute-sanitizer/ComputeSanitizer, the 2025-2026 edition, or a
public report quoted as printed); the others are written in a documented format with the
file names of this course's labs, and say which format they follow.
"""
from __future__ import annotations

import dataclasses
import os
import stat
from pathlib import Path

import pytest

from cudalab.grading import sanitizer
from cudalab.grading.sanitizer import (ERROR_EXIT_CODE, TOOLS, Finding, error_summary_count, find_sanitizer,
                               parse_report, sanitizer_argv)

# ------------------------------------------------------------------ student files

VECTOR_ADD = """\
// Lab 1: vector addition.
#include "vector_add.hpp"

__global__ void add(const float* a, const float* b, float* c, std::size_t n) {
    const std::size_t i = blockIdx.x * blockDim.x + threadIdx.x;
    // The bounds check is missing:
    //     if (i >= n) return;
    (void)n;
    // ...
    // so the last threads write past the end of c.
    //
    c[i] = a[i] + b[i];
}
""".splitlines()

REDUCTION = [f"// line {n}" for n in range(1, 81)]
REDUCTION[24] = "    partial[threadIdx.x] = x;"                  # line 25
REDUCTION[29] = "    if (threadIdx.x == 0) s = partial[1];"     # line 30
REDUCTION[39] = "    *out = total[0] + total[1];"               # line 40
REDUCTION[69] = "    acc = load_tile(in, head + 4096);"         # line 70

SCAN = [f"// line {n}" for n in range(1, 31)]
SCAN[8] = "    data[threadIdx.x] = 0;"                        # line 9
SCAN[16] = "        __syncthreads();"                         # line 17

STUDENT = {"vector_add.cu": VECTOR_ADD, "reduction.cu": REDUCTION, "scan.cu": SCAN}


def only(findings: list[Finding]) -> Finding:
    assert len(findings) == 1, [f.sentence for f in findings]
    return findings[0]


# ------------------------------------------------------------------ memcheck

# NVIDIA's manual, "memcheck_demo Output with Memcheck (Debug Build)" and "Leak Checking in
# Compute Sanitizer" (2025.1 and later print bare file names: --strip-paths defaults to yes).
MEMCHECK_DEMO = """\
$ make run_memcheck
========= COMPUTE-SANITIZER
Mallocing memory
========= Invalid __global__ write of size 4 bytes
=========     at unaligned_kernel()+0x100 in memcheck_demo.cu:34
=========     by thread (0,0,0) in block (0,0,0)
=========     Address 0x7cc43aa00001 is misaligned
=========     and is inside the nearest allocation at 0x7cc43aa00000 of size 4 bytes
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: run_unaligned() [0xacd4] in memcheck_demo
=========         Host Frame: main [0xae61] in memcheck_demo
=========
Running unaligned_kernel: no error
========= Invalid __global__ write of size 4 bytes
=========     at out_of_bounds_function()+0xb0 in memcheck_demo.cu:39
=========     by thread (0,0,0) in block (0,0,0)
=========     Address 0x87654320 is out of bounds
=========     and is 137,179,965,340,896 bytes before the nearest allocation at 0x7cc43a800000 of size 1,024 bytes
=========     Device Frame: out_of_bounds_kernel()+0x30 in memcheck_demo.cu:44
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: run_out_of_bounds() [0xadb6] in memcheck_demo
=========         Host Frame: main [0xae66] in memcheck_demo
=========
Running out_of_bounds_kernel: no error
========= Leaked 1,024 bytes at 0x7879c0800000
=========     Saved host backtrace up to driver entry point at allocation time
=========         Host Frame: cudaMalloc [0x56624] in memcheck_demo
=========         Host Frame: main [0xae5c] in memcheck_demo
=========
========= LEAK SUMMARY: 1024 bytes leaked in 1 allocations
========= ERROR SUMMARY: 3 errors
"""


def test_memcheck_sample_from_the_manual():
    demo = {"memcheck_demo.cu": [f"line {n}" for n in range(1, 80)]}
    misaligned, out_of_bounds, leak = parse_report("memcheck", MEMCHECK_DEMO, demo)

    assert (misaligned.kind, misaligned.file, misaligned.line) == ("misaligned", "memcheck_demo.cu", 34)
    assert misaligned.sentence == ("misaligned write of 4 bytes at memcheck_demo.cu:34 in unaligned_kernel(), "
                                   "thread (0,0,0) block (0,0,0): the address must be a multiple of 4")
    assert misaligned.source_line == "line 34"

    # The faulting helper is on line 39; the kernel that called it (line 44) comes after.
    assert (out_of_bounds.kind, out_of_bounds.line, out_of_bounds.function) == (
        "out_of_bounds_write", 39, "out_of_bounds_function()")
    assert out_of_bounds.sentence == ("out-of-bounds write of 4 bytes at memcheck_demo.cu:39 in "
                                      "out_of_bounds_function(), thread (0,0,0) block (0,0,0)")

    assert (leak.kind, leak.file, leak.size, leak.count) == ("leak", None, 1024, 1)
    assert leak.sentence == "device memory leak: 1024 bytes allocated with cudaMalloc, never released with cudaFree"
    assert error_summary_count(MEMCHECK_DEMO) == 3


# The 2023.3-and-later format (NVIDIA's manual, "Understanding Memcheck Errors" and the demo
# above), run with --strip-paths no so the path shows the sandbox's /cudalab/src; the API
# error line is the manual's "CUDA API error" format.
VECTOR_ADD_REPORT = """\
========= COMPUTE-SANITIZER
case n_1000: 1000 elements
========= Invalid __global__ write of size 4 bytes
=========     at add(const float *, const float *, float *, unsigned long)+0x90 in /cudalab/src/vector_add.cu:12
=========     by thread (1023,0,0) in block (0,0,0)
=========     Address 0x7f3a2e000ffc is out of bounds
=========     and is 92 bytes after the nearest allocation at 0x7f3a2e000000 of size 4,000 bytes
=========
========= Invalid __global__ write of size 4 bytes
=========     at add(const float *, const float *, float *, unsigned long)+0x90 in /cudalab/src/vector_add.cu:12
=========     by thread (1022,0,0) in block (0,0,0)
=========     Address 0x7f3a2e000ff8 is out of bounds
=========     and is 88 bytes after the nearest allocation at 0x7f3a2e000000 of size 4,000 bytes
=========
========= Invalid __global__ write of size 4 bytes
=========     at add(const float *, const float *, float *, unsigned long)+0x90 in /cudalab/src/vector_add.cu:12
=========     by thread (1021,0,0) in block (0,0,0)
=========     Address 0x7f3a2e000ff4 is out of bounds
=========     and is 84 bytes after the nearest allocation at 0x7f3a2e000000 of size 4,000 bytes
=========
========= Program hit cudaErrorLaunchFailure (error 719) due to "unspecified launch failure" on CUDA API call to cudaDeviceSynchronize.
=========
========= ERROR SUMMARY: 25 errors
========= ERROR SUMMARY: 0 errors were not printed. Use --print-limit option to adjust the number of printed errors
"""

OUT_OF_BOUNDS = "out-of-bounds write of 4 bytes at vector_add.cu:12 in add(), thread (1023,0,0) block (0,0,0)"
API_ERROR = ("CUDA call cudaDeviceSynchronize() failed with cudaErrorLaunchFailure "
             "(unspecified launch failure)")


def test_repeats_of_one_error_fold_into_one_finding_at_the_students_line():
    write, api = parse_report("memcheck", VECTOR_ADD_REPORT, STUDENT)

    assert write == Finding(tool="memcheck", kind="out_of_bounds_write", file="vector_add.cu", line=12,
                            function="add()", thread="(1023,0,0)", block="(0,0,0)", size=4, count=3,
                            sentence=OUT_OF_BOUNDS, source_line="c[i] = a[i] + b[i];")
    assert (api.kind, api.file, api.line, api.count) == ("api_error", None, None, 1)
    assert api.sentence == API_ERROR
    assert error_summary_count(VECTOR_ADD_REPORT) == 25


def test_the_older_location_format_reads_the_same():
    # compute-sanitizer up to 2023.2 printed "at 0xOFFSET in FILE:LINE:FUNCTION(...)".
    old = VECTOR_ADD_REPORT.replace(
        "at add(const float *, const float *, float *, unsigned long)+0x90 in /cudalab/src/vector_add.cu:12",
        "at 0x90 in /cudalab/src/vector_add.cu:12:add(const float *, const float *, float *, unsigned long)")
    assert old != VECTOR_ADD_REPORT
    assert parse_report("memcheck", old, STUDENT) == parse_report("memcheck", VECTOR_ADD_REPORT, STUDENT)


def test_bare_file_names_as_printed_by_default_since_2025_1():
    stripped = VECTOR_ADD_REPORT.replace("/cudalab/src/vector_add.cu", "vector_add.cu")
    write = parse_report("memcheck", stripped, STUDENT)[0]
    assert (write.file, write.line, write.sentence) == ("vector_add.cu", 12, OUT_OF_BOUNDS)


def test_the_prefix_with_varied_spacing_and_line_ends():
    lines = VECTOR_ADD_REPORT.splitlines()
    varied = []
    for number, line in enumerate(lines):
        body = line[len("========="):] if line.startswith("=========") else None
        if body is None:
            varied.append(line)
        elif number % 3 == 0:
            varied.append("  ========" + body.replace("     ", "\t", 1))
        elif number % 3 == 1:
            varied.append("==========" + body.lstrip())
        else:
            varied.append("=========" + "  " + body)
    text = "\r\n".join(varied) + "\r\n"
    assert parse_report("memcheck", text, STUDENT) == parse_report("memcheck", VECTOR_ADD_REPORT, STUDENT)
    assert error_summary_count(text) == 25


def test_a_report_run_together_on_one_line_as_the_manual_shows_it():
    # NVIDIA's manual, "Understanding Memcheck Errors", prints its first sample on one line,
    # with the "kernel():0xOFFSET" form.
    text = ("========= Invalid __global__ write of size 4 bytes ========= at unaligned_kernel():0x160 in "
            "memcheck_demo.cu:6 ========= by thread (0,0,0) in block (0,0,0) ========= Address "
            "0x7f6510c00001 is misaligned")
    finding = only(parse_report("memcheck", text, {"memcheck_demo.cu": []}))
    assert (finding.kind, finding.file, finding.line, finding.function) == (
        "misaligned", "memcheck_demo.cu", 6, "unaligned_kernel()")
    assert finding.source_line is None  # the line is past the end of the (empty) file given


def test_a_fault_in_official_code_is_placed_at_the_students_caller():
    # Device backtrace (--show-backtrace device): the first frame is an official helper, the
    # next one the student's call. Format as in the manual's memcheck demo.
    text = """\
========= Invalid __global__ read of size 16 bytes
=========     at load_tile(const float *, unsigned long)+0x70 in /cudalab/sdk/labkit/device.cuh:40
=========     by thread (5,0,0) in block (2,0,0)
=========     Address 0x7f0000010000 is out of bounds
=========     Device Frame: reduce_sum_kernel(const float *, unsigned long, float *)+0x2b0 in /cudalab/src/reduction.cu:70
=========
"""
    finding = only(parse_report("memcheck", text, STUDENT))
    assert (finding.file, finding.line, finding.function) == ("reduction.cu", 70, "reduce_sum_kernel()")
    assert finding.sentence == ("out-of-bounds read of 16 bytes at reduction.cu:70 in reduce_sum_kernel(), "
                                "thread (5,0,0) block (2,0,0)")
    assert finding.source_line == "acc = load_tile(in, head + 4096);"


# NVIDIA/cuCollections issue #539 (2024), as printed: a fault inside Thrust, a header no
# student wrote. The report has no frame in a student file.
CUCOLLECTIONS = """\
========= COMPUTE-SANITIZER
Randomness seeded to: 840931458
========= Invalid __global__ write of size 1 bytes
=========     at void thrust::cuda_cub::assign_value<thrust::cuda_cub::tag, thrust::device_ptr<bool>, const bool *>(thrust::cuda_cub::execution_policy<T1> &, T2, T3)::war_nvbugs_881631::device_path(thrust::cuda_cub::execution_policy<thrust::cuda_cub::tag> &, thrust::device_ptr<bool>, const bool *)+0xd0 in /home/yunsongw/Work/cuCollections/build/_deps/cccl-src/thrust/thrust/system/cuda/detail/assign_value.h:58
=========     by thread (0,0,0) in block (0,0,0)
=========     Address 0x7b3c42e0000a is out of bounds
=========     and is 1 bytes after the nearest allocation at 0x7b3c42e00000 of size 10 bytes
=========     Device Frame:void thrust::cuda_cub::assign_value<thrust::cuda_cub::tag, thrust::device_ptr<bool>, const bool *>(thrust::cuda_cub::execution_policy<T1> &, T2, T3)+0xd0 in /home/yunsongw/Work/cuCollections/build/_deps/cccl-src/thrust/thrust/system/cuda/detail/assign_value.h:62
"""


def test_a_report_in_no_student_file_keeps_a_short_place():
    finding = only(parse_report("memcheck", CUCOLLECTIONS, STUDENT))
    assert (finding.kind, finding.file, finding.line, finding.source_line) == (
        "out_of_bounds_write", None, None, None)
    assert finding.function == "assign_value<...>()"
    assert finding.sentence == ("out-of-bounds write of 1 byte at assign_value.h:58 (outside your files) in "
                                "assign_value<...>(), thread (0,0,0) block (0,0,0)")


def test_a_file_of_the_students_name_outside_their_folder_is_not_theirs():
    text = VECTOR_ADD_REPORT.replace("/cudalab/src/vector_add.cu", "/cudalab/sdk/vector_add.cu")
    write = parse_report("memcheck", text, STUDENT)[0]
    assert (write.file, write.line) == (None, None)
    assert write.sentence.startswith("out-of-bounds write of 4 bytes at vector_add.cu:12 (outside your files)")
    escaped = VECTOR_ADD_REPORT.replace("/cudalab/src/vector_add.cu", "/cudalab/src/../sdk/vector_add.cu")
    assert parse_report("memcheck", escaped, STUDENT)[0].file is None


# Reports without line information (no -lineinfo), as printed in 2025: ORNL/HeCBench issue
# #131 (CUDA 12.9, "Access at ... is out of bounds") and a LeetGPU write-up ("Access to").
NO_LINE_INFO = """\
========= COMPUTE-SANITIZER
========= Invalid __global__ write of size 8 bytes
=========     at compress(const unsigned int *, const unsigned int *, uint2 *, int)+0x4bd0
=========     by thread (16,0,0) in block (0,0,0)
=========     Access at 0x0 is out of bounds
=========     and is 140229602181120 bytes before the nearest allocation at 0x7f89bfa00000 of size 1020 bytes
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: cudaLaunchKernel [0x4e5a1] in main
=========
========= Invalid __shared__ write of size 4 bytes
=========     at max_kernel(const float *, float *, int)+0x100
=========     by thread (272,0,0) in block (0,0,0)
=========     Access to 0x440 is out of bounds
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: solve [0xad93] in 11_runner
"""


def test_reports_without_line_information():
    global_write, shared_write = parse_report("memcheck", NO_LINE_INFO, STUDENT)
    assert global_write.sentence == "out-of-bounds write of 8 bytes in compress(), thread (16,0,0) block (0,0,0)"
    assert (global_write.file, global_write.line, global_write.size) == (None, None, 8)
    assert shared_write.sentence == ("out-of-bounds shared-memory write of 4 bytes in max_kernel(), "
                                     "thread (272,0,0) block (0,0,0)")


def test_a_truncated_report_gives_what_can_be_read():
    # A public write-up (cuda-training-series hw12 notes) quoting two lines of a report, the
    # first without its prefix: no thread, no address, so no telling out of bounds from
    # misaligned.
    text = ("Invalid __shared__ read of size 4 bytes\n"
            "=========     at 0x578 in /home/XXX/code/cuda-training-series/exercises/hw12/task1.cu:120:"
            "MatMulKernel(Matrix, Matrix, Matrix)\n")
    finding = only(parse_report("memcheck", text, {"task1.cu": []},
                                inside_src="/home/XXX/code/cuda-training-series/exercises/hw12"))
    assert (finding.kind, finding.file, finding.line, finding.thread) == ("invalid_read", "task1.cu", 120, None)
    assert finding.sentence == "invalid shared-memory read of 4 bytes at task1.cu:120 in MatMulKernel()"

    # Output cut in the middle of a line, as when the process was killed.
    cut = VECTOR_ADD_REPORT[:VECTOR_ADD_REPORT.index("(1022,0,0)") + 4]
    write = only(parse_report("memcheck", cut, STUDENT))
    assert (write.sentence, write.count) == (OUT_OF_BOUNDS, 2)
    assert error_summary_count(cut) is None
    header_cut = "========= Invalid __glo"
    assert parse_report("memcheck", header_cut, STUDENT) == []


@pytest.mark.parametrize("text", ["", "\n\n", "=========\n=========", "garbage \x00\xff ((( ::: 0x",
                                  "========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n",
                                  b"\xff\xfe binary \x00", None, 12])
def test_nothing_to_read_gives_no_findings(text):
    assert parse_report("memcheck", text, STUDENT) == []


def test_summary_and_noise_lines_are_not_findings():
    text = """\
========= COMPUTE-SANITIZER
========= Error: process didn't terminate successfully
========= Target application returned an error
========= LEAK SUMMARY: 0 bytes leaked in 0 allocations
========= ERROR SUMMARY: 3 errors
"""
    assert parse_report("memcheck", text, STUDENT) == []
    assert error_summary_count(text) == 3


def test_api_errors_from_the_manual():
    # NVIDIA's manual: "Understanding Memcheck Errors" (an error named in words) and
    # "API error suppression" (a runtime error code), as printed.
    text = """\
========= Program hit invalid copy direction for memcpy (error 21) on CUDA API call to cudaMemcpy.
========= Program hit cudaErrorMemoryAllocation (error 2) due to "out of memory" on CUDA API call to cudaMalloc.
========= Program hit cudaErrorMemoryAllocation (error 2) due to "out of memory" on CUDA API call to cudaMalloc.
"""
    copy, malloc = parse_report("memcheck", text, STUDENT)
    assert copy.sentence == "CUDA call cudaMemcpy() failed with invalid copy direction for memcpy"
    assert (malloc.kind, malloc.count) == ("api_error", 2)
    assert malloc.sentence == "CUDA call cudaMalloc() failed with cudaErrorMemoryAllocation (out of memory)"


def test_program_output_between_reports_is_skipped():
    text = VECTOR_ADD_REPORT.replace("case n_1000: 1000 elements", "=== case n_1000 ===\nRESULT: at 3 in x.cu:1")
    assert parse_report("memcheck", text, STUDENT) == parse_report("memcheck", VECTOR_ADD_REPORT, STUDENT)


def test_student_files_given_as_text():
    files = {"vector_add.cu": "\n".join(VECTOR_ADD)}
    assert parse_report("memcheck", VECTOR_ADD_REPORT, files)[0].source_line == "c[i] = a[i] + b[i];"


def test_a_hardware_exception_keeps_its_own_words():
    # Format not confirmed from a real CUDA 13 sample: an imprecise error's first line is the
    # hardware's own message (the manual: "Hardware exceptions have a variety of formats"),
    # followed by the usual location and thread lines.
    text = """\
========= Warp Illegal Address
=========     at fill(int *)+0x50 in /cudalab/src/scan.cu:9
=========     by thread (0,0,0) in block (3,0,0)
=========
"""
    finding = only(parse_report("memcheck", text, STUDENT))
    assert finding.kind == "other"
    assert finding.sentence == 'GPU error "Warp Illegal Address" at scan.cu:9 in fill(), thread (0,0,0) block (3,0,0)'
    assert finding.source_line == "data[threadIdx.x] = 0;"


def test_at_most_twenty_findings_in_order_of_first_appearance():
    report = "".join(
        f"========= Invalid __global__ read of size 4 bytes\n"
        f"=========     at finish(float *)+0x{line:x} in /cudalab/src/reduction.cu:{line}\n"
        f"=========     by thread (0,0,0) in block (0,0,0)\n"
        f"=========     Address 0x10 is out of bounds\n"
        for line in range(1, 31))
    findings = parse_report("memcheck", report + report, STUDENT)
    assert len(findings) == sanitizer.MAX_FINDINGS == 20
    assert [f.line for f in findings] == list(range(1, 21))
    assert {f.count for f in findings} == {2}


def test_a_finding_is_frozen_and_turns_into_json():
    finding = parse_report("memcheck", VECTOR_ADD_REPORT, STUDENT)[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        finding.count = 7  # type: ignore[misc]
    assert finding.to_json() == {
        "tool": "memcheck", "kind": "out_of_bounds_write", "file": "vector_add.cu", "line": 12,
        "function": "add()", "thread": "(1023,0,0)", "block": "(0,0,0)", "size": 4, "count": 3,
        "sentence": OUT_OF_BOUNDS, "source_line": "c[i] = a[i] + b[i];"}


# ------------------------------------------------------------------ racecheck

# NVIDIA's manual, "Block-level Hazards" (--racecheck-report analysis), as printed.
BLOCK_ERROR = """\
$ make run_block_error
========= COMPUTE-SANITIZER
========= Error: Race reported between Write access at sumKernel(int *, int *)+0x90 in /home/cuda/github/compute-sanitizer-samples/Racecheck/block_error.cu:41
=========     and Read access at sumKernel(int *, int *)+0x100 in /home/cuda/github/compute-sanitizer-samples/Racecheck/block_error.cu:51 [508 hazards]
=========
========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)
"""


def test_racecheck_analysis_record_from_the_manual():
    finding = only(parse_report("racecheck", BLOCK_ERROR, {"block_error.cu": []},
                                inside_src="/home/cuda/github/compute-sanitizer-samples/Racecheck"))
    assert (finding.tool, finding.kind, finding.file, finding.line) == ("racecheck", "race_shared", "block_error.cu", 41)
    assert finding.sentence == ("shared-memory race (write at block_error.cu:41, read at block_error.cu:51) "
                                "in sumKernel(): add __syncthreads() between them")
    assert error_summary_count(BLOCK_ERROR) == 1


def test_racecheck_analysis_in_the_lab_layout():
    # The analysis format above, at the sandbox's paths.
    text = """\
========= Error: Race reported between Write access at reduce(const float *, float *, unsigned long)+0x1a0 in /cudalab/src/reduction.cu:25
=========     and Read access at reduce(const float *, float *, unsigned long)+0x220 in /cudalab/src/reduction.cu:30 [8 hazards]
=========
========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)
"""
    finding = only(parse_report("racecheck", text, STUDENT))
    assert finding == Finding(
        tool="racecheck", kind="race_shared", file="reduction.cu", line=25, function="reduce()", thread=None,
        block=None, size=None, count=1,
        sentence=("shared-memory race (write at reduction.cu:25, read at reduction.cu:30) in reduce(): "
                  "add __syncthreads() between them"),
        source_line="partial[threadIdx.x] = x;")


def test_racecheck_analysis_with_several_other_accesses():
    # A public write-up of a CuTe DSL race, quoted without the prefix: one write, four reads.
    text = """\
Error: Race reported between Write access at ...+0x430 in racecheck_repro_1d_bulk.py:46
    and Read access at ...+0x770 in racecheck_repro_1d_bulk.py:55 [248 hazards]
    and Read access at ...+0x7a0 in racecheck_repro_1d_bulk.py:55 [248 hazards]
    and Read access at ...+0x7d0 in racecheck_repro_1d_bulk.py:55 [248 hazards]
    and Read access at ...+0x800 in racecheck_repro_1d_bulk.py:55 [248 hazards]
"""
    finding = only(parse_report("racecheck", text, {"racecheck_repro_1d_bulk.py": []}))
    assert (finding.file, finding.line) == ("racecheck_repro_1d_bulk.py", 46)
    assert finding.sentence.startswith("shared-memory race (write at racecheck_repro_1d_bulk.py:46, "
                                       "read at racecheck_repro_1d_bulk.py:55) in ")


# NVIDIA's manual, "Warp-level Hazards" (--racecheck-report hazard), as printed, then the
# same hazard on the next byte of the same int: two hazards, one finding.
WARP_ERROR = """\
========= Warning: (Warp Level Programming) Potential RAW hazard detected at __shared__ 0x8c in block (0,0,0) :
=========     Write Thread (35,0,0) at sumKernel(int *, int *)+0x90 in /home/cuda/github/compute-sanitizer-samples/Racecheck/warp_error.cu:44
=========     Read Thread (32,0,0) at sumKernel(int *, int *)+0x120 in /home/cuda/github/compute-sanitizer-samples/Racecheck/warp_error.cu:56
=========     Current Value : 35
========= Warning: (Warp Level Programming) Potential RAW hazard detected at __shared__ 0x8d in block (0,0,0) :
=========     Write Thread (35,0,0) at sumKernel(int *, int *)+0x90 in /home/cuda/github/compute-sanitizer-samples/Racecheck/warp_error.cu:44
=========     Read Thread (32,0,0) at sumKernel(int *, int *)+0x120 in /home/cuda/github/compute-sanitizer-samples/Racecheck/warp_error.cu:56
=========     Current Value : 0
"""


def test_two_hazards_fold_into_one_finding():
    finding = only(parse_report("racecheck", WARP_ERROR, {"warp_error.cu": []},
                                inside_src="/home/cuda/github/compute-sanitizer-samples/Racecheck"))
    assert (finding.kind, finding.file, finding.line, finding.count) == ("race_shared", "warp_error.cu", 44, 2)
    assert (finding.thread, finding.block) == ("(35,0,0)", "(0,0,0)")
    assert finding.sentence == ("shared-memory race (write at warp_error.cu:44, read at warp_error.cu:56) "
                                "in sumKernel(): add __syncwarp() between them")


def test_a_write_write_hazard_from_the_manual():
    # NVIDIA's manual, "Understanding Racecheck Hazard Reports".
    text = """\
========= ERROR: Potential WAW hazard detected at __shared__ 0x0 in block (0,0,0) :
========= Write Thread (0,0,0) at WAW()+0x2f0 in raceWAW.cu:20
========= Write Thread (1,0,0) at WAW()+0x2f0 in raceWAW.cu:20
========= Current Value : 1, Incoming Value : 2
"""
    finding = only(parse_report("racecheck", text, {"raceWAW.cu": []}))
    assert (finding.file, finding.line, finding.thread) == ("raceWAW.cu", 20, "(0,0,0)")
    assert finding.sentence == ("shared-memory race (write at raceWAW.cu:20 by several threads) in WAW(): "
                                "let only one thread write each location, or add __syncthreads() between the writes")


def test_the_cuda_memcheck_era_hazard_format():
    # cuda-memcheck's racecheck (kept in a public CMake test log): "WARN:(...)" with no space,
    # "(31, 0, 0)" with spaces, and "at 0xOFFSET in ./FILE:LINE:FUNCTION".
    text = """\
========= CUDA-MEMCHECK
========= WARN:(Warp Level Programming) Potential WAR hazard detected at __shared__ 0x3 in block (0, 0, 0) :
=========     Read Thread (31, 0, 0) at 0x00000170 in ./race.cu:4:test(int*, int*)
=========     Write Thread (0, 0, 0) at 0x000001a8 in ./race.cu:4:test(int*, int*)
=========     Current Value : 0, Incoming Value : 0
=========     Saved host backtrace up to driver entry point at kernel launch time
=========     Host Frame:/lib64/libcuda.so.1 (cuLaunchKernel + 0x346) [0x297db6]
"""
    finding = only(parse_report("racecheck", text, {"race.cu": ["int a;"] * 4}))
    assert (finding.file, finding.line, finding.thread, finding.block) == ("race.cu", 4, "(31,0,0)", "(0,0,0)")
    assert finding.sentence == "shared-memory race (read at race.cu:4, write at race.cu:4) in test(): add __syncwarp() between them"
    assert finding.source_line == "int a;"


def test_a_race_in_official_code_only():
    text = BLOCK_ERROR.replace("/home/cuda/github/compute-sanitizer-samples/Racecheck/", "/cudalab/sdk/labkit/")
    finding = only(parse_report("racecheck", text, STUDENT))
    assert (finding.file, finding.line) == (None, None)
    assert finding.sentence == ("shared-memory race (write at block_error.cu:41, read at block_error.cu:51) "
                                "in sumKernel(): add __syncthreads() between them")


# ------------------------------------------------------------------ initcheck

# NVIDIA's manual, "Memset Error" (initcheck), as printed.
MEMSET_ERROR = """\
$ make run_initcheck
========= Uninitialized __global__ memory read of size 4 bytes
========= at vectorAdd(int *)+0x70 in /home/cuda/github/compute-sanitizer-samples/Initcheck/memset_error.cu:41
========= by thread (31,0,0) in block (1,0,0)
========= Address 0x7f3c7ec000fc
"""


def test_initcheck_sample_from_the_manual():
    finding = only(parse_report("initcheck", MEMSET_ERROR, {"memset_error.cu": []},
                                inside_src="/home/cuda/github/compute-sanitizer-samples/Initcheck/"))
    assert (finding.kind, finding.file, finding.line) == ("uninitialized_read", "memset_error.cu", 41)
    assert finding.sentence == ("read of uninitialised global memory (4 bytes) at memset_error.cu:41 in vectorAdd(), "
                                "thread (31,0,0) block (1,0,0)")


def test_initcheck_in_the_lab_layout_with_unprinted_errors():
    # The format above; the two summary lines are as a public test file quotes them.
    text = """\
========= COMPUTE-SANITIZER
========= Uninitialized __global__ memory read of size 4 bytes
=========     at finish(const float *, float *)+0x130 in /cudalab/src/reduction.cu:40
=========     by thread (0,0,0) in block (0,0,0)
=========     Address 0x7f3c7ec00004
=========
========= ERROR SUMMARY: 257 errors
========= ERROR SUMMARY: 157 errors were not printed. Use --print-limit option to adjust the number of printed errors
"""
    finding = only(parse_report("initcheck", text, STUDENT))
    assert finding.sentence == ("read of uninitialised global memory (4 bytes) at reduction.cu:40 in finish(), "
                                "thread (0,0,0) block (0,0,0)")
    assert finding.source_line == "*out = total[0] + total[1];"
    assert error_summary_count(text) == 257


def test_initcheck_in_the_2023_format():
    # A course write-up (GPGPUTasks 2023, compute-sanitizer 2023.1.1), as printed.
    text = """\
========= Uninitialized __global__ memory read of size 4 bytes
=========     at 0x100 in /home/polarnick/coding/forks/GPGPUTasks2023/src/cl/52_sum.cl:30:sum_gpu_2(const int *, int *, unsigned int)
=========     by thread (98,0,0) in block (194,0,0)
=========     Address 0x7fbbca800000
=========     Saved host backtrace up to driver entry point at kernel launch time
=========     Host Frame: [0x32e990]
=========                in /lib/x86_64-linux-gnu/libcuda.so.1
=========     Host Frame:/home/polarnick/coding/forks/GPGPUTasks2023/src/cu/52_sum.cu:19:cuda_sum_gpu_2(gpu::WorkSize const&, int const*, int*, unsigned int, CUstream_st*) [0x221ae]
=========                in /home/polarnick/coding/forks/GPGPUTasks2023/cmake-build-relwithdebinfo/main52_sum
"""
    finding = only(parse_report("initcheck", text, {"52_sum.cl": []},
                                inside_src="/home/polarnick/coding/forks/GPGPUTasks2023/src/cl"))
    assert (finding.file, finding.line, finding.function) == ("52_sum.cl", 30, "sum_gpu_2()")
    assert (finding.thread, finding.block) == ("(98,0,0)", "(194,0,0)")


# ------------------------------------------------------------------ synccheck

def test_synccheck_divergent_block_in_the_lab_layout():
    # The format of NVIDIA's manual, "Understanding Synccheck Reports".
    text = """\
========= Barrier error detected. Divergent thread(s) in block.
=========     at scan_block(float *, unsigned long)+0x2c0 in /cudalab/src/scan.cu:17
=========     by thread (32,0,0) in block (0,0,0)
=========
========= ERROR SUMMARY: 1 error
"""
    finding = only(parse_report("synccheck", text, STUDENT))
    assert finding == Finding(
        tool="synccheck", kind="sync_divergent", file="scan.cu", line=17, function="scan_block()",
        thread="(32,0,0)", block="(0,0,0)", size=None, count=1,
        sentence="__syncthreads() reached by only part of a block at scan.cu:17 in scan_block()",
        source_line="__syncthreads();")
    assert error_summary_count(text) == 1


def test_synccheck_divergent_threads_from_the_manual():
    # NVIDIA's manual, "Divergent Threads", as printed.
    text = """\
$ make run_divergent_threads
========= Barrier error detected. Divergent thread(s) in block.
========= at [clone myKernel(int *, int *)] outlineSync()+0x11f0 in test.cu:42
========= by thread (32,0,0) in block (0,0,0)
========= Device Frame: myKernel(int *, int *)+0xe40 in test.cu:60
=========
"""
    finding = only(parse_report("synccheck", text, {"test.cu": []}))
    assert (finding.kind, finding.file, finding.line, finding.function) == ("sync_divergent", "test.cu", 42, "outlineSync()")


def test_synccheck_invalid_arguments_placed_at_the_students_frame():
    # NVIDIA's manual, "Illegal Syncwarp", as printed: the first two frames are CUDA's own.
    text = """\
$ make run_illegal_syncwarp
========= Barrier error detected. Invalid arguments
========= at __cuda_sm70_warpsync+0x30
========= by thread (0,0,0) in block (0,0,0)
========= Device Frame:__syncwarp(unsigned int)+0xf0 in /usr/local/cuda/include/sm_30_intrinsics.hpp:110
========= Device Frame:myKernel(int *)+0x3c0 in /home/cuda/github/compute-sanitizer-samples/Synccheck/illegal_syncwarp.cu:48
"""
    finding = only(parse_report("synccheck", text, {"illegal_syncwarp.cu": []},
                                inside_src="/home/cuda/github/compute-sanitizer-samples/Synccheck"))
    assert (finding.kind, finding.file, finding.line, finding.function) == (
        "sync_invalid_arguments", "illegal_syncwarp.cu", 48, "myKernel()")
    assert finding.sentence == ("barrier called with invalid arguments at illegal_syncwarp.cu:48 in myKernel(): "
                                "every thread that calls __syncwarp(mask) must be in mask")

    # The same, as quoted in a public test file from 2025 (stripped header path, deeper
    # indentation of the device frame).
    quoted = """\
========= COMPUTE-SANITIZER
========= Barrier error detected. Invalid arguments.
=========     at __syncwarp(unsigned int)+0xe0 in sm_30_intrinsics.hpp:110
=========         Device Frame: broken_sync(float *, unsigned long)+0xb0 in /input/kernel.cu:12
"""
    finding = only(parse_report("synccheck", quoted, {"kernel.cu": []}, inside_src="/input"))
    assert (finding.file, finding.line, finding.function) == ("kernel.cu", 12, "broken_sync()")


def test_synccheck_divergent_warp_repeats_fold():
    # A public CUDA course's expected output (divergent __syncthreads() within a warp), as
    # printed with host backtraces on.
    text = """\
=========
========= Barrier error detected. Divergent thread(s) in warp.
=========     at illegal_sync_kernel(int *)+0xa0 in 09_debug_and_sanitizer.cu:61
=========     by thread (19,0,0) in block (0,0,0)
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: main [0x1754] in 01_cuda_basics_09_debug_and_sanitizer
=========
========= Barrier error detected. Divergent thread(s) in warp.
=========     at illegal_sync_kernel(int *)+0xa0 in 09_debug_and_sanitizer.cu:61
=========     by thread (21,0,0) in block (0,0,0)
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: main [0x1754] in 01_cuda_basics_09_debug_and_sanitizer
=========
"""
    finding = only(parse_report("synccheck", text, {"09_debug_and_sanitizer.cu": []}))
    assert (finding.kind, finding.count, finding.thread) == ("sync_divergent_warp", 2, "(19,0,0)")
    assert finding.sentence == ("__syncthreads() or __syncwarp() reached by only part of a warp at "
                                "09_debug_and_sanitizer.cu:61 in illegal_sync_kernel()")


# ------------------------------------------------------------------ summaries

@pytest.mark.parametrize("text, count", [
    ("========= ERROR SUMMARY: 0 errors\n", 0),
    ("========= ERROR SUMMARY: 1 error\n", 1),
    ("  ========ERROR SUMMARY: 1,024 errors\r\n", 1024),
    ("========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n", 0),
    ("========= RACECHECK SUMMARY: 3 hazards displayed (1 error, 2 warnings)\n", 3),
    ("========= ERROR SUMMARY: 2 errors\nchild\n========= ERROR SUMMARY: 1 error\n", 3),
    ("========= LEAK SUMMARY: 10 bytes leaked in 1 allocations\n", None),
    ("no summary at all", None),
    ("", None),
])
def test_error_summary_count(text, count):
    assert error_summary_count(text) == count


# ------------------------------------------------------------------ the command

@pytest.mark.parametrize("tool, extra", [
    ("memcheck", ["--padding", "32", "--report-api-errors", "explicit"]),
    ("racecheck", ["--racecheck-report", "analysis"]),
    ("initcheck", []),
    ("synccheck", []),
])
def test_sanitizer_argv(tool, extra):
    argv = sanitizer_argv(Path("/usr/local/cuda/bin/compute-sanitizer"), tool, ["./lab", "--case", "n_1"])
    assert argv == ["/usr/local/cuda/bin/compute-sanitizer", "--tool", tool, "--error-exitcode", "86",
                    "--print-limit", "100", "--show-backtrace", "device", "--check-exit-code", "no",
                    "--strip-paths", "no", *extra, "--", "./lab", "--case", "n_1"]


def test_sanitizer_argv_options():
    assert ERROR_EXIT_CODE == 86 and set(TOOLS) == {"memcheck", "racecheck", "initcheck", "synccheck"}
    argv = sanitizer_argv("cs", "synccheck", [Path("lab")], keep_paths=False, log_file="/tmp/r.txt")
    assert argv == ["cs", "--tool", "synccheck", "--error-exitcode", "86", "--print-limit", "100",
                    "--show-backtrace", "device", "--check-exit-code", "no", "--log-file", "/tmp/r.txt",
                    "--", "lab"]
    with pytest.raises(ValueError, match="unknown sanitizer tool"):
        sanitizer_argv("cs", "leakcheck", ["lab"])
    with pytest.raises(ValueError, match="no program"):
        sanitizer_argv("cs", "memcheck", [])


# ------------------------------------------------------------------ finding the tool

def _fake_tool(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    tool = directory / "compute-sanitizer"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    return tool


@pytest.fixture
def no_system_cuda(monkeypatch, tmp_path):
    """Nothing on PATH and no toolkit but what a test makes under tmp_path."""
    monkeypatch.setenv("PATH", str(tmp_path / "empty-path"))
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setattr(sanitizer, "TOOLKIT_ROOTS", (str(tmp_path / "cuda"),))
    monkeypatch.setattr(sanitizer, "TOOLKIT_GLOBS", (str(tmp_path / "cuda-*"),))
    return tmp_path


def test_find_sanitizer_none(no_system_cuda):
    assert find_sanitizer() is None
    (no_system_cuda / "cuda" / "bin").mkdir(parents=True)
    (no_system_cuda / "cuda" / "bin" / "compute-sanitizer").write_text("not executable")
    assert find_sanitizer() is None


def test_find_sanitizer_order(no_system_cuda, monkeypatch):
    root = no_system_cuda
    old = _fake_tool(root / "cuda-12.9" / "bin")
    newest = _fake_tool(root / "cuda-12.10" / "compute-sanitizer")
    assert find_sanitizer() == newest
    assert old != newest
    default = _fake_tool(root / "cuda" / "bin")
    assert find_sanitizer() == default
    home = _fake_tool(root / "home" / "bin")
    monkeypatch.setenv("CUDA_HOME", str(root / "home"))
    assert find_sanitizer() == home
    on_path = _fake_tool(root / "on-path")
    monkeypatch.setenv("PATH", str(root / "on-path"))
    assert find_sanitizer() == on_path
    extra = _fake_tool(root / "extra")
    assert find_sanitizer([root / "missing", root / "extra"]) == extra
    assert find_sanitizer(root / "extra") == extra
    assert os.access(extra, os.X_OK)


def test_never_raises_on_cut_or_shuffled_reports():
    import random
    rng = random.Random(86)
    samples = [MEMCHECK_DEMO, VECTOR_ADD_REPORT, CUCOLLECTIONS, NO_LINE_INFO, BLOCK_ERROR, WARP_ERROR, MEMSET_ERROR]
    for sample in samples:
        for cut in range(0, len(sample), 11):
            for tool in TOOLS:
                assert isinstance(parse_report(tool, sample[:cut], STUDENT), list)
            parse_report("memcheck", sample[cut:], STUDENT)
        lines = sample.splitlines()
        for _ in range(20):
            rng.shuffle(lines)
            assert len(parse_report("memcheck", "\n".join(lines), STUDENT)) <= sanitizer.MAX_FINDINGS
    assert parse_report("memcheck", VECTOR_ADD_REPORT, {"vector_add.cu": None}, inside_src=None)[0].file == "vector_add.cu"
    assert [f.file for f in parse_report("memcheck", VECTOR_ADD_REPORT, ["not", "a", "mapping"])] == [None, None]
