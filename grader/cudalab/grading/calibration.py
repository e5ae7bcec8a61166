"""The reference's timings on each GPU model a lab was calibrated on.

`labs/<lab>/calibration.json` (schema `cudalab.calibration/1`, described in
`schemas/calibration.schema.json`) holds one entry per GPU model, side by side: where and
how the reference was timed (GPU, compute capability, driver, CUDA runtime and toolkit, SM
clock, date, cudalab version, samples) and, per bench case, its median, spread, the copy
roof, the library's time and the items per second where the bench has them; with the
ladder's medians where it was calibrated with `--ladder`. `cudalab calibrate` writes it
(calibrating a GPU model again replaces that model's entry), `cudalab run --bench` compares
a student's times with the entry for their GPU model, and `cudalab handout` shows every
entry. A grade never reads it: it times the reference in the same session.

This module owns the format: reading (a sentence for whatever is malformed), writing
(atomically) and looking an entry up.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from ..outputs import report
from ..config import Config
from ..errors import GraderError
from ..lab.labspec import LabSpec

SCHEMA = "cudalab.calibration/1"
FILE_NAME = "calibration.json"
CASE_STATUSES = ("timed", "skipped")


class CalibrationError(GraderError):
    """A calibration file cannot be used, or holds no time for what was asked; the message
    says which file, where in it, and what to do."""


def path(config: Config, spec: LabSpec) -> Path:
    """Where a lab's calibration lives: labs/<lab>/calibration.json."""
    return config.root / "labs" / spec.name / FILE_NAME


def gpu_model_key(name: str) -> str:
    """The form in which two GPU names are compared: case and spacing do not count."""
    return " ".join(str(name).split()).casefold()


@dataclass(frozen=True)
class Calibration:
    """One lab's calibration file: its entries, one per GPU model, sorted by GPU name."""

    path: Path
    lab: str
    entries: tuple[dict, ...]

    @property
    def gpu_names(self) -> list[str]:
        return [entry["gpu"]["name"] for entry in self.entries]

    def entry_for(self, gpu_name: str) -> dict | None:
        """The entry of this GPU model (as the CUDA runtime names it), or None."""
        key = gpu_model_key(gpu_name)
        return next((entry for entry in self.entries if gpu_model_key(entry["gpu"]["name"]) == key), None)

    def with_entry(self, entry: dict) -> "Calibration":
        """This calibration with `entry` in place of its GPU model's (or added)."""
        key = gpu_model_key(entry["gpu"]["name"])
        kept = [e for e in self.entries if gpu_model_key(e["gpu"]["name"]) != key]
        return Calibration(self.path, self.lab, _sorted(kept + [entry]))

    def to_json(self) -> dict:
        return {"schema": SCHEMA, "lab": self.lab, "entries": list(self.entries)}


def _sorted(entries: list[dict]) -> tuple[dict, ...]:
    return tuple(sorted(entries, key=lambda e: gpu_model_key(e["gpu"]["name"])))


def empty(config: Config, spec: LabSpec) -> Calibration:
    return Calibration(path(config, spec), spec.name, ())


def load(config: Config, spec: LabSpec) -> Calibration | None:
    """The lab's calibration, or None when it has none yet. Raises CalibrationError, with
    the file and the place in it, when the file is malformed."""
    return read(path(config, spec), spec.name)


def read(file: Path, lab: str) -> Calibration | None:
    """A calibration file of lab `lab`, checked; None when there is no such file."""
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as err:
        raise CalibrationError(f"{file} cannot be read ({err}).") from None
    try:
        body = json.loads(text)
    except ValueError as err:
        raise CalibrationError(f"{file} is not valid JSON ({err}). {_remedy(lab)}") from None
    return Calibration(file, lab, _sorted(_checked(body, file, lab)))


def _remedy(lab: str) -> str:
    return (f"Run `cudalab calibrate {lab}` again on each GPU model (after moving the file away), "
            "or mend it by hand.")


class _Where:
    """Where in the file a value is: 'entries[0].cases[2].median_ms'."""

    def __init__(self, file: Path, lab: str):
        self.file, self.lab = file, lab

    def fail(self, where: str, problem: str) -> CalibrationError:
        return CalibrationError(f"{self.file}: {where} {problem}. {_remedy(self.lab)}")


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _object(value, where: str, at: _Where) -> dict:
    if not isinstance(value, dict):
        raise at.fail(where, f"must be an object, not {type(value).__name__}")
    return value


