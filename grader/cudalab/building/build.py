"""What `cudalab build` does (the verb and its help are commands/build.py): the official
build, and a submission staged under a name the grader chooses and built in the sandbox
against the lab's SDK, its object's symbols checked between compile and link.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from . import bundle, sdk as sdk_module
from .. import console
from ..isolation import cpus, libraries
from ..intake import forbidden, handin_checks, symbols
from ..lab import labs
from ..config import Config, MIB
from ..errors import CompileError, ForbiddenError, GraderError, SubmissionError, UsageError
from ..intake import handin
from ..intake.handin import Finding
from ..lab.labspec import LabSpec
from ..intake.object_analysis import ObjectAnalysis, ObjectRefused, analyse_object, staged_deps
from ..isolation.sandbox import (Bind, ProcessResult, Sandbox, build_limits, format_bytes, run_process, scratch_root,
                      toolchain_roots)
from .sdk import Manifest, ManifestError
from ..isolation.trees import remove_tree

_BUILD_LOG_CAP = 4 * MIB
_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
# Where a submission build sees its pieces inside the sandbox (fixed, whatever the names
# and paths on the host).
_SDK, _SRC, _BUILD = sdk_module.INSIDE_SDK, sdk_module.INSIDE_SOURCES, sdk_module.INSIDE_BUILD
_ERROR = re.compile(r"error|undefined reference|multiple definition", re.IGNORECASE)
_NOISE = re.compile(r"^(\[\d+/\d+\]|FAILED:|ninja: )|\s-c\s.*\s-o\s|\s-o\s.*\s-c\s")


@dataclass
class StagedSubmission:
    folder: Path
    copy_dir: Path
    copied: list[str]
    ignored: list[str] = field(default_factory=list)  # folders end in '/'

    def ignored_files(self, spec: LabSpec) -> list[str]:
        """The ignored files beside the lab's own: worth a warning (a file meant to be part
        of the work). Folders (build/, ladder/, ...) are listed in `ignored` only, and a lab's
        written answers (README.md) are part of the hand-in, though no build needs them."""
        answers = {handin.README} if spec.accepts_readme else set()
        return [name for name in self.ignored if not name.endswith("/") and name not in answers]


@dataclass
class SubmissionBuild:
    binary: Path
    staged: StagedSubmission
    log: str


# --- staging --------------------------------------------------------------------------

def safe_name(folder: Path) -> str:
    """A folder name the grader can use for a submission's results: the submission's own name
    when it is plain (letters, digits, '.', '_', '-'), else a plain form of it with a short
    hash, so two different names never share a folder. The original name stays data."""
    name = Path(folder).resolve().name
    if _SAFE_NAME.fullmatch(name):
        return name
    plain = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._-")[:40] or "submission"
    return f"{plain}-{hashlib.sha256(name.encode('utf-8', 'surrogateescape')).hexdigest()[:8]}"


def stage_submission(spec: LabSpec, folder: Path, dest: Path) -> StagedSubmission:
    """Copy exactly the lab's files from `folder` into `dest` (created fresh, named by the
    grader): from here on, nothing uses the submission's own folder or name as a path."""
    folder = Path(folder)
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise SubmissionError(f"The submission folder {folder} {what}. Give the folder that "
                              f"holds {', '.join(spec.files)}.")
    missing = [name for name in spec.files
               if not (folder / name).exists() and not (folder / name).is_symlink()]
    if missing:
        # check's sentences: the near miss it was meant to be (did you mean vector_add.cu?).
        listing = handin.top_level(folder)
        why, _ = handin.required_file_findings(listing, spec)
        raise SubmissionError(f"The submission folder {folder} has no {' or '.join(missing)}. "
                              + " ".join(f.message for f in why))
    if not remove_tree(dest):
        raise GraderError(f"Could not clear the staging folder {dest} of an earlier build; remove it "
                          "by hand and build again.")
    dest.mkdir(parents=True)
    handin.write_staged(dest, {name: handin.read_plain_file(folder / name, spec.max_file_bytes)
                               for name in spec.files})
    ignored = sorted(entry.name + ("/" if entry.is_dir() else "")
                     for entry in folder.iterdir() if entry.name not in spec.files)
    return StagedSubmission(folder.resolve(), dest, list(spec.files), ignored)


# --- compiler feedback ------------------------------------------------------------------

