"""Human output: progress and warnings on stderr, tables on stdout.

rich is used when the stream is a terminal; otherwise plain text, so that logs and pipes
get stable, unwrapped lines.
"""
from __future__ import annotations

import sys
from typing import Sequence, TextIO


def _rich_console(stream: TextIO):
    if not stream.isatty():
        return None
    from rich.console import Console
    return Console(file=stream, highlight=False)


_quiet = False


def set_quiet(quiet: bool) -> None:
    """Silence info() and warn() (errors still print): for a command such as `cudalab batch`
    that grades many submissions at once and shows its own progress instead; what a grade
    says is in its result either way."""
    global _quiet
    _quiet = quiet


def _say(prefix: str, style: str, message: str) -> None:
    if _quiet and prefix != "error: ":
        return
    console = _rich_console(sys.stderr)
    if console is None:
        print(f"{prefix}{message}", file=sys.stderr, flush=True)
    else:
        from rich.markup import escape
        console.print(f"[{style}]{escape(prefix)}[/]{escape(message)}", soft_wrap=True)


def info(message: str) -> None:
    _say("", "dim", message)


def warn(message: str) -> None:
    _say("warning: ", "yellow", message)


def error(message: str) -> None:
    _say("error: ", "bold red", message)


def table(title: str, columns: Sequence[str], rows: Sequence[Sequence[object]],
          stream: TextIO | None = None) -> None:
    stream = stream or sys.stdout
    cells = [[str(c) for c in row] for row in rows]
    console = _rich_console(stream)
    if console is not None:
        from rich.table import Table
        t = Table(title=title)
        for column in columns:
            t.add_column(column)
        for row in cells:
            t.add_row(*row)
        console.print(t)
        return
    widths = [max([len(col)] + [len(row[i]) for row in cells]) for i, col in enumerate(columns)]
    print(title, file=stream)
    for row in [list(columns)] + cells:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip(),
              file=stream)


def text(body: str, stream: TextIO | None = None) -> None:
    """Print pre-rendered text (a template's output) as it is."""
    stream = stream or sys.stdout
    stream.write(body if body.endswith("\n") else body + "\n")
    stream.flush()
