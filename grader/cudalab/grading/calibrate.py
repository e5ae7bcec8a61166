"""What `cudalab calibrate` measures (the verb and its help are commands/calibrate.py):
the reference's times on this GPU, run as the ladder runs a rung, and the calibration
entry they make with their provenance.
"""
from __future__ import annotations

import argparse
import re

from .. import __version__, console
from ..building import build
from . import calibration, ladder
from ..isolation import gpu
from ..lab import labs
from ..intake import pack
from ..outputs import report
from .calibration import Calibration
from ..config import Config
from ..errors import GraderError, UsageError
from ..lab.labspec import LabSpec
from ..isolation.runner import Runner, scratch_dir
from ..isolation.trees import remove_tree

SCHEMA = "cudalab.calibrate/1"
# What the file keeps of each bench case of the reference, and of each ladder rung.
CASE_KEYS = ("median_ms", "min_ms", "max_ms", "spread", "gbps", "tflops", "copy_gbps", "fraction_of_copy",
             "library", "fraction_of_library", "items_name", "items_per_s", "library_items_per_s",
             "sm_clock_mhz_before")
RUNG_KEYS = ("median_ms", "min_ms", "max_ms", "spread", "gbps", "tflops", "items_per_s",
             "speedup_over_previous", "verdict", "message")


# --- what was measured with ---------------------------------------------------------------

def cuda_version_text(version) -> str | None:
    """A CUDA version as the runtime reports it (13000, 12020) in words ("13.0", "12.2")."""
    if isinstance(version, bool) or not isinstance(version, int) or version <= 0:
        return None
    return f"{version // 1000}.{version % 1000 // 10}"


_CMAKE_NVCC_VERSION = re.compile(r'set\(CMAKE_CUDA_COMPILER_VERSION "([^"]+)"\)')
_NVCC_RELEASE = re.compile(r"V(\d+(?:\.\d+)+)")


def toolkit_version(config: Config) -> str | None:
    """The CUDA toolkit version the official binaries were compiled with (CMake's record of
    its nvcc in the build tree), else that of the nvcc on PATH; None when neither says."""
    recorded = sorted(config.build_dir.glob("CMakeFiles/*/CMakeCUDACompiler.cmake"),
                      key=lambda p: p.stat().st_mtime, reverse=True)
    for file in recorded:
        found = _CMAKE_NVCC_VERSION.search(file.read_text(encoding="utf-8", errors="replace"))
        if found:
            return found.group(1)
    found = _NVCC_RELEASE.search(pack.toolchain().get("nvcc") or "")
    return found.group(1) if found else None


def reference_of(spec: LabSpec) -> dict:
    """The implementation students are timed against, its source and its ladder rung."""
    source = spec.scoring.reference or spec.source_file
    rung = next((r for r in spec.ladder if r.source == source), None)
    return {"implementation": labs.scoring_reference(spec), "source": source,
            "rung": rung.name if rung else None,
            "skip_bench_cases": list(rung.skip_bench_cases) if rung else [], "skip_why": rung.skip_why if rung else ""}


# --- measuring -------------------------------------------------------------------------------

def measure_reference(config: Config, spec: LabSpec, reference: dict, cases: list[str], *, samples: int,
                      warmup: int, seed: int) -> dict:
    """The reference over `cases`, run as the ladder runs a rung (ladder.bench_run): its run
    JSON, the checker's verdicts and the process result. Raises ladder.NoDeviceRun."""
    build.ensure_official(config, spec, (reference["implementation"], "checker"))
    scratch = scratch_dir(config, "calibrate")
    try:
        runner = Runner(config, spec, scratch)
        return ladder.bench_run(runner, runner.official(reference["implementation"]), cases, samples=samples,
                                warmup=warmup, seed=seed)
    finally:
        if not config.keep_temp:
            remove_tree(scratch)


def _what_the_run_said(outcome: dict) -> str:
    """How the reference's process ended, with the head of its stderr ('' when it did not run)."""
    result = outcome["result"]
    if result is None:
        return ""
    return result.describe() + (f": {result.stderr_head(4)}" if result.stderr.strip() else "")


def _case_record(spec: LabSpec, name: str, bench: dict | None, verdict: dict | None, outcome: dict,
                 reference: dict) -> dict:
    """One bench case of the reference as the file keeps it; raises when it cannot be trusted."""
    case = spec.case(name)
    record = {"name": name, "params": calibration.case_inputs(case), "bytes_moved": spec.bytes_moved(case)}
    if name in reference["skip_bench_cases"]:
        return {**record, "status": "skipped", "reason": reference["skip_why"]}
    row = ladder.bench_row(reference["rung"] or "reference", reference["implementation"], bench, verdict,
                           _what_the_run_said(outcome))
    if row["status"] == "skipped":
        return {**record, "status": "skipped", "reason": row["message"]}
    if row["status"] == "error" or not isinstance(row.get("median_ms"), (int, float)) or row["median_ms"] <= 0:
        raise GraderError(f"The {spec.name} reference ({reference['source']}) gave no timing of {name}: "
                          f"{row.get('message') or 'its run JSON has no median'}. Nothing was recorded.")
    if row["verdict"] != "passed":
        raise GraderError(f"The {spec.name} reference ({reference['source']}) did not pass the checker on the "
                          f"sample it kept of {name} ({row['verdict']}: {row.get('message') or 'no message'}): "
                          "its time would mean nothing, so nothing was recorded.")
    kept = {key: row.get(key) for key in CASE_KEYS}
    kept["sm_clock_mhz_after"] = row.get("sm_clock_mhz")
    return {**record, "status": "timed", **kept, "verdict": "passed"}


