"""Run a lab binary under NVIDIA compute-sanitizer and turn its text report into short
findings a student can act on, each at the line of the student's own file.

The grader runs the process (in the sandbox); this module only finds the tool, builds its
command line and reads what it printed. Reading never raises: a truncated, garbled or empty
report gives the findings that could be read, possibly none.

Report formats handled (compute-sanitizer 2020.1 to 2026.x, CUDA 11 to 13), after the
"========= " prefix that starts every tool line:

* memcheck: "Invalid __global__ write of size 4 bytes", then "at ..." (the location),
  "by thread (t) in block (b)", "Address 0x.. is out of bounds" (or "Access at/to 0x.. is
  ...", or "... is misaligned") and, with device backtraces, "Device Frame: ..." lines;
  "Program hit <error> (error N) due to "<text>" on CUDA API call to <api>."; "Leaked N
  bytes at 0x..."; "Malloc/Free error encountered : ...".
* racecheck: analysis records "Error: Race reported between Write access at LOC" with one
  "and Read access at LOC [N hazards]" line per other party, and hazard records "Error:
  Potential WAW hazard detected at __shared__ 0x0 in block (0,0,0) :" with one "Write Thread
  (t) at LOC" line per party.
* initcheck: "Uninitialized __global__ memory read of size 4 bytes", then as memcheck.
* synccheck: "Barrier error detected. Divergent thread(s) in block.", then as memcheck.

A location ("LOC") comes in four shapes, all read here: "kernel(int *)+0x90 in file.cu:12"
(2023.3 and later), "0x90 in /path/file.cu:12:kernel(int *)" (earlier), "kernel():0x160 in
file.cu:12" (seen in NVIDIA's manual) and "kernel(int *)+0x90" or "0x90 in kernel(int *)"
(no line information). Since 2025.1 paths are cut to the bare file name unless
``--strip-paths no`` is given, which `sanitizer_argv` does, so that a student's file
(under ``/cudalab/src``) is told apart from official code of the same name.
"""
from __future__ import annotations

import dataclasses
import functools
import glob
import os
import posixpath
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator, Mapping, Sequence

from ..isolation.runner import RUN
from ..isolation.sandbox import toolchain_roots

TOOLS = ("memcheck", "racecheck", "initcheck", "synccheck")

ERROR_EXIT_CODE = 86
"""Passed as --error-exitcode, so that "the tool found errors" is told apart from a crash and
from the lab binary's own exit codes (0 to 6)."""

PRINT_LIMIT = 100
"""The tool stops printing after this many reports (its summary still counts them all): the
first reports are the ones a student needs, and the output stays bounded."""

MAX_FINDINGS = 20
"""At most this many distinct findings: more would not be read."""

SANITIZER_NAME = "compute-sanitizer"

# Where CUDA toolkits are installed, newest first within each pattern. Module attributes so
# that tests can point them elsewhere.
TOOLKIT_ROOTS: tuple[str, ...] = ("/usr/local/cuda",)
TOOLKIT_GLOBS: tuple[str, ...] = (
    "/usr/local/cuda-*",
    "/opt/nvidia/cuda*",
    "/opt/nvidia/hpc_sdk/*/*/cuda/*",
    "/opt/nvidia/hpc_sdk/*/*/cuda",
)
# Inside a toolkit: bin/ holds a wrapper or link, compute-sanitizer/ the tool itself.
_TOOLKIT_SUBDIRS = ("bin", "compute-sanitizer")

_MAX_LINE = 4096          # longer lines are cut before they are read: nothing useful is that long
_MAX_RACE_PLACES = 4      # a race sentence names at most this many accesses
_MAX_FUNCTION = 48        # a longer function name has its template arguments shown as <...>


# --------------------------------------------------------------------------- finding


@dataclass(frozen=True)
class Finding:
    """One problem the sanitizer found, folded over all its repeats (same tool, kind, file
    and line), in words a student can act on."""

    tool: str
    kind: str
    file: str | None
    line: int | None
    function: str | None
    thread: str | None
    block: str | None
    size: int | None
    count: int
    sentence: str
    source_line: str | None

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


# --------------------------------------------------------------------------- finding the tool


def find_sanitizer(extra_dirs: Iterable[Path] = ()) -> Path | None:
    """The compute-sanitizer to run, or None when this machine has none.

    Looks in `extra_dirs` first (the caller knows best), then on PATH, then in the toolkit
    named by $CUDA_HOME or $CUDA_PATH, /usr/local/cuda, the newest /usr/local/cuda-*, and
    NVIDIA's /opt/nvidia installs (HPC SDK included)."""
    if isinstance(extra_dirs, (str, os.PathLike)):
        extra_dirs = [extra_dirs]
    for directory in extra_dirs:
        found = _executable_in(Path(directory))
        if found is not None:
            return found
    on_path = shutil.which(SANITIZER_NAME)
    if on_path:
        return Path(on_path)
    for root in toolkit_roots():
        for sub in _TOOLKIT_SUBDIRS:
            found = _executable_in(root / sub)
            if found is not None:
                return found
    return None


