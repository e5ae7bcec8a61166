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
import secrets
import statistics
from pathlib import Path

from . import build, console, labs, profile
from .config import Config
from .errors import GraderError, UsageError
from .exit_codes import Cli, Harness
from .labspec import LabSpec
from .run import block_argument, giga_per_s, items_name, require_takes_block
from .runner import RUN, Runner, fresh_dir, kept_bench_samples, read_untrusted_json
from .sandbox import scratch_root
from .trees import remove_tree

SCHEMA = "cudalab.ladder/1"
BLOCKS_SCHEMA = "cudalab.ladder-blocks/1"


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
    seed = args.seed if args.seed is not None else secrets.randbits(63)

    per_rung = []
    scratch = fresh_dir(scratch_root(config), "ladder")
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
    seed = args.seed if args.seed is not None else secrets.randbits(63)
    outcomes = []
    scratch = fresh_dir(scratch_root(config), "ladder")
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
