"""profile: ncu's CSV becomes the lecture's table; what limits occupancy is named."""
from __future__ import annotations

from cudalab.grading import profile

HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size",'
          '"Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"\n')


def row(kernel_id: str, kernel: str, metric: str, unit: str, value: str) -> str:
    return (f'"{kernel_id}","518","t","127.0.0.1","{kernel}","1","7","(256, 1, 1)","(16384, 1, 1)","0","9.0",'
            f'"Command line profiler metrics","{metric}","{unit}","{value}"\n')


def kernel_rows(kernel_id: str, kernel: str, duration_ns: str, **metrics: str) -> str:
    text = row(kernel_id, kernel, "gpu__time_duration.sum", "ns", duration_ns)
    for name, value in metrics.items():
        text += row(kernel_id, kernel, name, "", value)
    return text


def test_csv_becomes_one_dict_per_kernel_and_the_longest_kernel_speaks():
    text = ("==PROF== Connected to process 518\n" + HEADER
            + kernel_rows("0", "tiled(float const*, float*)", "13,920",
                          launch__registers_per_thread="16", launch__shared_mem_per_block_static="4224",
                          smsp__thread_inst_executed_per_inst_executed_ratio="32")
            .replace("smsp__thread_inst_executed_per_inst_executed_ratio",
                     "smsp__thread_inst_executed_per_inst_executed.ratio")
            + kernel_rows("1", "finish(float*)", "1,080", launch__registers_per_thread="40"))
    kernels = profile.parse_csv(text)
    assert len(kernels) == 2
    summary = profile.ProfileRow("tiled", kernels).summary()
    assert summary["kernel"].startswith("tiled")
    assert summary["registers_per_thread"] == 16  # from the longest kernel
    assert abs(summary["duration_us"] - 15.0) < 1e-9  # summed over the call's kernels
    assert summary["shared_bytes_per_block"] == 4224
    assert summary["warp_execution_efficiency"] == 100.0


def test_occupancy_limiter_is_the_grid_or_the_smallest_limit():
    base = {"gpu__time_duration.sum": 10.0, "launch__sm_count": 132.0, "sm__maximum_warps_per_active_cycle_pct": 50.0,
            "launch__occupancy_limit_blocks": 32.0, "launch__occupancy_limit_registers": 4.0,
            "launch__occupancy_limit_shared_mem": 8.0, "launch__occupancy_limit_warps": 8.0}
    assert profile.ProfileRow("r", [{**base, "launch__grid_size": 1.0}]).summary()["occupancy_limiter"] == "grid size"
    assert profile.ProfileRow("r", [{**base, "launch__grid_size": 4096.0}]).summary()["occupancy_limiter"] == "registers"
    full = {**base, "launch__grid_size": 4096.0, "sm__maximum_warps_per_active_cycle_pct": 100.0}
    assert profile.ProfileRow("r", [full]).summary()["occupancy_limiter"] == "none"


def test_nothing_profiled_is_said_and_tabled():
    assert profile.parse_csv("==ERROR== ERR_NVGPUCTRPERM\n") == []
    summary = profile.ProfileRow("serial", [], "ncu profiled nothing (ERR_NVGPUCTRPERM)").summary()
    assert summary == {"rung": "serial", "error": "ncu profiled nothing (ERR_NVGPUCTRPERM)"}
    rows = profile.table_rows([summary])
    assert rows[0][:2] == ("serial", "ncu profiled nothing (ERR_NVGPUCTRPERM)")
    assert len(rows[0]) == len(profile.COLUMNS)