def toolkit_roots() -> Iterator[Path]:
    """The CUDA toolkits this machine may have, in the order to look in them: $CUDA_HOME or
    $CUDA_PATH, /usr/local/cuda, then the newest /usr/local/cuda-* first."""
    for variable in ("CUDA_HOME", "CUDA_PATH"):
        value = os.environ.get(variable)
        if value:
            yield Path(value)
    for root in TOOLKIT_ROOTS:
        yield Path(root)
    for pattern in TOOLKIT_GLOBS:
        yield from sorted((Path(p) for p in glob.glob(pattern)), key=_version_key, reverse=True)


def _version_key(path: Path) -> tuple[int, ...]:
    """(13, 0) for cuda-13.0, so that 12.10 sorts after 12.9."""
    return tuple(int(part) for part in re.findall(r"\d+", path.name))


def _executable_in(directory: Path) -> Path | None:
    candidate = directory / SANITIZER_NAME
    try:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    except OSError:
        pass
    return None


# --------------------------------------------------------------------------- the command


def sanitizer_argv(sanitizer: str | Path, tool: str, program: Sequence[str], *,
                   keep_paths: bool = True, log_file: str | Path | None = None) -> list[str]:
    """The full command that runs `program` under `tool`.

    Every option is in NVIDIA's Compute Sanitizer manual ("Command Line Options"):

    * --error-exitcode 86: the tool's exit code when the program succeeded but errors were
      found (the default, 0, would hide them).
    * --print-limit 100: stop printing after 100 reports; the summary still counts them all.
    * --show-backtrace device: device frames, which lead from a helper back to the student's
      line; no host frames, which only show the harness.
    * --check-exit-code no: a program that fails its checks (exit 1) or hits a CUDA error
      (exit 3) is the grader's business; without this the tool adds an error of its own.
    * --strip-paths no (when `keep_paths`): full paths, so /cudalab/src/<file> is known to
      be the student's. The option exists since compute-sanitizer 2025.1 (CUDA 12.8); pass
      keep_paths=False for an older tool.
    * memcheck: --padding 32 (a guard zone after every allocation, so that a write just past
      the end of one array is caught even when the next allocation follows it) and
      --report-api-errors explicit (failed CUDA calls the program made itself, the behaviour
      of every version before 2026.1).
    * racecheck: --racecheck-report analysis (one record per race naming every file:line
      taking part, instead of one per byte).
    * --log-file FILE (when given): the tool's reports go there instead of stdout, away from
      the program's own output.
    """
    if tool not in TOOLS:
        raise ValueError(f"unknown sanitizer tool {tool!r}: expected one of {', '.join(TOOLS)}")
    program = [str(word) for word in program]
    if not program:
        raise ValueError("no program to run under the sanitizer")
    argv = [str(sanitizer), "--tool", tool,
            "--error-exitcode", str(ERROR_EXIT_CODE),
            "--print-limit", str(PRINT_LIMIT),
            "--show-backtrace", "device",
            "--check-exit-code", "no"]
    if keep_paths:
        argv += ["--strip-paths", "no"]
    if tool == "memcheck":
        argv += ["--padding", "32", "--report-api-errors", "explicit"]
    elif tool == "racecheck":
        argv += ["--racecheck-report", "analysis"]
    if log_file is not None:
        argv += ["--log-file", str(log_file)]
    return argv + ["--", *program]


# --------------------------------------------------------------------------- summaries

_ERROR_SUMMARY = re.compile(r"\bERROR SUMMARY:\s*(?P<n>\d[\d,]*)\s+errors?\s*\.?\s*$")
_RACECHECK_SUMMARY = re.compile(r"\bRACECHECK SUMMARY:\s*(?P<n>\d[\d,]*)\s+hazards?\s+displayed")
_ANY_SUMMARY = re.compile(r"\b(?:ERROR|RACECHECK|LEAK) SUMMARY:")


def error_summary_count(text: str) -> int | None:
    """N from "ERROR SUMMARY: N errors" (added up over every checked process), else the
    hazards of "RACECHECK SUMMARY: N hazards displayed (...)", else None (the tool did not
    finish, or this is not its output). The "N errors were not printed" line is not a total."""
    errors = hazards = None
    for line in _lines(text):
        match = _ERROR_SUMMARY.search(line)
        if match:
            errors = (errors or 0) + _number(match["n"])
            continue
        match = _RACECHECK_SUMMARY.search(line)
        if match:
            hazards = (hazards or 0) + _number(match["n"])
    return errors if errors is not None else hazards


# --------------------------------------------------------------------------- reading reports

_PREFIX = re.compile(r"^\s*={5,}(?P<rest>.*)$")
# NVIDIA's HTML manual shows some reports run together on one line: split them again.
_RUN_TOGETHER = re.compile(r"(?<=\S)\s+(?=={5,}(?:\s|$))")

