#!/usr/bin/env python3
"""Move the grader's engine modules into the subpackages that tools/module_map.toml names,
and rewrite every reference to them, so that nothing still points where a module was.

    python3 tools/move_modules.py            # move and rewrite (git mv in a git checkout)
    python3 tools/move_modules.py --dry-run  # say what would change, change nothing

What it rewrites:
* in grader/cudalab: every import of the package, relative or absolute, at module level or
  inside a function (`from .grade import x`, `from . import grade, config`, `from ..grade`),
  each spelled again from the importing module's own place;
* in every text file of the repository (tests, tools, cmake, CI scripts, docs): dotted
  names (`from cudalab.grade import`, `import cudalab.grade`, "cudalab.grade.run_case" in
  mock.patch or monkeypatch strings, `python -m cudalab.labspec`), `from cudalab import
  grade, ...` (split where its names now live in different places) and file paths
  (`grader/cudalab/grade.py`). A schema name such as `cudalab.grade/1` is not a module and
  is left alone;
* in a module it moves: paths computed from its own `__file__` (one folder deeper now);
  a path computed elsewhere from a moved module's `__file__` is named, to be checked by hand;
* grader/pyproject.toml's package list, and each subpackage's __init__.py (a two-line
  docstring, no re-exports).

A file that holds the words "move_modules: keep old names" is left as it is.

It can be run again at any time, for instance after branches that still use the old
names were merged: modules already moved stay, and only references to old names change.
It refuses to run while a module of grader/cudalab/ is in no list of the map (say where it
goes, or pass --allow-unmapped to leave it at the top), and it ends by checking that every
import of the package resolves and no old name is left, saying where one is.
"""
from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

PACKAGE = "cudalab"
HERE = Path(__file__).resolve()
# Files that spell the old names on purpose: this script and its map, and any file that
# says so with this marker (its tests, whose made-up repositories use the old names).
SELF = {HERE.name, "module_map.toml"}
KEEP_MARKER = "move_modules: keep old names"
MAX_TEXT_BYTES = 4 << 20
# Lines longer than this are split when an import has to be written out again.
LINE_LIMIT = 110


class MoveError(Exception):
    """A reason the move cannot go on, said as a sentence."""


@dataclass
class Plan:
    """What the map says, checked for the names that would make a rewrite ambiguous."""
    subpackages: dict[str, str]            # subpackage -> the docstring of its __init__.py
    home: dict[str, str]                   # module -> its subpackage
    stay: set[str]

    @property
    def renamed(self) -> dict[str, str]:
        """Old dotted name -> new dotted name, for every mapped module."""
        return {f"{PACKAGE}.{module}": f"{PACKAGE}.{sub}.{module}" for module, sub in self.home.items()}


@dataclass
class Report:
    moved: list[str] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    changed: dict[str, list[str]] = field(default_factory=dict)   # file -> what changed in it
    problems: list[str] = field(default_factory=list)

    def note(self, path: Path, root: Path, what: str) -> None:
        self.changed.setdefault(str(path.relative_to(root)), []).append(what)


# --- the map ----------------------------------------------------------------------------

def read_plan(path: Path) -> Plan:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as err:
        raise MoveError(f"Cannot read the module map {path}: {err}") from None
    identifier = re.compile(r"[a-z_][a-z0-9_]*\Z")
    subpackages: dict[str, str] = {}
    home: dict[str, str] = {}
    stay = set(data.get("stay", {}).get("modules", []))
    for sub, entry in data.get("subpackages", {}).items():
        doc = str(entry.get("doc", "")).strip()
        if not identifier.match(sub):
            raise MoveError(f"{path}: subpackage name {sub!r} is not a lower-case Python identifier.")
        if not doc:
            raise MoveError(f"{path}: subpackage {sub} needs a `doc` (the docstring of its __init__.py).")
        subpackages[sub] = doc
        for module in entry.get("modules", []):
            if module in home or module in stay:
                raise MoveError(f"{path}: module {module} is listed twice ({home.get(module, 'stay')} and {sub}).")
            home[module] = sub
    clashes = sorted(set(subpackages) & (set(home) | stay))
    if clashes:
        raise MoveError(f"{path}: subpackage(s) {', '.join(clashes)} share a name with a module; "
                        f"`{PACKAGE}.{clashes[0]}` must name one thing only, so rename the subpackage.")
    return Plan(subpackages, home, stay)


