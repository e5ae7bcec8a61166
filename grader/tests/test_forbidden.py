"""forbidden: the catalogue's header-only entries (CUTLASS, CUDA's occupancy calculator) are
found in code at their line, and nothing in comments or in the runtime's own occupancy API."""
from __future__ import annotations

import dataclasses

from cudalab import forbidden, labspec
from conftest import REPO_ROOT


def spec_forbidding(*libraries: str) -> labspec.LabSpec:
    spec = labspec.load(REPO_ROOT / "labs" / "vector_add" / "lab.toml")
    rules = tuple(labspec.Forbidden(library, f"write it yourself ({library})") for library in libraries)
    return dataclasses.replace(spec, handin=dataclasses.replace(spec.handin, forbidden=rules))


def test_cutlass_and_cute_are_found_in_includes_and_code():
    source = ("// cutlass::gemm would do it, but we do not\n"
              "#include <cutlass/gemm/device/gemm.h>\n"
              "using Gemm = cutlass::gemm::device::Gemm<float, int, float, int, float, int>;\n"
              "auto layout = cute::make_layout(4);\n")
    findings = forbidden.source_findings(spec_forbidding("cutlass"), {"matmul.cu": source})
    lines = sorted({f.line for f in findings})
    assert lines == [2, 3, 4]
    assert all("CUTLASS is not allowed" in f.message for f in findings)


def test_the_occupancy_calculator_is_found_but_the_runtime_api_is_not():
    source = ("#include <cuda_occupancy.h>\n"
              "int f() { cudaOccResult r; return cudaOccMaxActiveBlocksPerMultiprocessor(&r, 0, 0, 0, 256, 0); }\n"
              "int g(const void* k) { int n = 0; cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, k, 256, 0); return n; }\n")
    findings = forbidden.source_findings(spec_forbidding("occupancy_calculator"), {"occupancy.cu": source})
    assert sorted({f.line for f in findings}) == [1, 2]


def test_every_catalogue_entry_has_a_title_and_patterns():
    for key, library in forbidden.LIBRARIES.items():
        assert library.title and library.includes and library.source and library.symbols, key


def test_the_object_analysis_is_given_the_forbidden_libraries_patterns_only():
    symbol_patterns, string_patterns = forbidden.object_patterns(spec_forbidding("cub", "cublas"))
    assert symbol_patterns == [*forbidden.LIBRARIES["cub"].symbols, *forbidden.LIBRARIES["cublas"].symbols]
    assert string_patterns == list(forbidden.LIBRARIES["cublas"].strings)
    assert forbidden.object_patterns(spec_forbidding()) == ([], [])
