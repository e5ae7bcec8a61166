"""`cudalab run`: build (if needed) and run one implementation of a lab, and show its results.

TARGET is `solution`, `starter`, a ladder stem (e.g. `grid_stride`) or a submission folder.
The exit status is the lab binary's (0 passed, 1 failed, 3 CUDA error, 5 timeout), except
that "no CUDA device" is 23 and problems before the run are the CLI's codes (20-22, 24).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from . import build, console, labs
from .config import Config
from .errors import UsageError
from .exit_codes import Cli, Harness
from .labspec import LabSpec
from .sandbox import ProcessResult, run_untrusted


def resolve_target(config: Config, spec: LabSpec, target: str) -> Path:
    """The binary for TARGET, building what it needs first. An implementation name wins over
    a folder of the same name; write `./starter` to mean the folder."""
    implementations = {"solution": "solution", "starter": "starter", **labs.ladder_stems(spec)}
    if "/" not in target and target in implementations:
        implementation = implementations[target]
        build.ensure_official(config, spec, (implementation,))
        return labs.official_binary(config, spec.name, implementation)
    if "/" in target or Path(target).is_dir():
        built = build.build_submission(config, spec, Path(target),
                                       build.submission_work_dir(config, spec.name, Path(target)))
        return built.binary
    raise UsageError(f"'{target}' is not a target of the {spec.name} lab. Use a submission "
                     f"folder or one of: {', '.join(sorted(implementations))}.")


def exit_status(result: ProcessResult) -> int:
    if result.exit_code == Harness.NO_DEVICE:
        return int(Cli.NO_DEVICE)
    if result.exit_code in tuple(Harness):
        return result.exit_code
    return int(Harness.FAILED)  # a crash or a code the harness never uses


def _show(run_json: dict | None, result: ProcessResult) -> None:
    if run_json:
        rows = [(c.get("name"), c.get("status"),
                 "; ".join(o.get("message", "") for o in c.get("outputs", []) if o.get("status") != "passed"))
                for c in run_json.get("cases", [])]
        if rows:
            console.table("Cases", ("case", "status", "first problem"), rows)
        bench = [(b.get("name"), b.get("status"), f"{b.get('median_ms', 0):.4g}",
                  f"{b.get('gbps', 0):.1f}", f"{100 * (b.get('fraction_of_baseline') or 0):.0f}%",
                  f"{100 * (b.get('spread') or 0):.1f}%")
                 for b in run_json.get("bench", [])]
        if bench:
            console.table("Benchmark", ("case", "status", "median ms", "GB/s", "of copy",
                                        "spread"), bench)
    if result.exit_code == Harness.NO_DEVICE:
        console.warn("No CUDA device here: the program was built but could not run.")
    elif result.status not in ("passed", "failed"):
        console.error(result.describe())
    if result.status not in ("passed", "failed") and result.stderr.strip():
        console.text(result.stderr_head(20), stream=sys.stderr)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("lab")
    parser.add_argument("target", help="solution, starter, a ladder stem, or a submission folder "
                        "(write ./NAME for a folder that has one of those names)")
    parser.add_argument("--bench", action="store_true", help="time the bench cases")
    parser.add_argument("--case", action="append", default=[], metavar="NAME",
                        help="run only this case (with --bench: this bench case); repeatable")
    parser.add_argument("--seed", type=int, help="input seed (the binary's default is 1)")


def main(args: argparse.Namespace, config: Config) -> int:
    spec = labs.load_lab(config, args.lab)
    binary = resolve_target(config, spec, args.target)
    argv: list = [binary]
    if args.bench:
        argv.append("--bench")
    for name in args.case:
        argv += ["--bench-case" if args.bench else "--case", name]
    if args.seed is not None:
        argv += ["--seed", args.seed]
    config.temp_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="run-", dir=config.temp_dir) as tmp:
        json_path = Path(tmp) / "run.json"
        console.info(f"Running {binary.name}")
        # The student's own run: their environment (CUDA_LAUNCH_BLOCKING, ...) is kept.
        result = run_untrusted(argv + ["--json", json_path], config, scrub_env=False,
                               network_isolation=False)
        try:
            run_json = json.loads(json_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            run_json = None
    if args.json:
        print(json.dumps({"schema": "cudalab.run-result/1", "lab": spec.name,
                          "target": args.target, "binary": str(binary), "status": result.status,
                          "exit_code": exit_status(result), "wall_s": round(result.wall_s, 4),
                          "description": result.describe(), "stderr_head": result.stderr_head(20),
                          "run": run_json}, indent=2))
    else:
        if not args.bench and result.stdout.strip() and not run_json:
            console.text(result.stdout)
        _show(run_json, result)
    return exit_status(result)
