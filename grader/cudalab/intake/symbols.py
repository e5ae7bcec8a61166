"""Only the API crosses the link: a student's object may define the lab's API functions
and its own helpers, and nothing that the official side of the link defines.

A submission is compiled to one object and linked with the official harness: every
official object first (the harness's main, labkit, the lab library), then the student's
object, then the archives and shared libraries (libcudart_static.a, libstdc++, libm,
libc...). A strong definition beats a weak one, and a definition in the program beats a
shared library's; so a student's `write`, `operator new` or strong copy of an inline
labkit function would quietly replace the official one, and one of
`cudaEventElapsedTime` or `labkit::summarise` would at best break the link with a message
that blames no one. The rules, for each external symbol the student's object defines:

- `main` is always refused: the harness provides it.
- An API function (a name the harness calls that nothing official defines) is allowed.
- A strong definition is refused when anything official defines the name, strong or weak.
- A weak definition (an inline function, a template instantiation, a vtable: emitted in
  COMDAT groups) is refused when something official defines the name strong: a shared
  library's definition would lose to it. Two weak copies of std::vector<float>::... or
  of an inline labkit function are ordinary C++, and the official copy, linked first,
  is the one kept.

`build_index` reads the official side once per official build (nm over the official
objects, the runtime archives and the shared libraries' dynamic symbols) into a
SymbolIndex; `check_symbols` then judges the symbols one student object defines against
it with dictionary look-ups. The student's object is never read through nm: a build reads
its ELF symbol table whole (cudalab/intake/object_analysis.py), because nm's listing passes
through the sandbox's output cap and the student's file decides how long it is.

This module uses the standard library only, because CMake runs it before anything is
installed: ``python3 -m cudalab.intake.symbols index --out FILE.json --harness-main OBJ
--official OBJ...`` (``python3 -m cudalab.intake.symbol_check --index FILE.json OBJ`` judges one
object by hand, and needs the grader's dependencies). The official side may keep nm: its files are instructor
code, and nm runs here as a trusted process whose whole output is read.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

SCHEMA = "cudalab.symbols/1"

C_LIBRARY = "the C library"
GCC_RUNTIME = "the GCC runtime"

# nm's type letters for weak definitions: W (weak function), V (weak object) and u (a GNU
# unique object: a static local of an inline function or a template's static member).
# All three live in COMDAT groups, where the linker keeps the first copy it sees.
_WEAK_KINDS = frozenset("WVu")

# A defined symbol in `nm -P` output is "name type value size", the size left empty for
# some ("__dso_handle D 0 "). Read from the end, so a name with spaces in it (an asm label
# can make one) is still read whole; a value such as "c" is never taken for a type letter.
_NM_DEFINED = re.compile(r"^(?P<name>.+) (?P<kind>[A-Za-z]) [0-9a-f]+ (?:[0-9a-f]+)?$")
_NM_UNDEFINED = re.compile(r"^(?P<name>.+) U *$")

# Names GNU ld defines by itself, in no object or library. A PIC harness object refers to
# _GLOBAL_OFFSET_TABLE_; without this it would pass for an API function.
_LINKER_DEFINED = ("_GLOBAL_OFFSET_TABLE_", "_DYNAMIC", "__ehdr_start", "_TLS_MODULE_BASE_")

# nvcc's host stub for a kernel: _Z<length>__device_stub__<the kernel's name without its
# leading underscore><parameters>.
_DEVICE_STUB = re.compile(r"^_Z(\d+)__device_stub__")


class SymbolToolError(RuntimeError):
    """nm could not read an object or library; the message names the file and the reason."""


@dataclass(frozen=True)
class SymbolIndex:
    """What the official side of the link defines, read once per official build."""

    api: frozenset[str]  # mangled names of the lab's API functions
    strong: dict[str, str]  # name -> origin label of the first official strong definition
    weak: dict[str, str]  # name -> origin label of an official weak one (no strong one anywhere)

    def to_json(self) -> dict:
        return {"schema": SCHEMA, "api": sorted(self.api),
                "strong": dict(sorted(self.strong.items())),
                "weak": dict(sorted(self.weak.items()))}

    @classmethod
    def from_json(cls, data) -> SymbolIndex:
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            raise ValueError(f"this is not a {SCHEMA} symbol index: rebuild the official tree "
                             "(cudalab build) to write a current one.")
        api, strong, weak = data.get("api"), data.get("strong"), data.get("weak")
        if not (isinstance(api, list) and isinstance(strong, dict) and isinstance(weak, dict)):
            raise ValueError("the symbol index lacks its 'api' list or its 'strong' or 'weak' "
                             "table: rebuild the official tree (cudalab build).")
        return cls(frozenset(api), dict(strong), dict(weak))


@dataclass(frozen=True)
class Violation:
    symbol: str  # the raw (mangled) name, as the symbol table holds it
    demangled: str
    origin: str | None  # who defines it officially; None for main
    sentence: str


# --- reading nm ---------------------------------------------------------------------------

def _nm() -> str:
    return shutil.which("nm") or "nm"


def nm_defined_argv(obj: Path) -> list[str]:
    """The nm command listing the external symbols `obj` defines, in POSIX format."""
    return [_nm(), "-P", "--defined-only", "--extern-only", "--no-sort", str(obj)]


def _nm_dynamic_argv(library: Path) -> list[str]:
    # A shared library's dynamic symbol table is what the linker binds against.
    return [_nm(), "-D", "-P", "--defined-only", "--extern-only", "--no-sort", str(library)]


def _nm_undefined_argv(obj: Path) -> list[str]:
    return [_nm(), "-P", "--undefined-only", "--no-sort", str(obj)]


def parse_nm(text: str) -> list[tuple[str, str]]:
    """(name, type letter) of each defined external symbol in `nm -P` output.

    Lines for undefined or local symbols and an archive's member headers are skipped.
    Global symbols are the upper-case letters; 'u' (GNU unique) and 'i' (indirect function)
    are global too, though lower case."""
    symbols = []
    for line in text.splitlines():
        match = _NM_DEFINED.match(line)
        if match is None:
            continue
        kind = match["kind"]
        if (kind.isupper() and kind != "U") or kind in "ui":
            symbols.append((match["name"], kind))
    return symbols


def _unversioned(name: str) -> str:
    """'memcpy@@GLIBC_2.14' -> 'memcpy': a versioned definition still owns the bare name."""
    return name.split("@", 1)[0]


def _run_nm(argv: list[str]) -> str:
    try:
        result = subprocess.run(argv, capture_output=True, text=True, errors="replace", timeout=300)
    except FileNotFoundError:
        raise SymbolToolError("nm was not found: install binutils, which the build needs anyway.") from None
    except subprocess.TimeoutExpired:
        raise SymbolToolError(f"nm took longer than 300 s on {argv[-1]} and was stopped.") from None
    if result.returncode != 0:
        reason = (result.stderr.strip().splitlines() or ["no message"])[-1]
        raise SymbolToolError(f"nm could not read {argv[-1]} (exit {result.returncode}): {reason}")
    return result.stdout


# --- the official side ----------------------------------------------------------------------

def _official_origin(obj: Path) -> str:
    # Only the object's own name and its two folders count: a checkout that happens to
    # live under a folder called "labkit-course" must not make every object labkit's.
    return "labkit" if any("labkit" in part for part in Path(obj).parts[-3:]) else "the lab library"


def build_index(*, harness_main: Path, official_objects: Sequence[Path | tuple[Path, str]],
                runtime_archives: Sequence[tuple[Path, str]],
                shared_libraries: Sequence[tuple[Path, str]]) -> SymbolIndex:
    """Read what the official side of the link defines, and the lab's API.

    harness_main is the object holding main(); the API is what it calls that nothing
    official defines. official_objects are the other official objects (plain .o files):
    a bare path is labelled "labkit" when its name or its two folders mention labkit, else
    "the lab library"; a (path, label) pair sets the label. The earliest definition in link
    order names the origin: the harness, the other official objects, the runtime archives,
    then the shared libraries (whose dynamic symbol tables are read)."""
    harness_main = Path(harness_main)
    sources: list[tuple[list[str], str]] = [(nm_defined_argv(harness_main), "the harness")]
    seen = {harness_main.resolve()}
    for entry in official_objects:
        path, origin = (Path(entry[0]), entry[1]) if isinstance(entry, tuple) else (Path(entry), None)
        if path.resolve() in seen:
            continue
        seen.add(path.resolve())
        sources.append((nm_defined_argv(path), origin or _official_origin(path)))
    sources += [(nm_defined_argv(Path(path)), origin) for path, origin in runtime_archives]
    sources += [(_nm_dynamic_argv(Path(path)), origin) for path, origin in shared_libraries]

    strong = dict.fromkeys(_LINKER_DEFINED, "the linker")
    weak: dict[str, str] = {}
    for argv, origin in sources:
        for raw, kind in parse_nm(_run_nm(argv)):
            table = weak if kind in _WEAK_KINDS else strong
            table.setdefault(_unversioned(raw), origin)
    weak = {name: origin for name, origin in weak.items() if name not in strong}

    called = {_unversioned(match["name"])
              for line in _run_nm(_nm_undefined_argv(harness_main)).splitlines()
              if (match := _NM_UNDEFINED.match(line))}
    api = frozenset(name for name in called if name not in strong and name not in weak)
    if not api:
        raise SymbolToolError(f"{harness_main} calls nothing that the official objects and "
                              "libraries leave undefined, so it shows no lab API: pass the "
                              "object that holds the harness's main() as the harness main.")
    return SymbolIndex(api, strong, weak)


def _compiler_file(name: str) -> Path | None:
    """Where the host compiler (nvcc links with it) finds `name`; None when it does not."""
    for compiler in ("g++", "gcc", "cc"):
        if shutil.which(compiler):
            try:
                out = subprocess.run([compiler, f"-print-file-name={name}"], capture_output=True,
                                     text=True, timeout=60).stdout.strip()
            except (OSError, subprocess.SubprocessError):
                return None
            # gcc answers with the bare name when it has no such file.
            path = Path(out)
            return path if path.is_absolute() and path.is_file() else None
    return None


def _libc_script_members() -> list[Path]:
    """The files libc.so (a linker script on glibc) links: libc.so.6, libc_nonshared.a
    (atexit and friends live there) and the dynamic loader."""
    script = _compiler_file("libc.so")
    if script is None:
        return []
    try:
        text = script.read_bytes()
    except OSError:
        return []
    if text.startswith(b"\x7fELF"):
        return [script]
    return [Path(p) for p in re.findall(r"/[^\s()]+", text.decode("utf-8", "replace"))
            if Path(p).is_file()]


def cuda_library_dirs() -> list[Path]:
    """The library folders of the CUDA toolkit: the one nvcc on PATH belongs to, else
    CUDA_PATH, else /usr/local/cuda."""
    roots = []
    nvcc = shutil.which("nvcc")
    if nvcc:
        roots.append(Path(nvcc).resolve().parent.parent)
    if os.environ.get("CUDA_PATH"):
        roots.append(Path(os.environ["CUDA_PATH"]))
    roots.append(Path("/usr/local/cuda"))
    dirs = []
    for root in roots:
        dirs += [root / "lib64", root / "lib", *sorted(root.glob("targets/*/lib")),
                 *sorted(root.glob("lib/*-linux-gnu"))]
    return dirs


def _first_file(candidates: Iterable[Path]) -> Path | None:
    return next((path for path in candidates if path.is_file()), None)


def _deduplicated(entries: Iterable[tuple[Path | None, str]]) -> list[tuple[Path, str]]:
    kept, seen = [], set()
    for path, origin in entries:
        if path is not None and path.resolve() not in seen:
            seen.add(path.resolve())
            kept.append((path, origin))
    return kept


def default_runtime_archives() -> list[tuple[Path, str]]:
    """The static pieces a link adds besides the official objects: libcudart_static.a of
    the CUDA toolkit nvcc uses, libc_nonshared.a, libgcc.a and the C start-up files.
    Missing ones are skipped."""
    cudart = _first_file(d / "libcudart_static.a" for d in cuda_library_dirs())
    entries: list[tuple[Path | None, str]] = [(cudart, "the CUDA runtime")]
    entries += [(p, C_LIBRARY) for p in _libc_script_members() if p.suffix == ".a"]
    entries.append((_compiler_file("libgcc.a"), GCC_RUNTIME))
    entries += [(_compiler_file(name), "the C start-up code")
                for name in ("crt1.o", "Scrt1.o", "crti.o", "crtn.o")]
    entries += [(_compiler_file(name), GCC_RUNTIME)
                for name in ("crtbegin.o", "crtbeginS.o", "crtend.o", "crtendS.o")]
    return _deduplicated(entries)


def default_shared_libraries() -> list[tuple[Path, str]]:
    """The shared libraries a submission links against: the C, math, GCC and C++
    libraries the host compiler uses (with the dynamic loader, which libc.so names too),
    and the CUDA driver's stub libcuda.so. Missing ones are skipped."""
    entries: list[tuple[Path | None, str]] = [
        (_compiler_file("libc.so.6"), C_LIBRARY),
        (_compiler_file("libm.so.6"), "the math library"),
        (_compiler_file("libgcc_s.so.1"), GCC_RUNTIME),
        (_compiler_file("libstdc++.so.6"), "the C++ library"),
    ]
    entries += [(p, C_LIBRARY) for p in _libc_script_members() if ".so" in p.name]
    entries.append((_first_file(d / "stubs" / "libcuda.so" for d in cuda_library_dirs()),
                    "the CUDA driver"))
    return _deduplicated(entries)


