#!/usr/bin/env python3
"""A class of hand-ins made from the hostile suite, to try `cudalab batch` on, and the
check of a batch's results against what each hand-in deserves.

    python3 tools/demo_class.py make LAB N HANDINS [--correct 0.4] [--hung K]
        N hand-ins (students s001..sNNN): a share of them (--correct, default 0.4, as in a
        class where most code works) the suite's correct entry and the course's solution in
        turn, the rest cycling through the lab's other suite entries (slow, wrong and
        hostile ones), packed as .tar.gz, .zip and folders in turn, each with a manifest
        naming its student; HANDINS/../class.json says which entry each student got. Entries
        that hang until the run's time limit are left out beyond K of them (default 1): each
        holds its GPU for the whole limit (the lab's [scoring] time_limit_s).
    python3 tools/demo_class.py suite LAB HANDINS [--repeat N] [--again NAME]...
        one hand-in of each of the lab's suite entries (the hung ones left out beyond one),
        the course's solution N times (default 3), the entries named by --again N times,
        and the lab's starter once: the whole suite as one class, for one batch.
    python3 tools/demo_class.py verify HANDINS OUT
        every student's grade (OUT/records) held to its entry's expect.toml, and the machine
        checked for what no submission may leave behind; prints a table, exits 1 on any
        mismatch.
"""
from __future__ import annotations

import argparse
import io
import json
import sys
import tarfile
import zipfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "grader"))
sys.path.insert(0, str(ROOT / "grader" / "tests"))

import suite  # noqa: E402  (the hostile suite: its entries and what each deserves)
from cudalab.lab import labs  # noqa: E402
from cudalab.config import Config  # noqa: E402

HANGS = {"infinite_loop"}
SOLUTION = "the course's solution"
STARTER = "the course's starter"


def _pack(dest: Path, form: str, files: dict[str, bytes]) -> None:
    if form == "folder":
        dest.mkdir(parents=True)
        for name, data in files.items():
            (dest / name).write_bytes(data)
    elif form == "tar.gz":
        with tarfile.open(dest, "w:gz") as tar:
            for name, data in files.items():
                info = tarfile.TarInfo(name)
                info.size, info.mode = len(data), 0o644
                tar.addfile(info, io.BytesIO(data))
    else:
        with zipfile.ZipFile(dest, "w") as archive:
            for name, data in files.items():
                archive.writestr(name, data)


def _write_class(lab: str, handins: Path, chosen_folders: list[tuple[str, Path]]) -> None:
    """The hand-ins, one per (entry name, folder), students s001..., packed as .tar.gz, .zip and
    folders in turn, each with a manifest; HANDINS/../class.json says which entry each got."""
    spec = labs.load_lab(Config.load(root=ROOT), lab)
    handins.mkdir(parents=True, exist_ok=False)
    chosen = {}
    for index, (name, folder) in enumerate(chosen_folders):
        student = f"s{index + 1:03d}"
        files = {f: (folder / f).read_bytes() for f in spec.files}
        # A comment of its own makes every hand-in a different file, as a class's are.
        files[spec.source_file] = files[spec.source_file] + f"\n// {student}\n".encode()
        files["cudalab-manifest.json"] = json.dumps({"schema": "cudalab.handin-manifest/1", "lab": lab,
                                                     "student": student}).encode()
        form = ("tar.gz", "zip", "folder")[index % 3]
        target = handins / {"tar.gz": f"{lab}-{student}.tar.gz", "zip": f"{student}.zip", "folder": student}[form]
        _pack(target, form, files)
        chosen[student] = name
    (handins.parent / "class.json").write_text(json.dumps({"lab": lab, "students": chosen}, indent=2) + "\n")
    kinds = Counter(chosen.values())
    print(f"{len(chosen)} hand-ins in {handins}: " + ", ".join(f"{n} x {k}" for k, n in sorted(kinds.items())))


