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
device, and the CLI's codes (20-22, 24) for problems before the run.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from . import build, calibration, console, images, labs
from .config import Config
from .errors import GraderError, SubmissionError, UsageError
from .exit_codes import Cli, Harness
from .labspec import LabSpec
from .runner import RUN, Runner, fresh_dir, kept_bench_samples, read_untrusted_json, why_nothing_ran
from .sandbox import ProcessResult, scratch_root
from .trees import remove_tree


def resolve_target(config: Config, spec: LabSpec, runner: Runner, folder: Path | None,
                   target: str | None) -> tuple[Path, str]:
    """The binary to run and, in words, which source it was built from. A folder is always
    the student's (whatever it is called); the course's own builds are named with --target."""
    if target is not None:
        implementations = {"solution": "solution", "starter": "starter", **labs.ladder_stems(spec)}
        if target not in implementations:
            raise UsageError(f"--target {target} is not one of the {spec.name} lab's own builds: "
                             f"{', '.join(sorted(implementations))}. To run your own code, give its folder.")
        implementation = implementations[target]
        build.ensure_official(config, spec, (implementation, "checker"))
        source = ("the course solution" if implementation == "solution" else
                  "the starter" if implementation == "starter" else f"the ladder rung '{target}'")
        return runner.official(implementation), f"{source} (built into the official tree)"
    folder = Path(".") if folder is None else folder
    if not folder.is_dir():
        hint = ""
        if folder.name in ("solution", "starter", *labs.ladder_stems(spec)) and "/" not in str(folder):
            hint = f" To run the course's own '{folder.name}', use --target {folder.name}."
        what = "is not a folder" if folder.exists() else "does not exist"
        raise SubmissionError(f"{folder} {what}. Give the folder that holds your "
                              f"{', '.join(spec.files)}.{hint}")
    build.ensure_official_for_student_run(config, spec)  # the checker and the SDK: no solution needed
    built, reused = build.build_submission_reusing(config, spec, folder,
                                                   build.submission_work_dir(config, spec.name, folder))
    return built.binary, (f"your {', '.join(built.staged.copied)} from {built.staged.folder}"
                          + (" (unchanged since its last build)" if reused else ""))


def exit_status(result: ProcessResult, all_passed: bool, skipped_all: bool = False) -> int:
    """A bench run whose every case was skipped (too large for this GPU) ran nothing: like
    "no device", it is "cannot run here" (23), never a failure."""
    if result.exit_code == Harness.NO_DEVICE or (skipped_all and result.exit_code == Harness.PASSED):
        return int(Cli.NO_DEVICE)
    if result.exit_code == Harness.PASSED:
        return int(Harness.PASSED if all_passed else Harness.FAILED)
    if result.exit_code in tuple(Harness):
        return result.exit_code
    return int(Harness.FAILED)  # a crash or a code the harness never uses


def _verdicts(runner: Runner, folder: Path, run_json: dict | None, seed: int, bench: bool,
              cases: list[str] | None = None, images_dir: Path | None = None) -> dict[str, dict]:
    """The checker's verdict per case (only `cases`, when given): for a bench run, each
    case's kept sample under the seed of that sample. With `images_dir`, the checker also
    writes each case's pictures there (images_dir/<case>/*.pgm)."""
    if not bench:
        return runner.check(folder / "dump", seed, cases=cases or (), images=images_dir)
    verdicts = {}
    for case, seed in kept_bench_samples(run_json):
        if cases is None or case in cases:
            verdicts.update(runner.check(folder / "dump", seed, bench_case=case, images=images_dir))
    return verdicts


# --- --block ---------------------------------------------------------------------------

MAX_BLOCK_THREADS = 1024


def block_argument(text: str) -> str:
    """argparse type of a block shape "WxH": W and H whole numbers from 1, W * H a multiple
    of 32 (whole warps) and at most 1024 threads. Returns it written as WxH."""
    parts = text.strip().lower().split("x")
    example = "e.g. 16x16, 32x8 or 128x1"
    if len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
        raise argparse.ArgumentTypeError(f"{text!r} is not a block shape: give WxH, width and height in "
                                         f"threads, {example}")
    width, height = (int(p) for p in parts)
    if width < 1 or height < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: a block is at least 1 thread wide and 1 high ({example})")
    threads = width * height
    if threads > MAX_BLOCK_THREADS:
        raise argparse.ArgumentTypeError(f"{text!r} is {threads} threads: a block has at most "
                                         f"{MAX_BLOCK_THREADS} ({example})")
    if threads % 32:
        raise argparse.ArgumentTypeError(f"{text!r} is {threads} threads, not a multiple of 32: a block should be "
                                         f"whole warps ({example})")
    return f"{width}x{height}"


