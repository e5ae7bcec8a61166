#!/usr/bin/env python3
"""Test driver for lab binaries and checkers, run by ctest.

  labtest.py expect CODE [--stdout-contains TEXT] -- PROGRAM [ARGS...]
      passes when PROGRAM exits with CODE (and printed TEXT); exit 4 (no CUDA device)
      is passed through so that ctest reports the test as skipped.
  labtest.py roundtrip [--expect-fail] --binary LAB_BINARY --checker CHECKER
      runs the binary with --dump at a seed, then the trusted checker at the same seed;
      the checker must agree (or, with --expect-fail, must reject the dumps); and the
      checker at another seed must reject correct dumps, which proves it compares.
  labtest.py checker-usage --checker CHECKER
      the checker refuses to run without --seed/--dump/--verdict (exit 2).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

NO_DEVICE = 4


def run(cmd: list[str]) -> subprocess.CompletedProcess:
    print("$", " ".join(cmd), flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    sys.stdout.write(proc.stdout[-4000:])
    sys.stderr.write(proc.stderr[-4000:])
    return proc


def expect(args: argparse.Namespace) -> int:
    proc = run(args.command)
    if proc.returncode == NO_DEVICE:
        print("SKIPPED: no CUDA device")
        return NO_DEVICE
    if proc.returncode != args.code:
        print(f"FAILED: exit status {proc.returncode}, expected {args.code}")
        return 1
    if args.stdout_contains and args.stdout_contains not in proc.stdout:
        print(f"FAILED: the output does not say {args.stdout_contains!r}")
        return 1
    return 0


def roundtrip(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        dump, verdict = Path(tmp) / "dump", Path(tmp) / "verdict.json"
        produced = run([args.binary, "--quiet", "--seed", "12345", "--dump", str(dump)])
        if produced.returncode == NO_DEVICE:
            print("SKIPPED: no CUDA device")
            return NO_DEVICE
        checked = run([args.checker, "--seed", "12345", "--dump", str(dump), "--verdict", str(verdict)])
        result = json.loads(verdict.read_text())
        if result["schema"] != "cudalab.verdict/1":
            print("FAILED: the verdict has the wrong schema")
            return 1
        if args.expect_fail:
            if checked.returncode != 1 or result["all_passed"]:
                print("FAILED: the checker accepted outputs that should be wrong")
                return 1
            return 0
        if checked.returncode != 0 or not result["all_passed"] or produced.returncode != 0:
            print("FAILED: the checker and the binary disagree on outputs the binary says are right")
            return 1
        other = run([args.checker, "--seed", "54321", "--dump", str(dump), "--verdict", str(verdict)])
        if other.returncode != 1:
            print("FAILED: the checker accepted outputs made from another seed's inputs")
            return 1
    return 0


def checker_usage(args: argparse.Namespace) -> int:
    proc = run([args.checker])
    if proc.returncode != 2 or "--seed" not in proc.stderr:
        print("FAILED: a checker without arguments must exit 2 and say it needs --seed")
        return 1
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="verb", required=True)
    e = sub.add_parser("expect")
    e.add_argument("code", type=int)
    e.add_argument("--stdout-contains")
    e.add_argument("command", nargs="*")
    r = sub.add_parser("roundtrip")
    r.add_argument("--binary", required=True)
    r.add_argument("--checker", required=True)
    r.add_argument("--expect-fail", action="store_true")
    c = sub.add_parser("checker-usage")
    c.add_argument("--checker", required=True)
    argv = sys.argv[1:]
    command = argv[argv.index("--") + 1:] if "--" in argv else []
    args = parser.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    if args.verb == "expect":
        args.command = command
        if not args.command:
            parser.error("expect needs a program after --")
        return expect(args)
    return roundtrip(args) if args.verb == "roundtrip" else checker_usage(args)


if __name__ == "__main__":
    sys.exit(main())