_ACCESS = re.compile(
    r"^(?P<potential>Potential\s+)?Invalid\s+(?P<space>__\w+__)\s+(?P<op>read|write|atomic)\w*"
    r"\s+of\s+size\s+(?P<size>\d[\d,]*)\s+bytes?", re.I)
_UNINIT = re.compile(
    r"^Uninitiali[sz]ed\s+(?P<space>__\w+__)\s+memory\s+read\s+of\s+size\s+(?P<size>\d[\d,]*)\s+bytes?",
    re.I)
_HAZARD_COUNT = r"(?:\s*\[(?P<n>\d[\d,]*)\s+hazards?\])?\s*$"
_RACE_ANALYSIS = re.compile(
    r"^(?P<severity>[A-Za-z]+)\s*:\s*(?:\((?P<note>[^)]*)\)\s*)?Race reported between\s+"
    r"(?P<op>Read|Write)\s+access\s+at\s+(?P<loc>.*?)" + _HAZARD_COUNT, re.I)
_RACE_AND = re.compile(r"^and\s+(?P<op>Read|Write)\s+access\s+at\s+(?P<loc>.*?)" + _HAZARD_COUNT, re.I)
_RACE_HAZARD = re.compile(
    r"^(?P<severity>[A-Za-z]+)\s*:\s*(?:\((?P<note>[^)]*)\)\s*)?Potential\s+(?P<type>RAW|WAR|WAW)"
    r"\s+hazard\s+detected\s+at\s+(?P<space>__\w+__)\s+(?P<address>0x[0-9a-fA-F]+)"
    r"(?:\s+in\s+block\s+\((?P<block>[^)]*)\))?", re.I)
_RACE_THREAD = re.compile(r"^(?P<op>Read|Write)\s+Thread\s+\((?P<thread>[^)]*)\)\s+at\s+(?P<loc>.+?)\s*$", re.I)
_BARRIER = re.compile(r"^Barrier error detected\.?\s*(?P<what>.*?)\.?\s*$", re.I)
_WARPGROUP = re.compile(r"^Warpgroup MMA sequence error detected\.?\s*(?P<what>.*?)\.?\s*$", re.I)
_API = re.compile(
    r"^Program hit\s+(?P<error>.+?)\s+\(error\s+(?P<code>\d+)\)(?:\s+due to\s+\"(?P<message>[^\"]*)\")?"
    r"(?:\s+on CUDA API call to\s+(?P<api>[\w:]+))?", re.I)
_API_CALL = re.compile(r"^on CUDA API call to\s+(?P<api>[\w:]+)", re.I)
_LEAK = re.compile(
    r"^Leaked\s+(?P<size>\d[\d,]*)\s+bytes?\s+at\s+(?P<address>0x[0-9a-fA-F]+)(?P<heap>\s+on the device heap)?",
    re.I)
_MALLOC_FREE = re.compile(r"^Malloc/Free\s+error\s+encountered\s*:\s*(?P<what>.*?)\s*$", re.I)

_AT = re.compile(r"^at\s+(?P<loc>.+?)\s*$")
_DEVICE_FRAME = re.compile(r"^Device Frame\s*:\s*(?P<loc>.+?)\s*$", re.I)
_BY_THREAD = re.compile(r"^by\s+thread\s+\((?P<thread>[^)]*)\)\s+in\s+block\s+\((?P<block>[^)]*)\)", re.I)
_ADDRESS = re.compile(r"^(?:Address|Access\s+(?:at|to))\s+0x[0-9a-fA-F]+(?P<what>.*)$", re.I)
# Lines inside a report that say nothing this module uses ("and is 4 bytes after the
# nearest allocation ...", "Current Value : 1", "Host Frame: ...").
_DETAIL = re.compile(r"^(?:[a-z0-9(\[]|Current Value|Incoming Value|Not written|Saved host|Host Frame"
                     r"|Sync mask|These unused)")

_FILE_LINE = re.compile(r"(?:^|\s)in\s+(?P<file>\S+?):(?P<line>\d+)(?=$|[\s:(\[])")
_LEADING_FILE_LINE = re.compile(r"^(?P<file>[^\s:()]\S*?):(?P<line>\d+)(?::(?P<rest>.*))?$")
_HEX = re.compile(r"^0x[0-9a-fA-F]+$")


@dataclass
class _Frame:
    """One place in device code: the file as printed, its line, and the function."""

    path: str | None
    line: int | None
    function: str | None


@dataclass
class _Access:
    """One party to a shared-memory race."""

    op: str
    frame: _Frame
    thread: str | None = None


@dataclass
class _Raw:
    """One report as printed, before it is matched to the student's files."""

    kind: str                       # access, uninit, race, barrier, warpgroup, api, leak, malloc, other
    match: dict = field(default_factory=dict)
    header: str = ""
    frames: list[_Frame] = field(default_factory=list)
    thread: str | None = None
    block: str | None = None
    address: str | None = None      # what the "Address 0x.. is ..." line says about it
    accesses: list[_Access] = field(default_factory=list)


