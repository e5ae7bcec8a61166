"""The hostile suite (suite.py): every entry's expect.toml is well formed, every entry
builds in the sandbox as it should (no GPU needed), and on a GPU every entry is graded
through the sandbox and gets its expected verdict, with nothing left behind."""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import suite
from cudalab.building import build
from cudalab.lab import labs
from cudalab.config import Config
from cudalab.errors import CompileError
from conftest import REPO_ROOT

ENTRIES = suite.entries()


def repo_config(tmp_path: Path, **overrides) -> Config:
    return Config.load(root=REPO_ROOT, work_dir=tmp_path / "work", **overrides)


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.label for e in ENTRIES])
def test_expectations_are_well_formed(entry):
    expect = entry.expect
    assert (entry.folder / f"{entry.lab}.cu").is_file()
    assert expect["status"] in ("graded", "compile_error", "forbidden")
    assert len(expect["why"]) > 40, "say what the submission demonstrates"
    assert set(expect) <= {"status", "correctness", "performance", "run_status", "message_contains",
                           "timing_flagged", "why"}
    if expect["status"] == "graded":
        assert expect["correctness"] in suite.CORRECTNESS
        assert expect["performance"] in ("any", "zero")


def test_the_suite_covers_every_attack_the_grader_defends_against():
    names = {e.name for e in ENTRIES}
    assert {"overwrites_trusted_binary", "writes_outside", "includes_solution", "reads_files_at_run_time",
            "setsid_daemon", "fork_storm", "host_memory_hog", "gpu_memory_hog", "network", "defines_main",
            "overrides_event_timing", "overrides_harness_symbol", "slow_cache_by_contents_host",
            "slow_cache_by_contents_device", "rewrites_its_json", "rewrites_its_dumps", "pipe_proxy",
            "patched_event_timer", "stalls_blanks_host_thread", "stalls_blanks_gpu_queue", "hidden_stream_work",
            "skips_after_kept_sample", "renames_output"} <= names
    assert {e.lab for e in ENTRIES} >= {"vector_add", "reduction"}


def test_a_repeated_entry_passes_only_if_every_grade_matched():
    def row(case, grade, problems=()):
        return {"case": case, "grade": grade, "expected": "correctness full, performance zero",
                "actual": "10/10 cases, performance zero", "points": "70/100", "seconds": 1.0,
                "problems": list(problems)}

    rows = [row("vector_add/correct", ""), row("vector_add/pipe_proxy", "1/2"),
            row("vector_add/pipe_proxy", "2/2", ["30.0 performance points, expected none"]),
            row("vector_add/correct (again, last)", "")]
    run = suite.SuiteRun(rows=rows, after={"processes left behind": []})
    lines = run.table().splitlines()
    assert lines[0] == suite.table_header()
    assert lines[2].startswith("vector_add/pipe_proxy #1/2 ") and "as expected" in lines[2]
    assert lines[3].startswith("vector_add/pipe_proxy #2/2 ") and "MISMATCH" in lines[3]
    assert "vector_add/pipe_proxy: 1 of 2 grades as expected (MISMATCH: the entry fails)" in lines
    assert not run.ok
    rows[2]["problems"] = []
    assert "vector_add/pipe_proxy: 2 of 2 grades as expected" in suite.SuiteRun(rows=rows).table().splitlines()
    assert suite.SuiteRun(rows=rows).ok


@pytest.mark.needs_build
def test_each_entry_builds_as_expected(tmp_path):
    """Compile-time verdicts come from the sandboxed build alone: what must not compile
    (or link) is refused with the words its expect.toml names; everything else builds."""
    config = repo_config(tmp_path)

    def attempt(entry):
        spec = labs.load_lab(config, entry.lab)
        try:
            build.build_submission(config, spec, entry.folder, tmp_path / entry.lab / entry.name)
        except CompileError as err:
            return err
        return None

    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        outcomes = dict(zip([e.label for e in ENTRIES], pool.map(attempt, ENTRIES)))
    for entry in ENTRIES:
        outcome = outcomes[entry.label]
        if entry.expect["status"] in ("compile_error", "forbidden"):
            code = 22 if entry.expect["status"] == "compile_error" else 26
            assert outcome is not None and outcome.exit_code == code, f"{entry.label} should not build"
            said = str(outcome) + "\n" + "\n".join(outcome.feedback)
            for words in entry.expect.get("message_contains", []):
                assert words in said, f"{entry.label}: {said}"
            assert str(tmp_path) not in said, "paths are shortened"
        else:
            assert outcome is None, f"{entry.label} should build:\n" + "\n".join(outcome.feedback)


@pytest.mark.gpu
@pytest.mark.needs_build
def test_the_whole_suite_gets_its_verdicts_on_a_gpu(tmp_path):
    config = repo_config(tmp_path)
    table_file = Path(os.environ["CUDALAB_SUITE_TABLE"]) if os.environ.get("CUDALAB_SUITE_TABLE") else None

    def progress(row):  # row by row, so a run cut short still shows what it reached
        if table_file:
            with table_file.open("a") as out:
                out.write(suite.SuiteRun(rows=[row]).table().splitlines()[1] + "\n")
    if table_file:
        table_file.write_text(suite.table_header() + "\n")
    run = suite.run_suite(config, on_row=progress)
    table = run.table()
    if table_file:
        table_file.write_text(table + "\n")
    print(table)
    assert run.ok, table
