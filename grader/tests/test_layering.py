"""The grader's modules form one-way layers: the CLI dispatcher loads commands, a command
(`cudalab/commands/<verb>.py`: its arguments, `main()` and printing) calls the engine, and
the engine (every other module, most of them in subpackages named for what they do:
`cudalab/grading/`, `cudalab/intake/`, ...) never reaches back up. Nothing imports in a circle, not
even through an import written inside a function: such an import only postpones the
cycle to the first call, where it breaks in whichever order the modules happen to load.

The graph is read from the source with `ast`, so it holds every import the code can make,
at module level or inside a function. Run this file as a script to print the figures of
a tree: `python grader/tests/test_layering.py [PATH/TO/grader/cudalab]`.
"""
from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parents[1] / "cudalab"
PACKAGE = "cudalab"
COMMANDS = f"{PACKAGE}.commands"
# The dispatcher sits above the commands: it may load any of them.
DISPATCHERS = {f"{PACKAGE}.cli", f"{PACKAGE}.__main__"}


@dataclass
class Module:
    name: str
    path: Path
    file: str                              # its path inside the package, as messages show it
    is_command: bool                       # defines a verb: top-level add_arguments() and main()
    imports: dict[str, int] = field(default_factory=dict)   # imported module -> first line
    function_level: list[tuple[str, int]] = field(default_factory=list)  # (module, line)
    unresolved: list[tuple[str, int]] = field(default_factory=list)  # (relative import, line) naming no module
    relative_lines: set[int] = field(default_factory=set)  # every line a relative import starts on


