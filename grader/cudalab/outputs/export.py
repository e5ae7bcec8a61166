"""What `cudalab export` writes (the verb, and what a bundle holds and how the leak scan
works, are in commands/export.py): the student bundle's plan, the solutions'
fingerprints, and the leak scan every file of a bundle passes before it is put in place.
"""
from __future__ import annotations

import hashlib
import html
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from .. import __version__
from ..building import bundle
from ..grading import calibration
from . import handout, report
from ..lab import labs, starter
from ..config import Config
from ..errors import UsageError
from ..isolation.trees import remove_tree

SCHEMA = "cudalab.export/1"
SHINGLE_TOKENS = 12    # tokens per fingerprint
MIN_LEAK_TOKENS = 20   # the shortest matching stretch reported as a leak
_SKIPPED_NAMES = ("__pycache__", ".pytest_cache", ".DS_Store")


# --- what goes into a bundle ---------------------------------------------------------------

def _tree(root: Path, folder: str, leave_out: tuple[str, ...] = ()) -> dict[str, Path]:
    """Every file under root/folder (bundle path -> source), less the folders `leave_out`
    (paths relative to root) and caches. A link is refused: a bundle holds plain files."""
    found: dict[str, Path] = {}
    base = root / folder
    if not base.is_dir():
        raise UsageError(f"{base} is missing: the repository is incomplete, so no bundle was written.")
    for current, dirs, files in os.walk(base):
        here = Path(current)
        for name in list(dirs):
            rel = (here / name).relative_to(root).as_posix()
            if name in _SKIPPED_NAMES or name.endswith(".egg-info") or rel in leave_out:
                dirs.remove(name)
            elif (here / name).is_symlink():
                raise UsageError(f"{rel} is a symbolic link. A bundle holds plain files only: replace the link "
                                 "with what it points to, then export again.")
        dirs.sort()
        for name in sorted(files):
            path = here / name
            rel = path.relative_to(root).as_posix()
            if name in _SKIPPED_NAMES or name.endswith(".pyc"):
                continue
            if path.is_symlink():
                raise UsageError(f"{rel} is a symbolic link. A bundle holds plain files only: replace the link "
                                 "with what it points to, then export again.")
            found[rel] = path
    return found


def _file(root: Path, rel: str) -> dict[str, Path]:
    path = root / rel
    if not path.is_file() or path.is_symlink():
        raise UsageError(f"{path} is missing or not a plain file: the repository is incomplete, so no bundle "
                         "was written.")
    return {rel: path}


def bundle_plan(root: Path, lab_names: list[str]) -> dict[str, Path]:
    """What the bundle of `lab_names` copies from the repository at `root`: bundle path
    (POSIX, relative) -> source file. The files the export generates are not in it."""
    plan: dict[str, Path] = {}
    for rel in ("CMakeLists.txt", ".gitignore", "tools/setup.sh", "tools/stage-deps.sh",
                "grader/pyproject.toml", "grader/README.md"):
        plan.update(_file(root, rel))
    plan.update(_tree(root, "cmake"))
    plan.update(_tree(root, "common", leave_out=("common/tests",)))
    plan.update(_tree(root, "datasets"))
    plan.update(_tree(root, "grader/cudalab"))
    for lab in lab_names:
        # The lab's own files, not its tests/ (or any other folder).
        plan.update({rel: path for rel, path in _tree(root, f"labs/{lab}").items()
                     if PurePosixPath(rel).parent == PurePosixPath("labs", lab)})
        plan.update(_tree(root, f"starter/{lab}"))
    return plan  # (the handouts are rendered for the bundle: bundle_handouts)


def bundle_handouts(specs: list) -> dict[str, str]:
    """Each lab's handout as a bundle hands it out (Markdown and page): the same as the
    repository's but naming no file of solutions/ and only the verbs a bundle offers."""
    texts = {}
    for spec in specs:
        rendered = handout.render(spec, calibration.read(spec.folder / calibration.FILE_NAME, spec.name),
                                  for_bundle=True)
        texts[f"handouts/{spec.name}.md"] = rendered.markdown
        texts[f"handouts/{spec.name}.html"] = rendered.html
    return texts