def parse_report(tool: str, text: str, student_files: Mapping[str, Sequence[str]],
                 inside_src: str = "/cudalab/src") -> list[Finding]:
    """The findings in one compute-sanitizer report, in order of first appearance, repeats
    folded, at most MAX_FINDINGS of them.

    `student_files` maps each of the student's file names to its lines: a report is placed
    at the first of its frames in one of them, and that line's text is quoted. A report
    that reaches no student file is still a finding, with file None and the place it was
    found shortened to a file name. Never raises."""
    # A report that cannot be read must not stop the grading: whatever fails is skipped.
    try:
        raws = _scan(text)
        context = _Context(str(tool or "").strip().lower(), _file_lines(student_files),
                           posixpath.normpath(str(inside_src or "/cudalab/src")))
    except Exception:  # noqa: BLE001
        return []
    drafts: list[_Draft] = []
    for raw in raws:
        try:
            draft = _draft(raw, context)
        except Exception:  # noqa: BLE001 - skip the one report, keep the others
            continue
        if draft is not None:
            drafts.append(draft)
    try:
        return _fold(drafts, context)
    except Exception:  # noqa: BLE001
        return []


def _file_lines(student_files) -> dict[str, Sequence[str]]:
    """The student's files as name -> lines; a file given as one string is split."""
    try:
        items = dict(student_files or {}).items()
    except (TypeError, ValueError):
        return {}
    files = {}
    for name, lines in items:
        try:
            files[str(name)] = lines.splitlines() if isinstance(lines, str) else list(lines or ())
        except TypeError:
            files[str(name)] = []
    return files


def _lines(text) -> Iterator[str]:
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8", "replace")
    if not isinstance(text, str):
        return
    for physical in text.splitlines():
        yield from _RUN_TOGETHER.split(physical[:_MAX_LINE])


def _scan(text) -> list[_Raw]:
    """Cut the output into reports. A report starts at a header line and takes the detail
    lines after it; a bare "=========" line or a summary ends it. Lines without the tool's
    prefix are the program's own output and are skipped, unless they read as a report."""
    raws: list[_Raw] = []
    current: _Raw | None = None

    def close() -> None:
        nonlocal current
        if current is not None and (current.kind != "other" or current.frames or current.thread):
            raws.append(current)
        current = None

    for line in _lines(text):
        prefixed = _PREFIX.match(line)
        body = (prefixed["rest"] if prefixed else line).expandtabs(4)
        content = body.strip()
        indent = len(body) - len(body.lstrip())
        if not content:
            if prefixed:
                close()
            continue
        if _ANY_SUMMARY.search(content):
            close()
            continue
        header = _header(content)
        if header is not None:
            close()
            current = header
            continue
        if current is not None and _detail(current, content):
            continue
        if not prefixed:
            continue
        if current is not None and (indent >= 2 or _DETAIL.match(content)):
            continue
        # An unknown top-level line: a hardware exception ("Warp Illegal Address") reads
        # like this, and so does "Target application returned an error". It becomes a
        # report only if a location or a thread follows.
        close()
        current = _Raw("other", header=content)
    close()
    return raws


def _header(content: str) -> _Raw | None:
    for kind, pattern in (("access", _ACCESS), ("uninit", _UNINIT), ("race", _RACE_ANALYSIS),
                          ("hazard", _RACE_HAZARD), ("barrier", _BARRIER), ("warpgroup", _WARPGROUP),
                          ("api", _API), ("leak", _LEAK), ("malloc", _MALLOC_FREE)):
        match = pattern.match(content)
        if match is None:
            continue
        raw = _Raw("race" if kind == "hazard" else kind, match.groupdict(), content)
        if kind == "race":
            raw.accesses.append(_Access(match["op"].lower(), _parse_location(match["loc"])))
        elif kind == "hazard":
            raw.block = _coordinates(match["block"])
        return raw
    return None


def _detail(raw: _Raw, content: str) -> bool:
    """Take one detail line into `raw`; False when the line is not one of its details."""
    match = _AT.match(content)
    if match:
        raw.frames.append(_parse_location(match["loc"]))
        return True
    match = _DEVICE_FRAME.match(content)
    if match:
        raw.frames.append(_parse_location(match["loc"]))
        return True
    match = _BY_THREAD.match(content)
    if match:
        if raw.thread is None:
            raw.thread = _coordinates(match["thread"])
            raw.block = _coordinates(match["block"])
        return True
    match = _ADDRESS.match(content)
    if match:
        raw.address = match["what"].strip().lower()
        return True
    if raw.kind == "race":
        match = _RACE_AND.match(content) or _RACE_THREAD.match(content)
        if match:
            groups = match.groupdict()
            raw.accesses.append(_Access(groups["op"].lower(), _parse_location(groups["loc"]),
                                        _coordinates(groups.get("thread"))))
            return True
    if raw.kind == "api" and not raw.match.get("api"):
        match = _API_CALL.match(content)
        if match:
            raw.match["api"] = match["api"]
            return True
    return False


