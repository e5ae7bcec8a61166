"""tools/course-drill.py end to end on this machine: its own course (`course init`, `course
tokens`), `cudalab serve` with the stand-in executor, five students' tries and hand-ins
through the client's code, the measures and the saved pages; and its comparison of the
service's verdicts with the direct runs'."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
DRILL = REPO_ROOT / "tools" / "course-drill.py"


def load_drill():
    spec = importlib.util.spec_from_file_location("course_drill", DRILL)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module   # its dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def test_the_drill_runs_five_students_against_the_stand_in(tmp_path):
    out = tmp_path / "drill"
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "grader")}
    done = subprocess.run([sys.executable, str(DRILL), "--students", "5", "--executor", "standin",
                           "--standin-delay", "0.05", "--out", str(out)], capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    report = json.loads((out / "drill.json").read_text())
    assert report["students"] == 5 and report["tries_finished"] == 5 and report["tries_per_minute"] > 0
    assert {r["lab"] for r in report["submissions"]} == {"vector_add", "reduction"}
    assert all(r["state"] == "done" and r["hand_in"] == "accepted" and not r["problems"] for r in report["submissions"])
    assert 0 < report["first_line_s"]["median"] <= report["first_line_s"]["p90"]
    assert report["first_verdict_s"]["median"] is not None
    board = (out / "leaderboard-vector_add.html").read_text()
    assert "drill-d002" in board   # the timed correct entry's pseudonym, and no student id
    assert "d002@example.edu" not in board
    assert "Instructor" in (out / "instructor.html").read_text() or "instructor" in (out / "instructor.html").read_text()
    assert "5 students, 5 tries finished" in done.stdout


def test_a_verdict_that_differs_from_the_direct_run_is_named():
    drill = load_drill()
    sub = drill.Submission("d000", "vector_add", "off_by_one", False, exit_code=0, cases={"n_1": "passed"},
                           hand_in="accepted")
    direct = {"exit_code": 1, "cases": {"n_1": "failed"}, "hand_in": "accepted"}
    found = drill.mismatches(sub, direct)
    assert found == ["exit 0 from the service, 1 from `cudalab run`", "cases n_1 passed vs failed"]
    assert drill.mismatches(drill.Submission("d000", "vector_add", "x", False, exit_code=1,
                                             cases={"n_1": "failed"}, hand_in="accepted"), direct) == []


def test_a_drill_that_cannot_run_says_why_without_a_traceback(tmp_path):
    done = subprocess.run([sys.executable, str(DRILL), "--server", "http://127.0.0.1:9", "--out", str(tmp_path)],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO_ROOT / "grader")},
                          timeout=60)
    assert done.returncode == 2 and "--server needs --tokens" in done.stderr and "Traceback" not in done.stderr
    done = subprocess.run([sys.executable, str(DRILL), "--labs", "toy_lab_absent", "--out", str(tmp_path)],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO_ROOT / "grader")},
                          timeout=60)
    assert done.returncode == 2 and "no entries for toy_lab_absent" in done.stderr and "Traceback" not in done.stderr
