"""`cudalab ladder`: build and benchmark every variant of a lab in one run.

For each rung of the lab's [[ladder]] (lecture order) the rung's binary runs every bench
case (or those named) with the same seed and sample count; the trusted checker checks
what each timed run left behind, so a fast-but-wrong rung is shown as wrong. The table
gives the median time, GB/s from the lab's byte model, % of the device-to-device copy
bandwidth and the ratio to the library (CUB) measured in the same process, and the
speedup over the previous rung; where the lab counts items (pixels, keys), their rate too.

`--blocks 16x16,32x8,...` (labs whose functions take a block shape, such as sobel) runs
one rung instead (--rung STEM; default the solution) once per block shape, checks each
run's kept samples the same way, and prints one row per shape: per bench case the median
time, the throughput and the checker's word, and the library's throughput measured in
the same runs.
"""
from __future__ import annotations

import argparse
import json

from .. import console
from ..lab import labs
from ..grading import profile
from ..config import Config
from ..errors import UsageError
from ..exit_codes import Cli
from ..grading.ladder import NoDeviceRun, run_blocks, run_ladder
from ..grading.run import block_argument, giga_per_s, items_name, require_takes_block


def block_list(text: str) -> list[str]:
    """argparse type of --blocks: block shapes WxH separated by commas, each as --block
    takes it; a shape given twice runs once."""
    shapes: list[str] = []
    for part in text.split(","):
        if part.strip():
            shape = block_argument(part)
            if shape not in shapes:
                shapes.append(shape)
    if not shapes:
        raise argparse.ArgumentTypeError(f"{text!r} names no block shape: give WxH,WxH,..., e.g. 16x16,32x8,64x4")
    return shapes


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("lab", help="the lab whose ladder to run (a folder under labs/)")
    parser.add_argument("--bench-case", action="append", default=[], metavar="NAME",
                        help="run only this bench case (repeatable; default: all)")
    parser.add_argument("--samples", type=labs.positive_int, default=30, help="timed samples per case and rung")
    parser.add_argument("--warmup", type=labs.positive_int, default=5, help="untimed runs before sampling")
    parser.add_argument("--seed", type=labs.seed_argument, help="input seed (default: chosen now)")
    parser.add_argument("--profile", nargs="?", const="", default=None, metavar="BENCH_CASE",
                        help="also profile one call of every rung with Nsight Compute (ncu) and print the "
                             "lecture's table: duration, registers, shared memory, load/store/shared "
                             "efficiency, warp execution efficiency, occupancy and its limiter (on BENCH_CASE; "
                             "default: the smallest bench case)")
    parser.add_argument("--blocks", type=block_list, metavar="WxH,WxH,...",
                        help="labs whose functions take a block shape (sobel): run one rung once per shape "
                             "(e.g. 16x16,32x8,64x4) and compare them; each W*H a multiple of 32, at most 1024")
    parser.add_argument("--rung", metavar="STEM",
                        help="with --blocks: the rung to run, by its source's stem (default: the solution)")


def _fmt(value, spec, scale=1.0):
    return format(value * scale, spec) if isinstance(value, (int, float)) else "-"