# --- finding files ----------------------------------------------------------------------

def repository_files(root: Path) -> list[Path]:
    """The text files a reference may hide in: what git tracks or would track, or every
    file outside build and environment folders where this is not a git checkout."""
    try:
        listed = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--cached", "--others",
                                 "--exclude-standard"], capture_output=True, check=True).stdout
        paths = [root / name for name in listed.decode().split("\0") if name]
    except (OSError, subprocess.CalledProcessError):
        skipped = {".git", ".venv", ".deps", "__pycache__", "node_modules", "build"}
        paths = [p for p in root.rglob("*") if not skipped & set(p.relative_to(root).parts)]
    return sorted({p for p in paths if p.is_file() and not p.is_symlink() and p.name not in SELF})


def read_text(path: Path) -> str | None:
    """A file's text, or None where it is not one to rewrite (binary, huge, or marked)."""
    try:
        if path.stat().st_size > MAX_TEXT_BYTES:
            return None
        text = path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    return None if KEEP_MARKER in text else text


def is_git_checkout(root: Path) -> bool:
    done = subprocess.run(["git", "-C", str(root), "rev-parse", "--is-inside-work-tree"],
                          capture_output=True, text=True)
    return done.returncode == 0 and done.stdout.strip() == "true"


def package_modules(package_dir: Path) -> dict[str, Path]:
    """Dotted name -> file, packages (their __init__.py) included."""
    found = {}
    for path in sorted(package_dir.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        parts = list(path.relative_to(package_dir).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join([PACKAGE, *parts])] = path
    return found


# --- moving -----------------------------------------------------------------------------

def move_modules(plan: Plan, root: Path, package_dir: Path, dry_run: bool, report: Report) -> dict[Path, str]:
    """Move each mapped module still at the top; returns new file -> its old dotted name."""
    use_git = is_git_checkout(root)
    moved: dict[Path, str] = {}
    for sub, doc in plan.subpackages.items():
        init = package_dir / sub / "__init__.py"
        if not init.exists():
            lines = doc.splitlines()
            body = '"""' + "\n".join(line.strip() for line in lines) + '\n"""\n'
            report.created.append(str(init.relative_to(root)))
            if not dry_run:
                init.parent.mkdir(exist_ok=True)
                init.write_text(body, encoding="utf-8")
                if use_git:
                    subprocess.run(["git", "-C", str(root), "add", str(init)], check=True)
    for module, sub in sorted(plan.home.items()):
        old, new = package_dir / f"{module}.py", package_dir / sub / f"{module}.py"
        if old.exists() and new.exists():
            report.problems.append(f"{old.relative_to(root)} and {new.relative_to(root)} both exist: "
                                   f"merge the old one's changes into the new one, delete the old one "
                                   f"and run again.")
            continue
        if not old.exists():
            continue
        report.moved.append(f"{old.relative_to(root)} -> {new.relative_to(root)}")
        moved[new] = f"{PACKAGE}.{module}"
        if dry_run:
            continue
        if use_git and subprocess.run(["git", "-C", str(root), "ls-files", "--error-unmatch", str(old)],
                                      capture_output=True).returncode == 0:
            subprocess.run(["git", "-C", str(root), "mv", str(old), str(new)], check=True)
        else:
            old.rename(new)
    return moved


# --- rewriting imports inside the package -----------------------------------------------

class Resolver:
    """Where a dotted name of the package lives after the move."""

    def __init__(self, plan: Plan, modules: set[str]):
        self.renamed = plan.renamed
        self.modules = modules
        self.subpackages = {f"{PACKAGE}.{sub}" for sub in plan.subpackages}

    def module(self, name: str) -> str | None:
        """The new name of a module or package, or None where it names none."""
        if name in self.renamed:
            return self.renamed[name]
        return name if name in self.modules else None

    def from_import(self, anchor: str, names: list[str]) -> list[str] | None:
        """For `from ANCHOR import NAMES`: the module each name is imported from now
        (ANCHOR's new name, or the new parent of a submodule named), or None where this
        reading of the statement does not resolve."""
        where = []
        new_anchor = self.module(anchor)
        for name in names:
            submodule = self.module(f"{anchor}.{name}")
            if submodule is not None:
                where.append(submodule.rsplit(".", 1)[0])
            elif new_anchor is None or new_anchor in self.subpackages:
                return None         # a subpackage re-exports nothing: the name must be a module
            else:
                where.append(new_anchor)
        return where


def absolute_anchor(module: str, is_package: bool, level: int, name: str | None) -> str:
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[:len(base) - (level - 1)] if level > 1 else base
    return ".".join(base + ([name] if name else []))


def relative_spelling(module: str, is_package: bool, target: str) -> str:
    """`target` as the `from` part of an import written in `module`."""
    here = module.split(".") if is_package else module.split(".")[:-1]
    there = target.split(".")
    common = 0
    while common < min(len(here), len(there)) and here[common] == there[common]:
        common += 1
    return "." * (len(here) - common + 1) + ".".join(there[common:])


HEAD = re.compile(r"from\s+([.\w]+)\s+import\b")


def rewrite_from(text_lines: list[str], node: ast.ImportFrom, groups: list[tuple[str, list[ast.alias]]],
                 edits: list[tuple[int, int, int, int, str]]) -> None:
    """Queue the edit that makes `node` import from the spelled places in `groups`."""
    first, last = node.lineno - 1, node.end_lineno - 1
    segment = ast.get_source_segment("\n".join(text_lines), node)
    if len(groups) == 1:
        match = HEAD.match(segment)
        new = segment[:match.start(1)] + groups[0][0] + segment[match.end(1):]
    else:
        indent = " " * node.col_offset
        statements = []
        for spelled, aliases in groups:
            names = ", ".join(a.name + (f" as {a.asname}" if a.asname else "") for a in aliases)
            line = f"from {spelled} import {names}"
            if len(indent) + len(line) > LINE_LIMIT:
                line = f"from {spelled} import (\n{indent}    {names},\n{indent})"
            statements.append(line)
        new = f"\n{indent}".join(statements)
    if new != segment:
        edits.append((first, node.col_offset, last, node.end_col_offset, new))


def apply_edits(text: str, edits: list[tuple[int, int, int, int, str]]) -> str:
    lines = text.split("\n")
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)
    # ast's columns count UTF-8 bytes; convert to characters per line.
    def position(line: int, col: int) -> int:
        return offsets[line] + len(lines[line].encode("utf-8")[:col].decode("utf-8", "replace"))
    for first, col, last, end_col, new in sorted(edits, reverse=True):
        start, stop = position(first, col), position(last, end_col)
        text = text[:start] + new + text[stop:]
    return text


