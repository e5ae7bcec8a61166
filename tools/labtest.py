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
  labtest.py driver-too-old --binary LAB_BINARY --fake-driver-dir DIR
      under DIR/libcuda.so.1, a driver that supports CUDA 12.2 only (common/tests/
      fake_old_libcuda.cpp), the binary exits 4 and says, on stderr and in its run JSON
      (reason driver_too_old), which CUDA its driver supports and which it needs. Runs on
      any machine: the fake comes first on LD_LIBRARY_PATH.
  labtest.py memory-fit --binary LAB_BINARY
      with the GPU's free memory capped at 1 GiB (CUDALAB_GPU_MEMORY_LIMIT), --bench runs
      the smallest bench case and skips the largest (2^28: more than 1 GiB) with a sentence
      on stderr and a "skipped" entry in the run JSON, and exits 0; the grader's auditor
      (--audit) on the largest exits 4 with reason insufficient_memory. Capped at 1 MiB, nothing fits.
Exit 4 (no CUDA device) from the binary is passed through, so ctest reports a skip.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

NO_DEVICE = 4


def run(cmd: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    print("$", " ".join(cmd), flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL)
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
        entry = json.loads(run_json.read_text())["bench"][0]
        if entry.get("status") == "skipped":  # too large for this GPU's free memory
            print(f"SKIPPED: {entry.get('reason')}")
            return NO_DEVICE
        sample_seed = entry["checked_sample_seed"]
        check = [args.checker, "--dump", str(dump), "--verdict", str(verdict), "--bench-case", bench[0], "--seed"]
        if run(check + [str(sample_seed)]).returncode != 0:
            print("FAILED: the checker rejected the kept sample of the solution")
            return 1
        if run(check + ["777"]).returncode != 1:
            print("FAILED: the kept sample also passed under the run's seed: samples do not get inputs of their own")
            return 1
    return 0


def _skips_the_largest(binary: str, smallest: str | None, largest: str, run_json: Path) -> str:
    """Runs the bench on a GPU with 1 GiB free (1 MiB without a smallest case): "ok" when the
    smallest ran and the largest was skipped with its reason said, "fits" when the largest
    ran too, "no device", or "failed" (said)."""
    limit = 1 << 30 if smallest else 1 << 20
    env = {**os.environ, "CUDALAB_GPU_MEMORY_LIMIT": str(limit)}
    produced = run([binary, "--bench", *(["--bench-case", smallest] if smallest else []),
                    "--bench-case", largest, "--samples", "2", "--warmup", "1", "--json", str(run_json)], env=env)
    if produced.returncode == NO_DEVICE:
        print("SKIPPED: no CUDA device")
        return "no device"
    if produced.returncode != 0:
        print("FAILED: a bench run with a case too large for the GPU must still finish (exit 0)")
        return "failed"
    entries = {e["name"]: e for e in json.loads(run_json.read_text())["bench"]}
    ran, skipped = entries.get(smallest, {}), entries.get(largest, {})
    if smallest and (ran.get("status") != "unchecked" or not isinstance(ran.get("median_ms"), (int, float))):
        print(f"FAILED: {smallest} fits in 1 GiB and must have run: {ran}")
        return "failed"
    if smallest and skipped.get("status") == "unchecked":
        return "fits"
    reason = skipped.get("reason", "")
    free_text = "1.0 GiB free on" if smallest else "1 MiB free on"
    if (skipped.get("status") != "skipped" or "median_ms" in skipped or "of GPU memory" not in reason
            or free_text not in reason or skipped.get("memory", {}).get("free_bytes") != limit):
        print(f"FAILED: {largest} needs more than the GPU's {free_text.split(' free')[0]} and must be skipped "
              f"with a reason: {skipped}")
        return "failed"
    if f"bench case {largest} skipped: it needs about" not in produced.stderr:
        print("FAILED: the skip must be said on stderr")
        return "failed"
    return "ok"


def memory_fit(args: argparse.Namespace) -> int:
    cases = run([args.binary, "--list-cases"])
    bench = [line.split()[1] for line in cases.stdout.splitlines() if line.startswith("bench-case")]
    if not bench:
        print("FAILED: the binary lists no bench case")
        return 1
    # With two or more bench cases, a 1 GiB GPU runs the smallest and skips the largest; a
    # lab with one bench case, or whose largest case fits in 1 GiB too (sobel's two
    # 16384^2 images), has its largest case skipped on a 1 MiB GPU.
    smallest, largest = (bench[0], bench[-1]) if len(bench) > 1 else (None, bench[0])
    with tempfile.TemporaryDirectory() as tmp:
        run_json = Path(tmp) / "run.json"
        verdict = _skips_the_largest(args.binary, smallest, largest, run_json)
        if verdict == "fits" and smallest:
            smallest = None
            verdict = _skips_the_largest(args.binary, None, largest, run_json)
        if verdict != "ok":
            return NO_DEVICE if verdict == "no device" else 1
        env = {**os.environ, "CUDALAB_GPU_MEMORY_LIMIT": str(1 << 20)}
        audit = run([args.binary, "--audit", "--bench-case", largest, "--dump", str(Path(tmp) / "dump"),
                     "--json", str(run_json), "--control", "0"],
                    env=env)
        said = json.loads(run_json.read_text())
        if (audit.returncode != NO_DEVICE or said.get("reason") != "insufficient_memory"
                or f"bench case {largest} cannot be timed on this GPU" not in audit.stderr):
            print(f"FAILED: --audit on a case that cannot fit must exit 4 with reason insufficient_memory: {said}")
            return 1
    return 0


def driver_too_old(args: argparse.Namespace) -> int:
    env = {**os.environ, "LD_LIBRARY_PATH": os.pathsep.join(
        [args.fake_driver_dir] + [p for p in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep) if p])}
    expected = ("your NVIDIA driver supports CUDA up to 12.2, older than the CUDA 13.0 runtime this program was "
                "built with (it needs a driver for CUDA 13.0 or newer: version 580 or newer): update the NVIDIA "
                "driver (nvidia-smi shows the version installed now)")
    with tempfile.TemporaryDirectory() as tmp:
        run_json = Path(tmp) / "run.json"
        for mode in ([], ["--bench"]):
            produced = run([args.binary, *mode, "--json", str(run_json)], env=env)
            said = json.loads(run_json.read_text())
            want = {"status": "no_device", "reason": "driver_too_old", "driver_cuda_version": "12.2",
                    "runtime_cuda_version": said.get("runtime_cuda_version")}
            if not str(said.get("runtime_cuda_version", "")).startswith("13."):
                print(f"FAILED: runtime_cuda_version should be the CUDA 13 runtime's: {said}")
                return 1
            if said.get("runtime_cuda_version") != "13.0":  # the sentence names the runtime's own version
                expected = expected.replace("CUDA 13.0 runtime", f"CUDA {said['runtime_cuda_version']} runtime")
            if produced.returncode != NO_DEVICE or {k: said.get(k) for k in want} != want:
                print(f"FAILED: under a CUDA 12.2 driver the binary must exit 4 with reason driver_too_old: {said}")
                return 1
            if said.get("message") != expected or not produced.stderr.startswith(
                    f"{Path(args.binary).name}: {expected}.\nNothing was run: this is not a failure of your code."):
                print(f"FAILED: the sentence is not the expected one:\n{expected}")
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
    d = sub.add_parser("driver-too-old")
    d.add_argument("--binary", required=True)
    d.add_argument("--fake-driver-dir", required=True)
    m = sub.add_parser("memory-fit")
    m.add_argument("--binary", required=True)
    args = parser.parse_args()
    return {"roundtrip": roundtrip, "bench-roundtrip": bench_roundtrip, "checker-usage": checker_usage,
            "memory-fit": memory_fit, "driver-too-old": driver_too_old}[args.verb](args)


if __name__ == "__main__":
    sys.exit(main())
