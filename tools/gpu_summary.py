#!/usr/bin/env python3
"""The short table tools/gpu-check.sh prints last: the isolation in force, test totals,
each lab's ladder at every bench size, the grades of each lab's solution and starter
(on the grader's clock: each program's time per call round by round, the protocol's
cost, the physical floor, and where a grade's time went), each lab's solution checked as a hand-in (its
verdicts and how long the check took), the sanitizer fixtures' first findings, and the
hostile suite's table.

    gpu_summary.py OUT_DIR
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path


def last_match(path: Path, pattern: str) -> str:
    if not path.exists():
        return f"({path.name} missing)"
    found = [line for line in path.read_text(errors="replace").splitlines() if re.search(pattern, line)]
    return found[-1].strip() if found else f"(no summary line in {path.name})"


def load(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def results(out: Path, kind: str):
    """(name, JSON) of each <kind>_<name>.json in out; a line for each that is unreadable."""
    for path in sorted(out.glob(f"{kind}_*.json")):
        data = load(path)
        name = path.stem[len(kind) + 1:]
        if not data:
            print(f"{kind} {name}: no result (see {path.stem}.log)")
            continue
        yield name, data


def ladder_rows(ladder: dict) -> list[str]:
    rows = []
    for case in ladder.get("cases", []):
        rows.append(f"  {case['name']} ({case.get('bytes_moved', 0) / 1e9:.2f} GB moved)")
        rows.append(f"    {'rung':44} {'median ms':>10} {'spread':>7} {'GB/s':>8} {'% copy':>7} "
                    f"{'vs prev':>8} {'vs lib':>7}  check")
        for r in case.get("rungs", []):
            def num(key, fmt, scale=1.0):
                v = r.get(key)
                return format(v * scale, fmt) if isinstance(v, (int, float)) else "-"
            rows.append(f"    {r['name'][:44]:44} {num('median_ms', '10.4f')} {num('spread', '6.2f', 100)}% "
                        f"{num('gbps', '8.1f')} {num('fraction_of_copy', '6.1f', 100)}% "
                        f"{num('speedup_over_previous', '7.2f')}x {num('fraction_of_library', '6.3f')}  "
                        f"{r.get('verdict', r.get('status', '?'))}")
        lib = case.get("library")
        if lib:
            rows.append(f"    library: {lib['name']} {lib['median_ms']:.4f} ms, {lib['gbps']:.1f} GB/s; "
                        f"copy roof {case.get('copy_gbps', 0):.1f} GB/s")
    return rows


def main() -> int:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "build/gpu-check")
    print("=" * 100)
    device = (out / "device.txt").read_text().strip().splitlines()[-1] if (out / "device.txt").exists() else "?"
    print(f"device: {device}")
    print(f"isolation: {(out / 'isolation.txt').read_text().strip()[:300] if (out / 'isolation.txt').exists() else '?'}")
    print(f"ctest:  {last_match(out / 'ctest.log', r'tests passed|tests failed')}")
    print(f"pytest: {last_match(out / 'pytest.log', r'passed|failed|error')}")
    for path in sorted(out.glob("receipt_*.json")):
        receipt = load(path) or {}
        lab = path.stem.split("_", 1)[1].rsplit("_", 1)[0]
        seconds = (out / f"check_{lab}.time").read_text().strip() if (out / f"check_{lab}.time").exists() else "?"
        verdicts = " ".join(f"{c['name']}={c['verdict']}" for c in receipt.get("checks", []))
        print(f"check {lab} solution: {'accepted' if receipt.get('accepted') else 'NOT accepted'} in {seconds} s: {verdicts}")
    for path in sorted((out / "receipts").glob("*.txt")):
        findings = [line.strip() for line in path.read_text().splitlines() if line.strip().startswith("- ")]
        sanitizer = [f for f in findings if "sanitizer" in f.lower() or ".cu:" in f]
        print(f"receipt {path.stem}: {sanitizer[0][:160] if sanitizer else 'no sanitizer finding'}")
    for lab, ladder in results(out, "ladder"):
        print(f"ladder {lab} (seed {ladder.get('seed')}, {ladder.get('samples')} samples):")
        print("\n".join(ladder_rows(ladder)))
    for name, g in results(out, "grade"):
        score = g.get("score") or {}
        first_fail = next((c.get("message", "") for c in g.get("cases", []) if c.get("status") != "passed"), "")
        perf = g.get("performance") or {}
        seconds = (out / f"grade_{name}.time").read_text().strip() if (out / f"grade_{name}.time").exists() else "?"
        print(f"grade {name}: {g.get('status')} {score.get('total', '?')}/{score.get('total_max', '?')} "
              f"(correctness {score.get('correctness', '?')}, performance {score.get('performance', '?')}"
              f"{', ratio %.3f' % perf['ratio'] if isinstance(perf.get('ratio'), (int, float)) else ''}) in {seconds} s"
              f"{'; ' + g.get('message', '')[:120] if g.get('status') != 'graded' else ''}"
              f"{'; first failure: ' + first_fail[:90] if first_fail else ''}")
        phases = (g.get("provenance") or {}).get("phases_s") or {}
        if phases:
            beside = {"device_probe", "audit_start"}  # run while the submission builds (grade.grade)
            print("    time: " + ", ".join(f"{k} {v:.1f} s" + (" (beside the build)" if k in beside else "")
                                       for k, v in phases.items()))
        clock = perf.get("clock") or {}
        if clock:
            rounds = ", ".join(f"{e:.4f}" for e in clock.get("reference_rounds_ms", []))
            mine = ", ".join(f"{e:.4f}" for e in clock.get("student_rounds_ms", []))
            reported = clock.get("student_reported_ms")
            said = format(reported, ".4f") if isinstance(reported, (int, float)) else "nothing"
            print(f"    grader's clock: reference {clock['reference_ms']:.4f} ms per call (rounds [{rounds}], agree "
                  f"within {100 * clock['reference_agreement']:.2f}%), submission {clock['student_ms']:.4f} ms "
                  f"(rounds [{mine}]); protocol cost (the reference's processes) {clock['protocol_ms']:.4f} ms; "
                  f"floor {clock['floor_ms']:.4f} ms; the program said {said} ms; "
                  f"{perf.get('samples')} timed samples per session")
    if (out / "suite.txt").exists():
        print("hostile suite (graded through the sandbox):")
        print((out / "suite.txt").read_text().rstrip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
