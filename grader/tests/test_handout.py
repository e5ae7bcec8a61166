"""Handouts are rendered from lab.toml; the stored copies must match what renders now."""
from __future__ import annotations

from pathlib import Path

import pytest

from cudalab import handout, labspec
from cudalab.labs import available_labs

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("lab", available_labs(REPO))
def test_stored_handout_is_what_lab_toml_renders(lab):
    spec = labspec.load(REPO / "labs" / lab / "lab.toml")
    stored = REPO / "handouts" / f"{lab}.md"
    assert stored.is_file(), f"run `cudalab handout {lab}`"
    assert stored.read_text(encoding="utf-8") == handout.render_handout(spec), \
        f"handouts/{lab}.md is out of date: run `cudalab handout {lab}`"


def test_handout_says_why_for_every_case_and_tolerance():
    spec = labspec.load(REPO / "labs" / "reduction" / "lab.toml")
    text = handout.render_handout(spec)
    for case in spec.cases:
        assert f"`{case.name}`" in text and case.why in text
    assert "grows with log2(n)" in text


def test_tolerance_rule_in_words():
    exact = labspec.Output("c", "f32", 0.0, 0.0, 0, False, "")
    loose = labspec.Output("c", "f32", 1e-6, 1e-5, -1, False, "")
    both = labspec.Output("c", "f32", 1e-6, 0.0, 2, False, "")
    computed = labspec.Output("s", "f32", 0.0, 0.0, -1, True, "")
    assert handout.tolerance_rule(exact) == "exactly equal"
    assert handout.tolerance_rule(loose) == "|got - expected| <= 1e-06 + 1e-05 * |expected|"
    assert handout.tolerance_rule(both) == "|got - expected| <= 1e-06 + 0 * |expected| or within 2 ULP"
    assert "computed" in handout.tolerance_rule(computed)