def _coordinates(text: str | None) -> str | None:
    """"(0, 0, 0)" and "0,0,0" both become "(0,0,0)"."""
    if text is None:
        return None
    inner = re.sub(r"\s+", "", text).strip("()")
    return f"({inner})" if inner else None


def _parse_location(text: str) -> _Frame:
    """Read any of the location shapes (see the module docstring) into a frame."""
    text = text.strip()
    matches = list(_FILE_LINE.finditer(text))
    if matches:
        found = matches[-1]
        before = text[:found.start()].strip()
        after = text[found.end():].strip()
        function = _function_before(before)
        if function is None and after.startswith(":"):
            function = after[1:].strip() or None
        return _Frame(found["file"], int(found["line"]), function)
    found = _LEADING_FILE_LINE.match(text)      # old device frames: "file.cu:44:kernel(void) ..."
    if found and "." in posixpath.basename(found["file"]):
        return _Frame(found["file"], int(found["line"]), (found["rest"] or "").strip() or None)
    hex_in = re.match(r"^0x[0-9a-fA-F]+\s+in\s+(?P<function>.+)$", text)   # "0x1b8 in kernel(int *)"
    if hex_in:
        return _Frame(None, None, hex_in["function"].strip())
    return _Frame(None, None, _function_before(text))


def _function_before(text: str) -> str | None:
    """The function in "kernel(int *)+0x90", "kernel():0x160" or "kernel"; None for "0x90"."""
    text = text.strip()
    if not text or _HEX.match(text):
        return None
    text = re.sub(r"\s*(?:\+\s*0x[0-9a-fA-F]+|:0x[0-9a-fA-F]+)$", "", text)
    return text or None


def _short_function(name: str | None) -> str | None:
    """"add(const float *, const float *, float *, unsigned long)" -> "add()": the name a
    student wrote, without parameters, return type or namespaces."""
    if not name:
        return None
    text = name.strip()
    text = re.sub(r"^\[clone [^\]]*\]\s*", "", text)
    text = re.sub(r"\s*\[0x[0-9a-fA-F]+\]$", "", text)
    text = re.sub(r"\s*\+\s*0x[0-9a-fA-F]+$", "", text)
    text = _cut_parameters(text)
    text = _last_top_level(text, " ")
    text = _last_top_level(text, "::")
    if len(text) > _MAX_FUNCTION:
        text = _collapse_templates(text)
    text = text.strip()
    if not text or _HEX.match(text):
        return None
    return text + "()"


def _cut_parameters(text: str) -> str:
    """Cut at the first "(" that opens a parameter list (one right after a name), skipping
    groups such as "(anonymous namespace)"."""
    angle = 0
    index = 0
    while index < len(text):
        char = text[index]
        if char == "<":
            angle += 1
        elif char == ">" and angle > 0:
            angle -= 1
        elif char == "(":
            if angle == 0 and index > 0 and (text[index - 1].isalnum() or text[index - 1] in "_>$"):
                return text[:index]
            index = _after_group(text, index)
            continue
        index += 1
    return text


def _after_group(text: str, start: int) -> int:
    depth = 0
    for index in range(start, len(text)):
        if text[index] == "(":
            depth += 1
        elif text[index] == ")":
            depth -= 1
            if depth == 0:
                return index + 1
    return len(text)


def _last_top_level(text: str, separator: str) -> str:
    """The part after the last `separator` outside <...> and (...)."""
    depth = 0
    last = 0
    index = 0
    while index < len(text):
        char = text[index]
        if char in "<(":
            depth += 1
        elif char in ">)" and depth > 0:
            depth -= 1
        elif depth == 0 and text.startswith(separator, index):
            last = index + len(separator)
            index = last
            continue
        index += 1
    return text[last:] or text


def _collapse_templates(text: str) -> str:
    out = []
    depth = 0
    for char in text:
        if char == "<":
            if depth == 0:
                out.append("<...>")
            depth += 1
        elif char == ">" and depth > 0:
            depth -= 1
        elif depth == 0:
            out.append(char)
    return "".join(out)


def _number(text: str | None) -> int | None:
    if not text:
        return None
    try:
        return int(text.replace(",", ""))
    except ValueError:
        return None


def _bytes(size: int | None) -> str:
    return "1 byte" if size == 1 else f"{size} bytes"


# --------------------------------------------------------------------------- findings


@dataclass
class _Context:
    tool: str
    files: dict[str, Sequence[str]]
    inside_src: str

    def student_file(self, path: str | None) -> str | None:
        """The student's file name for a path as the tool printed it, or None when it is
        not one of theirs (official code, a CUDA header, another folder)."""
        if not path:
            return None
        text = path.strip().replace("\\", "/")
        while text.startswith("./"):
            text = text[2:]
        if "/" not in text:
            return text if text in self.files else None
        normal = posixpath.normpath(text)
        root = self.inside_src.rstrip("/") or "/"
        if root == "/" or not normal.startswith(root + "/"):
            return None
        inside = normal[len(root) + 1:]
        if inside in self.files:
            return inside
        name = posixpath.basename(inside)
        return name if name in self.files else None

    def source_line(self, file: str | None, line: int | None) -> str | None:
        if file is None or line is None:
            return None
        lines = self.files.get(file)
        if not lines or not 1 <= line <= len(lines):
            return None
        return str(lines[line - 1]).strip()


