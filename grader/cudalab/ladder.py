"""`cudalab ladder`: build and benchmark every variant of a lab in one run.

For each rung of the lab's [[ladder]] (lecture order) the rung's binary runs every bench
case (or those named) with the same seed and sample count; the trusted checker checks
what each timed run left behind, so a fast-but-wrong rung is shown as wrong. The table
gives the median time, GB/s from the lab's byte model, % of the device-to-device copy
bandwidth and the ratio to the library (CUB) measured in the same process, and the
speedup over the previous rung.
"""
from __future__ import annotations

import argparse
import json
import secrets
import shutil
import statistics
from pathlib import Path

from . import build, console, labs, profile
from .config import Config
from .errors import GraderError
from .exit_codes import Cli, Harness
from .labspec import LabSpec
from .runner import RUN, Runner, fresh_dir, kept_bench_samples, read_untrusted_json
from .sandbox import scratch_root

SCHEMA = "cudalab.ladder/1"


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


def _implementation(spec: LabSpec, source: str) -> str:
    return labs.ladder_stems(spec)[Path(source).stem]


def _run_rung(runner: Runner, binary: Path, cases: list[str], args: argparse.Namespace, seed: int) -> dict:
    """One rung over the bench cases: its own timings, and the checker's verdict on the
    sample it kept of each case (judged against that sample's own inputs)."""
    if not cases:  # the rung skips every case asked for
        return {"result": None, "run": {}, "verdicts": {}}
    argv = ["--bench", "--seed", seed, "--samples", args.samples, "--warmup", args.warmup,
            "--dump", f"{RUN}/dump", "--json", f"{RUN}/run.json"]
    for case in cases:
        argv += ["--bench-case", case]
    result, folder = runner.run(binary, argv, timeout_s=runner.config.process_timeout_s * max(1, len(cases)),
                                official=True)
    if result.exit_code == Harness.NO_DEVICE:
        raise _NoDevice(result.stderr_head())
    produced = read_untrusted_json(folder / "run.json") or {}
    verdicts: dict[str, dict] = {}
    for case, seed in kept_bench_samples(produced):
        try:
            verdicts.update(runner.check(folder / "dump", seed, bench_case=case))
        except GraderError as err:
            console.warn(f"the checker gave no verdict for {binary.name}: {err}")
    return {"result": result, "run": produced, "verdicts": verdicts}


class _NoDevice(Exception):
    pass


def _row(rung_name: str, implementation: str, bench: dict | None, verdict: dict | None,
         failure: str) -> dict:
    row = {"name": rung_name, "binary": implementation}
    if bench is None:
        row.update(status="error", verdict="not run", message=failure or "the rung produced no timing")
        return row
    if bench.get("status") == "skipped":  # the case does not fit in this GPU's free memory
        row.update(status="skipped", verdict="skipped", message=bench.get("reason", ""))
        return row
    row.update(status=bench.get("status"), median_ms=bench.get("median_ms"), spread=bench.get("spread"),
               min_ms=bench.get("min_ms"), max_ms=bench.get("max_ms"), gbps=bench.get("gbps"),
               fraction_of_copy=bench.get("fraction_of_baseline"),
               copy_gbps=(bench.get("baseline") or {}).get("gbps"),
               fraction_of_library=bench.get("fraction_of_library"),
               tflops=bench.get("tflops"),
               library=bench.get("library"),
               sm_clock_mhz=bench.get("sm_clock_mhz_after"))
    if verdict is None:
        row["verdict"] = "unchecked"
        row["message"] = "the trusted checker has no verdict for this run"
    else:
        row["verdict"] = verdict.get("status")
        row["message"] = verdict.get("message", "")
    return row


def run_ladder(config: Config, spec: LabSpec, args: argparse.Namespace) -> dict:
    if not spec.ladder:
        raise GraderError(f"The {spec.name} lab has no [[ladder]] in its lab.toml.")
    known = [c.name for c in spec.bench_cases]
    cases = args.bench_case or known
    unknown = [c for c in cases if c not in known]
    if unknown:
        raise GraderError(f"The {spec.name} lab has no bench case {', '.join(unknown)} "
                          f"(bench cases: {', '.join(known)}).")
    implementations = [_implementation(spec, r.source) for r in spec.ladder]
    build.ensure_official(config, spec, tuple(implementations) + ("checker",))
    seed = args.seed if args.seed is not None else secrets.randbits(63)

    per_rung = []
    scratch = fresh_dir(scratch_root(config), "ladder")
    try:
        runner = Runner(config, spec, scratch)
        for rung, implementation in zip(spec.ladder, implementations):
            console.info(f"{spec.name}: {rung.name} ({implementation})")
            mine = [c for c in cases if c not in rung.skip_bench_cases]
            per_rung.append(_run_rung(runner, runner.official(implementation), mine, args, seed))
        if args.profile is not None:
            profiles = _profile(runner, spec, implementations, args.profile or _smallest(spec, cases), seed)
    finally:
        if not config.keep_temp:
            shutil.rmtree(scratch, ignore_errors=True)

    device = next((r["run"].get("device") for r in per_rung if r["run"].get("device")), None)
    table_cases = []
    for case in cases:
        rows, previous = [], None
        for rung, implementation, outcome in zip(spec.ladder, implementations, per_rung):
            if case in rung.skip_bench_cases:
                row = {"name": rung.name, "binary": implementation, "status": "skipped", "verdict": "skipped",
                       "message": rung.skip_why}
                rows.append(row)
                continue
            bench = next((b for b in outcome["run"].get("bench", []) if b.get("name") == case), None)
            row = _row(rung.name, implementation, bench, outcome["verdicts"].get(case),
                       outcome["result"].describe() if outcome["result"].exit_code else "")
            median = row.get("median_ms")
            row["speedup_over_previous"] = (previous / median if previous and median else None)
            if median and row.get("verdict") == "passed":
                previous = median
            rows.append(row)
        libraries = [r["library"] for r in rows if r.get("library")]
        copies = [r["copy_gbps"] for r in rows if r.get("copy_gbps")]
        libraries = [l for l in libraries if l.get("median_ms")]
        missing = next((r["library"]["unavailable"] for r in rows if (r.get("library") or {}).get("unavailable")), None)
        library = {"unavailable": missing} if missing else None
        if libraries:
            library = {"name": libraries[0]["name"],
                       "median_ms": statistics.median(l["median_ms"] for l in libraries),
                       "gbps": statistics.median(l["gbps"] for l in libraries)}
            if all(l.get("tflops") for l in libraries):
                library["tflops"] = statistics.median(l["tflops"] for l in libraries)
        table_cases.append({"name": case, "bytes_moved": spec.bytes_moved(spec.case(case)),
                            "flops": spec.flops(spec.case(case)),
                            "copy_gbps": statistics.median(copies) if copies else None,
                            "library": library, "rungs": rows})
    result = {"schema": SCHEMA, "lab": spec.name, "seed": seed, "samples": args.samples,
              "warmup": args.warmup, "device": device, "cases": table_cases,
              "all_correct": all(r.get("verdict") in ("passed", "skipped") for c in table_cases for r in c["rungs"])}
    if args.profile is not None:
        result["profile"] = profiles
    return result


