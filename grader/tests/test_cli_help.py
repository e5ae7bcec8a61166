"""`cudalab --help`: one whole sentence per verb, never a line cut where its docstring's
first line happens to end."""
from __future__ import annotations

import importlib

import pytest

from cudalab import cli


@pytest.mark.parametrize("verb", cli.VERBS)
def test_each_verbs_summary_is_a_whole_sentence(verb):
    doc = importlib.import_module(f"cudalab.commands.{verb}").__doc__
    summary = cli.verb_summary(doc)
    assert summary.endswith(".") and not summary.startswith("`cudalab"), summary
    assert " ".join(doc.split()).find(summary) >= 0, "the docstring's own words"


def test_a_summary_that_runs_over_its_first_line_is_kept_whole(capsys):
    doc = '"""`cudalab run`: build (if needed) and run one implementation, and show the\nverdicts. More.\n\nDetails."""'
    assert cli.verb_summary(doc.strip('"')) == "build (if needed) and run one implementation, and show the verdicts."
    assert cli.main(["--help"]) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert "and show the checker's verdict on each case (and, with --bench, the timings)." in said
