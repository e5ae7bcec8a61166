"""Human output: progress and warnings on stderr, tables on stdout.

rich is used when the stream is a terminal; otherwise plain text, so that logs and pipes
get stable, unwrapped lines.

Whatever is printed may hold text a student controls (compiler output quoting their source,
their program's stderr, ids and file names from hand-ins), so every function here shows
control characters as visible escapes (printable()): an escape sequence could otherwise
move the cursor and overwrite a FAIL with a PASS, or set the instructor's clipboard (OSC 52).
"""
from __future__ import annotations

import sys
import unicodedata
from typing import Sequence, TextIO


# Kept as they are in multi-line text: a newline and a tab cannot rewrite what was printed.
_LAYOUT = frozenset("\n\t")
# Controls, formatting (bidirectional overrides, zero widths), undecodable bytes (surrogates)
# and the Unicode line and paragraph separators: each can change what a line seems to say.
_HIDDEN = frozenset(("Cc", "Cf", "Cs", "Zl", "Zp"))


_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _visible(char: str) -> str:
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def printable(text: object, *, one_line: bool = False) -> str:
    """`text` as it may reach a terminal: every control character (ESC, CR, backspace, BEL,
    the C1 set, bidirectional overrides, line separators, undecodable bytes) written as a
    visible escape such as \\x1b. Newlines and tabs stay, unless `one_line` (a name or an id
    must not start a line of its own that could pass for the grader's)."""
    text = str(text)
    keep = frozenset() if one_line else _LAYOUT
    if text.isprintable() and not any(c in text for c in "\n\t"):
        return text
    return "".join(_visible(c) if c not in keep and unicodedata.category(c) in _HIDDEN else c for c in text)


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
    message = printable(message)
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
    title, columns = printable(title, one_line=True), [printable(c, one_line=True) for c in columns]
    cells = [[printable(c, one_line=True) for c in row] for row in rows]
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
    """Print pre-rendered text (a template's output) as it is, control characters aside."""
    stream = stream or sys.stdout
    body = printable(body)
    stream.write(body if body.endswith("\n") else body + "\n")
    stream.flush()
