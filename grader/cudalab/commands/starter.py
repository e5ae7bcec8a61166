"""`cudalab starter`: generate the student's starter file(s) from the marked solution.

In a solution file, the lines from `// BEGIN SOLUTION` to `// END SOLUTION` (markers
included) are dropped, and a line `// STARTER: text` becomes `text` at the same
indentation (in the solution it stays a comment). Everything else is copied, so the
starter and the solution can never drift apart. `--check` diffs instead of writing.
"""
from __future__ import annotations

import argparse
import json
import sys

from .. import console
from ..lab import labs
from ..config import Config
from ..errors import UsageError
from ..lab.starter import diff_against_starter, generate_starter, starter_pairs


def add_arguments(parser: argparse.ArgumentParser) -> None:
    labs.add_generated_file_arguments(parser, "starter")
    parser.add_argument("--force", action="store_true",
                        help="overwrite a starter file that differs from what the solution generates "
                        "(for instance one a student edited in place)")


def main(args: argparse.Namespace, config: Config) -> int:
    spec = labs.load_lab(config, args.lab)
    stale = []
    for solution, starter in starter_pairs(config.root, spec):
        if not solution.is_file():
            raise UsageError(f"There is no solution file {solution} to generate the starter from.")
        diff = diff_against_starter(solution, starter)
        if not diff:
            continue
        stale.append(str(starter))
        if args.check:
            (sys.stderr if args.json else sys.stdout).writelines(diff)
        elif starter.is_file() and not args.force:
            changed = sum(1 for line in diff if line[:1] in "+-" and line[:3] not in ("+++", "---"))
            raise UsageError(f"{starter} differs from what {solution} generates ({changed} lines), so it "
                             "was not overwritten: if you wrote code there, copy it somewhere safe first "
                             f"(`cudalab new {spec.name}` starts a copy of your own). To regenerate it "
                             f"anyway, run `cudalab starter {spec.name} --force`.")
        else:
            starter.parent.mkdir(parents=True, exist_ok=True)
            starter.write_text(generate_starter(solution.read_text(encoding="utf-8"), str(solution)),
                               encoding="utf-8")
            console.info(f"wrote {starter}")
    if args.json:
        print(json.dumps({"schema": "cudalab.starter/1", "lab": spec.name, "checked_only": bool(args.check),
                          "out_of_date" if args.check else "written": stale}, indent=2))
    if args.check and stale:
        console.error(f"out of date: {', '.join(stale)}; run `cudalab starter {spec.name}`")
        return 1
    if not stale:
        console.info(f"{spec.name}: the starter is up to date")
    return 0
