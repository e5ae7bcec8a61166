"""The student's compiled object, read whole by the grader, in a process of its own.

The object is made from the student's file, and a file can make its object say almost
anything: top-level inline assembly adds symbols, sections and data at will. So the
grader does not read a tool's listing of it (nm's output passes through the sandbox's
64 KiB output cap, and 4096 labels pushed every later symbol past it); it parses the ELF
symbol table itself, with pyelftools, every entry of it. The parse runs in a child process
with its own memory, CPU and wall-clock limits, because the object is hostile data, and
objects far beyond anything a lab's source compiles to are refused before they are read.

One rule throughout: whenever the reading cannot finish (a limit, a time-out, memory, a
malformed file), the object is refused with a sentence (ObjectRefused), never judged on
what could be read. Only what is truly the grader's trouble (pyelftools or c++filt
missing, Python unable to start) is a GraderError.

The child answers one request: the object's defined external symbols with nm's type
letters (what symbols.check_symbols judges), and, for the forbidden-library check, the
demangled symbol names and the printable strings that match the patterns it is given
(matching happens in the child, so the grader never holds a list of everything).
"""
from __future__ import annotations

import dataclasses
import importlib.util
import io
import json
import os
import re
import resource
import shutil
import stat
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from . import symbols
from ..config import GIB, KIB, MIB
from ..errors import GraderError
from ..isolation.sandbox import _bounded, format_bytes, run_process

SCHEMA = "cudalab.object_analysis/1"


@dataclass(frozen=True)
class ObjectLimits:
    """What the grader agrees to read. Every bound is far above any honest lab object
    (measured with nvcc 13 for sm_90 at -O3: a Thrust sort compiles to 0.5 MB, 532
    symbols, 523 sections, 1,224 strings, and names of at most 353 bytes), so only an
    object blown up on purpose meets one."""

    object_bytes: int = 64 * MIB     # the file; several GPU architectures of a Thrust sort stay under 5 MB
    sections: int = 50_000           # one per COMDAT group: hundreds; below 65,280, so no extended numbering
    symbols: int = 200_000           # hundreds to a few thousand
    name_bytes: int = 64 * KIB       # one symbol's name; CUB's longest mangled names are a few hundred bytes
    all_names_bytes: int = 8 * MIB   # every symbol's name added up: some 100 KB
    strings: int = 1_000_000         # printable runs of five or more (what `strings` lists): a few thousand
    memory_bytes: int = 1 * GIB      # the reading process's address space (RLIMIT_AS); it peaks at
                                     # 25 MB on an honest object, 110 MB on 262,144 symbols
    timeout_s: float = 60.0          # wall clock and CPU time; an honest object takes well under a second

    # What the child may print (and the grader holds): its answer lists the defined symbols
    # (raw and demangled) and the matches only, so it is bounded by all_names_bytes with room
    # for demangled names, which are longer; an honest answer is some 100 KB.
    @property
    def answer_bytes(self) -> int:
        return 4 * self.all_names_bytes + 4 * MIB


DEFAULT_LIMITS = ObjectLimits()


