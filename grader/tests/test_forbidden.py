"""forbidden: the catalogue's header-only entries (CUTLASS, CUDA's occupancy calculator) are
found in code at their line, and nothing in comments or in the runtime's own occupancy API;
in the compiled object, a finding names the library whose functions the object holds."""
from __future__ import annotations

import dataclasses

from cudalab.intake import forbidden
from cudalab.lab import labspec
from cudalab.intake.object_analysis import analyse_object
from conftest import REPO_ROOT


def spec_forbidding(*libraries: str) -> labspec.LabSpec:
    spec = labspec.load(REPO_ROOT / "labs" / "vector_add" / "lab.toml")
    rules = tuple(labspec.Forbidden(library, f"write it yourself ({library})") for library in libraries)
    allowed = spec.handin.libraries + tuple(key for key in forbidden.LIBRARIES if key not in libraries)
    return dataclasses.replace(spec, handin=dataclasses.replace(spec.handin, forbidden=rules, libraries=allowed))


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


# --- the compiled object: which library a symbol belongs to -------------------------------------------

CUB = "cub::CUB_300001_SM_900"
THRUST = "thrust::THRUST_300001_SM_900_NS"
DEVICE_PTR = f"{THRUST}::device_ptr<unsigned int>"
# What a CUB merge sort of thrust::device_ptr keys instantiates: CUB's kernels, each naming
# Thrust's pointer in its template arguments, and the pointer's own few functions.
CUB_SORT_OF_DEVICE_PTRS = [
    f"void {CUB}::detail::merge_sort::DeviceMergeSortBlockSortKernel<{DEVICE_PTR}, unsigned int*>(bool, {DEVICE_PTR})",
    f"void {CUB}::detail::merge_sort::DeviceMergeSortMergeKernel<{DEVICE_PTR}, unsigned int*>(bool, {DEVICE_PTR})",
    f"void {CUB}::detail::merge_sort::DeviceMergeSortPartitionKernel<{DEVICE_PTR}>(bool, {DEVICE_PTR})",
    f"{DEVICE_PTR}::operator=({DEVICE_PTR} const&)",
    f"{THRUST}::system::detail::sequential::seq",
]
# What thrust::sort instantiates: Thrust's own functions, and the CUB kernels it launches.
THRUST_SORT = [
    f"void {THRUST}::sort<{THRUST}::detail::execute_with_allocator<int>, unsigned int*>(unsigned int*, unsigned int*)",
    f"{THRUST}::cuda_cub::detail::cuda_error_category::name() const",
    f"{THRUST}::system::system_error::~system_error()",
    f"vtable for {THRUST}::system::detail::bad_alloc",
    f"void {CUB}::detail::radix_sort::DeviceRadixSortOnesweepKernel<unsigned int, int>(unsigned int*, int)",
]


def test_a_cub_sort_of_thrust_pointers_is_named_cub():
    spec = spec_forbidding("cub", "thrust")
    findings = forbidden.object_findings(spec, "sort.cu", CUB_SORT_OF_DEVICE_PTRS, [])
    assert [f.message.split(" (", 1)[0] for f in findings] == ["The compiled sort.cu uses CUB"]
    assert "CUB is not allowed in the vector_add lab: write it yourself (cub)" in findings[0].message


def test_thrust_sort_is_still_named_thrust():
    findings = forbidden.object_findings(spec_forbidding("cub", "thrust"), "sort.cu", THRUST_SORT, [])
    assert [f.message.split(" (", 1)[0] for f in findings] == ["The compiled sort.cu uses Thrust"]


def test_a_library_forbidden_alone_is_reported_whatever_pulled_it_in():
    # Entangled libraries yield only to each other when both are forbidden and seen.
    findings = forbidden.object_findings(spec_forbidding("thrust"), "sort.cu", CUB_SORT_OF_DEVICE_PTRS, [])
    assert [f.message.split(" (", 1)[0] for f in findings] == ["The compiled sort.cu uses Thrust"]


def test_the_object_analysis_is_given_the_forbidden_libraries_patterns_only():
    symbol_patterns, string_patterns = forbidden.object_patterns(spec_forbidding("cub", "cublas"))
    assert symbol_patterns == [*forbidden.LIBRARIES["cub"].symbols, *forbidden.LIBRARIES["cublas"].symbols]
    assert string_patterns == list(forbidden.LIBRARIES["cublas"].strings)
    assert forbidden.object_patterns(spec_forbidding()) == ([], [])


def test_a_cub_sort_reached_through_cccl_paths_is_named_cub(tmp_path):
    """The same, compiled: CUDA 13's <cccl/...> paths escape the include patterns, and the
    object is what tells."""
    from test_object_analysis import compile_object
    source = ('#include <cstdint>\n#include <cstddef>\n'
              '#include <cccl/cub/device/device_merge_sort.cuh>\n#include <cccl/thrust/device_ptr.h>\n'
              'struct Less { __device__ bool operator()(std::uint32_t a, std::uint32_t b) const { return a < b; } };\n'
              'using Keys = thrust::device_ptr<std::uint32_t>;\n'
              'void sort_keys(std::uint32_t* keys, std::size_t n, void* workspace, std::size_t bytes) {\n'
              '    cub::DeviceMergeSort::SortKeys(workspace, bytes, Keys(keys), (int)n, Less{});\n}\n')
    obj = compile_object(tmp_path, "sort", source)
    spec = spec_forbidding("cub", "thrust")
    symbol_patterns, string_patterns = forbidden.object_patterns(spec)
    analysis = analyse_object(obj, symbol_patterns=symbol_patterns, string_patterns=string_patterns)
    assert sum("thrust::" in name for name in analysis.library_symbols) > sum(
        "cub::" in name for name in analysis.library_symbols)  # by mentions alone, Thrust would be named
    findings = forbidden.object_findings(spec, "sort.cu", analysis.library_symbols, analysis.library_strings)
    assert [f.message.split(" (", 1)[0] for f in findings] == ["The compiled sort.cu uses CUB"]


def test_the_harness_loaders_count_as_their_libraries():
    # labkit::Cublas and labkit::Npp load the baselines for the official binaries; a
    # submission that declares them again and calls them is using cuBLAS or NPP.
    source = ("namespace labkit { class Cublas { public: static Cublas* load(); }; }\n"
              "void f() { labkit :: Cublas::load(); }\n"
              "void g() { labkit::Npp::load(); }\n")
    findings = forbidden.source_findings(spec_forbidding("cublas", "npp"), {"transpose.cu": source})
    assert [(f.line, f.message.split(". ", 1)[0]) for f in findings] == [
        (2, "transpose.cu:2 uses labkit :: Cublas"), (3, "transpose.cu:3 uses labkit::Npp")]
    calls = ["labkit::Cublas::load()", "labkit::Npp::load()", "labkit::CublasLike::load()"]
    findings = forbidden.object_findings(spec_forbidding("cublas", "npp"), "transpose.cu", calls, [])
    assert [f.message.split(". ", 1)[0] for f in findings] == [
        "The compiled transpose.cu uses cuBLAS (labkit::Cublas::load())",
        "The compiled transpose.cu uses NPP (labkit::Npp::load())"]