@dataclass
class _Place:
    """Where a report is placed: the student's file and line, or a shortened other place."""

    file: str | None
    line: int | None
    function: str | None
    text: str | None      # "vector_add.cu:12", "check.hpp:40 (outside your files)" or None


@dataclass
class _Draft:
    """A finding before folding: `render` makes its sentence from the folded group."""

    kind: str
    place: _Place
    thread: str | None
    block: str | None
    size: int | None
    extra_key: tuple
    render: object                   # Callable[[_Draft, int], str]
    details: dict = field(default_factory=dict)
    accesses: list[tuple[str, str, str | None]] = field(default_factory=list)  # op, place text, function

    def key(self, tool: str) -> tuple:
        place = self.place
        elsewhere = () if place.file else (place.text, place.function)
        return (tool, self.kind, place.file, place.line) + elsewhere + self.extra_key


def _place(frames: list[_Frame], context: _Context) -> _Place:
    """The first frame in a student file, else the top frame, shortened."""
    for frame in frames:
        file = context.student_file(frame.path)
        if file is not None:
            function = frame.function or next((f.function for f in frames if f.function), None)
            return _Place(file, frame.line, _short_function(function), f"{file}:{frame.line}")
    top = next((f for f in frames if f.path), frames[0] if frames else None)
    if top is None:
        return _Place(None, None, None, None)
    function = _short_function(top.function or next((f.function for f in frames if f.function), None))
    if top.path is None:
        return _Place(None, None, function, None)
    name = posixpath.basename(top.path.replace("\\", "/")) or top.path
    return _Place(None, None, function, f"{name}:{top.line} (outside your files)")


def _where(place: _Place) -> str:
    return (f" at {place.text}" if place.text else "") + (f" in {place.function}" if place.function else "")


def _who(draft: _Draft) -> str:
    if draft.thread and draft.block:
        return f", thread {draft.thread} block {draft.block}"
    if draft.thread:
        return f", thread {draft.thread}"
    if draft.block:
        return f", block {draft.block}"
    return ""


_SPACE_WORDS = {"__global__": "", "__shared__": "shared-memory ", "__local__": "local-memory ",
                "__constant__": "constant-memory "}
_SPACE_NAMES = {"__global__": "global", "__shared__": "shared", "__local__": "local"}


def _draft(raw: _Raw, context: _Context) -> _Draft | None:
    maker = _MAKERS.get(raw.kind)
    return maker(raw, context) if maker else None


def _access_draft(raw: _Raw, context: _Context) -> _Draft:
    groups = raw.match
    op = groups["op"].lower()
    size = _number(groups["size"])
    space = groups["space"].lower()
    what = raw.address or ""
    if groups.get("potential") or "might not have entered" in what or "might have already exited" in what:
        kind = "cluster_race"
    elif "out of bounds" in what:
        kind = f"out_of_bounds_{op}"
    elif "misaligned" in what:
        kind = "misaligned"
    else:
        kind = f"invalid_{op}"
    words = _SPACE_WORDS.get(space, f"{space.strip('_')}-memory ")

    def render(draft: _Draft, count: int) -> str:
        where, who = _where(draft.place), _who(draft)
        if kind == "cluster_race":
            return (f"{op} of {_bytes(size)} of another block's shared memory{where}{who}, while that "
                    "block may not have started or may have finished: add cluster.sync() before and after")
        if kind == "misaligned":
            return f"misaligned {words}{op} of {_bytes(size)}{where}{who}: the address must be a multiple of {size}"
        described = "out-of-bounds" if kind.startswith("out_of_bounds") else "invalid"
        return f"{described} {words}{op} of {_bytes(size)}{where}{who}"

    draft = _Draft(kind, _place(raw.frames, context), raw.thread, raw.block, size, (space,), render)
    draft.details["op"] = op
    return draft


def _uninit_draft(raw: _Raw, context: _Context) -> _Draft:
    size = _number(raw.match["size"])
    space = raw.match["space"].lower()
    name = _SPACE_NAMES.get(space, space.strip("_"))

    def render(draft: _Draft, count: int) -> str:
        return f"read of uninitialised {name} memory ({_bytes(size)}){_where(draft.place)}{_who(draft)}"

    return _Draft("uninitialized_read", _place(raw.frames, context), raw.thread, raw.block, size, (), render)