def ladder_record(spec: LabSpec, result: dict) -> dict:
    """What the file keeps of a `cudalab ladder` result: per bench case, every rung's
    medians and the checker's word, with the library and the copy roof."""
    sources = [r.source for r in spec.ladder]
    cases = []
    for case in result["cases"]:
        rungs = []
        for source, row in zip(sources, case["rungs"]):
            rungs.append({"name": row["name"], "source": source, **{key: row.get(key) for key in RUNG_KEYS}})
        cases.append({"name": case["name"], "bytes_moved": case.get("bytes_moved"), "copy_gbps": case.get("copy_gbps"),
                      "library": case.get("library"), "rungs": rungs})
    return {"seed": result["seed"], "samples": result["samples"], "warmup": result["warmup"], "cases": cases}


def make_entry(config: Config, spec: LabSpec, reference: dict, outcome: dict, *, samples: int, warmup: int,
               seed: int, gpu_wait: gpu.GpuWait, ladder_result: dict | None = None) -> dict:
    """The calibration entry of this GPU model from the reference's run (and the ladder's)."""
    run = outcome["run"] or {}
    device = run.get("device") or {}
    name = device.get("name")
    if not isinstance(name, str) or not name.strip():
        said = _what_the_run_said(outcome) or "no run JSON"
        raise GraderError(f"The {spec.name} reference's run did not name its GPU ({said}), so its "
                          "times cannot be filed under a GPU model. Nothing was recorded.")
    entries = [b for b in run.get("bench", []) if isinstance(b, dict)]
    cases = [_case_record(spec, c.name, next((b for b in entries if b.get("name") == c.name), None),
                          outcome["verdicts"].get(c.name), outcome, reference)
             for c in spec.bench_cases]
    timed = [c for c in cases if c["status"] == "timed"]
    if not timed:
        raise GraderError(f"The {spec.name} reference timed no bench case on {name} (every one was skipped: "
                          f"{'; '.join(c['reason'] for c in cases)}). Nothing was recorded.")
    return {
        "gpu": {"name": name.strip(), "compute_capability": device.get("compute_capability"),
                "sm_count": device.get("sm_count"), "memory_bytes": device.get("global_memory_bytes")},
        "driver": {"version": gpu.driver_release(), "cuda": cuda_version_text(device.get("driver_version"))},
        "cuda_runtime": cuda_version_text(device.get("runtime_version")),
        "toolkit": toolkit_version(config),
        "sm_clock_mhz": {"at_start": device.get("sm_clock_mhz"), "before": timed[0].get("sm_clock_mhz_before"),
                         "after": timed[-1].get("sm_clock_mhz_after")},
        "calibrated_at": report.timestamp(),
        "cudalab_version": __version__,
        "reference": {key: reference[key] for key in ("implementation", "source", "rung")},
        "seed": seed, "samples": samples, "warmup": warmup,
        "gpu_sharing": gpu_wait.to_json(),
        "cases": cases,
        "ladder": ladder_record(spec, ladder_result) if ladder_result is not None else None,
    }


def calibrate_lab(config: Config, spec: LabSpec, args: argparse.Namespace) -> tuple[Calibration, dict, dict | None]:
    """Time the lab's reference (and with --ladder its ladder) on this GPU: (the calibration
    with this GPU model's new entry, the entry, the entry it replaced or None). The file is
    read first, so that a malformed one stops the run before anything is timed."""
    known = calibration.load(config, spec) or calibration.empty(config, spec)
    if args.ladder and not spec.ladder:
        raise UsageError(f"--ladder: the {spec.name} lab has no [[ladder]] in its lab.toml, so there is no ladder "
                         f"to time; calibrate it without --ladder.")
    reference = reference_of(spec)
    seed = labs.choose_seed(args.seed)
    cases = [c.name for c in spec.bench_cases if c.name not in reference["skip_bench_cases"]]
    wait = gpu.wait_until_idle(config.gpu_idle_wait_s)
    sharing = gpu.describe([wait])
    if sharing:
        console.warn(sharing)
    console.info(f"{spec.name}: timing {calibration.reference_words(spec)}, {reference['source']}: "
                 f"{args.samples} samples per bench case")
    outcome = measure_reference(config, spec, reference, cases, samples=args.samples, warmup=args.warmup, seed=seed)
    ladder_result = None
    if args.ladder:
        ladder_result = ladder.run_ladder(config, spec, argparse.Namespace(
            bench_case=[], samples=args.samples, warmup=args.warmup, seed=seed, profile=None))
    entry = make_entry(config, spec, reference, outcome, samples=args.samples, warmup=args.warmup, seed=seed,
                       gpu_wait=wait, ladder_result=ladder_result)
    return known.with_entry(entry), entry, known.entry_for(entry["gpu"]["name"])
