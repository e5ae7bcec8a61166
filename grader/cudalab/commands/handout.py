"""`cudalab handout`: render a lab's handout from its lab.toml and its calibration.

The handout (handouts/<lab>.md, and the same as a page of its own, handouts/<lab>.html)
says what the student writes, how it is checked (every case and why it is there, every
tolerance and why it is what it is), how it is timed and scored, the reference's
calibrated time on each GPU model (labs/<lab>/calibration.json, from `cudalab calibrate`)
and which variants the ladder shows, with their calibrated medians as a table and, in the
page, a plot. It is rendered from those files alone, so it can never disagree with what
the grader does; the rendered copies are kept in the repository and `--check` (run by the
tests) fails when one is out of date. LAB may be `all`.

Both files come from one template: handout.md.j2 writes the Markdown, and the page is that
Markdown converted by markdown-it-py (raw HTML off, so whatever lab.toml says is shown as
text) inside handout.html.j2, with the ladder's plot (matplotlib, deterministic SVG) in
place of the Markdown's link to it.
"""
from __future__ import annotations

import argparse
import difflib
import json
import sys


from ..grading import calibration
from .. import console
from ..lab import labs
from ..outputs import report
from ..config import Config
from ..outputs.handout import handout_path, html_path, render
from ..lab.labspec import LabSpec


ALL = "all"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    labs.add_generated_file_arguments(parser, "handout", every=ALL)


def _one_lab(config: Config, spec: LabSpec, check: bool, quiet_diff: bool) -> dict:
    """Render one lab's handout; write the files that changed, or with `check` say which are
    out of date (with a diff)."""
    rendered = render(spec, calibration.load(config, spec))
    stale = []
    for path, wanted in ((handout_path(config, spec), rendered.markdown), (html_path(config, spec), rendered.html)):
        have = path.read_text(encoding="utf-8") if path.is_file() else ""
        if have == wanted:
            continue
        stale.append(str(path))
        if check:
            (sys.stderr if quiet_diff else sys.stdout).writelines(difflib.unified_diff(
                have.splitlines(keepends=True), wanted.splitlines(keepends=True),
                fromfile=str(path), tofile=f"rendered from {spec.path}"))
            console.error(f"out of date: {path}; run `cudalab handout {spec.name}`")
        else:
            report.atomic_write_text(path, wanted)
            console.info(f"wrote {path}")
    if not stale:
        console.info(f"{spec.name}: the handout is up to date")
    return {"schema": "cudalab.handout/1", "lab": spec.name, "path": str(handout_path(config, spec)),
            "html_path": str(html_path(config, spec)), "checked_only": check,
            "out_of_date" if check else "written": stale}


def main(args: argparse.Namespace, config: Config) -> int:
    names = labs.available_labs(config.root) if args.lab == ALL else [args.lab]
    specs = [labs.load_lab(config, name) for name in names]
    done = [_one_lab(config, spec, bool(args.check), bool(args.json)) for spec in specs]
    if args.json:
        print(json.dumps(done[0] if args.lab != ALL else {"schema": "cudalab.handout/1", "labs": done}, indent=2))
    stale = any(d.get("out_of_date") for d in done)
    return 1 if stale else 0