def _smallest(spec: LabSpec, cases: list[str]) -> str:
    return min(cases, key=lambda c: spec.bytes_moved(spec.case(c)))


def _profile(runner: Runner, spec: LabSpec, implementations: list[str], case: str, seed: int) -> dict:
    """One call of every rung on `case` under Nsight Compute: the lecture's table."""
    if case not in {c.name for c in spec.bench_cases}:
        raise GraderError(f"--profile {case}: the {spec.name} lab has no bench case {case} "
                          f"(bench cases: {', '.join(c.name for c in spec.bench_cases)}).")
    ncu = profile.find_ncu()
    if ncu is None:
        return {"case": case, "error": "Nsight Compute (ncu) was not found on PATH or in the CUDA toolkit, "
                                       "so the profile columns are missing; install Nsight Compute."}
    rows = []
    for rung, implementation in zip(spec.ladder, implementations):
        if case in rung.skip_bench_cases:
            rows.append({"rung": rung.name, "error": f"skipped: {rung.skip_why}"})
            continue
        console.info(f"{spec.name}: profiling {rung.name} on {case}")
        rows.append(profile.profile_rung(runner, ncu, rung.name, runner.official(implementation), case, seed,
                                         timeout_s=runner.config.process_timeout_s * 4).summary())
    return {"case": case, "rows": rows}


def _show(result: dict) -> None:
    def fmt(value, spec, scale=1.0):
        return format(value * scale, spec) if isinstance(value, (int, float)) else "-"
    for case in result["cases"]:
        compute = bool(case.get("flops"))  # a lab with a FLOP model: TFLOP/s say more than GB/s
        rows = [(r["name"], fmt(r.get("median_ms"), ".4f"), fmt(r.get("spread"), ".1f", 100) + "%",
                 *((fmt(r.get("tflops"), ".2f"),) if compute else ()),
                 fmt(r.get("gbps"), ".1f"), fmt(r.get("fraction_of_copy"), ".1f", 100) + "%",
                 fmt(r.get("speedup_over_previous"), ".2f") + "x", fmt(r.get("fraction_of_library"), ".3f"),
                 r.get("verdict", "?") if r.get("verdict") == "passed" else f"{r.get('verdict')}: {r.get('message', '')}")
                for r in case["rungs"]]
        lib = case.get("library") or {}
        if lib.get("name"):
            speed = f"{lib['tflops']:.1f} TFLOP/s" if compute and lib.get("tflops") else f"{lib['gbps']:.0f} GB/s"
            said = f"; {lib['name']} {speed}"
        elif lib.get("unavailable"):
            said = f"; no library baseline: {lib['unavailable']}"
        else:
            said = ""
        title = (f"{result['lab']} {case['name']} ({case['bytes_moved'] / 1e9:.2f} GB moved"
                 + (f", {case['flops'] / 1e12:.2f} TFLOP" if compute else "")
                 + f"; copy roof {fmt(case.get('copy_gbps'), '.0f')} GB/s{said})")
        console.table(title, ("rung", "median ms", "spread", *(("TFLOP/s",) if compute else ()), "GB/s", "% copy",
                              "vs previous", "vs library", "trusted check"), rows)
    prof = result.get("profile")
    if prof is not None:
        if prof.get("error"):
            console.warn(prof["error"])
        else:
            console.table(f"{result['lab']} {prof['case']}: one call of each rung under Nsight Compute",
                          profile.COLUMNS, profile.table_rows(prof["rows"]))


def main(args: argparse.Namespace, config: Config) -> int:
    spec = labs.load_lab(config, args.lab)
    try:
        result = run_ladder(config, spec, args)
    except _NoDevice as reason:
        console.error(f"No CUDA device: the ladder was built but not run ({reason}).")
        return int(Cli.NO_DEVICE)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        _show(result)
    return int(Cli.DONE)
