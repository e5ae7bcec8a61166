"""`cudalab check`: check a hand-in before it is handed in, and give a receipt.

HAND-IN is a folder, a .tar.gz/.tgz or a .zip. It is read as data (no links, no device
files, no absolute paths or '..', limits on entries and sizes) and checked in order,
reporting every finding, not only the first:

  archive    safe to unpack
  files      the lab's files, and nothing else (near misses named)
  compile    it compiles and links against the official harness, in the sandbox
  symbols    only the lab's API crosses the link
  forbidden  no library the lab forbids, in the source or in the compiled object
  smoke_run  the smallest cases, judged by the lab's checker (where there is a GPU)
  sanitizer  compute-sanitizer's memcheck, racecheck, initcheck and synccheck on small
             cases, each finding at its line (where the tool and a GPU exist)

It ends with a receipt (text, and JSON with --json or in the receipt file): the hand-in's
sha256, the lab, each check's verdict, the time and the cudalab version. The exit status
is 0 only when the hand-in would be accepted (27 when it would not).

No check times the hand-in, so none needs the course's reference solution: a student
bundle (`cudalab export`) runs the same checks as the course's own install.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .. import console
from ..lab import labs
from ..outputs import report
from ..intake.check import check_hand_in, render_receipt
from ..config import Config
from ..exit_codes import Cli


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("hand_in", type=Path, metavar="HAND-IN", help="a folder, .tar.gz, .tgz or .zip")
    parser.add_argument("--lab", help="the lab it is for (default: from the hand-in's manifest or files)")
    parser.add_argument("--receipt", type=Path, metavar="FILE",
                        help="write the receipt's JSON here and its text beside it (FILE with .txt)")
    parser.add_argument("--no-run", action="store_true",
                        help="skip the smoke run and compute-sanitizer (build checks only)")
    parser.add_argument("--seed", type=labs.seed_argument, help="input seed of the smoke run (default: random)")


def main(args: argparse.Namespace, config: Config) -> int:
    receipt = check_hand_in(config, args.hand_in, args.lab, run=not args.no_run, seed=args.seed)
    text = render_receipt(receipt)
    if args.receipt is not None:
        report.atomic_write_text(args.receipt, json.dumps(receipt, indent=2) + "\n")
        report.atomic_write_text(args.receipt.with_suffix(".txt"), text)
    if args.json:
        print(json.dumps(receipt, indent=2))
        console.text(text, stream=sys.stderr)
    else:
        console.text(text)
    if args.receipt is not None:
        console.info(f"Wrote {args.receipt} and {args.receipt.with_suffix('.txt')}")
    return int(Cli.DONE if receipt["accepted"] else Cli.REJECTED)
