"""`cudalab ladder LAB --blocks ...`: one rung once per block shape, each run checked, the
table (one row per shape, a column group per bench case, the library's row) and its JSON;
and the throughput column of the plain ladder. Programs are fakes in the sandbox
(picture_lab.py)."""
from __future__ import annotations

import argparse
import json

import pytest

from cudalab import cli
from cudalab.grading import ladder
from cudalab.commands import ladder as ladder_command
from conftest import seal
from picture_lab import make_picture_repo, write_picture_fake

RATES = {"16x16": 2.0e9, "32x8": 3.0e9, "64x4": 2.5e9}


@pytest.fixture
def pic(tmp_path, monkeypatch):
    root = make_picture_repo(tmp_path / "repo", items_per_s=RATES, refuse_blocks=["1x32"])
    write_picture_fake(root / "build" / "ci" / "bin" / "pic_ladder_global", name="pic_ladder_global",
                       items_per_s={"default": 0.5e9, "16x16": 0.7e9})
    seal(root)
    for name, value in (("CUDALAB_ROOT", root), ("CUDALAB_PRESET", "ci"), ("CUDALAB_WORK_DIR", tmp_path / "work")):
        monkeypatch.setenv(name, str(value))
    monkeypatch.delenv("CUDALAB_BUILD_DIR", raising=False)
    return root


FAST = ["--samples", "2", "--warmup", "1", "--seed", "5"]


