"""`cudalab pack`: make the hand-in archive (.tar.gz) of a lab from a folder.

The archive holds exactly the files lab.toml names (and README.md where the lab takes
written answers), plus cudalab-manifest.json: the lab, each file's sha256 and size, the
cudalab version, the toolchain, the time and, with --student, who handed it in. Pack first
runs the checks that would reject the hand-in (files, compile, symbols, forbidden
libraries) and refuses, saying why, when one fails; `cudalab check ARCHIVE` checks the
archive itself, smoke run and compute-sanitizer included.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from .. import check, console, handin, labs
from ..config import Config
from ..errors import UsageError
from ..exit_codes import Cli
from ..handin import STUDENT_ID
from ..pack import manifest, write_archive


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

    receipt = check.check_hand_in(config, folder, spec.name, run=False)
    if not receipt["accepted"]:
        console.text(check.render_receipt(receipt))
        console.error(f"Nothing was packed: the hand-in in {folder} would not be accepted (see FAILED above).")
        return int(Cli.REJECTED)
    hand_in = handin.read_hand_in(folder, spec, config)
    files = {name: entry.data for name, entry in hand_in.files().items()
             if name in handin.accepted_names(spec) and entry.data is not None}
    members = dict(sorted(files.items()))
    members[check.MANIFEST] = (json.dumps(manifest(spec, files, args.student), indent=2) + "\n").encode()
    write_archive(out, members)
    digest = handin.sha256_file(out)
    if args.json:
        print(json.dumps({"schema": "cudalab.pack/1", "lab": spec.name, "archive": str(out), "sha256": digest,
                          "files": sorted(files), "receipt": receipt}, indent=2))
    warnings = [f["message"] for c in receipt["checks"] for f in c["findings"]]
    for message in warnings:
        console.warn(message)
    console.info(f"Packed {', '.join(sorted(files))} into {out} (sha256 {digest}).")
    console.info(f"Hand in {out}. `cudalab check {out}` checks the archive itself, with a smoke run "
                 "where there is a GPU.")
    return int(Cli.DONE)
