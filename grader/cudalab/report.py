"""Turn a grade result (the `cudalab.grade/1` JSON document) into files and text.

The templates in cudalab/templates/ render from that document alone, so what a student
reads and what a machine reads can never disagree.
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import jinja2

RESULT_FILE = "result.json"
FEEDBACK_FILE = "feedback.md"

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


def atomic_write_text(path: Path, text: str) -> None:
    """Write via a temporary file in the same folder and os.replace: readers see the old file
    or the new one, never half of one, even if the grader is killed mid-write."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def _points(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.1f}" if value != int(value) else f"{int(value)}"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g} ms"


def environment() -> jinja2.Environment:
    """The Jinja2 environment of every template the package ships."""
    env = jinja2.Environment(loader=jinja2.PackageLoader("cudalab", "templates"),
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                             trim_blocks=True, lstrip_blocks=True, autoescape=False)
    env.filters.update(points=_points, ms=_ms)
    env.globals.update(status_words=STATUS_WORDS)
    return env


def render(template: str, result: dict) -> str:
    return environment().get_template(template).render(r=result)


def render_summary(result: dict) -> str:
    return render("summary.txt.j2", result)


def render_feedback(result: dict) -> str:
    return render("feedback.md.j2", result)


def write_outputs(out_dir: Path, result: dict) -> dict[str, Path]:
    """result.json first (the record), then feedback.md; both atomically."""
    paths = {"result": out_dir / RESULT_FILE, "feedback": out_dir / FEEDBACK_FILE}
    atomic_write_text(paths["result"], json.dumps(result, indent=2) + "\n")
    atomic_write_text(paths["feedback"], render_feedback(result))
    return paths
