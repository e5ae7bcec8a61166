"""The catalogue of libraries a lab may allow or forbid: what each is called and how to
recognise it in a submission's code and compiled object (LIBRARIES, which forbidden.py
checks with), and the two every lab allows (BASE_LIBRARIES). lab.toml's [handin] names
these keys; what the compile and the runs can see of each on this machine is libraries.py's.
"""
from __future__ import annotations

from dataclasses import dataclass

# What every lab allows: the CUDA runtime (with the headers it ships, cooperative groups
# among them) and the C++ standard library (with libcu++'s cuda::std, its device form).
BASE_LIBRARIES = ("cuda_runtime", "cxx_standard")
BASE_TITLES = {"cuda_runtime": "the CUDA runtime", "cxx_standard": "the C++ standard library"}


@dataclass(frozen=True)
class Library:
    title: str
    includes: tuple[str, ...]       # regexes on an #include's target
    source: tuple[str, ...]         # regexes on code (comments and strings removed)
    symbols: tuple[str, ...]        # regexes on demangled symbol names
    strings: tuple[str, ...]        # regexes on printable strings in the object
    # Libraries whose headers pull this one's symbols in (Thrust is built on CUB, and CUB's
    # headers bring a few of Thrust's): when both show up in an object, the one that owns
    # more of its functions and objects is the one the student used (_owned_by).
    entangled_with: tuple[str, ...] = ()


_SO = r"\.so(\.\d+)*"
_LIBCUDACXX_NAMES = r"(atomic_ref|atomic|barrier|pipeline|ptx|annotated_ptr|memcpy_async|mr|stream_ref)"
LIBRARIES: dict[str, Library] = {
    # An include may reach CUB and Thrust through the toolkit's cccl/ folder (<cccl/cub/...>).
    "cub": Library("CUB", includes=(r"(^|/)cub/",), source=(r"\bcub\s*::", r"\bnamespace\s+\w+\s*=\s*cub\b",
                                                        r"\busing\s+namespace\s+cub\b"),
                   symbols=(r"\bcub::",), strings=(), entangled_with=("thrust",)),
    "thrust": Library("Thrust", includes=(r"(^|/)thrust/",),
                      source=(r"\bthrust\s*::", r"\bnamespace\s+\w+\s*=\s*thrust\b",
                              r"\busing\s+namespace\s+thrust\b"),
                      symbols=(r"\bthrust::",), strings=(), entangled_with=("cub",)),
    # The harness's own loaders of the cuBLAS and NPP baselines (labkit::Cublas, labkit::Npp,
    # common/labkit/cublas.hpp and npp.hpp) count as the library: a submission that declares
    # them again and calls them is using the library, and its program's loaders load nothing.
    "cublas": Library("cuBLAS", includes=(r"^cublas",), source=(r"\bcublas[A-Z]\w*", r"\blabkit\s*::\s*Cublas\b"),
                      symbols=(r"\bcublas[A-Z]\w*", r"\blabkit::Cublas\b"),
                      strings=(rf"libcublas(Lt)?{_SO}", r"^cublas[A-Z]\w+$")),
    "npp": Library("NPP", includes=(r"^npp",), source=(r"\bnpp[a-z]\w*", r"\blabkit\s*::\s*Npp\b"),
                   symbols=(r"\bnpp[a-z]\w*", r"\blabkit::Npp\b"), strings=(rf"libnpp\w*{_SO}", r"^npp[a-z]\w+$")),
    "cudnn": Library("cuDNN", includes=(r"^cudnn",), source=(r"\bcudnn[A-Z]\w*",),
                     symbols=(r"\bcudnn[A-Z]\w*",), strings=(rf"libcudnn\w*{_SO}", r"^cudnn[A-Z]\w+$")),
    "cufft": Library("cuFFT", includes=(r"^cufft",), source=(r"\bcufft[A-Z]\w*",),
                     symbols=(r"\bcufft[A-Z]\w*",), strings=(rf"libcufft\w*{_SO}", r"^cufft[A-Z]\w+$")),
    "cusparse": Library("cuSPARSE", includes=(r"^cusparse",), source=(r"\bcusparse[A-Z]\w*",),
                        symbols=(r"\bcusparse[A-Z]\w*",), strings=(rf"libcusparse{_SO}", r"^cusparse[A-Z]\w+$")),
    "cusolver": Library("cuSOLVER", includes=(r"^cusolver",), source=(r"\bcusolver[A-Z]\w*",),
                        symbols=(r"\bcusolver[A-Z]\w*",), strings=(rf"libcusolver\w*{_SO}", r"^cusolver[A-Z]\w+$")),
    "curand": Library("cuRAND", includes=(r"^curand",), source=(r"\bcurand[A-Z_]\w*",),
                      symbols=(r"\bcurand[A-Z_]\w*",), strings=(rf"libcurand{_SO}", r"^curand[A-Z]\w+$")),
    "nvjpeg": Library("nvJPEG", includes=(r"^nvjpeg",), source=(r"\bnvjpeg[A-Z]\w*",),
                      symbols=(r"\bnvjpeg[A-Z]\w*",), strings=(rf"libnvjpeg{_SO}", r"^nvjpeg[A-Z]\w+$")),
    "nccl": Library("NCCL", includes=(r"^nccl",), source=(r"\bnccl[A-Z]\w*",),
                    symbols=(r"\bnccl[A-Z]\w*",), strings=(rf"libnccl{_SO}", r"^nccl[A-Z]\w+$")),
    # libcu++'s own extensions (cuda::atomic_ref, cuda::barrier, cuda::pipeline, cuda::ptx),
    # named one by one: cuda::std is the C++ standard library, which every lab allows, and
    # the runtime's cooperative groups bring its symbols into objects that never named it.
    "libcudacxx": Library("libcu++ (the cuda:: extensions of CCCL)", includes=(r"^(cccl/)?cuda/(?!std/)",),
                          source=(rf"\bcuda\s*::\s*{_LIBCUDACXX_NAMES}\b",),
                          symbols=(rf"\bcuda::(__\d+::)?{_LIBCUDACXX_NAMES}\b",), strings=()),
    # Header-only template libraries: seen in includes, code and symbols, never as a .so.
    "cutlass": Library("CUTLASS", includes=(r"^cutlass/", r"^cute/"),
                       source=(r"\bcutlass\s*::", r"\bcute\s*::", r"\bnamespace\s+\w+\s*=\s*(cutlass|cute)\b"),
                       symbols=(r"\bcutlass::", r"\bcute::"), strings=()),
    # CUDA's own host-side occupancy calculator (cuda_occupancy.h): the formula a lab may ask
    # students to write themselves. The runtime's cudaOccupancy* API is not part of it.
    "occupancy_calculator": Library("CUDA's occupancy calculator (cuda_occupancy.h)",
                                    includes=(r"^cuda_occupancy\.h$",), source=(r"\bcudaOcc[A-Z]\w*",),
                                    symbols=(r"\bcudaOcc[A-Z]\w*",), strings=()),
}