def _module_name(package_dir: Path, path: Path) -> str:
    parts = list(path.relative_to(package_dir).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([PACKAGE, *parts])


def _defines_verb(tree: ast.Module) -> bool:
    names = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    return {"add_arguments", "main"} <= names


def _anchor(node: ast.ImportFrom, current: str, is_package: bool) -> str:
    """The absolute name of the module a `from ... import` reads from."""
    if not node.level:
        return node.module or ""
    base = current.split(".") if is_package else current.split(".")[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _targets(node: ast.Import | ast.ImportFrom, current: str, is_package: bool, known: set[str]) -> list[str]:
    """The package's modules an import statement loads (other packages are not followed)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names if alias.name in known]
    anchor = _anchor(node, current, is_package)
    found = [anchor] if anchor in known else []
    # `from . import grade` and `from .commands import build` load the submodule itself.
    found += [f"{anchor}.{alias.name}" for alias in node.names if f"{anchor}.{alias.name}" in known]
    return found


def _inside_function(tree: ast.Module) -> set[int]:
    """The ids of the import nodes written inside a function or method."""
    inner: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            inner.update(id(sub) for sub in ast.walk(node) if isinstance(sub, (ast.Import, ast.ImportFrom)))
    return inner


def read_package(package_dir: Path = PACKAGE_DIR) -> dict[str, Module]:
    paths = sorted(package_dir.rglob("*.py"))
    names = {_module_name(package_dir, path): path for path in paths}
    known = set(names)
    modules: dict[str, Module] = {}
    for name, path in names.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        module = Module(name, path, path.relative_to(package_dir).as_posix(), _defines_verb(tree))
        inner = _inside_function(tree)
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            if isinstance(node, ast.ImportFrom) and node.level:
                module.relative_lines.add(node.lineno)
                anchor = _anchor(node, name, path.name == "__init__.py")
                if anchor not in known:  # moved code whose `from .x` still points where x was
                    module.unresolved.append((f"{'.' * node.level}{node.module or ''}", node.lineno))
            for target in _targets(node, name, path.name == "__init__.py", known):
                if target == name:
                    continue
                module.imports.setdefault(target, node.lineno)
                if id(node) in inner:
                    module.function_level.append((target, node.lineno))
        modules[name] = module
    # A package's __init__ is loaded before any of its submodules: not a layer of its own.
    for module in modules.values():
        for target in list(module.imports):
            parent = target.rsplit(".", 1)[0]
            if parent != PACKAGE and parent in modules and parent != module.name:
                module.imports.setdefault(parent, module.imports[target])
    return modules


def _where(module: Module, target: str) -> str:
    return f"{module.file}:{module.imports[target]}"


def command_to_command(modules: dict[str, Module]) -> list[str]:
    return [f"{a.name} -> {b} ({_where(a, b)})" for a in modules.values() if a.is_command
            for b in a.imports if modules[b].is_command]


def engine_to_command(modules: dict[str, Module]) -> list[str]:
    return [f"{a.name} -> {b} ({_where(a, b)})" for a in modules.values()
            if not a.is_command and a.name not in DISPATCHERS and a.name != COMMANDS
            for b in a.imports if modules[b].is_command or b in DISPATCHERS]


def _strongly_connected(modules: dict[str, Module]) -> list[list[str]]:
    """Tarjan's components, iteratively (the graph is small, but recursion limits are not a
    property worth depending on)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for root in sorted(modules):
        if root in index:
            continue
        work = [(root, iter(sorted(modules[root].imports)))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(modules[child].imports))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return components


def _shortest_cycle_through(modules: dict[str, Module], start: str, within: set[str]) -> list[str]:
    """A shortest import chain from `start` back to itself inside one component."""
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(modules[node].imports):
                if child not in within:
                    continue
                if child == start:
                    chain = [node]
                    while chain[-1] != start:
                        chain.append(previous[chain[-1]])
                    return [start, *reversed(chain[:-1]), start]
                if child not in previous:
                    previous[child] = node
                    following.append(child)
        frontier = following
    return [start, start]


def cycles(modules: dict[str, Module]) -> list[str]:
    """One readable cycle per tangle of modules that import each other, each step with the
    file and line of its import."""
    found = []
    for component in _strongly_connected(modules):
        if len(component) < 2:
            continue
        chain = _shortest_cycle_through(modules, component[0], set(component))
        steps = [f"{a} ({_where(modules[a], b)})" for a, b in zip(chain, chain[1:])]
        tangle = f"  [{len(component)} modules tangled: {', '.join(component)}]" if len(component) > len(chain) - 1 else ""
        found.append(" -> ".join(steps + [chain[-1]]) + tangle)
    return found


def longest_chain_path(modules: dict[str, Module]) -> list[str]:
    """One longest import chain, importer first, a tangle counted as one step (shown by
    its first member)."""
    components = _strongly_connected(modules)   # in reverse topological order
    owner = {member: i for i, component in enumerate(components) for member in component}
    chain: dict[int, list[int]] = {}
    for i, component in enumerate(components):
        below = sorted({owner[t] for member in component for t in modules[member].imports} - {i})
        deepest = max((chain[j] for j in below), key=len, default=[])
        chain[i] = [i, *deepest]
    longest = max(chain.values(), key=len, default=[])
    return [components[i][0] for i in longest]


def longest_chain(modules: dict[str, Module]) -> int:
    """Modules on the longest import chain, a tangle counted as one step."""
    return len(longest_chain_path(modules))


def figures(modules: dict[str, Module]) -> dict[str, object]:
    per_folder: dict[str, int] = {}
    for module in modules.values():
        folder = module.name.rsplit(".", 1)[0] if module.path.name != "__init__.py" else module.name
        per_folder[folder] = per_folder.get(folder, 0) + 1
    return {
        "modules per folder": per_folder,
        "commands": sum(module.is_command for module in modules.values()),
        "longest import chain": longest_chain(modules),
        "  that chain": " -> ".join(name.removeprefix(f"{PACKAGE}.") for name in longest_chain_path(modules)),
        "cycles (tangles)": len(cycles(modules)),
        "function-level imports of the package": sum(len(m.function_level) for m in modules.values()),
        "command -> command edges": len(command_to_command(modules)),
        "engine -> command edges": len(engine_to_command(modules)),
    }


# --- the tests -----------------------------------------------------------------------

def test_every_command_lives_in_the_commands_package_and_only_commands_do():
    modules = read_package()
    misplaced = [name for name, module in modules.items()
                 if module.is_command != name.startswith(COMMANDS + ".")]
    assert not misplaced, (
        "A verb (add_arguments() and main()) belongs in cudalab/commands/, and only a verb does; "
        "these modules break that: " + ", ".join(misplaced))


def test_every_verb_of_the_cli_has_its_command_module():
    from cudalab import cli
    modules = read_package()
    missing = [verb for verb in cli.VERBS if f"{COMMANDS}.{verb}" not in modules]
    assert not missing, f"cli.VERBS names verbs without a module in cudalab/commands/: {missing}"


def test_every_relative_import_names_a_module_of_the_package():
    """A relative import that names no module would leave the graph without its edge (and
    fail only when the line runs): code moved between folders must have its dots moved too."""
    broken = [f"{m.path.relative_to(PACKAGE_DIR)}:{line}: from {target} import ..."
              for m in read_package().values() for target, line in m.unresolved]
    assert not broken, "These imports name no module of cudalab:\n  " + "\n  ".join(broken)


def test_no_command_imports_another_command():
    edges = command_to_command(read_package())
    assert not edges, ("A command is a thin layer over the engine; what two commands share "
                       "belongs in an engine module. These commands import another:\n  "
                       + "\n  ".join(edges))


def test_no_engine_module_imports_a_command():
    edges = engine_to_command(read_package())
    assert not edges, ("The engine must not reach up into a command (or the dispatcher); move what "
                       "it needs down into the engine. These engine modules do:\n  " + "\n  ".join(edges))


def test_no_import_cycle_even_through_function_level_imports():
    modules = read_package()
    # The graph must hold the imports written inside functions, or a cycle could hide there.
    hidden = [(m.name, target) for m in modules.values() for target, _ in m.function_level]
    assert all(target in modules[name].imports for name, target in hidden)
    # ... and every indented `from .` line that a plain grep finds is one the reader read.
    indented = re.compile(r"^\s+from \.")
    unread = [f"{m.file}:{number}" for m in modules.values()
              for number, line in enumerate(m.path.read_text(encoding="utf-8").splitlines(), 1)
              if indented.match(line) and number not in m.relative_lines]
    assert not unread, f"imports the layering reader missed: {unread}"
    found = cycles(modules)
    assert not found, ("Modules import each other in a circle (an import inside a function only "
                       "postpones it to the first call); move the shared piece down to the module "
                       "it belongs to:\n  " + "\n  ".join(found))


def test_each_subpackage_says_what_it_holds_and_re_exports_nothing():
    """A subpackage of the engine is a folder named for what it does: its __init__.py says
    so in a short docstring and holds nothing else, so that every name is imported from the
    module that defines it (and a subpackage never hides a cycle behind its __init__)."""
    bad = []
    for init in sorted(PACKAGE_DIR.glob("*/__init__.py")):
        if init.parent.name in ("commands", "templates", "schemas"):   # the verbs; package data
            continue
        tree = ast.parse(init.read_text(encoding="utf-8"))
        doc = ast.get_docstring(tree)
        if not doc or not 1 <= len(doc.strip().splitlines()) <= 2:
            bad.append(f"{init.parent.name}/__init__.py needs a docstring of one or two lines")
        if len(tree.body) != (1 if doc else 0):
            bad.append(f"{init.parent.name}/__init__.py holds more than its docstring")
    assert not bad, "\n  ".join(["Subpackages of cudalab:", *bad])


def test_no_subpackage_shares_a_name_with_a_module():
    """`cudalab.NAME` must name one thing: a module or a folder; with both,
    one of them is unreachable and tools/move_modules.py could not be run again."""
    folders = {p.parent.name for p in PACKAGE_DIR.glob("*/__init__.py")}
    modules = {p.stem for p in PACKAGE_DIR.glob("*.py")}
    assert not folders & modules, f"named both as a module and a subpackage: {sorted(folders & modules)}"


def test_the_reader_sees_function_level_imports_and_cycles(tmp_path):
    """The checks above are only as good as the graph: a cycle made by an import inside a
    function, and a command importing another, are found in a made-up package."""
    package = tmp_path / "cudalab"
    (package / "commands").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "commands" / "__init__.py").write_text("")
    (package / "engine.py").write_text("def f():\n    from .helper import g\n    return g\n")
    (package / "helper.py").write_text("from . import engine\ndef g():\n    return engine\n")
    (package / "commands" / "one.py").write_text(
        "from . import two\nfrom ..engine import f\ndef add_arguments(p): pass\ndef main(a, c): return 0\n")
    (package / "commands" / "two.py").write_text(
        "from .. import engine\ndef add_arguments(p): pass\ndef main(a, c): return 0\n")
    (package / "commands" / "three.py").write_text("def f():\n    from .engine import f\n")
    (package / "grading").mkdir()
    (package / "grading" / "__init__.py").write_text('"""Grades."""\n')
    (package / "grading" / "score.py").write_text("from ..helper import g\n")
    (package / "commands" / "four.py").write_text(
        "from ..grading import score\ndef add_arguments(p): pass\ndef main(a, c): return 0\n")
    modules = read_package(package)
    assert modules["cudalab.commands.three"].unresolved == [(".engine", 2)]
    assert modules["cudalab.engine"].function_level == [("cudalab.helper", 2)]
    assert [c.split(" ")[0] for c in cycles(modules)] == ["cudalab.engine"]
    assert "cudalab.engine (engine.py:2) -> cudalab.helper (helper.py:1) -> cudalab.engine" in cycles(modules)[0]
    assert command_to_command(modules) == ["cudalab.commands.one -> cudalab.commands.two (commands/one.py:1)"]
    assert engine_to_command(modules) == []   # a command may import a subpackage's module
    assert "cudalab.grading.score" in modules["cudalab.commands.four"].imports
    assert longest_chain(modules) == 4   # one -> two -> {engine, helper} -> the package itself
    assert longest_chain_path(modules)[0] in ("cudalab.commands.one", "cudalab.commands.four")


if __name__ == "__main__":
    tree = read_package(Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else PACKAGE_DIR)
    for key, value in figures(tree).items():  # figures of the package at that path
        print(f"{key}: {value}")
    for title, lines in (("command -> command", command_to_command(tree)),
                         ("engine -> command", engine_to_command(tree)), ("cycles", cycles(tree))):
        print(f"\n{title}:")
        print("\n".join(f"  {line}" for line in lines) or "  none")
