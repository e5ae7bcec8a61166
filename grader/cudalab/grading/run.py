"""What `cudalab run` does (the verb and its help are commands/run.py): which build runs,
the checker's verdicts on what it left, difference images, and the comparison with the
reference's calibrated time.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from ..building import build
from . import calibration
from .. import console
from ..lab import images, labs
from ..config import Config
from ..errors import GraderError, SubmissionError, UsageError
from ..exit_codes import Cli, Harness
from ..lab.labspec import LabSpec
from ..isolation.runner import Runner, fresh_dir, kept_bench_samples
from ..isolation.sandbox import ProcessResult


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


def checker_verdicts(runner: Runner, folder: Path, run_json: dict | None, seed: int, bench: bool,
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
        checker_verdicts(runner, folder, run_json, seed, bench, cases=failing, images_dir=written)
        for case, drawn in images.draw_differences(written, failing, feedback, console.warn).items():
            for output, diff in drawn.items():
                _mention(verdicts[case], output, diff)
    except GraderError as err:
        console.warn(f"No difference images: {err}")
