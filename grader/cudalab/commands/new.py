"""`cudalab new`: start work on a lab: copy its starter files into a folder of your own.

Work in that copy, never in the starter/ folder itself (the course regenerates it from its
solution). The folder is ./<lab> unless you name one; files already there are never
overwritten.
"""
from __future__ import annotations

import argparse
import json
import shlex
import shutil
from pathlib import Path

from .. import console
from ..lab import labs, starter
from ..config import Config
from ..errors import UsageError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("lab", help="the lab to start")
    parser.add_argument("folder", nargs="?", type=Path, help="where to put your copy (default: ./<lab>)")


def main(args: argparse.Namespace, config: Config) -> int:
    spec = labs.load_lab(config, args.lab)
    folder = args.folder or Path(spec.name)
    pairs = starter.starter_pairs(config.root, spec)
    missing = [str(s) for _, s in pairs if not s.is_file()]
    if missing:
        raise UsageError(f"The {spec.name} lab's starter is missing ({', '.join(missing)}); "
                         f"generate it with `cudalab starter {spec.name}` first.")
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"{folder} exists and is not a folder. Name another folder: "
                         f"cudalab new {spec.name} FOLDER.")
    taken = [str(folder / s.name) for _, s in pairs if (folder / s.name).exists()]
    if taken:
        raise UsageError(f"{', '.join(taken)} already exists: your work is never overwritten. "
                         f"Keep working there, or name another folder: cudalab new {spec.name} FOLDER.")
    folder.mkdir(parents=True, exist_ok=True)
    for _, source in pairs:
        shutil.copyfile(source, folder / source.name)
    handout = config.root / "handouts" / f"{spec.name}.md"
    if args.json:
        print(json.dumps({"schema": "cudalab.new/1", "lab": spec.name, "folder": str(folder),
                          "files": [s.name for _, s in pairs], "handout": str(handout)}, indent=2))
    shown = shlex.quote(str(folder))
    console.info(f"Copied the {spec.name} starter into {folder}/. Next:")
    console.info(f"  read {handout}")
    console.info(f"  edit {folder}/{spec.source_file} (the TODOs), then")
    console.info(f"  cudalab run {spec.name} {shown}          # every case, judged by the checker")
    console.info(f"  cudalab run {spec.name} {shown} --bench  # how fast")
    return 0
