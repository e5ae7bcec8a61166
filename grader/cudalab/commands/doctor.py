"""cudalab doctor: say what this machine can do (GPU and driver, the CUDA toolkit, CMake and
Ninja, the sandbox, memory limits, disk, the grader's Python packages, the official build),
and therefore what `run`, `check` and `grade` will do here, with the one step that fixes
each gap.

It runs nothing of a student's and changes nothing. It exits as `grade` would on a correct
hand-in: 0 where grades here are official, 23 without a CUDA device, 25 without a sandbox,
24 where a tool the build needs is missing.
"""
from __future__ import annotations

import argparse
import json
from dataclasses import asdict

from .. import console
from ..config import Config
from ..isolation.doctor import SCHEMA, examine, exit_code, render, verdicts


def add_arguments(parser: argparse.ArgumentParser) -> None:
    del parser  # no options: it examines this machine as it is


def main(args: argparse.Namespace, config: Config) -> int:
    findings = examine(config)
    said = verdicts(findings)
    code = exit_code(findings)
    if args.json:
        print(json.dumps({"schema": SCHEMA, "findings": [asdict(f) for f in findings], "verbs": said,
                          "exit_code": int(code)}, indent=2))
    else:
        console.text(render(findings, said))
    return int(code)
