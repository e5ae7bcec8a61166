"""console: everything printed to a terminal may quote a student (compiler output echoing
their source, their program's stderr, hand-in ids and names, case messages); control
characters reach the terminal only as visible escapes, on every printing path."""
from __future__ import annotations

import io
import sys
import types

import pytest

from cudalab import cli, console
from cudalab.batching import progress
from cudalab.outputs import report
from cudalab.errors import CompileError
from cudalab.record import GradeResult
from grade_results import OUTCOMES

# An OSC 52 (set the clipboard), then erase the line and return to its start to print a PASS
# over the FAIL, a bidirectional override, an 8-bit CSI and a bell.
HOSTILE = "\x1b]52;c;cm0gLXJmIH4=\x07\x1b[2K\rPASS \u202eSSAP\u202c \x9b31m\x07"
SHOWN = "\\x1b]52;c;cm0gLXJmIH4=\\x07\\x1b[2K\\rPASS \\u202eSSAP\\u202c \\x9b31m\\x07"
CONTROLS = ("\x1b", "\x07", "\r", "\u202e", "\x9b")


def assert_visible(text: str) -> None:
    assert not any(char in text for char in CONTROLS), repr(text)
    assert SHOWN in text, text


def test_printable_shows_every_control_character():
    assert console.printable(HOSTILE) == SHOWN
    assert console.printable("two\nlines\tand a tab") == "two\nlines\tand a tab"
    assert console.printable("an id\nthat fakes a line", one_line=True) == "an id\\nthat fakes a line"
    assert console.printable("bytes \udc9b\u2028") == "bytes \\udc9b\\u2028"
    assert console.printable("vector_add.cu:3: ünïcode ✓ ok") == "vector_add.cu:3: ünïcode ✓ ok"


def test_every_console_function_prints_control_characters_as_escapes(capsys):
    console.info(f"info {HOSTILE}")
    console.warn(f"warn {HOSTILE}")
    console.error(f"error {HOSTILE}")
    console.text(f"stderr of the program:\n{HOSTILE}", stream=sys.stderr)
    console.table(f"title {HOSTILE}", ("case", "status"), [[HOSTILE, "failed\nPASS"]])
    out, err = capsys.readouterr()
    for text in (out, err):
        assert_visible(text)
    assert "failed\\nPASS" in out, "a table cell stays on its row"


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_rich_prints_them_as_escapes_too(monkeypatch):
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    console.warn(f"[link=https://evil.example]{HOSTILE}[/link]")
    console.table("t", ("a",), [[HOSTILE]], stream=terminal)
    text = terminal.getvalue()
    assert "\x1b]52" not in text and "\x1b[2K" not in text and "\x1b]8;" not in text, repr(text)
    assert "\\x1b]52;c;cm0gLXJmIH4=" in text and "[link=https://evil.example]" in text


def test_a_grade_summary_shows_echoed_source_case_messages_and_warnings_as_text(capsys):
    """`cudalab grade` prints summary.txt: compiler lines quoting the student's source, the
    checker's case messages and the warnings naming the hand-in's files."""
    result = OUTCOMES["compile_error"]()
    result["build"]["feedback"] = ["vector_add.cu:3:1: error: stray '\\33' in program", f"    3 | {HOSTILE}"]
    result["warnings"] = [f"{HOSTILE}.cu was ignored"]
    console.text(report.render_summary(GradeResult.from_json(result)))
    summary = capsys.readouterr().out
    assert_visible(summary)
    assert "Status: did not compile" in summary
    graded = OUTCOMES["graded"]()
    graded["cases"][1]["message"] = f"c[256] is wrong {HOSTILE}"
    console.text(report.render_summary(GradeResult.from_json(graded)))
    assert_visible(capsys.readouterr().out)


def test_the_cli_prints_compiler_output_as_text(capsys):
    """`cudalab build LAB FOLDER` and `run` end with the compiler's lines about the student's
    file, which quote their source."""
    args = types.SimpleNamespace(json=False, verb="build")
    cli._report_error(args, CompileError("vector_add.cu did not compile.", [f"  3 | {HOSTILE}", "  4 | }"]))
    err = capsys.readouterr().err
    assert_visible(err)
    assert err.endswith("  4 | }\n")


def test_batch_progress_shows_ids_and_names_as_one_line_each():
    stream = io.StringIO()
    reporter = progress.PlainReporter(stream)
    job = types.SimpleNamespace(student=f"{HOSTILE}\nmallory: 100/100", key="x")
    reporter.begin(total=1, done=0, skipped=[{"name": f"{HOSTILE}.pdf", "reason": "not a hand-in"}],
                   changed=[job.student])
    reporter.done(job, {"status": "compile_error"})
    reporter.end({"info": {"complete": True, "counts": {"handins": 1, "graded": 1},
                           "missing": [{"student": f"s9{HOSTILE}"}]}, "paths": {}}, False)
    text = stream.getvalue()
    assert_visible(text)
    assert "\nmallory: 100/100" not in text and "\\nmallory: 100/100: compile_error" in text


@pytest.mark.parametrize("student", [HOSTILE, "[bold red]PASS[/]", "[link=https://evil.example]x[/link]"])
def test_the_progress_bar_shows_an_id_as_text(monkeypatch, student):
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    reporter = progress.RichReporter()
    reporter.begin(total=1, done=0, skipped=[], changed=[])
    reporter.phase("grading")
    reporter.started(types.SimpleNamespace(student=student, key="x"), "building")
    description = reporter.bar.tasks[0].description
    reporter.bar.stop()
    from rich.text import Text
    shown = Text.from_markup(description).plain
    assert shown == f"grading: {console.printable(student, one_line=True)} (building)"
    assert "\x1b]8;" not in terminal.getvalue() and "\x1b]52" not in terminal.getvalue()