def _text(table: dict, key: str, where: str, at: _Where, nullable: bool = False) -> str | None:
    value = table.get(key)
    if value is None and nullable:
        return None
    if not isinstance(value, str) or not value.strip():
        raise at.fail(f"{where}.{key}", "must be non-empty text" + (" or null" if nullable else "")
                      + ("" if key in table else " (it is missing)"))
    return value


def _number(table: dict, key: str, where: str, at: _Where, *, positive: bool = False,
            nullable: bool = False) -> float | None:
    value = table.get(key)
    if value is None and nullable:
        return None
    if not _is_number(value) or (positive and value <= 0) or value < 0:
        raise at.fail(f"{where}.{key}", f"must be a {'positive' if positive else 'non-negative'} number"
                      + (" or null" if nullable else "") + (f", not {value!r}" if key in table else " (it is missing)"))
    return value


def _optional_object(table: dict, key: str, where: str, at: _Where) -> dict:
    """table[key] when it is an object, {} when it is null or missing."""
    return {} if table.get(key) is None else _object(table[key], f"{where}.{key}", at)


def _count(table: dict, key: str, where: str, at: _Where) -> None:
    value = table.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise at.fail(f"{where}.{key}", "must be a whole number from 1" + (f", not {value!r}" if key in table else
                                                                        " (it is missing)"))


def _library(table: dict, where: str, at: _Where) -> None:
    """A bench case's library baseline: null, {"unavailable": why}, or its name and median."""
    library = _optional_object(table, "library", where, at)
    if "unavailable" in library:
        _text(library, "unavailable", f"{where}.library", at)
    elif library:
        _text(library, "name", f"{where}.library", at)
        _number(library, "median_ms", f"{where}.library", at, positive=True)


def _checked(body, file: Path, lab: str) -> list[dict]:
    """The entries of a parsed calibration file, after checking what the readers rely on."""
    at = _Where(file, lab)
    body = _object(body, "the file", at)
    schema = body.get("schema")
    if schema != SCHEMA:
        newer = isinstance(schema, str) and schema.startswith("cudalab.calibration/")
        raise CalibrationError(f"{file} has schema {schema!r}, not {SCHEMA!r}"
                               + (": it was written by another version of cudalab" if newer else "")
                               + f". {_remedy(lab)}")
    if body.get("lab") != lab:
        raise at.fail("'lab'", f"is {body.get('lab')!r}, but the file lies in the {lab} lab's folder")
    entries = body.get("entries")
    if not isinstance(entries, list):
        raise at.fail("'entries'", "must be a list of entries, one per GPU model")
    seen: dict[str, int] = {}
    for i, entry in enumerate(entries):
        where = f"entries[{i}]"
        entry = _object(entry, where, at)
        gpu = _object(entry.get("gpu"), f"{where}.gpu", at)
        name = _text(gpu, "name", f"{where}.gpu", at)
        if gpu_model_key(name) in seen:
            raise at.fail(f"{where}.gpu.name", f"{name!r} is the GPU model of entries[{seen[gpu_model_key(name)]}] "
                          "too; each GPU model has one entry")
        seen[gpu_model_key(name)] = i
        _text(gpu, "compute_capability", f"{where}.gpu", at, nullable=True)
        driver = _optional_object(entry, "driver", where, at)
        for key in ("version", "cuda"):
            _text(driver, key, f"{where}.driver", at, nullable=True)
        for key in ("cuda_runtime", "toolkit"):
            _text(entry, key, where, at, nullable=True)
        clock = _optional_object(entry, "sm_clock_mhz", where, at)
        for key in ("at_start", "before", "after"):
            _number(clock, key, f"{where}.sm_clock_mhz", at, nullable=True)
        _text(entry, "calibrated_at", where, at)
        _text(entry, "cudalab_version", where, at)
        _count(entry, "samples", where, at)
        reference = _object(entry.get("reference"), f"{where}.reference", at)
        _text(reference, "implementation", f"{where}.reference", at)
        for key in ("source", "rung"):
            _text(reference, key, f"{where}.reference", at, nullable=True)
        cases = entry.get("cases")
        if not isinstance(cases, list) or not cases:
            raise at.fail(f"{where}.cases", "must be a non-empty list of bench cases")
        names = set()
        for j, case in enumerate(cases):
            _case(_object(case, f"{where}.cases[{j}]", at), f"{where}.cases[{j}]", at, names)
        if entry.get("ladder") is not None:
            _ladder(_object(entry["ladder"], f"{where}.ladder", at), f"{where}.ladder", at)
    return entries


