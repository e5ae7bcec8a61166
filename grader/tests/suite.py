"""The hostile suite: every submission under grader/tests/submissions/<lab>/<name>/ graded
through the sandbox, each held to its expect.toml, and the machine checked afterwards for
what no submission may leave behind (a changed official binary, a file written outside its
run folder, a live process, a network connection that got through).

    python3 grader/tests/suite.py [--lab LAB]... [--name ENTRY]... [--repeat N] [--json FILE]   # prints the table last

test_submissions.py runs the same code under pytest (GPU tests).

expect.toml: status (graded | compile_error | forbidden), correctness (none | partial | full | any),
performance (any | zero), optional run_status, message_contains (words the result's
messages must hold), timing_flagged, and why (what the submission does, and why it
deserves that verdict).

--repeat N grades every entry but the controls N times (a verdict that depends on chance,
such as which sample the grader keeps or how samples are ordered, shows up as a row that
differs); every grade is a row, and an entry passes only if all of its grades matched.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import threading
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

TESTS = Path(__file__).resolve().parent
sys.path.insert(0, str(TESTS.parent))  # the cudalab package, when run as a script

from cudalab.building import build
from cudalab.isolation import cpus
from cudalab.grading import grade  # noqa: E402
from cudalab.config import Config  # noqa: E402
from cudalab.errors import CudalabError  # noqa: E402
from cudalab.lab.labs import load_lab  # noqa: E402
from cudalab.building.sdk import Manifest, ManifestError  # noqa: E402

SUITE = TESTS / "submissions"
CORRECTNESS = {"none": lambda passed, total: passed == 0,
               "partial": lambda passed, total: 0 < passed < total,
               "full": lambda passed, total: passed == total,
               "any": lambda passed, total: True}
LISTEN_PORT = 47321            # the network entry tries to reach the host here
ESCAPE_MARKER = "cudalab-escape-"
LEFTOVER_NAMES = ("cudalab-daemon", "cudalab-storm")


@dataclass
class Entry:
    lab: str
    name: str
    folder: Path
    expect: dict
    grade: str = ""  # which of several grades of the entry this is ("2/3"), or ""

    @property
    def label(self) -> str:
        return f"{self.lab}/{self.name}"

    def expected_words(self) -> str:
        e = self.expect
        if e["status"] != "graded":
            return e["status"]
        return f"correctness {e['correctness']}, performance {e['performance']}"


def entries(labs: list[str] | None = None, names: list[str] | None = None) -> list[Entry]:
    """The suite's entries, of `labs` and with `names` only when given (each lab's `correct`
    entry always comes along: it is the control graded first and last)."""
    found = []
    for lab_dir in sorted(SUITE.iterdir()):
        if labs and lab_dir.name not in labs:
            continue
        for folder in sorted(p for p in lab_dir.iterdir() if (p / "expect.toml").is_file()):
            if names and folder.name not in names and folder.name != "correct":
                continue
            expect = tomllib.loads((folder / "expect.toml").read_text(encoding="utf-8"))
            found.append(Entry(lab_dir.name, folder.name, folder, expect))
    return found


def _messages(result: dict) -> str:
    parts = [result.get("message", ""), *result["build"].get("feedback", []),
             *(c.get("message", "") for c in result.get("cases", [])),
             (result.get("performance") or {}).get("message", ""), (result.get("run") or {}).get("description", "")]
    return "\n".join(p for p in parts if p)


def mismatches(entry: Entry, result: dict) -> list[str]:
    """What in `result` differs from the entry's expect.toml, in words; [] when none."""
    e, problems = entry.expect, []
    if result["status"] != e["status"]:
        return [f"status {result['status']}, expected {e['status']} ({result.get('message', '')[:160]})"]
    for words in e.get("message_contains", []):
        if words not in _messages(result):
            problems.append(f"the messages do not say {words!r}")
    if e["status"] != "graded":
        return problems
    passed = sum(c["status"] == "passed" for c in result["cases"])
    if not CORRECTNESS[e["correctness"]](passed, len(result["cases"])):
        problems.append(f"{passed} of {len(result['cases'])} cases passed, expected {e['correctness']}")
    if e["performance"] == "zero" and result["score"]["performance"] != 0:
        problems.append(f"{result['score']['performance']} performance points, expected none")
    if "run_status" in e and (result.get("run") or {}).get("status") != e["run_status"]:
        problems.append(f"run status {(result.get('run') or {}).get('status')}, expected {e['run_status']}")
    if e.get("timing_flagged") and (result.get("performance") or {}).get("flagged") is not True:
        problems.append("the timing was not flagged")
    return problems


