#!/usr/bin/env python3
"""Tune a solution's compile-time constants on the GPU: build one variant per
combination of values and bench each through the official harness, in one run.

    sweep.py LAB --set kThreads=128,256 --set kItemsPerThread=8,16 [--bench-case NAME]
             [--source solutions/LAB/LAB.cu] [--samples K] [--build-dir build/gpu]

Each `--set NAME=v1,v2` rewrites the line `constexpr <type> NAME = <value>;` of the
source. Variants are built as submissions against the official tree (cmake/submission),
in parallel, then benched one at a time; the table gives each variant's median, spread
and ratio to the library baseline measured in the same process, fastest first.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def rewrite(text: str, name: str, value: str) -> str:
    pattern = re.compile(rf"^(\s*(?:static\s+)?constexpr\s+[\w:]+\s+{re.escape(name)}\s*=\s*)[^;]+;", re.M)
    new, count = pattern.subn(rf"\g<1>{value};", text)
    if count != 1:
        raise SystemExit(f"error: expected one 'constexpr ... {name} = ...;' line in the source, found {count}")
    return new


def build(lab: str, folder: Path, official: Path) -> tuple[Path, str]:
    build_dir = folder / "build"
    cmd = ["cmake", "-S", str(ROOT / "cmake/submission"), "-B", str(build_dir), "-G", "Ninja",
           f"-DCUDALAB_SDK={official / 'sdk' / lab}", f"-DCUDALAB_SOURCE={folder / f'{lab}.cu'}"]
    log = subprocess.run(cmd, capture_output=True, text=True)
    if log.returncode == 0:
        log = subprocess.run(["cmake", "--build", str(build_dir)], capture_output=True, text=True)
    return build_dir / f"{lab}_submission", "" if log.returncode == 0 else (log.stdout + log.stderr)[-2000:]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("lab")
    ap.add_argument("--set", action="append", default=[], metavar="NAME=V1,V2")
    ap.add_argument("--source")
    ap.add_argument("--bench-case", default=None)
    ap.add_argument("--samples", type=int, default=20)
    ap.add_argument("--build-dir", default=str(ROOT / "build/gpu"))
    ap.add_argument("--json", help="write the results here too")
    args = ap.parse_args()

    source = Path(args.source or ROOT / "solutions" / args.lab / f"{args.lab}.cu")
    axes = []
    for item in args.set:
        name, _, values = item.partition("=")
        axes.append([(name, v) for v in values.split(",") if v])
    combos = list(itertools.product(*axes)) if axes else [()]
    work = Path(tempfile.mkdtemp(prefix="sweep-"))
    text = source.read_text()
    variants = []
    for i, combo in enumerate(combos):
        folder = work / f"v{i}"
        folder.mkdir()
        body = text
        for name, value in combo:
            body = rewrite(body, name, value)
        (folder / f"{args.lab}.cu").write_text(body)
        variants.append((", ".join(f"{n}={v}" for n, v in combo) or "as written", folder))

    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 8) as pool:
        official = Path(args.build_dir).resolve()
        built = list(pool.map(lambda v: build(args.lab, v[1], official), variants))

    rows = []
    print(f"built {len(variants)} variants; benching each (rows print as they finish)", flush=True)
    for (label, _), (binary, error) in zip(variants, built):
        if error:
            rows.append({"variant": label, "status": "build failed", "message": error.strip().splitlines()[-3:]})
            continue
        out = binary.parent / "run.json"
        cmd = [str(binary), "--bench", "--samples", str(args.samples), "--json", str(out), "--quiet"]
        if args.bench_case:
            cmd += ["--bench-case", args.bench_case]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        try:
            bench = json.loads(out.read_text())["bench"][-1]
        except (OSError, ValueError, KeyError, IndexError):
            rows.append({"variant": label, "status": f"run failed ({proc.returncode})",
                         "message": proc.stderr[-300:]})
            continue
        if bench.get("status") == "skipped":  # too large for this GPU's free memory: no timings
            rows.append({"variant": label, "status": "skipped", "message": bench.get("reason")})
            continue
        rows.append({"variant": label, "status": bench["status"], "case": bench["name"],
                     "median_ms": bench["median_ms"], "spread": bench["spread"], "gbps": bench["gbps"],
                     "fraction_of_library": bench.get("fraction_of_library")})
        print(f"  {label}: {bench['median_ms']:.4f} ms, {bench.get('fraction_of_library') or 0:.3f} of the "
              f"library, {bench['status']}", flush=True)
    shutil.rmtree(work, ignore_errors=True)

    rows.sort(key=lambda r: r.get("median_ms") or float("inf"))
    print(f"{'variant':50} {'case':10} {'median ms':>10} {'spread':>7} {'GB/s':>8} {'vs lib':>7}  check")
    for r in rows:
        if "median_ms" not in r:
            print(f"{r['variant']:50} {r['status']}: {r.get('message')}")
            continue
        print(f"{r['variant']:50} {r['case']:10} {r['median_ms']:10.4f} {100 * r['spread']:6.2f}% "
              f"{r['gbps']:8.1f} {r['fraction_of_library'] or 0:7.3f}  {r['status']}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    timed = sum("median_ms" in r for r in rows)
    if timed < len(rows):
        print(f"sweep: {len(rows) - timed} of {len(rows)} variants did not build or run (see above)", file=sys.stderr)
    return 0 if rows and timed == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
