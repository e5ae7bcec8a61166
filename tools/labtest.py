#!/usr/bin/env python3
"""Test driver for lab binaries and checkers, run by ctest.

  labtest.py roundtrip [--expect-fail] --binary LAB_BINARY --checker CHECKER
      runs the binary with --dump at a seed, then the trusted checker at the same seed;
      the checker must pass every case (or, with --expect-fail, must reject the dumps);
      and the checker at another seed must reject right dumps, which proves it compares.
  labtest.py bench-roundtrip --binary LAB_BINARY --checker CHECKER
      times the first bench case with a few samples and --dump; the checker, given the
      seed of the sample the program kept, must pass it, and must reject it under the
      run's own seed (every sample has inputs of its own).
  labtest.py checker-usage --checker CHECKER
      the checker refuses to run without --seed/--dump/--verdict (exit 2).
Exit 4 (no CUDA device) from the binary is passed through, so ctest reports a skip.
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
            print("FAILED: the checker rejected the outputs of an implementation that should pass")
            return 1
        other = run([args.checker, "--seed", "54321", "--dump", str(dump), "--verdict", str(verdict)])
        if other.returncode != 1:
            print("FAILED: the checker accepted outputs made from another seed's inputs")
            return 1
    return 0


def bench_roundtrip(args: argparse.Namespace) -> int:
    cases = run([args.binary, "--list-cases"])
    bench = [line.split()[1] for line in cases.stdout.splitlines() if line.startswith("bench-case")]
    if not bench:
        print("FAILED: the binary lists no bench case")
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        dump, run_json, verdict = Path(tmp) / "dump", Path(tmp) / "run.json", Path(tmp) / "verdict.json"
        produced = run([args.binary, "--bench", "--bench-case", bench[0], "--samples", "3", "--warmup", "1",
                        "--seed", "777", "--no-baselines", "--dump", str(dump), "--json", str(run_json)])
        if produced.returncode == NO_DEVICE:
            print("SKIPPED: no CUDA device")
            return NO_DEVICE
        if produced.returncode != 0:
            print("FAILED: the timed run did not finish")
            return 1
        sample_seed = json.loads(run_json.read_text())["bench"][0]["checked_sample_seed"]
        check = [args.checker, "--dump", str(dump), "--verdict", str(verdict), "--bench-case", bench[0], "--seed"]
        if run(check + [str(sample_seed)]).returncode != 0:
            print("FAILED: the checker rejected the kept sample of the solution")
            return 1
        if run(check + ["777"]).returncode != 1:
            print("FAILED: the kept sample also passed under the run's seed: samples do not get inputs of their own")
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
    r = sub.add_parser("roundtrip")
    r.add_argument("--binary", required=True)
    r.add_argument("--checker", required=True)
    r.add_argument("--expect-fail", action="store_true")
    b = sub.add_parser("bench-roundtrip")
    b.add_argument("--binary", required=True)
    b.add_argument("--checker", required=True)
    c = sub.add_parser("checker-usage")
    c.add_argument("--checker", required=True)
    args = parser.parse_args()
    return {"roundtrip": roundtrip, "bench-roundtrip": bench_roundtrip, "checker-usage": checker_usage}[args.verb](args)


if __name__ == "__main__":
    sys.exit(main())