def compile_feedback(log: str, files: tuple[str, ...] | list[str],
                     copy_dir: Path | str | tuple[Path | str, ...], max_lines: int) -> list[str]:
    """The compiler's lines about the student's files (with the context lines indented under
    them), paths shortened to the bare file name; failing that, the error lines; failing
    that, the end of the log. `copy_dir` is the folder the files were compiled from, or
    several (the sandbox's fixed path and the staged folder, which is what an unsandboxed
    compile names)."""
    text = log
    folders = [str(folder) for folder in (copy_dir if isinstance(copy_dir, tuple) else (copy_dir,))]
    for folder in sorted(folders, key=len, reverse=True):  # a path inside another one first
        text = text.replace(f"{folder}/", "")
    lines = [line for line in text.splitlines() if not _NOISE.search(line)]
    kept: list[str] = []
    in_block = False
    for line in lines:
        if any(name in line for name in files):
            kept.append(line)
            in_block = True
        elif in_block and (line.startswith((" ", "\t")) or not line.strip()):
            kept.append(line)
        else:
            in_block = False
    if not kept:  # a link error names no source file: keep what the linker says
        kept = [line for line in lines if _ERROR.search(line)]
    if not kept:
        kept = lines[-max_lines:]
    while kept and not kept[-1].strip():
        kept.pop()
    return kept[:max_lines]


# --- running CMake ------------------------------------------------------------------------

def _cmake(config: Config, args: list[str], cwd: Path | None = None,
           on_line: Callable[[str], None] | None = None, echo: bool = True) -> ProcessResult:
    if echo:
        console.info("$ cmake " + " ".join(args))
    return run_process(["cmake", *args], timeout_s=config.build_timeout_s,
                       output_cap_bytes=_BUILD_LOG_CAP, cwd=cwd or config.root, on_stdout_line=on_line)


class BuildProgress:
    """Says how far a build is from ninja's "[done/total] ..." lines: at most every
    `every_s` seconds, and at its last step, so that a long first build is never silent.
    The `heading` lines are said before the first step, so a build with nothing to do (every
    command after the first) says nothing at all."""

    _STEP = re.compile(r"^\[(\d+)/(\d+)\]")

    def __init__(self, what: str, every_s: float = 5.0, clock: Callable[[], float] = time.monotonic,
                 say: Callable[[str], None] = console.info, heading: Sequence[str] = ()):
        self.what, self.every_s, self.clock, self.say = what, every_s, clock, say
        self.heading = list(heading)
        self.last_said = clock()

    def __call__(self, line: str) -> None:
        step = self._STEP.match(line)
        if step is None or step[1] == "0":  # "[0/2] Re-checking globbed directories...": no step yet
            return
        for said in self.heading:
            self.say(said)
        self.heading = []
        done, total = int(step[1]), int(step[2])
        now = self.clock()
        if done == total or now - self.last_said >= self.every_s:
            self.say(f"  {self.what}: step {done} of {total}")
            self.last_said = now


def _log(result: ProcessResult) -> str:
    return result.stdout + result.stderr


def _tail(result: ProcessResult, lines: int = 40) -> str:
    return "\n".join(_log(result).strip().splitlines()[-lines:])