def write_index(index: SymbolIndex, path: Path) -> None:
    """Write the index as JSON atomically: a build reading it never sees half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=path.parent,
                                     prefix=f".{path.name}.", suffix=".tmp", delete=False) as handle:
        try:
            json.dump(index.to_json(), handle, indent=1)
            handle.write("\n")
        except BaseException:
            os.unlink(handle.name)
            raise
    os.chmod(handle.name, 0o644)  # a temporary file is private; the grader may run as another user
    os.replace(handle.name, path)


def read_index(path: Path) -> SymbolIndex:
    return SymbolIndex.from_json(json.loads(Path(path).read_text(encoding="utf-8")))


# --- judging a student's object ------------------------------------------------------------

def demangle(names: Iterable[str], *, strict: bool = False) -> dict[str, str]:
    """Raw name -> demangled name, with one c++filt call for all of them. Where c++filt is
    missing or fails, each name maps to itself: the raw name still says which symbol.
    `strict` raises SymbolToolError instead, for a caller that must not judge raw names
    (a library's namespace is found only in the demangled ones). A name with a line break
    in it (inline assembly can make one) is not a C++ name and maps to itself: c++filt
    reads a line per name."""
    names = list(dict.fromkeys(names))
    plain = [name for name in names if "\n" not in name and "\r" not in name]
    shown = dict(zip(names, names))
    if not plain:
        return shown
    lines: list[str] = []
    tool = shutil.which("c++filt")
    if tool is None and strict:
        raise SymbolToolError("c++filt was not found: install binutils, which the build needs anyway.")
    if tool:
        try:
            result = subprocess.run([tool], input="\n".join(plain) + "\n", capture_output=True,
                                    text=True, errors="replace", timeout=60)
            lines = result.stdout.splitlines()
            if strict and result.returncode != 0:
                raise SymbolToolError(f"c++filt failed (exit {result.returncode})")
        except (OSError, subprocess.SubprocessError) as err:
            if strict:
                raise SymbolToolError(f"c++filt could not be run ({err})") from None
            lines = []
    if len(lines) != len(plain):
        if strict:
            raise SymbolToolError(f"c++filt gave {len(lines)} names for {len(plain)}")
        lines = plain
    shown.update(zip(plain, lines))
    return shown


def _kernel_of_stub(name: str) -> str | None:
    match = _DEVICE_STUB.match(name)
    if match is None:
        return None
    start = len("_Z") + len(match[1])
    identifier = name[start:start + int(match[1])]
    return "_" + identifier[len("__device_stub__"):]


def _listed(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def check_symbols(defined: list[tuple[str, str]], index: SymbolIndex, file_name: str) -> list[Violation]:
    """The violations among the (name, nm's type letter) pairs a student's object defines
    (object_analysis.analyse_object's `defined`), each with a sentence the student can act on."""
    found: list[tuple[str, str | None]] = []
    for raw, kind in defined:
        name = _unversioned(raw)
        if name == "main":
            found.append((raw, None))
        elif name not in index.api:
            origin = index.strong.get(name)
            if origin is None and kind not in _WEAK_KINDS:
                origin = index.weak.get(name)
            if origin is not None:
                found.append((raw, origin))
    if not found:
        return []
    # A kernel's host stub collides exactly when the kernel does: one sentence, for the kernel.
    names = {_unversioned(raw) for raw, _ in found}
    found = [(raw, origin) for raw, origin in found if _kernel_of_stub(_unversioned(raw)) not in names]

    shown = demangle([raw for raw, _ in found] + sorted(index.api))
    api = sorted(shown[name] for name in index.api)
    calls = [signature.split("(", 1)[0] + "()" for signature in api]
    allowed = _listed([*api, "its own helpers"])
    violations = []
    for raw, origin in found:
        if origin is None:
            then = f" and calls your {_listed(calls)}" if calls else ""
            sentence = f"{file_name} defines main(): remove it; the harness provides main{then}."
        else:
            sentence = (f"{file_name} defines {shown[raw]}, which {origin} defines: remove it; "
                        f"your file may define only {allowed} (make helpers static or put them "
                        "in an anonymous namespace).")
        violations.append(Violation(raw, shown[raw], origin, sentence))
    violations.sort(key=lambda v: (v.origin is not None, v.demangled))
    return violations


# --- the command line -----------------------------------------------------------------------

def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python3 -m cudalab.intake.symbols",
                                     description="Only the API crosses the link.")
    verbs = parser.add_subparsers(dest="verb", required=True)
    index = verbs.add_parser("index", help="read the official side of the link into a JSON index")
    index.add_argument("--out", type=Path, required=True, help="the index file to write")
    index.add_argument("--harness-main", type=Path, required=True,
                       help="the official object that holds main() and calls the lab's API")
    index.add_argument("--official", type=Path, nargs="+", action="extend", default=[],
                       metavar="OBJ", help="the other official objects (labkit, the lab library)")
    index.add_argument("--runtime", nargs=2, action="append", metavar=("ARCHIVE", "LABEL"),
                       help="a static archive or object the link adds (default: "
                            "libcudart_static.a, libc_nonshared.a, libgcc.a, the start-up files)")
    index.add_argument("--shared", nargs=2, action="append", metavar=("LIBRARY", "LABEL"),
                       help="a shared library the link uses (default: libc, libm, libgcc_s, "
                            "libstdc++, the CUDA driver stub)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        runtime = ([(Path(p), label) for p, label in args.runtime] if args.runtime
                   else default_runtime_archives())
        shared = ([(Path(p), label) for p, label in args.shared] if args.shared
                  else default_shared_libraries())
        write_index(build_index(harness_main=args.harness_main, official_objects=args.official,
                                runtime_archives=runtime, shared_libraries=shared), args.out)
        return 0
    except (SymbolToolError, OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
