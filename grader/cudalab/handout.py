"""`cudalab handout`: render a lab's handout from its lab.toml.

The handout (handouts/<lab>.md) says what the student writes, how it is checked (every
case and why it is there, every tolerance and why it is what it is), how it is timed and
scored, and which variants the ladder shows. It is rendered from lab.toml alone, so it
can never disagree with what the grader does; the rendered copies are kept in the
repository and `--check` (run by the tests) fails when one is out of date.
"""
from __future__ import annotations

import argparse
import difflib
import json
import sys
from pathlib import Path

from . import console, forbidden, labs, report
from .config import Config
from .labspec import LabSpec


def tolerance_rule(output) -> str:
    if output.computed:
        return "a bound computed for every element from the data (see why)"
    parts = []
    if output.abs or output.rel or output.ulp < 0:
        parts.append(f"|got - expected| <= {output.abs:g} + {output.rel:g} * |expected|")
    if output.ulp >= 0:
        parts.append("exactly equal" if output.ulp == 0 and not parts else f"within {output.ulp} ULP")
    return " or ".join(parts)


def render_handout(spec: LabSpec) -> str:
    return report.environment().get_template("handout.md.j2").render(
        lab=spec, tolerance_rule=tolerance_rule,
        library_titles={key: library.title for key, library in forbidden.LIBRARIES.items()},
        bytes_per_case={c.name: spec.bytes_moved(c) for c in spec.bench_cases},
        reference_rung=next((r.name for r in spec.ladder if r.source == spec.scoring.reference), ""))


def handout_path(config: Config, spec: LabSpec) -> Path:
    return config.root / "handouts" / f"{spec.name}.md"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    labs.add_generated_file_arguments(parser, "handout")


def main(args: argparse.Namespace, config: Config) -> int:
    spec = labs.load_lab(config, args.lab)
    path = handout_path(config, spec)
    wanted = render_handout(spec)
    have = path.read_text(encoding="utf-8") if path.is_file() else ""
    stale = have != wanted
    if args.json:
        print(json.dumps({"schema": "cudalab.handout/1", "lab": spec.name, "path": str(path),
                          "checked_only": bool(args.check), "out_of_date" if args.check else "written": stale},
                         indent=2))
    if not stale:
        console.info(f"{spec.name}: the handout is up to date")
        return 0
    if args.check:
        (sys.stderr if args.json else sys.stdout).writelines(difflib.unified_diff(have.splitlines(keepends=True), wanted.splitlines(keepends=True),
                                                   fromfile=str(path), tofile=f"rendered from {spec.path}"))
        console.error(f"out of date: {path}; run `cudalab handout {spec.name}`")
        return 1
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(wanted, encoding="utf-8")
    console.info(f"wrote {path}")
    return 0
