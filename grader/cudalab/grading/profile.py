"""The lecture's profiler table for `cudalab ladder --profile`: Nsight Compute (ncu) runs
each rung once on one bench case and reads, for the kernels the code under test launched
(the harness marks its calls with an NVTX range, so the harness's own input generation
and poisoning are left out), the columns the lecture's nvvp tables have: duration,
registers per thread, shared memory per block, global load and store efficiency, shared
efficiency, warp execution efficiency (plain and non-predicated), achieved and theoretical
occupancy and what limits the occupancy.
"""
from __future__ import annotations

import csv
import glob
import io
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from ..isolation.runner import RUN, Runner
from ..isolation.sandbox import toolchain_roots
from .sanitizer import toolkit_roots

NCU = "ncu"
RANGE = "cudalab:code-under-test"  # labkit/harness.cu's kCodeUnderTestRange

# metric -> what it is, in the lecture's words
METRICS = {
    "gpu__time_duration.sum": "duration",
    "launch__registers_per_thread": "registers/thread",
    "launch__shared_mem_per_block_static": "static shared/block",
    "launch__shared_mem_per_block_dynamic": "dynamic shared/block",
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct": "global load efficiency",
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.pct": "global store efficiency",
    "smsp__sass_average_data_bytes_per_wavefront_mem_shared.pct": "shared efficiency",
    "smsp__thread_inst_executed_per_inst_executed.ratio": "warp execution efficiency",
    "smsp__thread_inst_executed_pred_on_per_inst_executed.ratio": "non-predicated warp execution efficiency",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "achieved occupancy",
    "sm__maximum_warps_per_active_cycle_pct": "theoretical occupancy",
    "launch__occupancy_limit_blocks": "limit by blocks",
    "launch__occupancy_limit_registers": "limit by registers",
    "launch__occupancy_limit_shared_mem": "limit by shared memory",
    "launch__occupancy_limit_warps": "limit by warps",
    "launch__grid_size": "grid size",
    "launch__sm_count": "SMs",
}

COLUMNS = ("rung", "duration", "regs/thread", "shared/block", "gld eff", "gst eff", "shared eff",
           "warp exec eff", "non-pred eff", "occ. achieved", "occ. theoretical", "occ. limiter")


def find_ncu() -> Path | None:
    """Nsight Compute's own ncu (newest first), or None where this machine has none. The
    toolkit's bin/ncu is often a script that looks for the install in /opt/nvidia, a folder
    a sandboxed run does not see; the install's own binary brings its folder into view."""
    roots = list(toolkit_roots())
    installs = [Path(p) for p in sorted(glob.glob(f"/opt/nvidia/nsight-compute/*/{NCU}"), reverse=True)]
    for root in roots:
        installs += sorted(root.glob(f"nsight-compute*/{NCU}"), reverse=True)
    on_path = shutil.which(NCU)
    for candidate in [*installs, *([Path(on_path)] if on_path else []), *(root / "bin" / NCU for root in roots)]:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def parse_csv(text: str) -> list[dict[str, float]]:
    """ncu's --csv output (one row per kernel and metric) as one dict per kernel launch."""
    start = text.find('"ID"')
    if start < 0:
        return []
    kernels: dict[str, dict[str, float]] = {}
    for row in csv.DictReader(io.StringIO(text[start:])):
        value = _number(row.get("Metric Value", ""))
        name = row.get("Metric Name", "")
        if value is None or name not in METRICS:
            continue
        kernel = kernels.setdefault(row.get("ID", ""), {"name": row.get("Kernel Name", "")})
        unit = row.get("Metric Unit", "")
        if name == "gpu__time_duration.sum":  # to microseconds, whatever unit ncu chose
            value *= {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3,
                      "s": 1e6, "second": 1e6}.get(unit, 1e-3)
        kernel[name] = value
    return list(kernels.values())