def _show(result: dict) -> None:
    fmt = _fmt
    for case in result["cases"]:
        compute = bool(case.get("flops"))  # a lab with a FLOP model: TFLOP/s say more than GB/s
        counted = items_name(case["rungs"])  # a lab that counts pixels or keys: their rate too
        rows = [(r["name"], fmt(r.get("median_ms"), ".4f"), fmt(r.get("spread"), ".1f", 100) + "%",
                 *((fmt(r.get("tflops"), ".2f"),) if compute else ()),
                 *((giga_per_s(r.get("items_per_s")),) if counted else ()),
                 fmt(r.get("gbps"), ".1f"), fmt(r.get("fraction_of_copy"), ".1f", 100) + "%",
                 fmt(r.get("speedup_over_previous"), ".2f") + "x", fmt(r.get("fraction_of_library"), ".3f"),
                 r.get("verdict", "?") if r.get("verdict") == "passed" else f"{r.get('verdict')}: {r.get('message', '')}")
                for r in case["rungs"]]
        lib = case.get("library") or {}
        if lib.get("name"):
            speed = f"{lib['tflops']:.1f} TFLOP/s" if compute and lib.get("tflops") else f"{lib['gbps']:.0f} GB/s"
            if counted and lib.get("items_per_s"):
                speed += f", {giga_per_s(lib['items_per_s'])} G{counted}/s"
            said = f"; {lib['name']} {speed}"
        elif lib.get("unavailable"):
            said = f"; no library baseline: {lib['unavailable']}"
        else:
            said = ""
        title = (f"{result['lab']} {case['name']} ({case['bytes_moved'] / 1e9:.2f} GB moved"
                 + (f", {case['flops'] / 1e12:.2f} TFLOP" if compute else "")
                 + f"; copy roof {fmt(case.get('copy_gbps'), '.0f')} GB/s{said})")
        console.table(title, ("rung", "median ms", "spread", *(("TFLOP/s",) if compute else ()),
                              *((f"G{counted}/s",) if counted else ()), "GB/s", "% copy",
                              "vs previous", "vs library", "trusted check"), rows)
    prof = result.get("profile")
    if prof is not None:
        if prof.get("error"):
            console.warn(prof["error"])
        else:
            console.table(f"{result['lab']} {prof['case']}: one call of each rung under Nsight Compute",
                          profile.COLUMNS, profile.table_rows(prof["rows"]))


def _show_blocks(result: dict) -> None:
    counted = result.get("items_name")
    rate = f"G{counted}/s" if counted else "GB/s"

    def speed(row: dict) -> str:
        return giga_per_s(row.get("items_per_s")) if counted else _fmt(row.get("gbps"), ".1f")

    columns = ["block"]
    for case in result["cases"]:
        columns += [f"{case['name']} ms", f"{case['name']} {rate}", f"{case['name']} check"]
    rows = []
    for block in result["blocks"]:
        cells = [block["block"]]
        for case in result["cases"]:
            row = block["cases"][case["name"]]
            cells += [_fmt(row.get("median_ms"), ".4f"), speed(row), row.get("verdict", "?")]
        rows.append(cells)
    libraries = {c["name"]: c.get("library") or {} for c in result["cases"]}
    named = next((lib["name"] for lib in libraries.values() if lib.get("name")), None)
    if named:
        cells = [f"library: {named}"]
        for case in result["cases"]:
            lib = libraries[case["name"]]
            cells += [_fmt(lib.get("median_ms"), ".4f"),
                      giga_per_s(lib.get("items_per_s")) if counted else _fmt(lib.get("gbps"), ".1f"), "-"]
        rows.append(cells)
    console.table(f"{result['lab']}: {result['rung']} by block shape ({result.get('samples')} samples per case, "
                  f"seed {result.get('seed')})", columns, rows)
    for case, lib in libraries.items():
        if lib.get("unavailable"):
            console.warn(f"{case}: no library baseline: {lib['unavailable']}")
    for block in result["blocks"]:
        for case, row in block["cases"].items():
            if row.get("verdict") not in ("passed", "skipped"):
                console.warn(f"block {block['block']}, {case}: {row.get('verdict')}: {row.get('message', '')}")


def main(args: argparse.Namespace, config: Config) -> int:
    spec = labs.load_lab(config, args.lab)
    if args.rung is not None and args.blocks is None:
        raise UsageError("--rung goes with --blocks (it picks the rung the block shapes run); "
                         "without --blocks every rung of the ladder runs.")
    if args.blocks is not None:
        require_takes_block(spec, "--blocks")
        if args.profile is not None:
            raise UsageError("--profile and --blocks are separate runs: give one of them.")
    try:
        result = run_ladder(config, spec, args) if args.blocks is None else run_blocks(config, spec, args)
    except NoDeviceRun as reason:
        console.error(f"No CUDA device: the ladder was built but not run ({reason}).")
        return int(Cli.NO_DEVICE)
    if args.json:
        print(json.dumps(result, indent=2))
    elif args.blocks is None:
        _show(result)
    else:
        _show_blocks(result)
    return int(Cli.DONE)
