"""Turn a grade result (the `cudalab.grade/1` JSON document) into files and text.

The templates in cudalab/templates/ render from that document alone, so what a student
reads and what a machine reads can never disagree.
"""
from __future__ import annotations

import json
import os
import re
import tempfile
from datetime import datetime, timezone
from pathlib import Path

import jinja2

RESULT_FILE = "result.json"
FEEDBACK_FILE = "feedback.md"
FEEDBACK_HTML_FILE = "feedback.html"

STATUS_WORDS = {
    "graded": "graded",
    "not_run": "not run: no CUDA device here (built only, no grade given)",
    "compile_error": "did not compile",
    "submission_error": "hand-in rejected",
    "forbidden": "uses a library the lab does not allow",
    "unknown_lab": "unknown lab",
    "not_isolated": "not graded: no sandbox for the student's code here",
    "error": "grader error (not the student's fault)",
}


def timestamp(epoch: float | None = None) -> str:
    """A moment (now, or `epoch`) as results write it: UTC, ISO 8601, to the second."""
    moment = datetime.now(timezone.utc) if epoch is None else datetime.fromtimestamp(epoch, timezone.utc)
    return moment.isoformat(timespec="seconds")


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write via a temporary file in the same folder and os.replace: readers see the old file
    or the new one, never half of one, even if the grader is killed mid-write."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    """atomic_write_bytes of the text in UTF-8."""
    atomic_write_bytes(path, text.encode("utf-8"))


def points_text(value: float | None) -> str:
    """Points as the reports show them: '70', '46.7', '-' for none."""
    if value is None:
        return "-"
    return f"{value:.1f}" if value != int(value) else f"{int(value)}"


def ms_text(value: float | None) -> str:
    """A time per run: '0.2565 ms', '-' for none."""
    return "-" if value is None else f"{value:.4g} ms"


def _fence(text: str | list[str]) -> str:
    """A Markdown code fence longer than any run of backticks in `text`, so that compiler
    output quoting backticks cannot end the block early and turn into Markdown."""
    body = "\n".join(text) if isinstance(text, list) else str(text)
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    return "`" * max(3, longest + 1)


def _table_cell(text: str) -> str:
    """Text that stays inside one cell of a Markdown table."""
    return " ".join(str(text).replace("|", "\\|").splitlines())


def _relative_link(path: str) -> str | None:
    """A link the feedback may hold: a relative path below its own folder (the grader's
    pictures under images/), or None."""
    path = str(path)
    if not path or "\\" in path or ":" in path or any(p in ("", ".", "..") for p in path.split("/")):
        return None
    return path


def environment() -> jinja2.Environment:
    """The Jinja2 environment of every template the package ships. Templates named *.html.j2
    are autoescaped: whatever a result holds (compiler output, a file name) is shown as text."""
    env = jinja2.Environment(loader=jinja2.PackageLoader("cudalab", "templates"),
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                             trim_blocks=True, lstrip_blocks=True,
                             autoescape=jinja2.select_autoescape(enabled_extensions=("html.j2",),
                                                                 default_for_string=False, default=False))
    env.filters.update(points=points_text, ms=ms_text, fence=_fence, table_cell=_table_cell,
                       relative_link=_relative_link)
    env.globals.update(status_words=STATUS_WORDS)
    return env


def render(template: str, result: dict) -> str:
    return environment().get_template(template).render(r=result)


def render_summary(result: dict) -> str:
    return render("summary.txt.j2", result)


def render_feedback(result: dict) -> str:
    return render("feedback.md.j2", result)


def render_feedback_html(result: dict) -> str:
    """The same feedback as render_feedback, as a page of its own (escaped HTML)."""
    return render("feedback.html.j2", result)


def write_outputs(out_dir: Path, result: dict) -> dict[str, Path]:
    """result.json first (the record), then feedback.md; both atomically."""
    paths = {"result": out_dir / RESULT_FILE, "feedback": out_dir / FEEDBACK_FILE}
    atomic_write_text(paths["result"], json.dumps(result, indent=2) + "\n")
    atomic_write_text(paths["feedback"], render_feedback(result))
    return paths