class ObjectRefused(Exception):
    """The object could not be read whole within the limits; `reason` says why, as the end
    of a sentence ("it has 262,144 symbols, more than the 200,000 ...")."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class ObjectAnalysis:
    defined: list[tuple[str, str]]  # (raw name, nm's type letter) of each defined external symbol
    defined_demangled: list[str]    # the same names demangled, in the same order
    library_symbols: list[str]      # demangled names (any symbol) that match a symbol pattern asked for
    library_strings: list[str]      # what a string pattern matched in the object's printable strings


# --- the grader's side --------------------------------------------------------------------------

# The child's exit codes besides 0 (its answer on stdout).
_REFUSED = 3        # the object was refused: {"refused": reason} on stdout
_CANNOT_READ = 4    # the grader's own trouble (a missing tool): the reason on stderr


def analyse_object(obj: Path, *, symbol_patterns: Sequence[str] = (), string_patterns: Sequence[str] = (),
                   limits: ObjectLimits = DEFAULT_LIMITS, deps: Sequence[Path] = ()) -> ObjectAnalysis:
    """Read `obj` whole in a child process under `limits`. Raises ObjectRefused when that
    cannot be done, GraderError when the grader cannot run the reading at all. `deps` are
    folders where pyelftools may be staged (.deps/python on a machine without a registry)."""
    request = {"object": str(obj), "symbol_patterns": list(symbol_patterns),
               "string_patterns": list(string_patterns), "limits": dataclasses.asdict(limits)}
    argv = [sys.executable, "-m", "cudalab.intake.object_analysis", json.dumps(request)]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "PYTHONDONTWRITEBYTECODE": "1",
           "PYTHONPATH": os.pathsep.join(str(p) for p in _python_path(deps))}
    cpu_s = int(limits.timeout_s) + 1
    # RLIMIT_AS is safe here (no CUDA in this process) and bounds c++filt, which inherits it.
    rlimits = [_bounded(resource.RLIMIT_AS, limits.memory_bytes, limits.memory_bytes),
               _bounded(resource.RLIMIT_CPU, cpu_s, cpu_s + 1), _bounded(resource.RLIMIT_CORE, 0, 0)]

    def child_limits() -> None:  # between fork and exec: plain os calls only
        for kind, soft, hard in rlimits:
            resource.setrlimit(kind, (soft, hard))

    result = run_process(argv, timeout_s=limits.timeout_s, output_cap_bytes=limits.answer_bytes,
                         cwd=Path("/"), env=env, preexec_fn=child_limits)
    if result.timed_out:
        raise ObjectRefused(f"reading it took longer than {limits.timeout_s:g} s")
    if result.returncode == 127 and not result.stdout:
        raise GraderError(f"The grader could not start Python to read the compiled object: {result.stderr.strip()}")
    if result.returncode == _CANNOT_READ:
        raise GraderError(result.stderr.strip() or "The grader could not read the compiled object.")
    if result.signal_name is not None:
        what = {"SIGXCPU": f"reading it used more than {cpu_s} s of CPU time",
                "SIGKILL": "the process reading it was killed, most likely for the memory it needed"}
        raise ObjectRefused(what.get(result.signal_name, f"the process reading it ended with {result.signal_name}"))
    try:
        answer = json.loads(result.stdout)
    except ValueError:
        if len(result.stdout) >= limits.answer_bytes:
            raise ObjectRefused(f"what it lists runs past the {format_bytes(limits.answer_bytes)} the grader "
                                "reads of it") from None
        last = (result.stderr.strip().splitlines() or ["no message"])[-1]
        raise ObjectRefused(f"it could not be read (exit {result.returncode}: {last})") from None
    if result.returncode == _REFUSED:
        raise ObjectRefused(str(answer.get("refused")))
    if result.returncode != 0 or answer.get("schema") != SCHEMA:
        raise ObjectRefused(f"it could not be read (exit {result.returncode})")
    return ObjectAnalysis(defined=[(name, kind) for name, kind in answer["defined"]],
                          defined_demangled=list(answer["defined_demangled"]),
                          library_symbols=list(answer["library_symbols"]),
                          library_strings=list(answer["library_strings"]))


def _python_path(deps: Sequence[Path]) -> list[Path]:
    """Where the child finds this package and pyelftools: the folder above cudalab/, the
    folder pyelftools was found in from here, and the staged folders that hold it."""
    paths = [Path(__file__).resolve().parents[2]]
    found = importlib.util.find_spec("elftools")
    if found is not None and found.origin:
        paths.append(Path(found.origin).resolve().parent.parent)
    checkout = Path(__file__).resolve().parents[3]  # <checkout>/grader/cudalab/intake/object_analysis.py
    paths += [Path(d) for d in (*deps, *staged_deps(checkout)) if (Path(d) / "elftools").is_dir()]
    return list(dict.fromkeys(paths))


def staged_deps(root: Path) -> list[Path]:
    """Where tools/stage-deps.sh puts Python dependencies in a checkout at `root`: those with
    compiled parts for this Python's version, then the pure-Python ones."""
    return [Path(root) / ".deps" / f"python-{sys.version_info.major}.{sys.version_info.minor}",
            Path(root) / ".deps" / "python"]


# --- the child: reading the object ----------------------------------------------------------------

# Printable runs as `strings` finds them (no spaces), and their least length.
_PRINTABLE_RUN = re.compile(rb"[\x21-\x7e]{5,}")
# Local symbols that name no code or data: a section's and the source file's.
_NAMELESS_TYPES = frozenset({"STT_SECTION", "STT_FILE"})
# pyelftools's names for the GNU extensions (STB_GNU_UNIQUE and STT_GNU_IFUNC share
# the first OS-specific value).
_GNU_UNIQUE, _GNU_IFUNC = "STB_LOOS", "STT_LOOS"
_SHF_WRITE, _SHF_ALLOC, _SHF_EXECINSTR = 0x1, 0x2, 0x4