def actual_words(result: dict) -> str:
    if result["status"] != "graded":
        return result["status"]
    passed = sum(c["status"] == "passed" for c in result["cases"])
    perf = result.get("performance") or {}
    return f"{passed}/{len(result['cases'])} cases, performance {perf.get('status')}"


# --- what no submission may leave behind --------------------------------------------------

class Listener:
    """Accepts (and counts) connections on 127.0.0.1:LISTEN_PORT while the suite runs."""

    def __init__(self):
        self.connections = 0
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", LISTEN_PORT))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
                self.connections += 1
                conn.close()
            except OSError:
                continue

    def close(self):
        self.stop.set()
        self.thread.join(timeout=2)
        self.sock.close()


def _escape_places(config: Config) -> list[Path]:
    places = [Path("/"), Path("/tmp"), Path("/var/tmp"), Path("/dev/shm"), Path("/usr"), Path("/usr/local"),
              Path.home(), config.root, config.root.parent, config.work_dir, config.build_dir, config.bin_dir]
    return [p for p in places if p.is_dir()]


def escape_markers(config: Config) -> list[str]:
    """Marker files the writes_outside entry tries to leave outside its run folder."""
    found = []
    for place in _escape_places(config):
        try:
            found += [str(p) for p in place.iterdir() if p.name.startswith(ESCAPE_MARKER)]
        except OSError:
            continue
    for path in config.root.rglob(f"{ESCAPE_MARKER}*"):
        found.append(str(path))
    return sorted(set(found))


def leftover_processes() -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                name = (entry / "comm").read_text().strip()
            except OSError:
                continue
            if name in LEFTOVER_NAMES:
                found.append(f"{name} (pid {entry.name})")
    return found


def official_changes(config: Config) -> list[str]:
    try:
        manifest = Manifest(config.build_dir)
    except ManifestError as err:
        return [str(err)]
    changed = []
    for relative in manifest.files:
        try:
            manifest.verify(config.build_dir / relative)
        except ManifestError as err:
            changed.append(str(err))
    return changed


@dataclass
class SuiteRun:
    rows: list[dict] = field(default_factory=list)
    after: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return all(not r["problems"] for r in self.rows) and not any(self.after.values())

    def repeated(self) -> dict[str, list[dict]]:
        """The rows of each entry graded several times (--repeat), in the order graded."""
        by_entry: dict[str, list[dict]] = {}
        for r in self.rows:
            if r.get("grade"):
                by_entry.setdefault(r["case"], []).append(r)
        return by_entry

    def table(self) -> str:
        lines = [f"{'case':44} {'expected':34} {'actual':34} {'points':>9} {'time':>6}  verdict"]
        for r in self.rows:
            case = f"{r['case'][:42 - len(r['grade'])]} #{r['grade']}" if r.get("grade") else r["case"][:44]
            lines.append(f"{case:44} {r['expected'][:34]:34} {r['actual'][:34]:34} "
                         f"{r['points']:>9} {r['seconds']:5.1f}s  {'as expected' if not r['problems'] else 'MISMATCH: ' + '; '.join(r['problems'])}")
        for entry, rows in self.repeated().items():
            matched = sum(not r["problems"] for r in rows)
            lines.append(f"{entry}: {matched} of {len(rows)} grades as expected"
                         + ("" if matched == len(rows) else " (MISMATCH: the entry fails)"))
        lines.append("after the suite: " + "; ".join(
            f"{what}: {', '.join(v) if v else 'none'}" for what, v in self.after.items()))
        return "\n".join(lines)


