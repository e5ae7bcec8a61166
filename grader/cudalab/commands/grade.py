"""`cudalab grade`: grade one submission folder against the official harness.

Stage the hand-in under a name the grader chooses and build it in the sandbox against the
lab's SDK (symbol check included); if this machine has no CUDA device, stop with status
not_run (exit 23, no grade); otherwise run it in the sandbox with a seed chosen now and let
the trusted checker judge the dumped outputs (the only source of correctness points), then
time it against the reference solution in alternating paced rounds on the grader's own
clock, with a few secretly drawn timed samples judged by the checker. A result JSON is
written whatever happens, and feedback.md beside it.

Without a working sandbox `grade` refuses to give a grade unless --allow-unisolated is
given; such a grade says in words that it is not an official one.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..building import build
from .. import console
from ..lab import labs
from ..outputs import report
from ..config import Config
from ..errors import UsageError
from ..grading.grade import grade


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("lab", help="the lab to grade against")
    parser.add_argument("folder", type=Path, help="the submission folder")
    parser.add_argument("--seed", type=labs.seed_argument, help="grading seed (default: chosen at random now)")
    parser.add_argument("--out", type=Path, help="the folder result.json and feedback.md go to "
                        "(default <work dir>/results/<lab>/<submission name>-<hash of its path>/)")
    parser.add_argument("--allow-unisolated", action="store_true",
                        help="grade even where the student's code cannot be sandboxed; the result "
                        "then says it is not an official grade")


def main(args: argparse.Namespace, config: Config) -> int:
    out = args.out or config.work_dir / "results" / Path(args.lab).name / build.submission_key(Path(args.folder))
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} is a file; give a folder for result.json and feedback.md.")
    result = grade(config, args.lab, args.folder, seed=args.seed, allow_unisolated=args.allow_unisolated,
                   attachments_to=out)
    paths, record = report.write_outputs(out, result)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        console.text(report.render_summary(record))
    console.info(f"Wrote {paths['result']} and {paths['feedback']}")
    return result["exit_code"]
