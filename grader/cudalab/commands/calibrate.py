"""`cudalab calibrate`: time the reference on this GPU and record it in labs/<lab>/calibration.json.

LAB (or `all`, every lab in turn): the reference students are timed against (the course
solution, or the ladder rung that [scoring] reference names) runs every bench case with
--bench exactly as `cudalab ladder` runs a rung: --warmup untimed runs, then --samples
timed ones, every sample with inputs of its own, and the sample it kept of each case
judged by the trusted checker. A reference that fails the checker is never recorded.

The file holds one entry per GPU model; this GPU's entry replaces an earlier one of the
same model and the other models' entries stay. An entry records the timings with their
provenance: GPU, compute capability, driver, CUDA runtime and toolkit versions, SM clock
before and after, date, cudalab version and samples; per bench case the median, the
spread (min, max, and interquartile range over the median), the copy roof, the library's
median where the bench has one, and items per second where the lab counts them. With
--ladder every rung of the ladder is timed as well, as `cudalab ladder` does, and its
medians are recorded for the handout's ladder table and plot.

`cudalab run LAB FOLDER --bench` then shows a student's time over the reference's on their
GPU model, and `cudalab handout LAB` the calibrated figures (render it again afterwards).
A grade never uses the file: it times the reference in the same session.
"""
from __future__ import annotations

import argparse
import json

from ..grading import calibration, ladder
from .. import console
from ..lab import labs
from ..grading.calibrate import SCHEMA, calibrate_lab
from ..config import Config
from ..errors import CudalabError
from ..exit_codes import Cli
from ..lab.labspec import LabSpec
from ..grading.run import giga_per_s


ALL = "all"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("lab", help=f"the lab whose reference to calibrate, or '{ALL}' for every lab")
    parser.add_argument("--samples", type=labs.positive_int, default=30,
                        help="timed samples per bench case (default 30)")
    parser.add_argument("--warmup", type=labs.positive_int, default=5, help="untimed runs before sampling (default 5)")
    parser.add_argument("--seed", type=labs.seed_argument, help="input seed (default: chosen now)")
    parser.add_argument("--ladder", action="store_true",
                        help="also time every rung of the lab's ladder and record its medians")


def _ms(value) -> str:
    return f"{value:.4f}" if isinstance(value, (int, float)) else "-"


def show(spec: LabSpec, entry: dict) -> None:
    counted = next((c.get("items_name") for c in entry["cases"] if c.get("items_per_s")), None)
    rows = []
    for case in entry["cases"]:
        if case["status"] == "skipped":
            rows.append((case["name"], "skipped", "-", "-", "-", "-", *(("-",) if counted else ())))
            continue
        library = case.get("library") or {}
        rows.append((case["name"], _ms(case["median_ms"]), f"{100 * (case.get('spread') or 0):.1f}%",
                     f"{_ms(case.get('min_ms'))} - {_ms(case.get('max_ms'))}",
                     f"{case['copy_gbps']:.0f}" if isinstance(case.get("copy_gbps"), (int, float)) else "-",
                     f"{_ms(library.get('median_ms'))} ({library['name']})" if library.get("name") else "-",
                     *((giga_per_s(case.get("items_per_s")),) if counted else ())))
    console.table(f"{spec.name}: {calibration.reference_words(entry)} on {entry['gpu']['name']}",
                  ("bench case", "median ms", "spread", "min - max ms", "copy GB/s", "library ms",
                   *((f"G{counted}/s",) if counted else ())), rows)
    for case in entry["cases"]:
        if case["status"] == "skipped":
            console.warn(f"{case['name']} was not timed: {case['reason']}")
    recorded = entry.get("ladder")
    if recorded:
        names = [c["name"] for c in recorded["cases"]]
        rungs = [r["name"] for r in recorded["cases"][0]["rungs"]]
        rows = [(rung, *(_ms(case["rungs"][i].get("median_ms")) if case["rungs"][i]["verdict"] == "passed"
                         else case["rungs"][i]["verdict"] for case in recorded["cases"]))
                for i, rung in enumerate(rungs)]
        console.table(f"{spec.name}: the ladder's medians (ms) on {entry['gpu']['name']}", ("rung", *names), rows)
    console.text(calibration.provenance(entry))


def main(args: argparse.Namespace, config: Config) -> int:
    names = labs.available_labs(config.root) if args.lab == ALL else [args.lab]
    specs = [labs.load_lab(config, name) for name in names]
    outcomes, status = [], int(Cli.DONE)
    for spec in specs:
        try:
            updated, entry, replaced = calibrate_lab(config, spec, args)
        except ladder.NoDeviceRun as reason:
            console.error(f"No CUDA device: {spec.name}'s reference was built but not timed ({reason}); "
                          "nothing was recorded.")
            status = int(Cli.NO_DEVICE)
            outcomes.append({"lab": spec.name, "status": "not_run", "message": str(reason)})
            break
        except CudalabError as err:
            if len(specs) == 1:
                raise
            console.error(f"{spec.name}: {err}")
            status = status or int(err.exit_code)
            outcomes.append({"lab": spec.name, "status": err.status, "message": str(err)})
            continue
        calibration.write(updated)
        outcomes.append({"lab": spec.name, "status": "recorded", "path": str(updated.path),
                         "gpu": entry["gpu"]["name"], "replaced": replaced is not None, "entry": entry})
        if not args.json:
            show(spec, entry)
        console.info(f"{spec.name}: recorded in {updated.path} for {entry['gpu']['name']}"
                     + (f" (replacing the calibration of {calibration.date(replaced)})" if replaced else "")
                     + f"; render the handout again: `cudalab handout {spec.name}`")
    if args.json:
        print(json.dumps({"schema": SCHEMA, "labs": outcomes}, indent=2))
    return status
