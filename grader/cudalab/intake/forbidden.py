"""Libraries a lab forbids because they would do the lab's work (CUB's DeviceReduce in the
reduction lab, cuBLAS in matmul, ...), caught twice:

* in the source: an #include of the library's headers, its namespace, or its C API names,
  each at its line (comments and string literals are not code and are skipped);
* in the compiled object: symbols from the library's namespace or API, defined (template
  instantiations) or called, and the names of its shared libraries or API functions as
  strings (what dlopen/dlsym would be given). This catches what macros hide from the text.
  The object is read whole by cudalab/intake/object_analysis.py, which is given the patterns
  below (object_patterns) and hands back only what matches them.

The catalogue (catalogue.py) says how to recognise each library; lab.toml's [handin] libraries says
which ones a lab allows, and [[handin.forbidden]] why it refuses some of the others, in words
the student reads. What the compile and the runs can see is libraries.py's.
"""
from __future__ import annotations

import re

from ..lab.catalogue import LIBRARIES, Library
from .handin import Finding
from ..lab.labspec import LabSpec

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
