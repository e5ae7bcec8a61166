"""Judge one student's object against an official symbol index by hand, as a build judges
it: ``python3 -m cudalab.intake.symbol_check --index FILE.json OBJ [--name FILE]`` prints each
violation's sentence and exits 1 when there is one or the object is refused, 2 when the
tool itself fails.

It reads the object whole (object_analysis.py, which needs the grader's dependencies), so
it is not part of symbols.py: that one runs under CMake with the standard library only,
and object_analysis.py builds on it.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import GraderError
from .object_analysis import ObjectRefused, analyse_object
from .symbols import SymbolIndex, SymbolToolError, check_symbols, read_index


def check_object(index: SymbolIndex, obj: Path, file_name: str) -> int:
    """Read the object whole as a build does and print each violation's sentence; 1 when
    there is one or the object is refused."""
    try:
        defined = analyse_object(obj).defined
    except ObjectRefused as refused:
        print(f"{file_name}'s object was refused: {refused.reason}.")
        return 1
    except GraderError as err:
        raise SymbolToolError(str(err)) from None
    violations = check_symbols(defined, index, file_name)
    for violation in violations:
        print(violation.sentence)
    return 1 if violations else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m cudalab.intake.symbol_check",
                                     description="Judge a student's object against an official symbol index.")
    parser.add_argument("--index", type=Path, required=True, help="the index `cudalab.intake.symbols index` wrote")
    parser.add_argument("object", type=Path)
    parser.add_argument("--name", help="the student's file name for the sentences (default: the object's)")
    args = parser.parse_args(argv)
    try:
        return check_object(read_index(args.index), args.object, args.name or args.object.name)
    except (SymbolToolError, OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