def make(lab: str, count: int, handins: Path, hung: int, correct: float) -> None:
    entries = suite.entries([lab])
    working = [(e.name, e.folder) for e in entries if e.name == "correct"] + [(SOLUTION, ROOT / "solutions" / lab)]
    others = [(e.name, e.folder) for e in entries if e.name != "correct"]
    chosen, hangs, cycle = [], 0, 0
    while len(chosen) < count:
        if len(chosen) < round(correct * count):
            name, folder = working[len(chosen) % len(working)]
        else:
            name, folder = others[cycle % len(others)]
            cycle += 1
        if name in HANGS:
            if hangs >= hung:
                continue
            hangs += 1
        chosen.append((name, folder))
    _write_class(lab, handins, chosen)


def whole_suite(lab: str, handins: Path, repeat: int, again: list[str]) -> None:
    entries = suite.entries([lab])
    unknown = set(again) - {e.name for e in entries}
    if unknown:
        raise SystemExit(f"--again names no entry of the {lab} suite: {', '.join(sorted(unknown))}")
    chosen = [(SOLUTION, ROOT / "solutions" / lab)] * repeat + [(STARTER, ROOT / "starter" / lab)]
    for e in entries:
        chosen += [(e.name, e.folder)] * (repeat if e.name in again else 1)
    _write_class(lab, handins, chosen)


def verify(handins: Path, out: Path) -> int:
    plan = json.loads((handins.parent / "class.json").read_text())
    lab, students = plan["lab"], plan["students"]
    entries = {entry.name: entry for entry in suite.entries([lab])}
    rows, failures = [], 0
    for student, name in sorted(students.items()):
        record_files = list((out / "records").glob(f"{student}*.json"))
        record = json.loads(record_files[0].read_text()) if record_files else None
        if record is None:
            rows.append((student, name, "no record", "MISSING"))
            failures += 1
            continue
        result = record["result"]
        if name == SOLUTION:
            problems = [] if result["status"] == "graded" and result["score"]["total"] == result["score"]["total_max"] \
                else [f"{result['status']} {result['score']}"]
        elif name == STARTER:
            problems = [] if result["status"] == "graded" and result["score"]["total"] == 0 \
                else [f"{result['status']} {result['score']}"]
        else:
            problems = suite.mismatches(entries[name], result)
        failures += bool(problems)
        total = (result.get("score") or {}).get("total")
        rows.append((student, name, f"{result['status']} {total}", "; ".join(problems) or "as expected"))
    config = Config.load(root=ROOT)
    machine = suite.official_changes(config) + suite.escape_markers(config) + suite.leftover_processes()
    width = max(len(r[1]) for r in rows)
    for student, name, got, verdict in rows:
        print(f"{student}  {name:<{width}}  {got:<22}  {verdict}")
    print(f"{len(rows) - failures} of {len(rows)} as expected; machine after the batch: "
          + ("; ".join(machine) if machine else "nothing left behind, nothing changed"))
    return 1 if failures or machine else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    verbs = parser.add_subparsers(dest="verb", required=True)
    m = verbs.add_parser("make")
    m.add_argument("lab")
    m.add_argument("count", type=int)
    m.add_argument("handins", type=Path)
    m.add_argument("--hung", type=int, default=1)
    m.add_argument("--correct", type=float, default=0.4)
    w = verbs.add_parser("suite")
    w.add_argument("lab")
    w.add_argument("handins", type=Path)
    w.add_argument("--repeat", type=int, default=3)
    w.add_argument("--again", action="append", default=[])
    v = verbs.add_parser("verify")
    v.add_argument("handins", type=Path)
    v.add_argument("out", type=Path)
    args = parser.parse_args()
    if args.verb == "make":
        make(args.lab, args.count, args.handins, args.hung, args.correct)
        return 0
    if args.verb == "suite":
        whole_suite(args.lab, args.handins, args.repeat, args.again)
        return 0
    return verify(args.handins, args.out)


if __name__ == "__main__":
    sys.exit(main())