def test_blocks_runs_the_solution_once_per_shape_and_checks_each(pic, capsys):
    assert cli.main(["ladder", "pic", "--blocks", "16x16,32x8,64X4,32x8", *FAST, "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["schema"] == "cudalab.ladder-blocks/1" and body["binary"] == "solution"
    assert body["rung"] == "shared tile" and body["seed"] == 5 and body["items_name"] == "pixels"
    assert [b["block"] for b in body["blocks"]] == ["16x16", "32x8", "64x4"]  # 32x8 given twice runs once
    for block in body["blocks"]:
        assert sorted(block["cases"]) == ["big", "bigger"]
        for row in block["cases"].values():
            assert row["verdict"] == "passed" and row["items_per_s"] == RATES[block["block"]]
    assert [c["name"] for c in body["cases"]] == ["big", "bigger"]
    assert body["cases"][0]["library"] == {"name": "nppiFilterSobel", "median_ms": 0.25, "gbps": 123.0,
                                           "items_per_s": 2e9}
    assert body["all_correct"] is True


def test_blocks_table_has_a_row_per_shape_and_the_library(pic, capsys):
    assert cli.main(["ladder", "pic", "--blocks", "16x16,32x8", "--bench-case", "big", *FAST]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "pic: shared tile by block shape (2 samples per case, seed 5)"
    assert lines[1].split() == ["block", "big", "ms", "big", "Gpixels/s", "big", "check"]
    assert lines[2].split() == ["16x16", "1.0000", "2.00", "passed"]
    assert lines[3].split() == ["32x8", "1.0000", "3.00", "passed"]
    assert lines[4].split() == ["library:", "nppiFilterSobel", "0.2500", "2.00", "-"]


def test_a_shape_the_rung_refuses_is_shown_with_its_words(pic, capsys):
    assert cli.main(["ladder", "pic", "--blocks", "32x8,1x32", "--bench-case", "big", *FAST, "--json"]) == 0
    captured = capsys.readouterr()
    body = json.loads(captured.out)
    refused = body["blocks"][1]["cases"]["big"]
    assert refused["verdict"] == "not run" and "needs 32 threads across" in refused["message"]
    assert body["blocks"][0]["cases"]["big"]["verdict"] == "passed" and body["all_correct"] is False


def test_rung_picks_another_rung(pic, capsys):
    assert cli.main(["ladder", "pic", "--blocks", "16x16,32x8", "--rung", "global", *FAST, "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["rung"] == "global" and body["binary"] == "ladder_global"
    assert [b["cases"]["big"]["items_per_s"] for b in body["blocks"]] == [0.7e9, 0.5e9]


@pytest.mark.parametrize("argv, said", [
    (["--blocks", "32x8", "--rung", "fastest"], "--rung fastest: the pic lab has no ladder rung built from "
                                                "fastest.cu (rungs: solution, global, pic)"),
    (["--rung", "global"], "--rung goes with --blocks"),
    (["--blocks", "32x8", "--profile"], "--profile and --blocks are separate runs"),
    (["--blocks", "16x16,10x10"], "argument --blocks: '10x10' is 100 threads, not a multiple of 32"),
    (["--blocks", ","], "argument --blocks: ',' names no block shape"),
    (["--blocks", "2048x1"], "is 2048 threads: a block has at most 1024"),
])
def test_bad_block_options_are_one_sentence(pic, capsys, argv, said):
    assert cli.main(["ladder", "pic", *argv]) == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err


def test_blocks_is_only_for_labs_whose_functions_take_one(toy_env, capsys):
    assert cli.main(["ladder", "toy", "--blocks", "32x8"]) == 2
    assert "--blocks: the toy lab's functions take no block shape" in capsys.readouterr().err


def test_the_plain_ladder_shows_the_items_rate(pic, capsys):
    assert cli.main(["ladder", "pic", "--bench-case", "big", *FAST]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "nppiFilterSobel 123 GB/s, 2.00 Gpixels/s" in lines[0]
    assert lines[1].split()[:5] == ["rung", "median", "ms", "spread", "Gpixels/s"]
    assert lines[2].split()[:4] == ["global", "1.0000", "1.0%", "0.50"]
    assert lines[3].split()[:5] == ["shared", "tile", "1.0000", "1.0%", "1.00"]


# --- the table from stored run JSON ------------------------------------------------------

def stored_run(rate: float, pixels: int = 512_000) -> dict:
    """A sobel harness's --bench JSON, as the C++ writes it."""
    return {"schema": "cudalab.run/1", "lab": "pic", "mode": "bench", "status": "unchecked",
            "device": {"name": "NVIDIA H100 80GB HBM3"},
            "bench": [{"name": "big", "status": "unchecked", "median_ms": pixels / rate * 1e3, "spread": 0.01,
                       "gbps": 2 * rate / 1e9, "items_name": "pixels", "items_per_s": rate,
                       "library": {"name": "nppiFilterSobelHoriz", "median_ms": 0.004, "gbps": 256.0},
                       "library_items_per_s": 1.28e11, "checked_sample_seed": 11},
                      {"name": "bigger", "params": {}, "status": "skipped",
                       "reason": "needs about 3.0 GiB of GPU memory, 1.9 GiB free"}]}


def test_the_blocks_table_from_stored_run_json(tmp_path, capsys):
    from cudalab.lab.labspec import load
    from picture_lab import PIC_LAB_TOML
    (tmp_path / "pic").mkdir()
    (tmp_path / "pic" / "lab.toml").write_text(PIC_LAB_TOML)
    spec = load(tmp_path / "pic" / "lab.toml")
    ok = argparse.Namespace(exit_code=0, stderr="", describe=lambda: "exited with code 0")
    outcomes = [{"result": ok, "run": stored_run(rate), "verdicts": {"big": {"status": verdict, "message": said}}}
                for rate, verdict, said in ((1.0e11, "passed", ""), (1.6e11, "failed", "out[y=0, x=3] is wrong"))]
    result = ladder.blocks_table(spec, "shared tile", "solution", ["16x16", "32x8"], ["big", "bigger"], outcomes, {},
                                 seed=3, samples=30, warmup=5)
    assert result["device"] == {"name": "NVIDIA H100 80GB HBM3"} and result["all_correct"] is False
    assert result["cases"][1]["library"] is None
    ladder_command._show_blocks(result)
    captured = capsys.readouterr()
    assert [line.split() for line in captured.out.splitlines()] == [
        "pic: shared tile by block shape (30 samples per case, seed 3)".split(),
        ["block", "big", "ms", "big", "Gpixels/s", "big", "check", "bigger", "ms", "bigger", "Gpixels/s", "bigger",
         "check"],
        ["16x16", "0.0051", "100.00", "passed", "-", "-", "skipped"],
        ["32x8", "0.0032", "160.00", "failed", "-", "-", "skipped"],
        ["library:", "nppiFilterSobelHoriz", "0.0040", "128.00", "-", "-", "-", "-"],
    ]
    assert "block 32x8, big: failed: out[y=0, x=3] is wrong" in captured.err
