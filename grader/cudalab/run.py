"""`cudalab run`: build (if needed) and run one implementation of a lab, and show the
checker's verdict on each case (and, with --bench, the timings).

FOLDER (default: the current folder) is always the student's, whatever it is called;
`--target solution`, `--target starter` or `--target <ladder stem>` runs one of the course's
own builds instead. The output says which source ran.
The program runs in the sandbox where this machine has one (and says what is missing where
it has not); its outputs are judged by the lab's trusted checker, exactly as in a grade.
The exit status is 0 when every case passed, 1 when some failed, the lab binary's own code
when it stopped early (3 CUDA error, 5 timeout, 6 internal), 23 when there is no CUDA
device, and the CLI's codes (20-22, 24) for problems before the run.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

from . import build, console, labs
from .config import Config
from .errors import SubmissionError, UsageError
from .exit_codes import Cli, Harness
from .labspec import LabSpec
from .runner import RUN, Runner, fresh_dir, kept_bench_samples, read_untrusted_json, why_nothing_ran
from .sandbox import ProcessResult, scratch_root


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
    build.ensure_official(config, spec)
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


def _verdicts(runner: Runner, folder: Path, run_json: dict | None, seed: int, bench: bool) -> dict[str, dict]:
    """The checker's verdict per case: for a bench run, each case's kept sample under the
    seed of that sample."""
    if not bench:
        return runner.check(folder / "dump", seed)
    verdicts = {}
    for case, seed in kept_bench_samples(run_json):
        verdicts.update(runner.check(folder / "dump", seed, bench_case=case))
    return verdicts


def _bench_row(entry: dict, verdicts: dict[str, dict]) -> tuple:
    if entry.get("status") == "skipped":
        return (entry.get("name"), "skipped", "-", "-", "-", "-")
    return (entry.get("name"), (verdicts.get(entry.get("name")) or {}).get("status", "not checked"),
            f"{entry.get('median_ms', 0):.4g}", f"{entry.get('gbps', 0):.1f}",
            f"{100 * (entry.get('fraction_of_baseline') or 0):.0f}%", f"{100 * (entry.get('spread') or 0):.1f}%")


def not_run_sentence(run_json: dict | None) -> str:
    """Why a program that exited 4 ran nothing, from its own words where it gave them (a
    driver too old for the runtime, a case too large for the GPU), else the plain case."""
    said = why_nothing_ran(run_json)
    if said:
        return said + ". Nothing was run: this is not a failure of your code."
    return "No CUDA device here: the program was built but could not run."


def _show(run_json: dict | None, verdicts: dict[str, dict], result: ProcessResult, bench: bool) -> None:
    if not bench and verdicts:
        rows = [(name, v.get("status"), v.get("message", "") if v.get("status") != "passed" else "")
                for name, v in verdicts.items()]
        console.table("Cases (judged by the lab's checker)", ("case", "status", "first problem"), rows)
    entries = [b for b in (run_json or {}).get("bench", []) if isinstance(b, dict)]
    bench_rows = [_bench_row(b, verdicts) for b in entries]
    if bench_rows:
        console.table("Benchmark", ("case", "checked sample", "median ms", "GB/s", "of copy", "spread"), bench_rows)
    for entry in entries:
        if entry.get("status") == "skipped":
            console.warn(f"{entry.get('name')} was skipped: {entry.get('reason', 'no reason given')}")
    if result.exit_code == Harness.NO_DEVICE:
        console.warn(not_run_sentence(run_json))
    elif result.status not in ("passed", "failed"):
        console.error(result.describe())
    if result.status not in ("passed", "failed") and result.exit_code != Harness.NO_DEVICE and result.stderr.strip():
        console.text(result.stderr_head(20), stream=sys.stderr)


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


def main(args: argparse.Namespace, config: Config) -> int:
    spec = labs.load_lab(config, args.lab)
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
        for name in args.case:
            argv += ["--bench-case" if args.bench else "--case", name]
        console.info(f"Running {source}")
        # The student's own CUDA settings (CUDA_LAUNCH_BLOCKING, ...) reach the program.
        env = {key: value for key, value in os.environ.items() if key.startswith("CUDA_")}
        result, folder = runner.run(binary, argv, env=env)
        run_json = read_untrusted_json(folder / "run.json")
        verdicts = {}
        if result.exit_code == Harness.PASSED:
            console.info("Checking the outputs with the lab's checker")
            verdicts = _verdicts(runner, folder, run_json, args.seed, args.bench)
        all_passed = bool(verdicts) and all(v.get("status") == "passed" for v in verdicts.values())
        skipped_all = args.bench and bool(run_json) and all(
            isinstance(b, dict) and b.get("status") == "skipped" for b in run_json.get("bench") or [{}])
        if args.json:
            print(json.dumps({"schema": "cudalab.run-result/1", "lab": spec.name,
                              "target": args.target, "folder": str(args.folder) if args.folder else None,
                              "source": source, "binary": str(binary), "status": result.status,
                              "exit_code": exit_status(result, all_passed, skipped_all), "wall_s": round(result.wall_s, 4),
                              "description": result.describe(), "stderr_head": result.stderr_head(20),
                              "isolation": runner.sandbox.isolation.to_json(), "verdicts": verdicts,
                              "run": run_json}, indent=2))
        else:
            if not args.bench and result.stdout.strip() and not verdicts:
                console.text(result.stdout)
            _show(run_json, verdicts, result, args.bench)
        return exit_status(result, all_passed, skipped_all)
    finally:
        if not config.keep_temp:
            shutil.rmtree(scratch, ignore_errors=True)