def _case(case: dict, where: str, at: _Where, names: set[str]) -> None:
    name = _text(case, "name", where, at)
    if name in names:
        raise at.fail(f"{where}.name", f"{name!r} appears twice")
    names.add(name)
    if case.get("status") not in CASE_STATUSES:
        raise at.fail(f"{where}.status", f"must be one of {', '.join(CASE_STATUSES)}, not {case.get('status')!r}")
    if case["status"] == "skipped":
        _text(case, "reason", where, at)
        return
    _number(case, "median_ms", where, at, positive=True)
    for key in ("min_ms", "max_ms", "spread", "copy_gbps", "items_per_s"):
        _number(case, key, where, at, nullable=True)
    _text(case, "items_name", where, at, nullable=True)
    _library(case, where, at)


def _ladder(ladder: dict, where: str, at: _Where) -> None:
    _count(ladder, "samples", where, at)
    cases = ladder.get("cases")
    if not isinstance(cases, list) or not cases:
        raise at.fail(f"{where}.cases", "must be a non-empty list of bench cases")
    for j, case in enumerate(cases):
        case_where = f"{where}.cases[{j}]"
        _text(_object(case, case_where, at), "name", case_where, at)
        _library(case, case_where, at)
        rungs = case.get("rungs")
        if not isinstance(rungs, list) or not rungs:
            raise at.fail(f"{case_where}.rungs", "must be a non-empty list of rungs")
        for k, rung in enumerate(rungs):
            rung_where = f"{case_where}.rungs[{k}]"
            _text(_object(rung, rung_where, at), "name", rung_where, at)
            _text(rung, "verdict", rung_where, at)
            _number(rung, "median_ms", rung_where, at, positive=True, nullable=True)


def write(calibration: Calibration) -> None:
    """The file, atomically: a reader sees the old calibration or the new one."""
    report.atomic_write_text(calibration.path, json.dumps(calibration.to_json(), indent=2) + "\n")


# --- using an entry ------------------------------------------------------------------------

def case_inputs(case) -> dict:
    """A case's parameters as a calibration records them: the numbers and the text ones (the
    photograph a bench case tiles), so that an entry says which inputs it was measured on."""
    return {**case.params, **case.texts}


def measured_on_other_inputs(entry: dict, spec: LabSpec) -> list[dict]:
    """The entry's timed cases whose recorded parameters are not the lab's bench case's now
    (its inputs changed after the calibration): `{"name", "then", "now"}` each, the
    parameters that differ as `key=value` text ("then" holds only what was recorded; "now"
    says `no key` for a parameter the case no longer has). Cases recorded without
    parameters are left out: nothing says what they were measured on."""
    now_by_name = {c.name: case_inputs(c) for c in spec.bench_cases}
    changed = []
    for case in entry.get("cases", []):
        then, now = case.get("params"), now_by_name.get(case.get("name"))
        if case.get("status") != "timed" or not isinstance(then, dict) or not then or now is None or then == now:
            continue
        keys = [k for k in {**then, **now} if then.get(k) != now.get(k)]
        changed.append({"name": case["name"],
                        "then": ", ".join(f"{k}={then[k]}" for k in keys if k in then),
                        "now": ", ".join(f"{k}={now[k]}" if k in now else f"no {k}" for k in keys)})
    return changed


def calibrated_case(entry: dict, case: str) -> dict | None:
    """The entry's record of bench case `case` when it was timed, else None (not
    calibrated, or skipped on that GPU)."""
    found = next((c for c in entry.get("cases", []) if c.get("name") == case), None)
    return found if found is not None and found.get("status") == "timed" else None


def ratio(entry: dict, case: str, student_median_ms: float) -> float:
    """A student's median time on `case` divided by the reference's calibrated median on the
    entry's GPU model (above 1: slower than the reference). Raises CalibrationError when the
    entry has no time for that case or the student's time is not a positive number."""
    calibrated = calibrated_case(entry, case)
    gpu = entry.get("gpu", {}).get("name", "this GPU")
    if calibrated is None:
        raise CalibrationError(f"The calibration on {gpu} has no time of the reference for the bench case {case}.")
    if not _is_number(student_median_ms) or student_median_ms <= 0:
        raise CalibrationError(f"{student_median_ms!r} is not a time to compare with the reference's on {case}: "
                               "give a positive number of milliseconds.")
    return student_median_ms / calibrated["median_ms"]


def date(entry: dict) -> str:
    """The day an entry was calibrated, as YYYY-MM-DD."""
    return str(entry.get("calibrated_at", ""))[:10]


