"""The starter file made from a marked solution (the verb and its help are
commands/starter.py): the lines between `// BEGIN SOLUTION` and `// END SOLUTION` dropped,
`// STARTER: text` lines uncommented.
"""
from __future__ import annotations

import difflib
from pathlib import Path

from ..errors import UsageError

BEGIN = "// BEGIN SOLUTION"
END = "// END SOLUTION"
STARTER = "// STARTER:"


class StarterError(UsageError):
    """The markers in a solution file are unbalanced or misplaced."""


def generate_starter(solution: str, source_name: str = "<solution>") -> str:
    out: list[str] = []
    begin_line = 0  # line number of the open BEGIN marker, 0 when outside a block
    for number, line in enumerate(solution.splitlines(keepends=True), start=1):
        stripped = line.strip()
        if stripped == BEGIN:
            if begin_line:
                raise StarterError(f"{source_name}:{number}: '{BEGIN}' inside the solution block "
                                   f"opened at line {begin_line}; blocks cannot nest. Close the "
                                   f"first one with '{END}' before opening another.")
            begin_line = number
        elif stripped == END:
            if not begin_line:
                raise StarterError(f"{source_name}:{number}: '{END}' without a '{BEGIN}' before it.")
            begin_line = 0
        elif stripped.startswith(STARTER):
            if begin_line:
                raise StarterError(f"{source_name}:{number}: a '{STARTER}' line inside the solution "
                                   f"block opened at line {begin_line} would be dropped; move it "
                                   f"after '{END}'.")
            indent = line[:len(line) - len(line.lstrip())]
            text = stripped[len(STARTER):]
            text = text[1:] if text.startswith(" ") else text
            newline = line[len(line.rstrip("\r\n")):]
            out.append(f"{indent}{text}".rstrip() + newline if text else newline)
        elif not begin_line:
            out.append(line)
    if begin_line:
        raise StarterError(f"{source_name}:{begin_line}: '{BEGIN}' is never closed; add "
                           f"'{END}' after the solution code.")
    return "".join(out)


def starter_pairs(root: Path, spec) -> list[tuple[Path, Path]]:
    """(solution file, starter file) for each file the lab hands in."""
    return [(root / "solutions" / spec.name / name, root / "starter" / spec.name / name)
            for name in spec.files]


def diff_against_starter(solution: Path, starter: Path) -> list[str]:
    """The unified diff from the starter on disk to the one generated; empty when equal."""
    wanted = generate_starter(solution.read_text(encoding="utf-8"), str(solution))
    have = starter.read_text(encoding="utf-8") if starter.is_file() else ""
    return list(difflib.unified_diff(have.splitlines(keepends=True), wanted.splitlines(keepends=True),
                                     fromfile=str(starter), tofile=f"generated from {solution}"))
