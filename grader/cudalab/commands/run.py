"""`cudalab run`: build (if needed) and run one implementation of a lab, and show the
checker's verdict on each case (and, with --bench, the timings).

FOLDER (default: the current folder) is always the student's, whatever it is called;
`--target solution`, `--target starter` or `--target <ladder stem>` runs one of the course's
own builds instead. The output says which source ran.
The program runs in the sandbox where this machine has one (and says what is missing where
it has not); its outputs are judged by the lab's trusted checker, exactly as in a grade.
In a lab whose arrays are pictures (sobel), a failing case gets a difference image (red:
an expected edge is missing, cyan: an edge where none is expected) and its message says
where; --save-images DIR keeps every case's pictures as PNG. --block WxH launches a lab
whose API takes a block shape with that shape.
With --bench, each bench case's time is also shown over the reference's calibrated time on
this GPU model (labs/<lab>/calibration.json, recorded by `cudalab calibrate`), or a
sentence says plainly that this GPU model has no calibration. The course's solution is not
needed for that: a copy of the course without it (a student bundle) benchmarks too.
The exit status is 0 when every case passed, 1 when some failed, the lab binary's own code
when it stopped early (3 CUDA error, 5 timeout, 6 internal), 23 when there is no CUDA
device (or when every bench case is too large for this GPU), and the CLI's codes (2, 20-22,
24, 26) for problems before the run.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from .. import console
from ..lab import images, labs
from ..config import Config
from ..errors import UsageError
from ..exit_codes import Harness
from ..grading.run import (block_argument, calibration_comparison, checker_verdicts, difference_images, exit_status,
                   feedback_dir, giga_per_s, items_name, require_takes_block, resolve_target, save_images)
from ..isolation.runner import RUN, Runner, read_untrusted_json, scratch_dir, why_nothing_ran
from ..isolation.sandbox import ProcessResult
from ..isolation.trees import remove_tree


def versus_library(entry: dict) -> str:
    """How many times the library's time this row's is (above 1: faster than the library)."""
    mine, library = entry.get("items_per_s"), entry.get("library_items_per_s")
    if isinstance(mine, (int, float)) and isinstance(library, (int, float)) and library > 0:
        return f"{mine / library:.2f}x"
    fraction = entry.get("fraction_of_library")
    return f"{fraction:.2f}x" if isinstance(fraction, (int, float)) else "-"


def _bench_row(entry: dict, verdicts: dict[str, dict], throughput: bool = False,
               ratios: dict[str, float | None] | None = None) -> tuple:
    """One row of the bench table; with `ratios` (the calibration of this GPU model), the
    row's time over the reference's calibrated time in a last column."""
    extra = (2 if throughput else 0) + (1 if ratios is not None else 0)
    if entry.get("status") == "skipped":
        return (entry.get("name"), "skipped", "-", "-", "-", "-") + ("-",) * extra
    row = (entry.get("name"), (verdicts.get(entry.get("name")) or {}).get("status", "not checked"),
           f"{entry.get('median_ms', 0):.4g}", f"{entry.get('gbps', 0):.1f}",
           f"{100 * (entry.get('fraction_of_baseline') or 0):.0f}%", f"{100 * (entry.get('spread') or 0):.1f}%")
    row += (giga_per_s(entry.get("items_per_s")), versus_library(entry)) if throughput else ()
    if ratios is not None:
        ratio = ratios.get(entry.get("name"))
        row += (f"{ratio:.2f}x" if isinstance(ratio, float) else "-",)
    return row


def not_run_sentence(run_json: dict | None) -> str:
    """Why a program that exited 4 ran nothing, from its own words where it gave them (a
    driver too old for the runtime, a case too large for the GPU), else the plain case."""
    said = why_nothing_ran(run_json)
    if said:
        return said + ". Nothing was run: this is not a failure of your code."
    return ("No CUDA device here: the program was built but could not run (`cudalab doctor` says what this "
            "machine can do).")


def _show(run_json: dict | None, verdicts: dict[str, dict], result: ProcessResult, bench: bool,
          comparison: dict | None = None) -> None:
    if not bench and verdicts:
        rows = [(name, v.get("status"), v.get("message", "") if v.get("status") != "passed" else "")
                for name, v in verdicts.items()]
        console.table("Cases (judged by the lab's checker)", ("case", "status", "first problem"), rows)
    entries = [b for b in (run_json or {}).get("bench", []) if isinstance(b, dict)]
    counted = items_name(entries)
    ratios = (comparison or {}).get("ratios") if (comparison or {}).get("calibrated_gpu") else None
    bench_rows = [_bench_row(b, verdicts, throughput=counted is not None, ratios=ratios) for b in entries]
    if bench_rows:
        block = (run_json or {}).get("block")
        console.table("Benchmark" + (f" (block {block})" if isinstance(block, str) else ""),
                      ("case", "checked sample", "median ms", "GB/s", "of copy", "spread",
                       *((f"G{counted}/s", "vs library") if counted else ()),
                       *(("vs reference",) if ratios is not None else ())), bench_rows)
    if comparison and bench_rows:
        if comparison.get("error"):
            console.warn(comparison["sentence"])
        else:
            console.text(comparison["sentence"])
    for entry in entries:
        if entry.get("status") == "skipped":
            console.warn(f"{entry.get('name')} was skipped: {entry.get('reason', 'no reason given')}")
    if result.exit_code == Harness.NO_DEVICE:
        console.warn(not_run_sentence(run_json))
    elif result.status not in ("passed", "failed"):
        console.error(result.describe())
    if result.status not in ("passed", "failed") and result.exit_code != Harness.NO_DEVICE and result.stderr.strip():
        console.text(result.stderr_head(20), stream=sys.stderr)


def _say_saved(out: Path, saved: dict[str, dict]) -> None:
    if not saved:
        console.warn(f"No images were written to {out}: the checker drew no case (nothing was checked, or every "
                     "image was larger than 16,777,216 pixels).")
        return
    differing = [case for case, done in saved.items() if any(done["mismatches"].values())]
    console.text(f"Images of {len(saved)} case{'s' if len(saved) != 1 else ''} are in {out}/<case>/ "
                 f"(in.png, expected_<output>.png, <output>.png"
                 + (f"; diff_<output>.png for {', '.join(differing)}" if differing else "") + ").")
    for case, done in saved.items():
        for output, why in done["problems"].items():
            console.warn(f"{case}: no difference image of {output}: {why}")
    if differing:
        console.text(f"Difference images: {images.LEGEND}.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("lab")
    parser.add_argument("folder", nargs="?", type=Path,
                        help="the folder with your files (default: the current folder)")
    parser.add_argument("--target", help="run one of the course's own builds instead of a folder: "
                        "solution, starter or a ladder stem (e.g. grid_stride)")
    parser.add_argument("--bench", action="store_true", help="time the bench cases")
    parser.add_argument("--case", action="append", default=[], metavar="NAME",
                        help="run only this case (with --bench: this bench case); repeatable")
    parser.add_argument("--seed", type=labs.seed_argument, default=labs.STUDENT_RUN_SEED,
                        help=f"input seed (default {labs.STUDENT_RUN_SEED})")
    parser.add_argument("--block", type=block_argument, metavar="WxH",
                        help="launch with this thread-block shape, e.g. 32x8 (labs whose functions take one, "
                             "such as sobel): W*H a multiple of 32, at most 1024")
    parser.add_argument("--save-images", type=Path, metavar="DIR",
                        help="labs whose arrays are pictures (sobel): write every case's input, expected and "
                             "output images as PNG into DIR/<case>/, with diff_<output>.png where they differ")


def main(args: argparse.Namespace, config: Config) -> int:
    spec = labs.load_lab(config, args.lab)
    if args.block is not None:
        require_takes_block(spec, f"--block {args.block}")
    image_lab = images.lab_has_images(spec)
    if args.save_images is not None:
        if not image_lab:
            raise UsageError(f"--save-images: the {spec.name} lab has no images (its inputs and outputs are not "
                             "pictures); it is for labs such as sobel.")
        if args.save_images.exists() and not args.save_images.is_dir():
            raise UsageError(f"--save-images {args.save_images}: that is a file; give a folder (it is made if missing).")
        images.require_pillow()
    scratch = scratch_dir(config, "run")
    try:
        runner = Runner(config, spec, scratch)
        if not runner.sandbox.isolation.official:
            console.warn("Running without the sandbox a grade uses (" + runner.sandbox.isolation.why_not_official()
                         + "). Your results are the same; only the isolation differs (`cudalab doctor` says how to "
                         "fix it).")
        if args.folder is not None and args.target is not None:
            raise UsageError("Give a folder or --target, not both.")
        binary, source = resolve_target(config, spec, runner, args.folder, args.target)
        argv: list = ["--seed", args.seed, "--dump", f"{RUN}/dump", "--json", f"{RUN}/run.json"]
        if args.bench:
            argv.append("--bench")
        if args.block is not None:
            argv += ["--block", args.block]
        for name in args.case:
            argv += ["--bench-case" if args.bench else "--case", name]
        console.info(f"Running {source}")
        # The student's own CUDA settings (CUDA_LAUNCH_BLOCKING, ...) reach the program.
        env = {key: value for key, value in os.environ.items() if key.startswith("CUDA_")}
        # A timed --bench run may take longer than the cases' time limit: it has its own.
        result, folder = runner.run(binary, argv, env=env) if args.bench else runner.run_cases(binary, argv, env=env)
        run_json = read_untrusted_json(folder / "run.json")
        verdicts, saved = {}, None
        feedback = feedback_dir(config, spec, args.folder, args.target) if image_lab else None
        if feedback is not None:
            remove_tree(feedback)  # last run's pictures would mislead
        if result.exit_code == Harness.PASSED:
            console.info("Checking the outputs with the lab's checker")
            written = scratch / "images" if args.save_images is not None else None
            verdicts = checker_verdicts(runner, folder, run_json, args.seed, args.bench, cases=args.case or None,
                                 images_dir=written)
            if written is not None:
                saved = save_images(written, args.save_images, verdicts)
            elif feedback is not None:
                difference_images(runner, folder, run_json, args.seed, args.bench, verdicts, feedback)
        all_passed = bool(verdicts) and all(v.get("status") == "passed" for v in verdicts.values())
        skipped_all = args.bench and bool(run_json) and all(
            isinstance(b, dict) and b.get("status") == "skipped" for b in run_json.get("bench") or [{}])
        comparison = calibration_comparison(config, spec, run_json, args.target) if args.bench else None
        if args.json:
            print(json.dumps({"schema": "cudalab.run-result/1", "lab": spec.name,
                              "target": args.target, "folder": str(args.folder) if args.folder else None,
                              "source": source, "binary": str(binary), "status": result.status,
                              "exit_code": exit_status(result, all_passed, skipped_all), "wall_s": round(result.wall_s, 4),
                              "description": result.describe(), "stderr_head": result.stderr_head(20),
                              "isolation": runner.sandbox.isolation.to_json(), "verdicts": verdicts,
                              "block": args.block, "calibration": comparison,
                              "images": None if saved is None else {"folder": str(args.save_images),
                                                                    "legend": images.LEGEND, "cases": saved},
                              "run": run_json}, indent=2))
        else:
            if not args.bench and result.stdout.strip() and not verdicts:
                console.text(result.stdout)
            _show(run_json, verdicts, result, args.bench, comparison)
            if saved is not None:
                _say_saved(args.save_images, saved)
            elif args.save_images is not None:
                console.warn(f"No images were written to {args.save_images}: the program stopped before the "
                             "checker could judge its outputs.")
            elif any(v.get("difference_images") for v in verdicts.values()):
                console.text(f"Difference images: {images.LEGEND}.")
        return exit_status(result, all_passed, skipped_all)
    finally:
        if not config.keep_temp:
            remove_tree(scratch)