class _Refusal(Exception):
    """The object is refused; the message is the reason."""


class _GraderTrouble(Exception):
    """The grader cannot read objects here (a tool is missing); the message says what to do."""


def _read_object(path: str, limit: int) -> bytes:
    """The object's bytes; never through a link, never from anything but a plain file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as err:
        raise _Refusal(f"it could not be opened ({err.strerror})") from None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise _Refusal("it is not a plain file")
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise _Refusal(f"it is larger than the {format_bytes(limit)} the grader reads of a compiled lab file")
    return data


def _kind(symbol, sections: list[tuple[str, int]]) -> str:
    """nm's type letter for a defined global symbol (binutils' rules, in its order)."""
    info, shndx = symbol["st_info"], symbol["st_shndx"]
    if shndx == "SHN_COMMON":
        return "C"
    if info["type"] == _GNU_IFUNC:
        return "i"
    if info["bind"] == "STB_WEAK":
        return "V" if info["type"] == "STT_OBJECT" else "W"
    if info["bind"] == _GNU_UNIQUE:
        return "u"
    if shndx == "SHN_ABS":
        return "A"
    section_type, flags = sections[shndx]
    if flags & _SHF_EXECINSTR:
        return "T"
    if flags & _SHF_ALLOC and flags & _SHF_WRITE:
        return "B" if section_type == "SHT_NOBITS" else "D"
    return "R" if flags & _SHF_ALLOC else "N"


def _symbols(data: bytes, limits: dict) -> list[tuple[str, str | None]]:
    """(name, type letter or None) of every named symbol in the object's symbol table; the
    letter only for defined external symbols. Refuses what is malformed or over a limit."""
    from elftools.elf.elffile import ELFFile

    elf = ELFFile(io.BytesIO(data))
    if elf.elfclass != 64 or elf["e_type"] != "ET_REL":
        raise _Refusal(f"it is not a 64-bit relocatable object (class {elf.elfclass}, type {elf['e_type']})")
    count = elf.num_sections()
    if count > limits["sections"]:
        raise _Refusal(f"it has {count:,} sections, more than the {limits['sections']:,} the grader reads")
    sections, tables = [], []
    for index in range(count):
        header = elf.get_section(index).header
        if header["sh_type"] != "SHT_NOBITS" and header["sh_offset"] + header["sh_size"] > len(data):
            raise _Refusal(f"it is not a well-formed object: section {index} ends past the end of the file")
        sections.append((header["sh_type"], header["sh_flags"]))
        if header["sh_type"] == "SHT_SYMTAB":
            tables.append(header)
    if len(tables) > 1:
        raise _Refusal(f"it is not a well-formed object: it has {len(tables)} symbol tables")
    if not tables:
        return []
    table = tables[0]
    entry_size = elf.structs.Elf_Sym.sizeof()
    if table["sh_entsize"] != entry_size or table["sh_size"] % entry_size:
        raise _Refusal("it is not a well-formed object: its symbol table's entries are not ELF symbols")
    total = table["sh_size"] // entry_size
    if total > limits["symbols"]:
        raise _Refusal(f"it has {total:,} symbols, more than the {limits['symbols']:,} the grader reads")
    link = table["sh_link"]
    if not 0 < link < count or sections[link][0] != "SHT_STRTAB":
        raise _Refusal("it is not a well-formed object: its symbol table names no string table")
    names_header = elf.get_section(link).header
    names = data[names_header["sh_offset"]:names_header["sh_offset"] + names_header["sh_size"]]
    start = table["sh_offset"]
    found: list[tuple[str, str | None]] = []
    name_bytes = 0
    for number in range(total):
        symbol = elf.structs.Elf_Sym.parse(data[start + number * entry_size:start + (number + 1) * entry_size])
        offset = symbol["st_name"]
        local = symbol["st_info"]["bind"] == "STB_LOCAL"
        if offset == 0 or (local and symbol["st_info"]["type"] in _NAMELESS_TYPES):
            continue
        if offset >= len(names):
            raise _Refusal(f"it is not a well-formed object: symbol {number}'s name lies outside its string table")
        end = names.find(b"\0", offset, offset + limits["name_bytes"] + 1)
        if end < 0:
            if names.find(b"\0", offset) < 0:
                raise _Refusal(f"it is not a well-formed object: symbol {number}'s name never ends")
            raise _Refusal(f"symbol {number} has a name longer than the {format_bytes(limits['name_bytes'])} "
                           "the grader reads")
        name_bytes += end - offset
        if name_bytes > limits["all_names_bytes"]:
            raise _Refusal(f"its symbols' names add up to more than the {format_bytes(limits['all_names_bytes'])} "
                           "the grader reads")
        name = names[offset:end].decode("utf-8", errors="replace")
        shndx = symbol["st_shndx"]
        if isinstance(shndx, str) and shndx not in ("SHN_UNDEF", "SHN_ABS", "SHN_COMMON"):
            raise _Refusal(f"it is not a well-formed object: symbol {number} lies in section {shndx}")
        if isinstance(shndx, int) and not 0 <= shndx < count:
            raise _Refusal(f"it is not a well-formed object: symbol {number} lies in a section it does not have")
        # Every binding but local reaches the link (an unknown one counts as a strong definition).
        external = not local and shndx != "SHN_UNDEF"
        found.append((name, _kind(symbol, sections) if external else None))
    return found


def _strings_matching(data: bytes, patterns: Sequence[str], limit: int) -> list[str]:
    """What each pattern matches in the object's printable runs (one pass, nothing kept but
    the matches); refuses an object with more than `limit` runs."""
    if not patterns:
        return []
    compiled = [re.compile(p.encode("ascii")) for p in patterns]
    either = re.compile(b"|".join(b"(?:" + p.pattern + b")" for p in compiled))
    matches: dict[str, None] = {}
    for count, run in enumerate(_PRINTABLE_RUN.finditer(data), start=1):
        if count > limit:
            raise _Refusal(f"it holds more than the {limit:,} strings the grader reads")
        if either.search(run[0]) is None:
            continue
        for pattern in compiled:
            match = pattern.search(run[0])
            if match is not None:
                matches.setdefault(match[0].decode("ascii"), None)
    return list(matches)


def _analyse(request: dict) -> dict:
    limits = request["limits"]
    data = _read_object(request["object"], limits["object_bytes"])
    try:
        found = _symbols(data, limits)
    except _Refusal:
        raise
    except Exception as err:  # pyelftools on a malformed file: any error at all
        raise _Refusal(f"it is not a well-formed object ({type(err).__name__}: {err})") from None
    defined = [(name, kind) for name, kind in found if kind is not None]
    symbol_patterns = [re.compile(p) for p in request["symbol_patterns"]]
    wanted = list(dict.fromkeys(name for name, _ in (found if symbol_patterns else defined)))
    try:
        shown = symbols.demangle(wanted, strict=True)
    except symbols.SymbolToolError as err:
        if shutil.which("c++filt") is None:
            raise _GraderTrouble(f"The grader cannot read compiled objects here: {err}") from None
        raise _Refusal(f"its symbols' names could not be demangled ({err})") from None
    library_symbols = [shown[name] for name in wanted
                       if symbol_patterns and any(p.search(shown[name]) for p in symbol_patterns)]
    return {"schema": SCHEMA, "defined": defined,
            "defined_demangled": [shown[name] for name, _ in defined],
            "library_symbols": library_symbols,
            "library_strings": _strings_matching(data, request["string_patterns"], limits["strings"])}


def main(argv: list[str] | None = None) -> int:
    request = json.loads((sys.argv[1:] if argv is None else argv)[0])
    try:
        import elftools  # noqa: F401  (only to say plainly when it is missing)
    except ImportError:
        print("pyelftools is not installed for the Python the grader runs: install the grader's dependencies "
              "(tools/setup.sh), or on a machine without a package registry copy it in with "
              "tools/stage-deps.sh (into .deps/python).", file=sys.stderr)
        return _CANNOT_READ
    try:
        answer = _analyse(request)
    except _GraderTrouble as trouble:
        print(trouble, file=sys.stderr)
        return _CANNOT_READ
    except _Refusal as refusal:
        print(json.dumps({"refused": str(refusal)}))
        return _REFUSED
    except MemoryError:
        print(json.dumps({"refused": f"reading it needed more than the {format_bytes(request['limits']['memory_bytes'])} "
                                     "of memory the grader allows"}))
        return _REFUSED
    except RecursionError:
        print(json.dumps({"refused": "it is not a well-formed object (nested too deeply to read)"}))
        return _REFUSED
    json.dump(answer, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