@dataclass
class ProfileRow:
    rung: str
    kernels: list[dict]
    error: str = ""

    def summary(self) -> dict:
        """The lecture's columns for the call: the duration summed over its kernels, the rest
        from its longest kernel (the one the table is about)."""
        if not self.kernels:
            return {"rung": self.rung, "error": self.error or "no kernel of the code under test was profiled"}
        main = max(self.kernels, key=lambda k: k.get("gpu__time_duration.sum", 0.0))
        m = main.get
        limits = {"blocks": m("launch__occupancy_limit_blocks"), "registers": m("launch__occupancy_limit_registers"),
                  "shared memory": m("launch__occupancy_limit_shared_mem"), "warps": m("launch__occupancy_limit_warps")}
        theoretical = m("sm__maximum_warps_per_active_cycle_pct")
        if m("launch__grid_size") is not None and m("launch__sm_count") and m("launch__grid_size") < m("launch__sm_count"):
            limiter = "grid size"
        elif theoretical is not None and theoretical >= 100:
            limiter = "none"
        else:
            known = {k: v for k, v in limits.items() if v is not None}
            limiter = min(known, key=known.get) if known else "?"

        def per_warp(metric):
            value = m(metric)
            return None if value is None else 100.0 * value / 32.0

        return {"rung": self.rung, "kernels": len(self.kernels), "kernel": main.get("name", ""),
                "duration_us": sum(k.get("gpu__time_duration.sum", 0.0) for k in self.kernels),
                "registers_per_thread": m("launch__registers_per_thread"),
                "shared_bytes_per_block": (m("launch__shared_mem_per_block_static") or 0)
                + (m("launch__shared_mem_per_block_dynamic") or 0),
                "global_load_efficiency": m("smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct"),
                "global_store_efficiency": m("smsp__sass_average_data_bytes_per_sector_mem_global_op_st.pct"),
                "shared_efficiency": m("smsp__sass_average_data_bytes_per_wavefront_mem_shared.pct"),
                "warp_execution_efficiency": per_warp("smsp__thread_inst_executed_per_inst_executed.ratio"),
                "non_predicated_warp_execution_efficiency":
                    per_warp("smsp__thread_inst_executed_pred_on_per_inst_executed.ratio"),
                "achieved_occupancy": m("sm__warps_active.avg.pct_of_peak_sustained_active"),
                "theoretical_occupancy": theoretical, "occupancy_limiter": limiter}


def profile_rung(runner: Runner, ncu: Path, rung: str, binary: Path, case: str, seed: int,
                 timeout_s: float) -> ProfileRow:
    """One call of `binary`'s code under test on bench case `case`, under ncu."""
    prefix = [str(ncu), "--csv", "--log-file", f"{RUN}/ncu.csv", "--nvtx", "--nvtx-include", f"{RANGE}/",
              "--metrics", ",".join(METRICS), "--target-processes", "all"]
    args = ["--bench", "--bench-case", case, "--seed", seed, "--samples", 1, "--warmup", 0, "--no-baselines"]
    result, folder = runner.run(binary, args, wrapper=prefix, timeout_s=timeout_s, official=True,
                                wrapper_toolchain=toolchain_roots([ncu.resolve()]))
    log = folder / "ncu.csv"
    text = log.read_text(errors="replace") if log.is_file() else ""
    kernels = parse_csv(text)
    error = ""
    if not kernels:
        said = (text.strip().splitlines() or [""])[-1] or result.stderr_head(3) or result.describe()
        error = f"ncu profiled nothing ({said})"
    return ProfileRow(rung, kernels, error)


def table_rows(summaries: list[dict]) -> list[tuple]:
    def f(value, spec, suffix=""):
        return "-" if value is None else format(value, spec) + suffix

    rows = []
    for s in summaries:
        if "error" in s:
            rows.append((s["rung"], s["error"], *[""] * (len(COLUMNS) - 2)))
            continue
        duration = s["duration_us"]
        rows.append((s["rung"], f(duration / 1000, ".3f", " ms") if duration >= 1000 else f(duration, ".1f", " us"),
                     f(s["registers_per_thread"], ".0f"), f(s["shared_bytes_per_block"] / 1024, ".3g", " KiB"),
                     f(s["global_load_efficiency"], ".1f", "%"), f(s["global_store_efficiency"], ".1f", "%"),
                     f(s["shared_efficiency"], ".1f", "%") if s["shared_bytes_per_block"] else "n/a",
                     f(s["warp_execution_efficiency"], ".1f", "%"),
                     f(s["non_predicated_warp_execution_efficiency"], ".1f", "%"),
                     f(s["achieved_occupancy"], ".1f", "%"), f(s["theoretical_occupancy"], ".0f", "%"),
                     s["occupancy_limiter"]))
    return rows
