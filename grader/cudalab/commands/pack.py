"""`cudalab pack`: make the hand-in archive (.tar.gz) of a lab from a folder.

The archive holds exactly the files lab.toml names (and README.md where the lab takes
written answers), plus cudalab-manifest.json: the lab, each file's sha256 and size, the
cudalab version, the toolchain, the time and, with --student, who handed it in. Pack takes
those files from the folder and leaves everything else there out (its own earlier archive,
.git/, notes, an editor's folder), saying in one line what it left out; it warns about a
file that is still the starter as shipped. It then runs the checks that would reject the
hand-in (files, compile, symbols, forbidden libraries) on the files it took, and refuses,
saying why, when one fails; `cudalab check ARCHIVE` checks the archive itself, smoke run
and compute-sanitizer included.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..intake import check
from .. import console
from ..lab import labs
from ..config import Config
from ..errors import UsageError
from ..exit_codes import Cli
from ..intake.handin import STUDENT_ID
from ..intake.pack import left_out_line, pack_folder


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("lab", help="the lab the hand-in is for")
    parser.add_argument("folder", nargs="?", type=Path, default=Path("."),
                        help="the folder holding your files (default: the current folder)")
    parser.add_argument("--out", type=Path, help="the archive to write (default: ./<lab>[-<student>].tar.gz)")
    parser.add_argument("--student", help="your student id, recorded in the manifest")


def main(args: argparse.Namespace, config: Config) -> int:
    spec = labs.load_lab(config, args.lab)
    if args.student is not None and not STUDENT_ID.fullmatch(args.student):
        raise UsageError(f"--student {args.student!r} is not a plain id: use letters, digits, '.', '_', "
                         "'@' and '-' only (at most 64).")
    folder = Path(args.folder)
    if not folder.is_dir():
        raise UsageError(f"{folder} is not a folder. Give the folder that holds {', '.join(spec.files)}.")
    out = args.out or Path(f"{spec.name}{'-' + args.student if args.student else ''}.tar.gz")
    if not out.name.endswith((".tar.gz", ".tgz")):
        raise UsageError(f"--out {out} must end in .tar.gz or .tgz.")
    if out.is_dir():
        raise UsageError(f"--out {out} is a folder; give the archive's file name, ending in .tar.gz.")

    packed = pack_folder(config, spec, folder, out, args.student)
    taken = packed.taken
    if packed.receipt is None:
        console.error(f"Nothing was packed from {folder}: " + " ".join(taken.problems))
        return int(Cli.REJECTED)
    if not packed.receipt["accepted"]:
        console.text(check.render_receipt(packed.receipt))
        console.error(f"Nothing was packed: the hand-in in {folder} would not be accepted (see FAILED above).")
        return int(Cli.REJECTED)
    if args.json:
        print(json.dumps({"schema": "cudalab.pack/1", "lab": spec.name, "archive": str(out), "sha256": packed.sha256,
                          "files": sorted(taken.files), "left_out": taken.left_out,
                          "untouched_starter": taken.untouched, "receipt": packed.receipt}, indent=2))
    for message in [f["message"] for c in packed.receipt["checks"] for f in c["findings"]]:
        console.warn(message)
    for name in taken.untouched:
        console.warn(f"{name} is still the {spec.name} starter as shipped: none of your work is in it. "
                     "Pack again once you have filled in its TODOs.")
    if taken.left_out:
        console.info(left_out_line(spec, taken.left_out))
    replaced = ", replacing the earlier archive" if packed.replaced else ""
    console.info(f"Packed {', '.join(sorted(taken.files))} into {out}{replaced} (sha256 {packed.sha256}).")
    console.info(f"Hand in {out}. `cudalab check {out}` checks the archive itself, with a smoke run "
                 "where there is a GPU.")
    return int(Cli.DONE)
