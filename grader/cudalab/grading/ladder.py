"""What `cudalab ladder` does (the verb and its help are commands/ladder.py): every rung
of a lab's ladder benchmarked in one run, or one rung once per block shape, each timed
run's kept samples judged by the checker.
"""
from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from ..building import build
from .. import console
from ..lab import labs
from . import profile
from ..config import Config
from ..errors import GraderError, UsageError
from ..exit_codes import Harness
from ..lab.labspec import LabSpec
from .run import items_name
from ..isolation.runner import RUN, Runner, kept_bench_samples, read_untrusted_json, scratch_dir
from ..isolation.trees import remove_tree

SCHEMA = "cudalab.ladder/1"
BLOCKS_SCHEMA = "cudalab.ladder-blocks/1"


def _implementation(spec: LabSpec, source: str) -> str:
    return labs.ladder_stems(spec)[Path(source).stem]


def bench_run(runner: Runner, binary: Path, cases: list[str], *, samples: int, warmup: int, seed: int,
              extra: tuple[str, ...] = ()) -> dict:
    """One official binary (a rung, or the reference `cudalab calibrate` times) over the
    bench cases: its own timings, and the checker's verdict on the sample it kept of each
    case (judged against that sample's own inputs). `extra` goes to its command line
    (--block WxH). Raises NoDeviceRun when there is no GPU to run on."""
    if not cases:  # the rung skips every case asked for
        return {"result": None, "run": {}, "verdicts": {}}
    argv = ["--bench", "--seed", seed, "--samples", samples, "--warmup", warmup,
            "--dump", f"{RUN}/dump", "--json", f"{RUN}/run.json", *extra]
    for case in cases:
        argv += ["--bench-case", case]
    result, folder = runner.run(binary, argv, timeout_s=runner.config.process_timeout_s * max(1, len(cases)),
                                official=True)
    if result.exit_code == Harness.NO_DEVICE:
        raise NoDeviceRun(result.stderr_head())
    produced = read_untrusted_json(folder / "run.json") or {}
    verdicts: dict[str, dict] = {}
    for case, seed in kept_bench_samples(produced):
        try:
            verdicts.update(runner.check(folder / "dump", seed, bench_case=case))
        except GraderError as err:
            console.warn(f"the checker gave no verdict for {binary.name}: {err}")
    return {"result": result, "run": produced, "verdicts": verdicts}


class NoDeviceRun(Exception):
    """An official binary found no CUDA device (exit 4): nothing was timed."""