def rewrite_imports(path: Path, text: str, resolver: Resolver, current: str | None, origins: list[str],
                    report: Report, root: Path) -> str:
    """Rewrite the imports of the package in one Python file. `current` is the file's own
    dotted name when it is part of the package (relative imports are spelled from there),
    and `origins` the names its relative imports may have been written from: its old
    name when it moves now, else its own name and then its old name (for imports merged
    in after an earlier move)."""
    try:
        tree = ast.parse(text, filename=str(path))
    except SyntaxError as err:
        report.problems.append(f"{path.relative_to(root)}:{err.lineno}: cannot be parsed ({err.msg}); "
                               f"its imports were not rewritten.")
        return text
    is_package = path.name == "__init__.py"
    lines = text.split("\n")
    edits: list[tuple[int, int, int, int, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        names = [alias.name for alias in node.names]
        if node.level:
            if current is None:
                continue
            places = None
            for origin in origins:
                anchor = absolute_anchor(origin, is_package, node.level, node.module)
                places = None if "*" in names else resolver.from_import(anchor, names)
                if places is not None:
                    break
            if places is None:
                report.problems.append(f"{path.relative_to(root)}:{node.lineno}: `from {'.' * node.level}"
                                       f"{node.module or ''} import {', '.join(names)}` names no module of "
                                       f"{PACKAGE} from here or from where the file was; fix it by hand.")
                continue
            spell = [relative_spelling(current, is_package, place) for place in places]
        elif node.module == PACKAGE or (node.module or "").startswith(PACKAGE + "."):
            places = resolver.from_import(node.module, names) if "*" not in names else None
            if places is None:
                continue       # an old `from cudalab.grade import x` is left to the dotted-name rewrite
            spell = places
        else:
            continue
        groups: list[tuple[str, list[ast.alias]]] = []
        for spelled, alias in zip(spell, node.names):
            for group in groups:
                if group[0] == spelled:
                    group[1].append(alias)
                    break
            else:
                groups.append((spelled, [alias]))
        before = len(edits)
        rewrite_from(lines, node, groups, edits)
        if len(edits) > before:
            report.note(path, root, f"line {node.lineno}: import from {', '.join(g[0] for g in groups)}")
    return apply_edits(text, edits) if edits else text


FILE_ANCHOR = re.compile(r"Path\(__file__\)(\.resolve\(\))?((?:\.parent(?![\w\[]))+|\.parents\[(\d+)\])")


def deepen_file_paths(path: Path, text: str, report: Report, root: Path) -> str:
    """A moved module lies one folder deeper: what it found from its own __file__ is one
    more parent up."""
    def deeper(match: re.Match) -> str:
        steps = int(match.group(3)) + 1 if match.group(3) is not None else match.group(2).count(".parent")
        return f"Path(__file__){match.group(1) or ''}.parents[{steps}]"
    new = FILE_ANCHOR.sub(deeper, text)
    if new != text:
        report.note(path, root, "paths from __file__ one folder deeper")
    left = [n for n, line in enumerate(new.split("\n"), 1) if "__file__" in line and not FILE_ANCHOR.search(line)]
    for number in left:
        report.problems.append(f"{path.relative_to(root)}:{number}: uses __file__ in a way this script "
                               f"cannot adjust; check it still finds what it looks for.")
    return new


# --- rewriting text anywhere ------------------------------------------------------------

def text_patterns(plan: Plan) -> list[tuple[re.Pattern, object]]:
    old = "|".join(sorted(map(re.escape, plan.home), key=len, reverse=True))
    renamed = plan.renamed
    # `cudalab.grade` but not `cudalab.grade/1` (a schema) nor `cudalab.grade-x`.
    dotted = re.compile(rf"(?<![\w.]){PACKAGE}\.({old})(?![\w/-])")
    path = re.compile(rf"(?<![\w.-]){PACKAGE}/({old})\.py\b")
    from_package = re.compile(rf"^([ \t]*|.*?[;'\"(]\s*)from {PACKAGE} import ([\w ,]+?)(?=\s*(?:$|[;'\"#)]))",
                              re.MULTILINE)

    def split_from(match: re.Match) -> str:
        names = [n.strip() for n in match.group(2).split(",") if n.strip()]
        if not any(n.split(" as ")[0] in plan.home for n in names):
            return match.group(0)
        groups: dict[str, list[str]] = {}
        for name in names:
            real = name.split(" as ")[0].strip()
            place = renamed.get(f"{PACKAGE}.{real}", f"{PACKAGE}.{real}").rsplit(".", 1)[0] \
                if real in plan.home else PACKAGE
            groups.setdefault(place, []).append(name)
        joiner = "\n" + re.match(r"[ \t]*", match.group(1)).group(0) \
            if match.group(1).strip() == "" else "; "
        return match.group(1) + joiner.join(f"from {place} import {', '.join(n)}" for place, n in groups.items())

    return [(from_package, split_from),
            (dotted, lambda m: renamed[f"{PACKAGE}.{m.group(1)}"]),
            (path, lambda m: f"{PACKAGE}/{plan.home[m.group(1)]}/{m.group(1)}.py")]


def other_file_anchors(path: Path, text: str, moved_now: set[str], report: Report, root: Path) -> None:
    """`Path(publish.__file__).parent` in another file finds what lay beside a module that
    now lies one folder deeper: said, not guessed at (the name may be another module's)."""
    if not moved_now:
        return
    pattern = re.compile(rf"\b({'|'.join(map(re.escape, sorted(moved_now)))})\.__file__\b")
    for number, line in enumerate(text.split("\n"), 1):
        match = pattern.search(line)
        if match:
            report.problems.append(f"{path.relative_to(root)}:{number}: finds a path from "
                                   f"{match.group(0)}, which now lies one folder deeper; check what it "
                                   f"looks for there (the package's own folder is cudalab.__file__'s).")


def rewrite_text(path: Path, text: str, patterns, report: Report, root: Path) -> str:
    for pattern, replace in patterns:
        new = pattern.sub(replace, text)
        if new != text:
            changed = [n for n, (a, b) in enumerate(zip(text.split("\n"), new.split("\n")), 1) if a != b]
            report.note(path, root, f"names of moved modules on line(s) {', '.join(map(str, changed[:12]))}"
                                    + (" ..." if len(changed) > 12 else ""))
            text = new
    return text


def update_pyproject(root: Path, plan: Plan, package_dir: Path, dry_run: bool, report: Report) -> None:
    pyproject = root / "grader" / "pyproject.toml"
    text = read_text(pyproject)
    match = re.search(r"^packages\s*=\s*\[([^\]]*)\]", text or "", re.MULTILINE)
    if text is None or match is None:
        report.problems.append(f"{pyproject.relative_to(root)} has no `packages = [...]` list; add "
                               + ", ".join(f'"{PACKAGE}.{s}"' for s in plan.subpackages) + " by hand.")
        return
    listed = re.findall(r'"([^"]+)"', match.group(1))
    wanted = [f"{PACKAGE}.{sub}" for sub in plan.subpackages if (package_dir / sub).is_dir() or dry_run]
    missing = [name for name in wanted if name not in listed]
    if not missing:
        return
    after = listed.index(f"{PACKAGE}.commands") + 1 if f"{PACKAGE}.commands" in listed else len(listed)
    names = listed[:after] + missing + listed[after:]
    body = ", ".join(f'"{n}"' for n in names)
    line = f"packages = [{body}]"
    if len(line) > LINE_LIMIT:
        line = "packages = [\n" + "".join(f'    "{n}",\n' for n in names) + "]"
    report.note(pyproject, root, "package list: " + ", ".join(missing))
    if not dry_run:
        pyproject.write_text(text[:match.start()] + line + text[match.end():], encoding="utf-8")


# --- checking what is left ----------------------------------------------------------------

def leftovers(root: Path, package_dir: Path, plan: Plan, modules: set[str]) -> list[str]:
    resolver = Resolver(plan, modules)
    resolver.renamed = {}        # after the move only the new names are valid
    found = []
    for name, path in package_modules(package_dir).items():
        text = read_text(path) or ""
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level:
                anchor = absolute_anchor(name, path.name == "__init__.py", node.level, node.module)
                names = [a.name for a in node.names]
                if "*" not in names and resolver.from_import(anchor, names) is None:
                    found.append(f"{path.relative_to(root)}:{node.lineno}: `from {'.' * node.level}"
                                 f"{node.module or ''} import ...` names no module of {PACKAGE}.")
    for path in repository_files(root):
        text = read_text(path)
        if text is None:
            continue
        for pattern, _ in text_patterns(plan):
            for match in pattern.finditer(text):
                if pattern.pattern.startswith("^") and match.group(0) == pattern.sub(_, match.group(0)):
                    continue    # `from cudalab import config`: nothing moved in it
                number = text.count("\n", 0, match.start()) + 1
                found.append(f"{path.relative_to(root)}:{number}: still names a moved module by its old "
                             f"name: {match.group(0).strip()}")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, default=HERE.parents[1],
                        help="the repository (default: the one this script is in)")
    parser.add_argument("--map", type=Path, default=HERE.with_name("module_map.toml"),
                        help="the module map (default: tools/module_map.toml)")
    parser.add_argument("--dry-run", action="store_true", help="say what would change; change nothing")
    parser.add_argument("--allow-unmapped", action="store_true",
                        help="leave modules the map does not name at the top instead of refusing")
    parser.add_argument("--verbose", action="store_true", help="list every file changed and how")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    package_dir = root / "grader" / PACKAGE
    try:
        if not (package_dir / "__init__.py").is_file():
            raise MoveError(f"{package_dir} is not the grader's package; pass --root with the repository.")
        plan = read_plan(args.map)
        top = {p.stem for p in package_dir.glob("*.py")} - {"__init__", "__main__"}
        unmapped = sorted(top - set(plan.home) - plan.stay)
        if unmapped and not args.allow_unmapped:
            raise MoveError("These modules of grader/cudalab/ are in no list of " + str(args.map) + ": "
                            + ", ".join(unmapped) + ". Add each under the subpackage that says what it "
                            "does (or under [stay]) and run again, or pass --allow-unmapped.")
        for module in sorted(plan.stay - top):
            print(f"note: [stay] names {module}, which is not at the top of grader/cudalab/.")
        report = Report()
        if unmapped:
            report.problems.append("left at the top, in no list of the map: " + ", ".join(unmapped))
        moved = move_modules(plan, root, package_dir, args.dry_run, report)
        modules = set(package_modules(package_dir))
        # Each file as it is (or, in a dry run, will be) placed, and where to read it now.
        placed = {path: path for path in repository_files(root)}
        if args.dry_run:
            modules |= set(plan.renamed.values()) | {f"{PACKAGE}.{s}" for s in plan.subpackages}
            for new, old in moved.items():
                placed[new] = placed.pop(package_dir / f"{old.rsplit('.', 1)[1]}.py")
        resolver = Resolver(plan, modules)
        former = {new: old for old, new in plan.renamed.items()}
        patterns = text_patterns(plan)
        moved_now = {old.rsplit(".", 1)[1] for old in moved.values()}
        for path, on_disk in sorted(placed.items()):
            text = read_text(on_disk)
            if text is None:
                continue
            new = text
            if path.suffix == ".py":
                current = None
                origins: list[str] = []
                if package_dir in path.parents:
                    parts = list(path.relative_to(package_dir).with_suffix("").parts)
                    if parts[-1] == "__init__":
                        parts.pop()
                    current = ".".join([PACKAGE, *parts])
                    origins = [moved[path]] if path in moved else [current, former.get(current, current)]
                new = rewrite_imports(path, new, resolver, current, list(dict.fromkeys(origins)), report, root)
                if path in moved:
                    new = deepen_file_paths(path, new, report, root)
                other_file_anchors(path, new, moved_now, report, root)
            new = rewrite_text(path, new, patterns, report, root)
            if new != text and not args.dry_run:
                path.write_text(new, encoding="utf-8")
        update_pyproject(root, plan, package_dir, args.dry_run, report)
        if not args.dry_run:
            report.problems += leftovers(root, package_dir, plan, set(package_modules(package_dir)))
    except MoveError as err:
        print(f"move_modules: {err}", file=sys.stderr)
        return 2
    verb = "would " if args.dry_run else ""
    print(f"{verb}move {len(report.moved)} module(s), {verb}create {len(report.created)} subpackage "
          f"__init__.py file(s), {verb}change {len(report.changed)} file(s).")
    for line in report.moved if args.verbose or args.dry_run else []:
        print(f"  move {line}")
    for name, what in sorted(report.changed.items()) if args.verbose or args.dry_run else []:
        print(f"  {name}: " + "; ".join(what))
    if report.problems:
        print(f"\n{len(report.problems)} thing(s) to look at by hand:", file=sys.stderr)
        for problem in report.problems:
            print(f"  {problem}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