def require_takes_block(spec: LabSpec, option: str) -> None:
    """Refuses `option` for a lab whose API takes no block shape ([lab] takes_block)."""
    if not spec.takes_block:
        raise UsageError(f"{option}: the {spec.name} lab's functions take no block shape, so there is nothing "
                         "to choose; only labs with takes_block = true in their lab.toml (sobel) accept it.")


# --- throughput --------------------------------------------------------------------------

def items_name(entries: list[dict]) -> str | None:
    """What the bench rows count ("pixels", "keys"), when they carry a throughput."""
    return next((e.get("items_name") or "items" for e in entries
                 if isinstance(e, dict) and isinstance(e.get("items_per_s"), (int, float))), None)


def giga_per_s(value) -> str:
    return f"{value / 1e9:.2f}" if isinstance(value, (int, float)) else "-"


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


# --- the calibrated reference -------------------------------------------------------------

def calibration_comparison(config: Config, spec: LabSpec, run_json: dict | None, target: str | None) -> dict:
    """--bench: the run's times over the reference's calibrated times on this GPU model
    (calibration.compare_bench), or the sentence that says why there are none. A
    calibration file that cannot be read is said in a warning; the run goes on."""
    try:
        known = calibration.load(config, spec)
    except calibration.CalibrationError as err:
        return {"ratios": {}, "error": str(err), "sentence": f"No comparison with the reference's time: {err}"}
    return calibration.compare_bench(known, spec, run_json, "your" if target is None else "this build's")


# --- pictures ----------------------------------------------------------------------------

def feedback_dir(config: Config, spec: LabSpec, folder: Path | None, target: str | None) -> Path:
    """Where a run's difference images go and stay after it: beside the student's build, or
    for a course build (--target), in the work folder under feedback/<lab>/<target>."""
    if target is not None:
        return config.work_dir / "feedback" / spec.name / target
    return build.submission_work_dir(config, spec.name, Path(".") if folder is None else folder) / "feedback"


def _mention(verdict: dict, output: str, path: Path) -> None:
    verdict.setdefault("difference_images", {})[output] = str(path)
    message = (verdict.get("message") or "").rstrip()
    verdict["message"] = f"{message}{'; ' if message else ''}difference image: {path}"


def save_images(written: Path, out: Path, verdicts: dict[str, dict]) -> dict[str, dict]:
    """--save-images: every case's pictures as PNG in out/<case>/ (in.png, expected_out.png,
    out.png, and diff_out.png where the two differ); each failing case's message names
    its difference image."""
    saved = {}
    for case in images.case_folders(written):
        saved[case.name] = images.convert_case_images(case, out / case.name, equal_diffs=False)
        for output in saved[case.name]["mismatches"]:
            diff = out / case.name / f"diff_{output}.png"
            if case.name in verdicts and diff.is_file():
                _mention(verdicts[case.name], output, diff)
    return saved


def difference_images(runner: Runner, folder: Path, run_json: dict | None, seed: int, bench: bool,
                      verdicts: dict[str, dict], feedback: Path) -> None:
    """The difference image of every failing case, in feedback/<case>/diff_<output>.png,
    named in the case's message. The checker judges the failing cases again to draw them
    (a run that passes pays nothing); a problem here is a warning, never the run's end."""
    failing = [name for name, verdict in verdicts.items() if verdict.get("status") != "passed"]
    if not failing:
        return
    if not images.pillow_available():
        console.warn("No difference images: writing PNG needs Pillow, which is not installed here "
                      "(pip install pillow).")
        return
    written = fresh_dir(runner.scratch, "images")
    try:
        _verdicts(runner, folder, run_json, seed, bench, cases=failing, images_dir=written)
        for case, drawn in images.draw_differences(written, failing, feedback, console.warn).items():
            for output, diff in drawn.items():
                _mention(verdicts[case], output, diff)
    except GraderError as err:
        console.warn(f"No difference images: {err}")


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
    parser.add_argument("--seed", type=labs.seed_argument, default=1, help="input seed (default 1)")
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
    scratch = fresh_dir(scratch_root(config), "run")
    try:
        runner = Runner(config, spec, scratch)
        if not runner.sandbox.isolation.official:
            console.warn("Running without the sandbox a grade uses (" + "; ".join(runner.sandbox.isolation.missing)
                         + "). Your results are the same; only the isolation differs.")
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
            verdicts = _verdicts(runner, folder, run_json, args.seed, args.bench, cases=args.case or None,
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
