"""A batch's progress: a rich progress bar on a terminal, plain lines in a log, JSON lines
for machines (--json). Every reporter is told the same things, from several threads:
begin, phase, started, done, end. Ids and hand-in names come from the hand-ins: the lines
show them through console.printable, one line each, never as terminal control sequences."""
from __future__ import annotations

import json
import sys
import threading
import time

from ..console import printable
from ..status import Status


def _one(text) -> str:
    """A student's id or a hand-in's name within a line: it may not break the line."""
    return printable(text, one_line=True)


def _score(result: dict) -> str:
    score = result.get("score") or {}
    if result.get("status") == Status.GRADED and score:
        return f"{score.get('total', 0):g}/{score.get('total_max', 0):g}"
    return result.get("status", "?")


class Reporter:
    """Counts and rate; subclasses say them."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.total = self.done_before = self.done_now = 0
        self.started_at = time.monotonic()
        self.current_phase = ""
        self.todo_why: list[tuple[str, int]] = []

    def rate_per_min(self) -> float:
        elapsed = time.monotonic() - self.started_at
        return 60.0 * self.done_now / elapsed if elapsed > 0 and self.done_now else 0.0

    def left_s(self) -> float | None:
        rate = self.rate_per_min()
        todo = self.total - self.done_before - self.done_now
        return 60.0 * todo / rate if rate else None

    def begin(self, total: int, done: int, skipped: list[dict], changed: list[str],
              why: list[tuple[str, int]] = ()) -> None:
        """`why`: (why, how many) of the hand-ins to grade now (batch.Plan.todo_reasons)."""
        self.total, self.done_before = total, done
        self.started_at = time.monotonic()
        self.todo_why = list(why)
        self._begin(skipped, changed)

    def phase(self, text: str) -> None:
        with self.lock:
            self.current_phase = text
            self._phase(text)

    def started(self, job, what: str) -> None:
        with self.lock:
            self._started(job, what)

    def done(self, job, result: dict) -> None:
        with self.lock:
            self.done_now += 1
            self._done(job, result)

    def end(self, published: dict, interrupted: bool) -> None:
        with self.lock:
            self._end(published, interrupted)

    def _begin(self, skipped, changed) -> None: ...
    def _phase(self, text) -> None: ...
    def _started(self, job, what) -> None: ...
    def _done(self, job, result) -> None: ...
    def _end(self, published, interrupted) -> None: ...


def _counted(groups) -> str:
    """(why, how many) pairs as '2 new; 1 asked for by --regrade'."""
    return "; ".join(f"{count} {why}" for why, count in groups)


def _closing_lines(published: dict, interrupted: bool) -> list[str]:
    """The batch's last word: how many hand-ins have a grade and, grouped, why the others have none."""
    info = published["info"]
    counts = info["counts"]
    head = "interrupted: " if interrupted else ""
    shared = counts.get("shared_ids", 0)
    without = [(group["why"], group["count"]) for group in info.get("not_graded") or []]
    if not without:
        lines = [f"{head}all {counts['handins']} hand-ins have a grade"]
    else:
        graded, ungraded = counts["graded"], sum(count for _, count in without)
        lines = [f"{head}{graded} of {counts['handins']} hand-in{'s' if counts['handins'] != 1 else ''} "
                 f"{'has' if graded == 1 else 'have'} a grade; {ungraded} not graded: "
                 + "; ".join(f"{count} {why}" if len(without) > 1 else why for why, count in without)
                 + ". Run the same command again (where that is fixed) to grade them; what has a grade is kept"]
    if shared:
        lines.append(f"{shared} student{'s' if shared != 1 else ''} handed in more than once: each hand-in was "
                     "graded and flagged in summary.html, and canvas.csv has no grade for them until you decide "
                     "which hand-in counts")
    missing = info.get("missing") or []
    if missing:
        names = ", ".join(_one(m["student"]) for m in missing[:20]) + (", ..." if len(missing) > 20 else "")
        lines.append(f"{len(missing)} student{'s' if len(missing) != 1 else ''} on the roster handed nothing in: "
                     f"{names}")
    return lines