def bench_row(rung_name: str, implementation: str, bench: dict | None, verdict: dict | None,
              failure: str) -> dict:
    """One bench case of one official binary's run, as the ladder's tables (and the
    calibration) keep it: its timings from the run JSON and the checker's word on its kept
    sample; `failure` says why there is no timing when the run produced none."""
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
               items_per_s=bench.get("items_per_s"), items_name=bench.get("items_name"),
               library_items_per_s=bench.get("library_items_per_s"),
               sm_clock_mhz=bench.get("sm_clock_mhz_after"),
               sm_clock_mhz_before=bench.get("sm_clock_mhz_before"))
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
    cases = _bench_cases(spec, args.bench_case)
    implementations = [_implementation(spec, r.source) for r in spec.ladder]
    build.ensure_official(config, spec, tuple(implementations) + ("checker",))
    seed = labs.choose_seed(args.seed)

    per_rung = []
    scratch = scratch_dir(config, "ladder")
    try:
        runner = Runner(config, spec, scratch)
        for rung, implementation in zip(spec.ladder, implementations):
            console.info(f"{spec.name}: {rung.name} ({implementation})")
            mine = [c for c in cases if c not in rung.skip_bench_cases]
            per_rung.append(bench_run(runner, runner.official(implementation), mine, samples=args.samples,
                                      warmup=args.warmup, seed=seed))
        if args.profile is not None:
            profiles = _profile(runner, spec, implementations, args.profile or _smallest(spec, cases), seed)
    finally:
        if not config.keep_temp:
            remove_tree(scratch)

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
            row = bench_row(rung.name, implementation, bench, outcome["verdicts"].get(case),
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
            counted = [r["library_items_per_s"] for r in rows if isinstance(r.get("library_items_per_s"), (int, float))]
            if counted:
                library["items_per_s"] = statistics.median(counted)
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


# --- one rung, several block shapes (--blocks) -----------------------------------------

def _bench_cases(spec: LabSpec, asked: list[str]) -> list[str]:
    known = [c.name for c in spec.bench_cases]
    unknown = [c for c in asked if c not in known]
    if unknown:
        raise GraderError(f"The {spec.name} lab has no bench case {', '.join(unknown)} "
                          f"(bench cases: {', '.join(known)}).")
    return asked or known


def _chosen_rung(spec: LabSpec, stem: str | None):
    """(what the table calls it, its implementation, its [[ladder]] entry or None)."""
    stems = labs.ladder_stems(spec)
    if stem is None or stem == "solution":
        rung = next((r for r in spec.ladder if stems[Path(r.source).stem] == "solution"), None)
        return (rung.name if rung else "the solution"), "solution", rung
    if stem not in stems:
        known = ", ".join(["solution", *stems]) if stems else "solution"
        raise UsageError(f"--rung {stem}: the {spec.name} lab has no ladder rung built from {stem}.cu "
                         f"(rungs: {known}).")
    rung = next(r for r in spec.ladder if Path(r.source).stem == stem)
    return rung.name, stems[stem], rung


def run_blocks(config: Config, spec: LabSpec, args: argparse.Namespace) -> dict:
    """One rung once per block shape over the bench cases, each run's kept samples judged
    by the checker; the library's throughput from the same runs."""
    cases = _bench_cases(spec, args.bench_case)
    rung_name, implementation, rung = _chosen_rung(spec, args.rung)
    skipped = [c for c in cases if rung and c in rung.skip_bench_cases]
    mine = [c for c in cases if c not in skipped]
    build.ensure_official(config, spec, (implementation, "checker"))
    seed = labs.choose_seed(args.seed)
    outcomes = []
    scratch = scratch_dir(config, "ladder")
    try:
        runner = Runner(config, spec, scratch)
        binary = runner.official(implementation)
        for shape in args.blocks:
            console.info(f"{spec.name}: {rung_name} ({implementation}) with block {shape}")
            outcomes.append(bench_run(runner, binary, mine, samples=args.samples, warmup=args.warmup, seed=seed,
                                      extra=("--block", shape)))
    finally:
        if not config.keep_temp:
            remove_tree(scratch)
    return blocks_table(spec, rung_name, implementation, args.blocks, cases, outcomes,
                        {c: rung.skip_why for c in skipped} if rung else {},
                        seed=seed, samples=args.samples, warmup=args.warmup)


def blocks_table(spec: LabSpec, rung_name: str, implementation: str, shapes: list[str], cases: list[str],
                 outcomes: list[dict], skipped: dict[str, str], **settings) -> dict:
    """The --blocks result (schema cudalab.ladder-blocks/1) from each shape's run JSON and
    verdicts: one row per shape, one entry per bench case, and the library per case."""
    blocks = []
    for shape, outcome in zip(shapes, outcomes):
        result = outcome["result"]
        failure = ""
        if result is not None and result.exit_code:
            failure = result.describe() + (f": {result.stderr_head(2)}" if result.stderr.strip() else "")
        row_cases = {}
        for case in cases:
            if case in skipped:
                row_cases[case] = {"status": "skipped", "verdict": "skipped", "message": skipped[case]}
                continue
            bench = next((b for b in outcome["run"].get("bench", []) if isinstance(b, dict) and b.get("name") == case),
                         None)
            row = bench_row(rung_name, implementation, bench, outcome["verdicts"].get(case), failure)
            row_cases[case] = {k: v for k, v in row.items() if k not in ("name", "binary")}
        blocks.append({"block": shape, "cases": row_cases})
    table_cases = []
    for case in cases:
        rows = [b["cases"][case] for b in blocks]
        library = None
        timed = [r["library"] for r in rows if (r.get("library") or {}).get("median_ms")]
        missing = next((r["library"]["unavailable"] for r in rows if (r.get("library") or {}).get("unavailable")), None)
        if timed:
            library = {"name": timed[0].get("name"), "median_ms": statistics.median(l["median_ms"] for l in timed),
                       "gbps": statistics.median(l.get("gbps") or 0 for l in timed)}
            counted = [r["library_items_per_s"] for r in rows if isinstance(r.get("library_items_per_s"), (int, float))]
            if counted:
                library["items_per_s"] = statistics.median(counted)
        elif missing:
            library = {"unavailable": missing}
        table_cases.append({"name": case, "bytes_moved": spec.bytes_moved(spec.case(case)), "library": library})
    every_row = [r for b in blocks for r in b["cases"].values()]
    device = next((o["run"].get("device") for o in outcomes if o["run"].get("device")), None)
    return {"schema": BLOCKS_SCHEMA, "lab": spec.name, "rung": rung_name, "binary": implementation,
            **settings, "device": device, "items_name": items_name(every_row), "blocks": blocks,
            "cases": table_cases,
            "all_correct": all(r.get("verdict") in ("passed", "skipped") for r in every_row)}