def _race_draft(raw: _Raw, context: _Context) -> _Draft | None:
    if not raw.accesses:
        return None
    places = [_place([access.frame], context) for access in raw.accesses]
    chosen = next((i for i, place in enumerate(places) if place.file), 0)
    place = places[chosen]
    if place.function is None:
        place = dataclasses.replace(place, function=next((p.function for p in places if p.function), None))
    space = (raw.match.get("space") or "__shared__").lower()
    kind = "race_shared" if space == "__shared__" else "race"
    warp_level = "warp level" in (raw.match.get("note") or "").lower()
    thread = raw.accesses[chosen].thread or next((a.thread for a in raw.accesses if a.thread), None)
    draft = _Draft(kind, place, thread, raw.block, None, (), _render_race)
    draft.details["warp_level"] = warp_level
    draft.details["memory"] = "shared-memory" if kind == "race_shared" else f"{space.strip('_')}-memory"
    draft.accesses = [(access.op, p.text.replace(" (outside your files)", "") if p.text else "", p.function)
                      for access, p in zip(raw.accesses, places)]
    return draft


def _render_race(draft: _Draft, count: int) -> str:
    unique: list[tuple[str, str]] = []
    for op, text, _function in draft.accesses:
        if (op, text) not in unique:
            unique.append((op, text))
    named = [f"{op} at {text}" if text else op for op, text in unique[:_MAX_RACE_PLACES]]
    if len(unique) > _MAX_RACE_PLACES:
        named.append("...")
    if len(unique) == 1:
        named = [named[0] + " by several threads"]
    ops = {op for op, _text in unique}
    function = f" in {draft.place.function}" if draft.place.function else ""
    barrier = "__syncwarp()" if draft.details.get("warp_level") else "__syncthreads()"
    if ops == {"write"}:
        advice = f"let only one thread write each location, or add {barrier} between the writes"
    else:
        advice = f"add {barrier} between them"
    return f"{draft.details['memory']} race ({', '.join(named)}){function}: {advice}"


def _barrier_draft(raw: _Raw, context: _Context) -> _Draft:
    what = (raw.match.get("what") or "").strip().rstrip(".")
    lowered = what.lower()
    if "in block" in lowered:
        kind, text = "sync_divergent", "__syncthreads() reached by only part of a block"
    elif "in warp" in lowered:
        kind, text = "sync_divergent_warp", "__syncthreads() or __syncwarp() reached by only part of a warp"
    elif "invalid argument" in lowered:
        kind, text = "sync_invalid_arguments", "barrier called with invalid arguments"
    else:
        kind, text = "sync_other", f"barrier error ({what})" if what else "barrier error"

    def render(draft: _Draft, count: int) -> str:
        sentence = text + _where(draft.place)
        if kind == "sync_invalid_arguments":
            sentence += ": every thread that calls __syncwarp(mask) must be in mask"
        return sentence

    return _Draft(kind, _place(raw.frames, context), raw.thread, raw.block, None, (), render)


def _warpgroup_draft(raw: _Raw, context: _Context) -> _Draft:
    what = (raw.match.get("what") or "").strip()

    def render(draft: _Draft, count: int) -> str:
        detail = f" ({what})" if what else ""
        return f"warpgroup MMA sequence error{detail}{_where(draft.place)}"

    return _Draft("sync_other", _place(raw.frames, context), raw.thread, raw.block, None, (what,), render)


def _api_draft(raw: _Raw, context: _Context) -> _Draft:
    groups = raw.match
    error = groups["error"].strip()
    message = (groups.get("message") or "").strip()

    def render(draft: _Draft, count: int) -> str:
        api = draft.details.get("api")
        call = f"CUDA call {api}()" if api else "a CUDA call"
        detail = f" ({message})" if message and message != error else ""
        return f"{call} failed with {error}{detail}"

    draft = _Draft("api_error", _place(raw.frames, context), None, None, None,
                   (groups.get("api"), error), render)
    draft.details["api"] = groups.get("api")
    return draft


def _leak_draft(raw: _Raw, context: _Context) -> _Draft:
    size = _number(raw.match["size"])
    heap = bool(raw.match.get("heap"))

    def render(draft: _Draft, count: int) -> str:
        how = "malloc() in a kernel, never released with free()" if heap else \
            "cudaMalloc, never released with cudaFree"
        if count == 1:
            return f"device memory leak: {_bytes(size)} allocated with {how}"
        return f"device memory leak: {count} allocations (the first {_bytes(size)}) made with {how}"

    return _Draft("leak", _Place(None, None, None, None), None, None, size, (heap,), render)


def _malloc_draft(raw: _Raw, context: _Context) -> _Draft:
    what = (raw.match.get("what") or "").strip().rstrip(".")

    def render(draft: _Draft, count: int) -> str:
        detail = f" ({what.lower()})" if what else ""
        return f"device-side malloc()/free() error{detail}{_where(draft.place)}{_who(draft)}"

    return _Draft("malloc_free", _place(raw.frames, context), raw.thread, raw.block, None, (what,), render)


def _other_draft(raw: _Raw, context: _Context) -> _Draft:
    header = raw.header.strip().rstrip(".")

    def render(draft: _Draft, count: int) -> str:
        return f"GPU error \"{header}\"{_where(draft.place)}{_who(draft)}"

    return _Draft("other", _place(raw.frames, context), raw.thread, raw.block, None, (header,), render)