class PlainReporter(Reporter):
    """One line per event on stderr: for logs, pipes and CI."""

    def __init__(self, stream=None) -> None:
        super().__init__()
        self.stream = stream or sys.stderr

    def _say(self, line: str) -> None:
        print(printable(line), file=self.stream, flush=True)

    def _begin(self, skipped, changed) -> None:
        why = f" ({_counted(self.todo_why)})" if self.todo_why else ""
        self._say(f"batch: {self.total} hand-ins, {self.done_before} graded before, "
                  f"{self.total - self.done_before} to grade now{why}")
        for entry in skipped:
            self._say(f"skipped {_one(entry['name'])}: {entry['reason']}")
        for student in changed:
            self._say(f"changed since graded: {_one(student)} (its grade is kept; --regrade {_one(student)} "
                      "grades it again)")

    def _phase(self, text) -> None:
        self._say(f"phase: {text}")

    def _done(self, job, result) -> None:
        count = self.done_before + self.done_now
        left = self.left_s()
        tail = f", about {left / 60:.1f} min left" if left is not None else ""
        self._say(f"[{count}/{self.total}] {_one(job.student)}: {_score(result)} "
                  f"({self.rate_per_min():.1f}/min{tail})")

    def _end(self, published, interrupted) -> None:
        for line in _closing_lines(published, interrupted):
            self._say(line)
        for name, path in published["paths"].items():
            self._say(f"wrote {name}: {path}")


class JsonReporter(Reporter):
    """One JSON object per line on stdout (schema cudalab.batch-event/1)."""

    def _emit(self, event: str, **fields) -> None:
        print(json.dumps({"schema": "cudalab.batch-event/1", "event": event, **fields}), flush=True)

    def _begin(self, skipped, changed) -> None:
        self._emit("begin", total=self.total, done_before=self.done_before, skipped=skipped, changed=changed,
                   why=[{"why": why, "count": count} for why, count in self.todo_why])

    def _phase(self, text) -> None:
        self._emit("phase", phase=text)

    def _started(self, job, what) -> None:
        self._emit("started", student=job.student, key=job.key, what=what)

    def _done(self, job, result) -> None:
        self._emit("done", student=job.student, key=job.key, status=result.get("status"),
                   score=result.get("score"), graded=self.done_before + self.done_now, total=self.total,
                   rate_per_min=round(self.rate_per_min(), 2),
                   left_s=None if self.left_s() is None else round(self.left_s(), 1))

    def _end(self, published, interrupted) -> None:
        self._emit("end", interrupted=interrupted, **published)


class RichReporter(PlainReporter):
    """A live progress bar on a terminal: counts, rate, time left and the current phase."""

    def __init__(self) -> None:
        super().__init__()
        from rich.console import Console
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                                   TimeRemainingColumn)
        self.console = Console(file=sys.stderr)
        self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), TimeRemainingColumn(),
                            console=self.console, transient=False)
        self.task = None

    def _say(self, line: str) -> None:
        self.console.print(printable(line), highlight=False, markup=False)

    def _begin(self, skipped, changed) -> None:
        super()._begin(skipped, changed)
        self.bar.start()
        self.task = self.bar.add_task("starting", total=self.total, completed=self.done_before, rate="")

    def _phase(self, text) -> None:
        if self.task is not None:
            self.bar.update(self.task, description=text)

    def _started(self, job, what) -> None:
        if self.task is not None:
            from rich.markup import escape  # the bar's description is rich markup: an id is not
            self.bar.update(self.task, description=escape(f"{self.current_phase}: {_one(job.student)} ({what})"))

    def _done(self, job, result) -> None:
        if self.task is not None:
            self.bar.update(self.task, advance=1, rate=f"{self.rate_per_min():.1f}/min")
        self._say(f"{_one(job.student)}: {_score(result)}")

    def _end(self, published, interrupted) -> None:
        self.bar.stop()
        super()._end(published, interrupted)


def make(json_lines: bool = False) -> Reporter:
    if json_lines:
        return JsonReporter()
    return RichReporter() if sys.stderr.isatty() else PlainReporter()