def provenance(entry: dict) -> str:
    """Where and how an entry was measured, in one line."""
    gpu = entry["gpu"]
    parts = [f"{gpu['name']}" + (f" (compute capability {gpu['compute_capability']})"
                                  if gpu.get("compute_capability") else "")]
    driver = entry.get("driver") or {}
    if driver.get("version"):
        parts.append(f"driver {driver['version']}" + (f" (CUDA {driver['cuda']})" if driver.get("cuda") else ""))
    elif driver.get("cuda"):
        parts.append(f"a driver for CUDA {driver['cuda']}")
    if entry.get("cuda_runtime"):
        parts.append(f"CUDA runtime {entry['cuda_runtime']}")
    if entry.get("toolkit"):
        parts.append(f"toolkit {entry['toolkit']}")
    clock = entry.get("sm_clock_mhz") or {}
    if _is_number(clock.get("before")) and _is_number(clock.get("after")):
        parts.append(f"SM clock {clock['before']:.0f} MHz before, {clock['after']:.0f} MHz after")
    said = ", ".join(parts)
    samples = f", {entry['samples']} samples per case" if entry.get("samples") else ""
    return f"{said}; calibrated {date(entry)} with cudalab {entry['cudalab_version']}{samples}"


def reference_words(entry_or_spec) -> str:
    """What the calibrated reference is, in words: the course solution, or the ladder rung
    that [scoring] reference names."""
    if isinstance(entry_or_spec, LabSpec):
        spec = entry_or_spec
        rung = next((r.name for r in spec.ladder if r.source == spec.scoring.reference), "")
        return f"the course's target ({rung})" if spec.scoring.reference else "the reference solution"
    reference = entry_or_spec.get("reference") or {}
    if reference.get("implementation", "solution") == "solution":
        return "the reference solution"
    return f"the course's target ({reference.get('rung') or reference.get('source')})"


def compare_bench(calibration: Calibration | None, spec: LabSpec, run_json: dict | None, whose: str) -> dict:
    """A --bench run's times against the reference's calibration for the run's GPU model:
    `{"gpu", "calibrated_at", "provenance", "ratios": {case: ratio or None}, "sentence"}`
    when there is an entry, else `{"gpu", "ratios": {}, "sentence"}` saying plainly why
    there is none. `whose` names the times ("your", "this build's"). Empty when the run
    named no GPU (it ran nothing)."""
    gpu = ((run_json or {}).get("device") or {}).get("name")
    if not isinstance(gpu, str) or not gpu.strip():
        return {}
    entry = calibration.entry_for(gpu) if calibration is not None else None
    if entry is None:
        if calibration is None or not calibration.entries:
            sentence = (f"The {spec.name} lab's reference is not calibrated yet on any GPU, so there is no "
                        "reference time to compare with here; `cudalab calibrate "
                        f"{spec.name}` records it.")
        else:
            models = calibration.gpu_names
            listed = models[0] if len(models) == 1 else ", ".join(models[:-1]) + " and " + models[-1]
            sentence = (f"No calibration of the {spec.name} lab's reference exists for {gpu}, so there is no "
                        f"reference time to compare with here; it is calibrated on {listed}.")
        return {"gpu": gpu, "ratios": {}, "sentence": sentence}
    ratios = {}
    for bench in (run_json or {}).get("bench", []):
        if not isinstance(bench, dict) or not isinstance(bench.get("name"), str):
            continue
        median = bench.get("median_ms")
        timed = bench.get("status") != "skipped" and _is_number(median) and median > 0
        ratios[bench["name"]] = (ratio(entry, bench["name"], median)
                                 if timed and calibrated_case(entry, bench["name"]) else None)
    driver = entry.get("driver") or {}
    details = ", ".join(filter(None, (f"calibrated {date(entry)}",
                                      f"driver {driver['version']}" if driver.get("version") else None,
                                      f"CUDA {entry['cuda_runtime']}" if entry.get("cuda_runtime") else None)))
    sentence = (f"vs reference: {whose} time / the calibrated time of {reference_words(entry)} on "
                f"{entry['gpu']['name']} ({details}). A grade times the reference again in the same session; "
                f"it scores `{spec.scoring.timing_case}`: every speed point at or below "
                f"{spec.scoring.full_marks_ratio:g}, none at or above {spec.scoring.zero_marks_ratio:g}.")
    return {"gpu": gpu, "calibrated_gpu": entry["gpu"]["name"], "calibrated_at": entry.get("calibrated_at"),
            "provenance": provenance(entry), "ratios": ratios, "sentence": sentence}