_MAKERS = {"access": _access_draft, "uninit": _uninit_draft, "race": _race_draft,
           "barrier": _barrier_draft, "warpgroup": _warpgroup_draft, "api": _api_draft,
           "leak": _leak_draft, "malloc": _malloc_draft, "other": _other_draft}


def _known_kind(draft: _Draft, groups: dict[tuple, list], tool: str) -> list | None:
    """For a report cut short before its "Address ... is ..." line (kind invalid_read or
    invalid_write), the group of a complete report of the same access at the same place."""
    op = draft.details.get("op")
    if draft.kind != f"invalid_{op}":
        return None
    for kind in (f"out_of_bounds_{op}", "misaligned"):
        group = groups.get(dataclasses.replace(draft, kind=kind).key(tool))
        if group is not None:
            return group
    return None


def _fold(drafts: list[_Draft], context: _Context) -> list[Finding]:
    """Fold repeats (same tool, kind, file and line; for a place outside the student's
    files, the same place) into the first one, counting them; races also gather every
    access their repeats name."""
    groups: dict[tuple, list] = {}
    for draft in drafts:
        key = draft.key(context.tool)
        group = groups.get(key) or _known_kind(draft, groups, context.tool)
        if group is None:
            if len(groups) >= MAX_FINDINGS:
                continue
            groups[key] = [draft, 1]
            continue
        group[1] += 1
        for access in draft.accesses:
            if access not in group[0].accesses:
                group[0].accesses.append(access)
    findings = []
    for first, count in groups.values():
        place = first.place
        findings.append(Finding(
            tool=context.tool, kind=first.kind, file=place.file, line=place.line if place.file else None,
            function=place.function, thread=first.thread, block=first.block, size=first.size,
            count=count, sentence=first.render(first, count),
            source_line=context.source_line(place.file, place.line)))
    return findings


# --------------------------------------------------------------------------- running the tools

@functools.cache
def _help_text(sanitizer: str) -> str:
    """The tool's own --help (trusted: it is the toolkit's program, run outside the sandbox)."""
    try:
        done = subprocess.run([sanitizer, "--help"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout + done.stderr


def _supported(argv: list[str], help_text: str) -> list[str]:
    """`argv` without the options this version of the tool does not list in its --help (each
    with its value), so an older or newer tool never stops at an option it does not know."""
    if not help_text:
        return argv
    kept = argv[:1]
    words = iter(argv[1:])
    for word in words:
        if word == "--":
            kept += [word, *words]
            break
        value = next(words, None)
        if word == "--tool" or re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", help_text):
            kept += [word] + ([value] if value is not None else [])
    return kept


@dataclass
class Outcome:
    """What running the tools gave: the tools that ran to the end, their findings, and per
    tool what went wrong running it (stopped at its time limit, ended by a signal, ...)."""

    tools_run: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    problems: dict[str, str] = field(default_factory=dict)
    errors_reported: dict[str, bool] = field(default_factory=dict)  # tool -> it exited ERROR_EXIT_CODE

    @property
    def clean(self) -> bool:
        """No tool reported an error and every tool ran to the end. This rests on the tools'
        own exit codes, not on what the program printed."""
        return not self.problems and not any(self.errors_reported.values())

    def to_json(self) -> dict:
        return {"tools_run": self.tools_run, "clean": self.clean, "problems": self.problems,
                "findings": [f.to_json() for f in self.findings]}


def run_tools(runner, sanitizer: Path, binary: Path, cases: Sequence[str], seed: int,
              student_files: Mapping[str, Sequence[str]], timeout_s: float,
              tools: Sequence[str] = TOOLS) -> Outcome:
    """Run `binary` (a submission's lab binary) on `cases` under each tool, side by side, in
    the runner's sandbox, and read each report. `runner` is a runner.Runner."""
    args: list = ["--seed", seed, "--dump", f"{RUN}/dump", "--quiet"]
    for case in cases:
        args += ["--case", case]
    help_text = _help_text(str(sanitizer))
    roots = toolchain_roots([Path(sanitizer).resolve()])

    def one(tool: str):
        prefix = _supported(sanitizer_argv(sanitizer, tool, ["PROGRAM"]), help_text)[:-1]
        result, _ = runner.run(binary, args, wrapper=prefix, wrapper_toolchain=roots, timeout_s=timeout_s)
        return tool, result

    outcome = Outcome()
    with ThreadPoolExecutor(max_workers=len(tools)) as pool:
        for tool, result in pool.map(one, tools):
            report = result.stdout + "\n" + result.stderr
            if result.timed_out:
                outcome.problems[tool] = f"did not finish within {timeout_s:g} s, so its report is incomplete."
            elif result.exit_code not in (0, ERROR_EXIT_CODE) and error_summary_count(report) is None:
                outcome.problems[tool] = (f"did not run to the end ({result.describe()}): "
                                          f"{result.stderr_head(2) or 'no message'}.")
            else:
                outcome.tools_run.append(tool)
            outcome.errors_reported[tool] = result.exit_code == ERROR_EXIT_CODE
            outcome.findings += parse_report(tool, report, student_files)
    return outcome