def grade_many(config: Config, lab: str, folders: list[Path], *, on_result) -> None:
    """Grade several submissions as a class is graded: their builds side by side on the CPU
    cores, then their GPU runs one at a time (timing needs the GPU alone); on_result(folder,
    result) sees each result as it is done, in the order the folders were given."""
    cpus.keep_to_work_cpus(config)
    try:
        build.ensure_official(config, load_lab(config, lab))
    except CudalabError:
        pass  # each grade reports it in its own result
    with ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as pool:
        pending = list(pool.map(lambda f: grade.begin(config, lab, f, bring_official_up_to_date=False), folders))
    for folder, item in zip(folders, pending):
        on_result(folder, grade.finish(item))


def run_suite(config: Config, labs: list[str] | None = None, on_row=None,
              names: list[str] | None = None, repeat: int = 1) -> SuiteRun:
    """Grade every entry (builds side by side, GPU runs one at a time), the lab's `correct`
    entry first and again last: a good submission grades the same after the hostile ones.
    With repeat > 1 every other entry is graded that many times, all of them once and then
    all again, each grade a row of its own."""
    if repeat < 1:
        raise ValueError("repeat must be at least 1")
    run = SuiteRun()
    listener = Listener()
    try:
        by_lab: dict[str, list[Entry]] = {}
        for entry in entries(labs, names):
            by_lab.setdefault(entry.lab, []).append(entry)
        for lab, lab_entries in by_lab.items():
            control = next((e for e in lab_entries if e.name == "correct"), None)
            hostile = [e for e in lab_entries if e is not control]
            order = ([control] if control else []) + [
                Entry(e.lab, e.name, e.folder, e.expect, f"{i}/{repeat}" if repeat > 1 else "")
                for i in range(1, repeat + 1) for e in hostile]
            if control:
                order.append(Entry(lab, "correct (again, last)", control.folder, control.expect))
            pending = iter(order)
            clock = {"last": time.monotonic()}

            def done(folder, result, pending=pending, clock=clock):
                entry = next(pending)  # grade_many reports in the order it was given
                now = time.monotonic()
                row = {"case": entry.label, "grade": entry.grade, "expected": entry.expected_words(),
                       "actual": actual_words(result),
                       "points": (f"{result['score']['total']:g}/{result['score']['total_max']:g}"
                                  if result.get("score") else "-"),
                       "seconds": now - clock["last"], "problems": mismatches(entry, result),
                       "status": result["status"], "message": result.get("message", "")}
                clock["last"] = now
                run.rows.append(row)
                if on_row:
                    on_row(row)
            grade_many(config, lab, [e.folder for e in order], on_result=done)
    finally:
        listener.close()
    run.after = {"official binaries changed": official_changes(config),
                 "files written outside a run folder": escape_markers(config),
                 "processes left behind": leftover_processes(),
                 "connections that reached the host": [str(listener.connections)] if listener.connections else []}
    return run


def table_header() -> str:
    return SuiteRun().table().splitlines()[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lab", action="append", help="only this lab's entries (repeatable)")
    parser.add_argument("--name", action="append", help="only this entry (repeatable; the lab's control "
                        "`correct` always runs too)")
    parser.add_argument("--repeat", type=int, default=1, metavar="N",
                        help="grade every entry but the controls N times; each grade is a row, and an entry "
                        "passes only if all of its grades match (default 1)")
    parser.add_argument("--json", type=Path, help="write every row as JSON here")
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error("--repeat needs a whole number of at least 1")
    config = Config.load()
    run = run_suite(config, args.lab, names=args.name, repeat=args.repeat,
                    on_row=lambda r: print(f"  {r['case']}: {r['actual']} "
                                           f"({'ok' if not r['problems'] else r['problems']})",
                                           file=sys.stderr, flush=True))
    if args.json:
        args.json.write_text(json.dumps({"rows": run.rows, "after": run.after}, indent=1))
    print(run.table())
    return 0 if run.ok else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