def _has_build_preset(config: Config) -> bool:
    presets = config.root / "CMakePresets.json"
    try:
        data = json.loads(presets.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return any(p.get("name") == config.preset for p in data.get("buildPresets", []))


def build_official(config: Config, targets: Sequence[str] = ()) -> None:
    """Configure (when needed) and build the official tree with the config's preset: the
    whole of it, or only `targets` (and what they need), saying how far it is as it goes."""
    if not official_tree_is_writable(config):
        raise GraderError(f"The official build {config.build_dir} is not yours to write (a shared course "
                          "install): it is used as it is. Ask whoever installed the course to rebuild it.")
    default_dir = (config.root / "build" / config.preset).resolve()
    if not (config.build_dir / "CMakeCache.txt").is_file():
        console.info(f"Configuring the official build in {config.build_dir} (preset {config.preset})")
        args = ["--preset", config.preset]
        if config.build_dir != default_dir:
            args += ["-B", str(config.build_dir)]
        result = _cmake(config, args)
        if result.exit_code != 0:
            raise GraderError(f"Configuring the official build with preset '{config.preset}' "
                              f"failed ({result.describe()}):\n{_tail(result)}")
    what = f"the official {', '.join(targets)}" if targets else "the official tree"
    chosen = ["--target", *targets] if targets else []
    if config.build_dir == default_dir and _has_build_preset(config):
        args = ["--build", "--preset", config.preset, *chosen]
    else:
        args = ["--build", str(config.build_dir), *chosen]
    progress = BuildProgress("building " + ("them" if targets else "it"),
                             heading=[f"Building {what} in {config.build_dir}", "$ cmake " + " ".join(args)])
    result = _cmake(config, args, on_line=progress, echo=False)
    if result.exit_code != 0:
        raise GraderError(f"Building the official tree {config.build_dir} failed "
                          f"({result.describe()}):\n{_tail(result)}")


def official_tree_is_writable(config: Config) -> bool:
    """Whether this user may build the official tree. On a shared course install it belongs
    to the instructor, and students use it as it is."""
    probe = config.build_dir
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    return os.access(probe, os.W_OK | os.X_OK)


def ensure_official(config: Config, spec: LabSpec,
                    implementations: tuple[str, ...] | None = None,
                    rebuild: bool = True) -> None:
    """Make sure the lab's official binaries exist (by default its solution, the rung
    students are timed against when that is another, and its checker), building them the
    first time. A configured tree is brought up to date (a
    no-op build when nothing changed); a prebuilt tree without a CMake cache, or one this
    user cannot write (a shared course install), is used as it is.

    A student bundle (`cudalab export`) builds no solution and no ladder: by default only
    the checker is needed there (the SDK is checked where it is used), and asking for a
    course build it does not hold is a usage error that says so."""
    if bundle.is_student_bundle(config.root):
        implementations = ("checker",) if implementations is None else implementations
        course_only = [impl for impl in implementations if impl not in bundle.BUNDLE_IMPLEMENTATIONS]
        if course_only:
            shown = ", ".join("the course solution" if impl == "solution" else
                              f"the ladder rung '{impl.removeprefix('ladder_')}'" for impl in course_only)
            raise UsageError(f"This is a student bundle, which does not hold {shown}: of the {spec.name} lab "
                             "it has the harness, the checker and the starter. Run your own folder (`cudalab "
                             f"run {spec.name} FOLDER`), or the starter with --target starter.")
    elif implementations is None:
        implementations = tuple(dict.fromkeys(("solution", labs.scoring_reference(spec), "checker")))
    needed = [labs.official_binary(config, spec.name, impl) for impl in implementations]
    configured = (config.build_dir / "CMakeCache.txt").is_file()
    present = all(p.is_file() for p in needed)
    if not official_tree_is_writable(config):
        if not present:
            raise GraderError(f"The official build in {config.build_dir} has no {spec.name} binaries, and "
                              "it is not yours to build (a shared course install): ask whoever installed "
                              "the course to run `cudalab build` there. This is not a problem with your code.")
        return
    if (configured and rebuild) or not present:
        if not present:
            console.info(f"Building what the {spec.name} lab needs first (once; a minute or two the first time)")
        build_official(config, official_targets(spec, implementations))
    missing = [str(p) for p in needed if not p.is_file()]
    if missing:
        raise GraderError(f"The official build has no {' or '.join(missing)}: the {spec.name} "
                          "lab's targets were not built.")


def official_targets(spec: LabSpec, implementations: Sequence[str]) -> list[str]:
    """The CMake targets of a lab's official binaries (`vector_add_checker`, ...) and of its
    SDK: what a command on that lab needs built, and nothing of other labs or the tests."""
    return [f"{spec.name}_{impl}" for impl in implementations] + [f"{spec.name}_sdk"]


# What a student's own run (`cudalab run LAB FOLDER`, with or without --bench) needs of the
# official build besides the lab's SDK: the trusted checker, nothing else. Not the
# solution: a copy of the course that ships without solutions and their binaries (a
# student bundle) still builds, runs, checks and benchmarks a student's code, and --bench
# compares it with the lab's calibration instead of a reference run.
STUDENT_RUN_BINARIES = ("checker",)


def ensure_official_for_student_run(config: Config, spec: LabSpec) -> None:
    """ensure_official for a student's own run: only STUDENT_RUN_BINARIES must be there."""
    ensure_official(config, spec, STUDENT_RUN_BINARIES)


def _sdk(config: Config, spec: LabSpec) -> Path:
    """The lab's SDK, checked against the official build's manifest."""
    sdk = config.build_dir / "sdk" / spec.name
    if not (sdk / "sdk.cmake").is_file():
        raise GraderError(f"The official build tree {config.build_dir} has no SDK for {spec.name} "
                          f"({sdk} is missing); build it first with `cudalab build`.")
    try:
        Manifest(config.build_dir).verify_tree(sdk)
    except ManifestError as err:
        raise GraderError(str(err)) from None
    return sdk


def api_functions(spec: LabSpec) -> dict[str, str]:
    """API function name -> its signature without parameter names, as a student compares it
    with the API header: 'vector_add(const float*, const float*, float*, std::size_t)'."""
    shown = {}
    for entry in spec.api:
        signature = str(entry.get("signature", ""))
        match = re.match(r"^(?:.*?[\s*&])?(?P<name>[A-Za-z_]\w*)\s*\((?P<params>.*)\)\s*$", signature)
        if match is None:
            continue
        params, depth, current = [], 0, ""
        for char in match["params"]:
            depth += char in "<([" and 1 or 0
            depth -= char in ">)]" and 1 or 0
            if char == "," and depth == 0:
                params.append(current)
                current = ""
            else:
                current += char
        params.append(current)
        types = []
        for param in (p.strip() for p in params if p.strip()):
            bare = re.sub(r"\s*\b[A-Za-z_]\w*\s*$", "", param) if re.search(r"[\w*&\]>]\s+[A-Za-z_]\w*\s*$", param) else param
            types.append(re.sub(r"\s+(?=[*&])", "", bare.strip()))
        shown[match["name"]] = f"{match['name']}({', '.join(types)})"
    return shown


_UNDEFINED = re.compile(r"undefined (?:reference to|symbol:?) [`'\"]?(?P<name>[^'`\"\n]+?)['`\"]?\s*$")


def link_findings(log: str, spec: LabSpec, source_name: str, defined: list[str]) -> list[str]:
    """A failed link, in words: which API function the file does not define (and what it
    defines instead), or which function it calls that nothing defines."""
    api = api_functions(spec)
    sentences: list[str] = []
    for line in log.splitlines():
        match = _UNDEFINED.search(line.strip())
        if match is None:
            continue
        name = match["name"].strip()
        base = re.sub(r"\(.*$", "", name).split("::")[-1]
        if base in api:
            sentence = (f"Your file does not define {api[base]}: compare your signature with "
                        f"{spec.api_header}.")
            near = [d for d in defined if re.sub(r"\(.*$", "", d).split("::")[-1] == base]
            if near:
                sentence += (f" {source_name} defines {near[0]}, which C++ treats as a different "
                             "function (the parameter types must match exactly).")
        else:
            library = next((lib.title for key, lib in forbidden.LIBRARIES.items()
                            if any(re.search(p, name) for p in lib.symbols)), None)
            if library is not None:
                sentence = (f"{source_name} calls {name} from {library}, which the lab's link does not "
                            f"include: the {spec.name} lab links only the CUDA runtime.")
            else:
                sentence = (f"{source_name} calls {name}, but nothing defines it: define it in "
                            f"{source_name} or remove the call.")
        if sentence not in sentences:
            sentences.append(sentence)
    return sentences


def _commands(sdk: Path) -> dict:
    try:
        commands = json.loads((sdk / "build.json").read_text(encoding="utf-8"))
        if not all(isinstance(commands.get(k), str) for k in ("compile", "object", "link", "binary")):
            raise ValueError("a command is missing")
        return commands
    except (OSError, ValueError) as err:
        raise GraderError(f"The SDK {sdk} has no usable build.json ({err}); rebuild the official tree.") from None


def _toolchain(config: Config, commands: dict) -> tuple[Path, ...]:
    """Where the compilers the commands use live, when that is outside /usr (a GCC under
    /opt, say): the commands' own programs, and the host compiler nvcc finds on PATH."""
    words = [w.split("=", 1)[-1] for c in (commands["compile"], commands["link"]) for w in shlex.split(c)]
    found = [shutil.which(tool) for tool in ("g++", "gcc", "c++", "cc")]
    return toolchain_roots([w for w in words if w.startswith("/")] + [f for f in found if f],
                           protect=[config.root, config.work_dir, config.build_dir])


# What a compiler or linker says when it gets no more memory (RLIMIT_DATA, where no cgroup
# limits the build): GCC's cc1plus, NVIDIA's cicc and ptxas, ld, and a C++ allocation.
_OUT_OF_MEMORY = re.compile(r"out of memory|memory exhausted|cannot allocate memory|std::bad_alloc",
                            re.IGNORECASE)


def _past_a_limit(result: ProcessResult, step: str, config: Config) -> str:
    """Why a compile or link step that failed was stopped by one of its limits, as the
    sentence a student reads (the submission's failure, not the grader's), or '' when it
    failed on its own."""
    if result.timed_out:
        return (f"the {step} ran past its {config.build_timeout_s:g} s limit and was stopped. Something "
                "in the file makes the compiler work far too long (a huge constant array, a template or "
                "macro that expands without end, an #include of a device or a pipe); remove it.")
    if result.oom_killed or _OUT_OF_MEMORY.search(_log(result)):
        limit = format_bytes(config.build_memory_bytes) if config.build_memory_bytes else "the memory limit"
        return (f"the {step} ran out of memory (its limit is {limit}) and was stopped. Something in the "
                "file makes the compiler grow without end (an #include of /dev/zero or another endless "
                "file, a huge constant array, a template or macro that expands without end); remove it.")
    return ""


class SubmissionBuilder:
    """A submission's build in the sandbox against the lab's SDK, one step at a time, so that
    `cudalab check` can report each step's findings while `build_submission` stops at the
    first failure: compile the student's file, check its object's symbols (only the API
    crosses the link), look for forbidden libraries in it, link."""

    def __init__(self, config: Config, spec: LabSpec, folder: Path, work: Path):
        self.config, self.spec, self.work = config, spec, work
        self.staged = stage_submission(spec, folder, work / "src")
        self.source = spec.source_file
        self.sdk = _sdk(config, spec)
        self.commands = _commands(self.sdk)
        self.build_dir = work / "build"
        self.log = ""
        self.defined: list[str] = []  # demangled names the object defines, once compiled
        self._analysis: ObjectAnalysis | ObjectRefused | None = None
        obj = PurePosixPath(self.commands["object"])
        if obj.is_absolute() or ".." in obj.parts:
            raise GraderError(f"The SDK's build.json puts the object outside the build folder "
                              f"({self.commands['object']!r}).")
        self.object = self.build_dir / obj
        if not remove_tree(self.build_dir):
            raise GraderError(f"Could not clear the build folder {self.build_dir} of an earlier build; "
                              "remove it by hand and build again.")
        # The folders ninja would have made for the commands' outputs (the object, and files
        # such as a linker dependency file that newer CMake versions ask for).
        for command in (self.commands["compile"], self.commands["link"]):
            for word in shlex.split(command):
                for part in re.split(r"[=,]", word):
                    if part.startswith("CMakeFiles/") and ".." not in part:
                        (self.build_dir / part).parent.mkdir(parents=True, exist_ok=True)
        self.sandbox = Sandbox.detect(config)
        self._binds = [Bind(self.sdk, _SDK), Bind(self.staged.copy_dir, _SRC)]
        # Where the compiler's messages say the file is: the sandbox's path, or the staged
        # folder itself where the build runs without bubblewrap.
        self._compiled_from = (_SRC, str(self.staged.copy_dir))
        self._workdir = Bind(self.build_dir, _BUILD, writable=True)
        self._toolchain = _toolchain(config, self.commands)
        # The headers of every library the lab does not allow, wherever they are installed,
        # are #error lines or empty folders to this compile, however an include is spelled.
        self._covers = libraries.lab_compile_covers(config, spec)

    def step(self, argv: list[str]) -> ProcessResult:
        with cpus.on_work_cpus(self.config):  # never on the CPUs left to timing (cpus.py)
            return self.sandbox.run(argv, workdir=self._workdir, binds=self._binds,
                                    limits=build_limits(self.config), gpu=False, toolchain=self._toolchain,
                                    cover=self._covers)

    def sources(self) -> dict[str, str]:
        return {name: (self.staged.copy_dir / name).read_text(encoding="utf-8", errors="replace")
                for name in self.staged.copied}

    def compile(self) -> None:
        # The commands are CMake's, with only the sandbox's fixed paths in them: no name from
        # the hand-in reaches this shell.
        console.info(f"Compiling {self.source}")
        compiled = self.step(["/bin/sh", "-c", self.commands["compile"]])
        self.log += _log(compiled)
        if compiled.exit_code != 0:
            feedback = compile_feedback(_log(compiled), self.spec.files, self._compiled_from,
                                        self.config.compile_feedback_lines)
            past_a_limit = _past_a_limit(compiled, "compile", self.config)
            if past_a_limit:
                raise CompileError(f"{' and '.join(self.spec.files)} did not compile: {past_a_limit}", feedback)
            reached = libraries.library_reached(_log(compiled), self.spec)
            if reached is not None:
                # The source check names the line when the include is spelled out; when a
                # macro built it, the compiler's own lines show where.
                found = [f.message for f in self.forbidden_in_source()]
                raise ForbiddenError(f"{self.source} includes a header of {forbidden.LIBRARIES[reached].title}, "
                                     f"a library the {self.spec.name} lab does not allow, so it did not compile. "
                                     "Remove that include and write the code yourself.",
                                     found or [forbidden.refusal_sentence(self.spec, reached), *feedback])
            raise CompileError(f"{' and '.join(self.spec.files)} did not compile against the official "
                               f"{self.spec.name} harness. Fix the first error below, then build again.",
                               feedback)

    def analyse_object(self) -> ObjectAnalysis:
        """The compiled object read whole, once for both checks that need it (the symbols and
        the forbidden libraries); raises ObjectRefused when it cannot be read whole."""
        if self._analysis is None:
            symbol_patterns, string_patterns = forbidden.object_patterns(self.spec)
            try:
                self._analysis = analyse_object(self.object, symbol_patterns=symbol_patterns,
                                                string_patterns=string_patterns,
                                                deps=staged_deps(self.config.root))
            except ObjectRefused as refused:
                self._analysis = refused
        if isinstance(self._analysis, ObjectRefused):
            raise self._analysis
        return self._analysis

    def _refused_sentence(self, refused: ObjectRefused) -> str:
        return (f"The object compiled from {self.source} was refused: {refused.reason}. A lab's code compiles "
                f"to far less; look for inline assembly (asm) or generated data in {self.source}.")

    def check_symbols(self) -> None:
        """Only the API crosses the link: the compiled student object may define the lab's API
        functions and its own helpers, nothing the harness, labkit or a library defines."""
        try:
            analysis = self.analyse_object()
        except ObjectRefused as refused:
            raise CompileError(f"{self.source} compiled, but its object could not be checked, so it was not "
                               "linked. Fix the line below, then build again.",
                               [self._refused_sentence(refused)]) from None
        self.defined = analysis.defined_demangled
        try:
            index = symbols.read_index(self.sdk / "symbols.json")
        except (OSError, ValueError) as err:
            raise GraderError(f"The {self.spec.name} SDK's symbol index is unreadable ({err}); "
                              "rebuild the official tree.") from None
        violations = symbols.check_symbols(analysis.defined, index, self.source)
        if violations:
            raise CompileError(f"{self.source} compiled, but it defines {len(violations)} symbol"
                               f"{'s' if len(violations) > 1 else ''} that only the harness and the "
                               "libraries may define, so it was not linked. Fix each line below, then "
                               "build again.", [v.sentence for v in violations])

    def forbidden_in_source(self) -> list:
        return forbidden.source_findings(self.spec, self.sources())

    def forbidden_in_object(self) -> list:
        if not self.spec.handin.refused:
            return []
        try:
            analysis = self.analyse_object()
        except ObjectRefused as refused:
            # Not searched is not clean: the hand-in fails this check too.
            return [Finding("forbidden", "error", f"The compiled {self.source} could not be searched for the "
                            f"libraries the {self.spec.name} lab forbids. {self._refused_sentence(refused)}",
                            file=self.source)]
        return forbidden.object_findings(self.spec, self.source, analysis.library_symbols,
                                         analysis.library_strings)

    def check_forbidden(self) -> None:
        found = self.forbidden_in_source() + self.forbidden_in_object()
        if found:
            raise ForbiddenError(f"{self.source} uses a library the {self.spec.name} lab does not allow, "
                                 "so it was not linked. Fix each line below, then build again.",
                                 [f.message for f in found])

    def link(self) -> Path:
        return self.linked(self.run_link())

    def run_link(self) -> ProcessResult:
        """The link command, run in the sandbox; what it gave is judged by linked()."""
        return self.step(["/bin/sh", "-c", self.commands["link"]])

    def linked(self, linked: ProcessResult) -> Path:
        """The binary the link made, or CompileError with what went wrong (in words that name
        the symbols check_symbols found, so it comes after it)."""
        self.log += _log(linked)
        past_a_limit = _past_a_limit(linked, "link", self.config) if linked.exit_code != 0 else ""
        if past_a_limit:
            raise CompileError(f"{self.source} compiled but did not link: {past_a_limit}",
                               compile_feedback(_log(linked), self.spec.files, self._compiled_from,
                                                self.config.compile_feedback_lines))
        if linked.exit_code != 0:
            feedback = link_findings(_log(linked), self.spec, self.source, self.defined)
            feedback = feedback or compile_feedback(_log(linked), self.spec.files, self._compiled_from,
                                                    self.config.compile_feedback_lines)
            raise CompileError(f"{self.source} compiled but did not link with the official {self.spec.name} "
                               f"harness. Compare your functions with {self.spec.api_header}.", feedback)
        binary = self.build_dir / self.commands["binary"]
        if not binary.is_file() or binary.is_symlink():
            raise GraderError(f"The submission build succeeded but made no {binary}.")
        return binary


def build_submission(config: Config, spec: LabSpec, folder: Path, work: Path) -> SubmissionBuild:
    """Stage `folder` into work/src and build it, in the sandbox, in work/build against the
    lab's SDK: the hand-in checks that run at grade time (compile, symbols, forbidden, ...:
    handin_checks.py), then the link; the first failing step raises."""
    builder = SubmissionBuilder(config, spec, folder, work)
    for name in builder.staged.ignored_files(spec):
        console.warn(f"ignored {name}: the {spec.name} lab only takes {', '.join(spec.files)}")
    context = handin_checks.CheckContext(config, spec, builder=builder)
    # The grade-time checks in the registry's order, the first that fails raising. Once the
    # compile has made the object, the link runs beside the checks after it, which only read
    # the object (1 to 2 s of object analysis in a process of its own): its binary is taken
    # only once every check passed, and the checks' findings come first, as when they ran
    # before it.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="link") as pool:
        linking = None
        try:
            for hand_in_check in handin_checks.at_grade_time():
                hand_in_check.enforce(context)
                if hand_in_check.name == handin_checks.CheckName.COMPILE.value:
                    linking = pool.submit(builder.run_link)
        except BaseException:
            if linking is not None:
                wait([linking])
                remove_tree(builder.build_dir / builder.commands["binary"])  # never run: a check refused it
            raise
        binary = builder.linked(linking.result() if linking is not None else builder.run_link())
    return SubmissionBuild(binary, builder.staged, builder.log)


def build_submission_reusing(config: Config, spec: LabSpec, folder: Path, work: Path) -> tuple[SubmissionBuild, bool]:
    """`build_submission` for a student's own runs: the build in `work` is reused when the
    staged files and the official SDK it was built against are the same as before, so an
    unchanged file costs no compile and an edited one recompiles only itself. Returns the
    build and whether it was reused. (Grades and hand-in checks always build afresh.)"""
    staged = stage_submission(spec, folder, work / "src")
    sdk = _sdk(config, spec)
    digest = hashlib.sha256()
    for path in [sdk / "build.json", sdk / "symbols.json", config.build_dir / sdk_module.MANIFEST_NAME,
                 *(staged.copy_dir / name for name in staged.copied)]:
        digest.update(path.name.encode() + b"\0" + (path.read_bytes() if path.is_file() else b"") + b"\0")
    key = digest.hexdigest()
    stamp = work / "build-key"
    binary = work / "build" / _commands(sdk)["binary"]
    if stamp.is_file() and stamp.read_text() == key and binary.is_file() and not binary.is_symlink():
        return SubmissionBuild(binary, staged, ""), True
    stamp.unlink(missing_ok=True)
    built = build_submission(config, spec, folder, work)
    stamp.write_text(key)
    return built, False


def submission_key(folder: Path) -> str:
    """A submission's key in the work folder: its plain name and a hash of its full path, so
    that c1/alice, c2/alice and nested/alice never share results or builds."""
    resolved = str(Path(folder).resolve())
    return f"{safe_name(folder)}-{hashlib.sha256(resolved.encode('utf-8', 'surrogateescape')).hexdigest()[:8]}"


def submission_work_dir(config: Config, lab: str, folder: Path) -> Path:
    """Where `cudalab build` and `cudalab run` build a submission folder (the sandbox user
    must reach it)."""
    return scratch_root(config) / "builds" / lab / submission_key(folder)
