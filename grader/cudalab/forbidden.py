"""Libraries a lab forbids because they would do the lab's work (CUB's DeviceReduce in the
reduction lab, cuBLAS in matmul, ...), caught twice:

* in the source: an #include of the library's headers, its namespace, or its C API names,
  each at its line (comments and string literals are not code and are skipped);
* in the compiled object: symbols from the library's namespace or API, defined (template
  instantiations) or called, and the names of its shared libraries or API functions as
  strings (what dlopen/dlsym would be given). This catches what macros hide from the text.
  The object is read whole by cudalab/object_analysis.py, which is given the patterns
  below (object_patterns) and hands back only what matches them.

The catalogue below says how to recognise each library; lab.toml's [handin] libraries says
which ones a lab allows, and [[handin.forbidden]] why it refuses some of the others, in words
the student reads. What the compile and the runs can see is libraries.py's.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .handin import Finding
from .labspec import LabSpec


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
_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]')


def code_lines(text: str) -> list[str]:
    """The source's lines with comments and string/char literals blanked out (line numbers
    kept), so a library named in a comment is not a finding. #include lines keep their
    target."""
    out: list[str] = []
    line: list[str] = []
    i, n = 0, len(text)
    state = "code"
    while i < n:
        c = text[i]
        nxt = text[i + 1] if i + 1 < n else ""
        if c == "\n":
            out.append("".join(line))
            line = []
            if state in ("line_comment", "string", "char"):
                state = "code"  # an unterminated literal ends at the line
            i += 1
            continue
        if state == "code":
            if c == "/" and nxt == "/":
                state = "line_comment"
                i += 2
                continue
            if c == "/" and nxt == "*":
                state = "block_comment"
                line.append(" ")
                i += 2
                continue
            if c == '"' and not _INCLUDE.match("".join(line) + '"'):
                state = "string"
                line.append('"')
            elif c == "'":
                state = "char"
                line.append("'")
            else:
                line.append(c)
        elif state == "block_comment":
            if c == "*" and nxt == "/":
                state = "code"
                i += 2
                continue
        elif state in ("string", "char"):
            if c == "\\":
                i += 2
                continue
            if (c == '"' and state == "string") or (c == "'" and state == "char"):
                state = "code"
                line.append(c)
        i += 1
    out.append("".join(line))
    return out


def _forbidden_sentence(spec: LabSpec, library: str, why: str) -> str:
    return f"{LIBRARIES[library].title} is not allowed in the {spec.name} lab: {why}"


def refusal_sentence(spec: LabSpec, library: str) -> str:
    """Why the lab does not allow `library`, in the words the student reads."""
    rule = next((r for r in spec.handin.refused if r.library == library), None)
    if rule is None:
        return f"{LIBRARIES[library].title} is allowed in the {spec.name} lab."
    return _forbidden_sentence(spec, library, rule.why)


def source_findings(spec: LabSpec, sources: dict[str, str]) -> list[Finding]:
    """Each forbidden library's includes and names in the student's files, at their line."""
    findings: list[Finding] = []
    for rule in spec.handin.refused:
        library = LIBRARIES[rule.library]
        for file_name, text in sources.items():
            for number, code in enumerate(code_lines(text), start=1):
                include = _INCLUDE.match(code)
                if include and any(re.search(p, include[1]) for p in library.includes):
                    what = f"includes <{include[1]}>"
                else:
                    match = next((m for p in library.source for m in [re.search(p, code)] if m), None)
                    if match is None:
                        continue
                    what = f"uses {match[0].strip()}"
                findings.append(Finding("forbidden", "error",
                                        f"{file_name}:{number} {what}. "
                                        f"{_forbidden_sentence(spec, rule.library, rule.why)}",
                                        file=file_name, line=number))
    return findings


def object_patterns(spec: LabSpec) -> tuple[list[str], list[str]]:
    """The symbol patterns (on demangled names) and string patterns (on the object's
    printable strings) of the libraries the lab forbids: what the object analysis looks for."""
    libraries = [LIBRARIES[rule.library] for rule in spec.handin.forbidden]
    symbol_patterns = [p for library in libraries for p in library.symbols]
    string_patterns = [p for library in libraries for p in library.strings]
    return list(dict.fromkeys(symbol_patterns)), list(dict.fromkeys(string_patterns))


def _outside_brackets(name: str) -> str:
    """A demangled name without its template arguments, parameters and lambda bodies:
    'void cub::Kernel<thrust::device_ptr<int> >(int*)' -> 'void cub::Kernel'. What is left
    names the entity itself (and its return type), not the types it was made for."""
    kept: list[str] = []
    depth = 0
    for char in name.replace("(anonymous namespace)", "anonymous_namespace"):
        if char in "<({[":
            depth += 1
        elif char in ">)}]":
            depth = max(0, depth - 1)
        elif depth == 0:
            kept.append(char)
    return "".join(kept)


def _owned_by(library: Library, names: list[str]) -> int:
    """How many of the names are the library's own functions and objects: a CUB kernel
    instantiated for thrust::device_ptr keys mentions Thrust, but it is CUB's."""
    return sum(1 for name in names if any(re.search(p, _outside_brackets(name)) for p in library.symbols))


def object_findings(spec: LabSpec, source_name: str, demangled_symbols: list[str],
                    strings: list[str]) -> list[Finding]:
    """Forbidden libraries seen in the compiled object: their symbols (defined or called)
    and the names a dlopen/dlsym would take. One finding per library, with the evidence."""
    found: dict[str, list[str]] = {}
    owned: dict[str, int] = {}
    for rule in spec.handin.refused:
        library = LIBRARIES[rule.library]
        evidence: list[str] = []
        for name in demangled_symbols:
            if any(re.search(p, name) for p in library.symbols):
                evidence.append(name)
        owned[rule.library] = _owned_by(library, evidence)
        for text in strings:
            for pattern in library.strings:
                match = re.search(pattern, text)
                if match and match[0] not in evidence:
                    evidence.append(match[0])
        if evidence:
            found[rule.library] = evidence
    findings = []
    for rule in spec.handin.refused:
        evidence = found.get(rule.library)
        if not evidence:
            continue
        if any(owned.get(other, 0) > owned[rule.library] for other in LIBRARIES[rule.library].entangled_with):
            continue  # brought in by the headers of a library that is reported itself
        shown = sorted(set(evidence), key=len)  # the shortest names say the most at a glance
        sample = "; ".join(_short(e) for e in shown[:3]) + (f"; and {len(shown) - 3} more" if len(shown) > 3 else "")
        findings.append(Finding("forbidden", "error",
                                f"The compiled {source_name} uses {LIBRARIES[rule.library].title} "
                                f"({sample}). {_forbidden_sentence(spec, rule.library, rule.why)}",
                                file=source_name))
    return findings


def _short(name: str, width: int = 90) -> str:
    return name if len(name) <= width else name[:width - 3] + "..."
