"""Turn a grade result (the `cudalab.grade/1` JSON document) into files and text.

The templates in cudalab/templates/ render from that document alone, read once as a typed
record (record.GradeResult), so what a student reads and what a machine reads can never
disagree. A result holds student-controlled text
(compiler output quoting their source, their program's stderr, file and hand-in names), so
the HTML templates are autoescaped and the Markdown feedback escapes every value it shows
(markdown_text): raw HTML, links and images come only from the template itself.
"""
from __future__ import annotations

import json
import os
import re
import tempfile
from datetime import datetime, timezone
from pathlib import Path

import jinja2

from ..errors import GraderError
from ..record import GradeResult, RecordError
from ..status import WORDS as _STATUS_WORDS, PerformanceStatus, Status

RESULT_FILE = "result.json"
FEEDBACK_FILE = "feedback.md"
FEEDBACK_HTML_FILE = "feedback.html"

STATUS_WORDS = _STATUS_WORDS  # each grade status in words (status.Status)


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


class Verbatim(str):
    """Text the Markdown feedback shows as it is: a code fence's own backticks, the lines
    inside one, text markdown_text has escaped already."""


# Markdown that would make a link, an image, raw HTML or a code span of student text, and
# the backslash that would undo an escape in front of it.
_MARKDOWN_ACTIVE = re.compile(r"[\\`\[\]@]")
_HTML_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
# A bare web address becomes a link on GitHub and wherever linkify is on: an escaped colon or
# dot keeps it text.
_BARE_LINK = re.compile(r"(?i)\b(https?|ftps?|mailto|www)([:.])")


def markdown_text(value) -> str:
    """`value` as Markdown that shows it literally: no raw HTML (< > & as entities), no link,
    image, autolink or bare address (brackets, @ and the colon or dot of a scheme escaped) and
    no code span. What stays (emphasis, a heading) only changes how text looks."""
    if isinstance(value, Verbatim):
        return value
    text = _MARKDOWN_ACTIVE.sub(lambda m: "\\" + m[0], str(value))
    text = "".join(_HTML_ENTITIES.get(char, char) for char in text)
    return Verbatim(_BARE_LINK.sub(lambda m: f"{m[1]}\\{m[2]}", text))


def _verbatim(text) -> Verbatim:
    """Lines shown inside a code fence (see _fence): literal there, whatever they hold."""
    return Verbatim("\n".join(text) if isinstance(text, list) else str(text))


def _fence(text: str | list[str]) -> Verbatim:
    """A Markdown code fence longer than any run of backticks in `text`, so that compiler
    output quoting backticks cannot end the block early and turn into Markdown."""
    body = "\n".join(text) if isinstance(text, list) else str(text)
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    return Verbatim("`" * max(3, longest + 1))


def _table_cell(text: str) -> str:
    """Text that stays inside one cell of a Markdown table."""
    return " ".join(str(text).replace("|", "\\|").splitlines())


def _escaped_table_cell(text: str) -> Verbatim:
    """_table_cell of student text: escaped as markdown_text does, then kept in its cell."""
    return Verbatim(markdown_text(" ".join(str(text).splitlines())).replace("|", "\\|"))


def _relative_link(path: str) -> str | None:
    """A link the feedback may hold: a relative path below its own folder (the grader's
    pictures under images/), or None."""
    path = str(path)
    if not path or "\\" in path or ":" in path or any(p in ("", ".", "..") for p in path.split("/")):
        return None
    return path


# Markdown templates that show student text (every other .md.j2 shows the course's own).
STUDENT_MARKDOWN = ("feedback.md.j2",)


def environment(student_markdown: bool = False) -> jinja2.Environment:
    """The Jinja2 environment of every template the package ships. Templates named *.html.j2
    are autoescaped: whatever a result holds (compiler output, a file name) is shown as text.
    With `student_markdown` (the STUDENT_MARKDOWN templates) every value a template shows
    passes through markdown_text, unless a filter made it Verbatim (fence, verbatim,
    table_cell)."""
    env = jinja2.Environment(loader=jinja2.PackageLoader("cudalab", "templates"),
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                             trim_blocks=True, lstrip_blocks=True,
                             finalize=markdown_text if student_markdown else None,
                             autoescape=jinja2.select_autoescape(enabled_extensions=("html.j2",),
                                                                 default_for_string=False, default=False))
    env.filters.update(points=points_text, ms=ms_text, fence=_fence,
                       table_cell=_escaped_table_cell if student_markdown else _table_cell,
                       relative_link=_relative_link, verbatim=_verbatim)
    env.globals.update(Status=Status, PerformanceStatus=PerformanceStatus)
    return env


def render(template: str, result: GradeResult) -> str:
    return environment(student_markdown=template in STUDENT_MARKDOWN).get_template(template).render(r=result)


def render_summary(result: GradeResult) -> str:
    return render("summary.txt.j2", result)


def render_feedback(result: GradeResult) -> str:
    return render("feedback.md.j2", result)


def read_grade(result: dict, where: Path) -> GradeResult:
    """The grade `cudalab grade` just made, read as a typed record; a GraderError that says
    so where it cannot be (the grader wrote what it cannot read: not the student's fault)."""
    try:
        return GradeResult.from_json(result)
    except RecordError as err:
        raise GraderError(f"The grade written to {where} cannot be read back ({err}), so no feedback was "
                          "written; this is a fault of the grader, not of the hand-in. Report it with that "
                          "file.") from None


def write_outputs(out_dir: Path, result: dict) -> tuple[dict[str, Path], GradeResult]:
    """result.json first (the record as grade made it: it exists whatever follows), then the
    record read once (read_grade), then feedback.md from it; each file atomically. Returns the
    paths and the typed record."""
    paths = {"result": out_dir / RESULT_FILE, "feedback": out_dir / FEEDBACK_FILE}
    atomic_write_text(paths["result"], json.dumps(result, indent=2) + "\n")
    record = read_grade(result, paths["result"])
    atomic_write_text(paths["feedback"], render_feedback(record))
    return paths, record
