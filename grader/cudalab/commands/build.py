"""`cudalab build`: build the official tree, or a submission against it.

A submission is staged first: only the files lab.toml lists are copied (no symlinks, none
over the size limit) into a fresh folder the grader names, so a hand-in never brings its
own build files and its own name is only ever data. Then it is built in the sandbox
against the lab's SDK (build/<preset>/sdk/<lab>: labkit's headers, the API header and the
official objects, nothing else from the repository) with the compile and link commands
CMake generated for it (the SDK's build.json, from cmake/submission), in three steps:
compile the student's file, check its object's symbols (only the API crosses the link),
link.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from .. import console
from ..lab import labs
from ..building.build import build_official, build_submission, ensure_official, submission_work_dir
from ..config import Config


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("lab", nargs="?", help="a lab name; without it, build the whole official tree")
    parser.add_argument("folder", nargs="?", type=Path,
                        help="a submission folder to build against the official tree")


def main(args: argparse.Namespace, config: Config) -> int:
    report: dict = {"schema": "cudalab.build/1", "preset": config.preset,
                    "official_build": str(config.build_dir)}
    if args.lab is None:
        build_official(config)
    else:
        spec = labs.load_lab(config, args.lab)
        report["lab"] = spec.name
        ensure_official(config, spec)
        if args.folder is not None:
            built = build_submission(config, spec, args.folder,
                                     submission_work_dir(config, spec.name, args.folder))
            report.update(binary=str(built.binary), copied=built.staged.copied,
                          ignored=built.staged.ignored)
    report["status"] = "built"
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        console.info("Built." + (f" Binary: {report['binary']}" if "binary" in report else ""))
    return 0