def bundle_presets(root: Path) -> str:
    """The repository's CMakePresets.json as a bundle has it: the same configure and build
    presets, no test presets, and CUDALAB_BUILD_TESTS off (a bundle holds no tests)."""
    try:
        presets = json.loads((root / "CMakePresets.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise UsageError(f"{root / 'CMakePresets.json'} cannot be read ({err}), so no bundle was written.") from None
    presets.pop("testPresets", None)
    for preset in presets.get("configurePresets", []):
        variables = preset.get("cacheVariables") or {}
        if "CUDALAB_BUILD_TESTS" in variables:
            variables["CUDALAB_BUILD_TESTS"] = "OFF"
    return json.dumps(presets, indent=2) + "\n"


def render_readme(specs: list, version: str = __version__) -> str:
    """The bundle's README.md, for students."""
    return report.environment().get_template("bundle_readme.md.j2").render(
        labs=specs, version=version, student_verbs=bundle.STUDENT_VERBS)


def _check_generated_files(config: Config, specs: list) -> None:
    """A bundle hands out the starter and the handout that the lab generates today."""
    stale = []
    for spec in specs:
        for solution, starter_file in starter.starter_pairs(config.root, spec):
            if not solution.is_file():
                raise UsageError(f"There is no solution file {solution}: the {spec.name} lab is incomplete, so no "
                                 "bundle was written.")
            if starter.diff_against_starter(solution, starter_file):
                stale.append(f"{starter_file.relative_to(config.root)} (`cudalab starter {spec.name}`)")
        path = handout.handout_path(config, spec)
        if not path.is_file() or path.read_text(encoding="utf-8") != handout.render_handout(spec):
            stale.append(f"{path.relative_to(config.root)} (`cudalab handout {spec.name}`)")
    if stale:
        raise UsageError("No bundle was written: these files are out of date with their lab, and a bundle hands "
                         f"out what the lab generates today: {'; '.join(stale)}. Regenerate them, then export again.")


# --- the leak scan ---------------------------------------------------------------------------

_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9][0-9A-Za-z_.']*")
_MARKER_LINE = re.compile(rf"^[ \t]*(?:{re.escape(starter.BEGIN)}|{re.escape(starter.END)})[ \t]*$", re.M)
_ESCAPE = re.compile(r"\\(?:u[0-9a-fA-F]{4}|[nrtbf\"'\\/])")
_MARKUP = re.compile(r"<[^<>]*>")
_MARKUP_SUFFIXES = (".html", ".htm", ".xml", ".svg")
_NOT_FOR_STUDENTS = {"solutions": "the course's solutions", "ladder": "a ladder of the solution's variants",
                     "tests": "tests (of the labs, the grader or the solutions)", ".git": "a git repository",
                     ".venv": "a virtual environment", ".deps": "staged dependencies", ".grade": "grade results"}


def _code_of(text: str) -> str:
    """C, C++ or CUDA source with its comments blanked out (string and character literals kept)."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        if text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            out.append(" ")
            i = n if end < 0 else end + 2
        elif text[i] in "\"'":
            quote, j = text[i], i + 1
            while j < n and text[j] not in (quote, "\n"):
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def solution_tokens(text: str) -> list[str]:
    """The identifiers and numbers of what a solution file adds to the starter: the code
    between its markers where it has them (the rest is the starter's), else all of its
    code; comments left out."""
    if _MARKER_LINE.search(text):
        kept, inside = [], False
        for line in text.splitlines():
            if line.strip() == starter.BEGIN:
                inside = True
            elif line.strip() == starter.END:
                inside = False
            elif inside:
                kept.append(line)
        text = "\n".join(kept)
    return _TOKEN.findall(_code_of(text))


def _shingles(tokens: list[str]):
    return (tuple(tokens[i:i + SHINGLE_TOKENS]) for i in range(len(tokens) - SHINGLE_TOKENS + 1))


@dataclass
class Fingerprints:
    """What the leak scan looks for: shingle -> the solution file it comes from, and the
    SHA-256 of every solution file."""

    shingles: dict[tuple[str, ...], str] = field(default_factory=dict)
    file_hashes: dict[str, str] = field(default_factory=dict)
    sources: int = 0


def solution_fingerprints(root: Path) -> Fingerprints:
    """The fingerprints of every file under root/solutions, less what the starters hold."""
    solutions = root / "solutions"
    if not solutions.is_dir():
        raise UsageError(f"{solutions} is missing: the leak scan needs the course's solutions to know what to look "
                         "for. Export from the course's repository, not from a bundle.")
    given: set[tuple[str, ...]] = set()
    for path in sorted((root / "starter").rglob("*")) if (root / "starter").is_dir() else []:
        if path.is_file():
            given.update(_shingles(_TOKEN.findall(_code_of(path.read_text(encoding="utf-8", errors="replace")))))
    found = Fingerprints()
    for path in sorted(solutions.rglob("*")):
        if not path.is_file():
            continue
        rel = path.relative_to(root).as_posix()
        data = path.read_bytes()
        found.sources += 1
        found.file_hashes.setdefault(hashlib.sha256(data).hexdigest(), rel)
        for shingle in _shingles(solution_tokens(data.decode("utf-8", errors="replace"))):
            if shingle not in given:
                found.shingles.setdefault(shingle, rel)
    return found


@dataclass(frozen=True)
class Leak:
    """One thing in a bundle that must not be there."""

    path: str                 # in the bundle, '/'-separated
    kind: str                 # solution_code, solution_file, solution_marker, not_for_students, build_output, stored_output, link
    message: str
    line: int | None = None
    source: str | None = None  # the solution file it comes from

    def sentence(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.message}"

    def to_json(self) -> dict:
        return {"path": self.path, "line": self.line, "kind": self.kind, "source": self.source,
                "message": self.message}


def readable_text(name: str, data: bytes) -> str:
    """A file as the scan reads it: UTF-8 (bytes that are not become U+FFFD), markup tags
    dropped, HTML entities and string escapes decoded; line breaks stay where they were."""
    text = data.decode("utf-8", errors="replace")
    if name.lower().endswith(_MARKUP_SUFFIXES):
        text = _MARKUP.sub(lambda tag: "\n" * tag.group().count("\n") or " ", text)
    text = html.unescape(text)

    def unescape(match: re.Match) -> str:
        escape = match.group()
        if escape[1] == "u":
            char = chr(int(escape[2:], 16))
            return char if char.isprintable() else " "
        return {"\\": "\\", "/": "/", '"': '"', "'": "'"}.get(escape[1], " ")

    return _ESCAPE.sub(unescape, text)


def _line_at(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _copied_code(rel: str, text: str, prints: Fingerprints) -> list[Leak]:
    """Every unbroken stretch of at least MIN_LEAK_TOKENS tokens of `text` that matches
    the solutions' fingerprints."""
    matches = list(_TOKEN.finditer(text))
    tokens = [m.group() for m in matches]
    hits = [i for i, shingle in enumerate(_shingles(tokens)) if shingle in prints.shingles]
    leaks: list[Leak] = []
    start = 0
    while start < len(hits):
        end = start
        while end + 1 < len(hits) and hits[end + 1] == hits[end] + 1:
            end += 1
        first, last = hits[start], hits[end] + SHINGLE_TOKENS - 1
        count = last - first + 1
        if count >= MIN_LEAK_TOKENS:
            excerpt = " ".join(text[matches[first].start():matches[last].end()].split())
            excerpt = excerpt if len(excerpt) <= 90 else excerpt[:87] + "..."
            source = prints.shingles[tuple(tokens[first:first + SHINGLE_TOKENS])]
            leaks.append(Leak(rel, "solution_code", f"{count} tokens of solution code from {source}: {excerpt}",
                              _line_at(text, matches[first].start()), source))
        start = end + 1
    return leaks


def _path_leaks(rel: str, is_dir: bool) -> list[Leak]:
    parts = PurePosixPath(rel).parts
    folders = parts if is_dir else parts[:-1]
    for part in folders:
        if part in _NOT_FOR_STUDENTS:
            return [Leak(rel, "not_for_students", f"{_NOT_FOR_STUDENTS[part]} ({part}/) do not belong in a student bundle")]
        if part.endswith(".egg-info") or part == "__pycache__":
            return [Leak(rel, "build_output", f"{part}/ is a build output, not part of a bundle")]
    if is_dir and parts[0] == "build":
        return [Leak(rel, "build_output", "a build tree (build/) is not part of a bundle: students build their own")]
    return []


def scan_file(rel: str, data: bytes, prints: Fingerprints) -> list[Leak]:
    """What is wrong with one file of a bundle (its path relative to the bundle)."""
    leaks = _path_leaks(rel, is_dir=False)
    if data.startswith(b"\x7fELF"):
        leaks.append(Leak(rel, "build_output", "an ELF file (a compiled object, library or program): a bundle holds "
                          "sources, and students build their own"))
    elif data.startswith(b"!<arch>\n"):
        leaks.append(Leak(rel, "build_output", "a static library archive: a bundle holds sources, and students build "
                          "their own"))
    elif data.startswith(b"CLAB"):
        leaks.append(Leak(rel, "stored_output", "a labkit binary dump (a stored input or output): the checker "
                          "computes expected values itself, so a bundle stores none"))
    source = prints.file_hashes.get(hashlib.sha256(data).hexdigest())
    if source is not None:
        leaks.append(Leak(rel, "solution_file", f"a copy of {source}", source=source))
    text = readable_text(rel, data)
    for marker in _MARKER_LINE.finditer(text):
        leaks.append(Leak(rel, "solution_marker", f"a solution marker line ({marker.group().strip()}): solution "
                          "files carry these, starters never do", _line_at(text, marker.start())))
    return leaks + _copied_code(rel, text, prints)


@dataclass
class ScanResult:
    files: int
    fingerprints: int
    sources: int
    leaks: list[Leak]

    def to_json(self) -> dict:
        return {"files_scanned": self.files, "fingerprints": self.fingerprints, "solution_files": self.sources,
                "shingle_tokens": SHINGLE_TOKENS, "min_leak_tokens": MIN_LEAK_TOKENS,
                "leaks": [leak.to_json() for leak in self.leaks]}


def leak_scan(folder: Path, root: Path, prints: Fingerprints | None = None) -> ScanResult:
    """Read every file under `folder` (a bundle) for what the solutions of the repository
    at `root` hold, and for what a bundle must never carry."""
    prints = prints or solution_fingerprints(root)
    leaks: list[Leak] = []
    files = 0
    for current, dirs, names in os.walk(folder):
        here = Path(current)
        dirs.sort()
        for name in sorted(dirs):
            path = here / name
            rel = path.relative_to(folder).as_posix()
            if path.is_symlink():
                leaks.append(Leak(rel, "link", "a link: a bundle holds plain files only"))
                dirs.remove(name)
            else:
                found = _path_leaks(rel, is_dir=True)
                if found:
                    leaks += found
                    dirs.remove(name)  # the folder is the finding; its files would only repeat it
        for name in sorted(names):
            path = here / name
            rel = path.relative_to(folder).as_posix()
            if path.is_symlink():
                leaks.append(Leak(rel, "link", "a link: a bundle holds plain files only"))
                continue
            files += 1
            leaks += scan_file(rel, path.read_bytes(), prints)
    return ScanResult(files, len(prints.shingles), prints.sources, leaks)


# --- writing the bundle -----------------------------------------------------------------------

def _check_out(config: Config, out: Path) -> Path:
    out = out.expanduser().resolve()
    root = config.root.resolve()
    if out == root or root.is_relative_to(out) or out.is_relative_to(root):
        raise UsageError(f"--out {out}: write the bundle outside the course's repository ({root}), so that it "
                         "can never be committed into it or copied along with it.")
    if out.exists():
        if not out.is_dir():
            raise UsageError(f"--out {out} is a file; name a new or empty folder.")
        if any(out.iterdir()) and not bundle.is_student_bundle(out):
            raise UsageError(f"--out {out} holds files and is not a student bundle, so nothing was written there. "
                             "Name a new or empty folder (a bundle already there is replaced).")
    return out


def write_bundle(config: Config, lab_names: list[str], out: Path) -> tuple[ScanResult, int, int]:
    """Write the bundle of `lab_names` to `out` and scan it; it is put in place only when
    the scan finds nothing. Returns the scan, the number of files and their bytes."""
    if bundle.is_student_bundle(config.root):
        raise UsageError(f"{config.root} is a student bundle: export from the course's repository, which holds "
                         "the solutions the leak scan looks for.")
    specs = [labs.load_lab(config, name) for name in lab_names]
    out = _check_out(config, out)
    _check_generated_files(config, specs)
    plan = bundle_plan(config.root, lab_names)
    prints = solution_fingerprints(config.root)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    except OSError as err:
        raise UsageError(f"--out {out}: the bundle cannot be written there ({err.strerror or err}). "
                         "Name a folder you can write.") from None
    try:
        return _fill(config, specs, lab_names, plan, prints, staging, out)
    except BaseException:
        remove_tree(staging)
        raise


def _fill(config: Config, specs: list, lab_names: list[str], plan: dict[str, Path], prints: Fingerprints,
          staging: Path, out: Path) -> tuple[ScanResult, int, int]:
    """Copy and generate the bundle in `staging`, scan it, and move it to `out` when clean."""
    staging.chmod(0o755)
    for rel, source in plan.items():
        target = staging / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
    created = report.timestamp()
    generated = {
        bundle.MARKER: json.dumps(bundle.marker(lab_names, __version__, created), indent=2) + "\n",
        "README.md": render_readme(specs),
        "CMakePresets.json": bundle_presets(config.root),
        **bundle_handouts(specs),
    }
    for rel, text in generated.items():
        (staging / rel).parent.mkdir(parents=True, exist_ok=True)
        (staging / rel).write_text(text, encoding="utf-8")
    scan = leak_scan(staging, config.root, prints)
    if scan.leaks:
        remove_tree(staging)
        return scan, 0, 0
    files = [p for p in staging.rglob("*") if p.is_file()]
    size = sum(p.stat().st_size for p in files)
    if out.exists():
        old = staging.with_name(staging.name + ".old")
        out.rename(old)
        staging.rename(out)
        remove_tree(old)
    else:
        staging.rename(out)
    return scan, len(files), size
