"""Grade result documents (cudalab.grade/1) the report and publish tests render, one per
kind of outcome, a synthetic class of them, and the check of a rendering against its stored
known-good copy (tests/golden/; CUDALAB_UPDATE_GOLDEN=1 rewrites the copies)."""
from __future__ import annotations

import copy
import hashlib
import os
from pathlib import Path

GOLDEN = Path(__file__).parent / "golden"


def assert_matches_golden(rendered: str, name: str) -> None:
    """`rendered` must equal tests/golden/<name>; with CUDALAB_UPDATE_GOLDEN set it becomes it."""
    golden = GOLDEN / name
    if os.environ.get("CUDALAB_UPDATE_GOLDEN"):
        golden.write_text(rendered, encoding="utf-8")
    assert golden.is_file(), f"no stored copy {golden}: run with CUDALAB_UPDATE_GOLDEN=1 to write it"
    assert rendered == golden.read_text(encoding="utf-8"), \
        f"{name} differs from its stored copy; set CUDALAB_UPDATE_GOLDEN=1 to accept a deliberate change"


GRADED = {
    "schema": "cudalab.grade/1", "cudalab_version": "0.1.0", "lab": "vector_add",
    "lab_title": "Vector addition", "submission": {"name": "alice", "folder": "/subs/alice"},
    "status": "graded", "exit_code": 0, "message": "2 of 3 cases passed.",
    "score": {"correctness": 46.6667, "correctness_max": 70.0, "performance": 0.0,
              "performance_max": 30.0, "total": 46.6667, "total_max": 100.0},
    "build": {"status": "built", "copied": ["vector_add.cu"], "ignored": ["notes.txt"], "feedback": []},
    "cases": [
        {"name": "n_1", "params": {"n": 1}, "status": "passed", "checker_status": "passed",
         "message": "", "points": 23.3333, "max_points": 23.3333},
        {"name": "n_257", "params": {"n": 257}, "status": "failed", "checker_status": "failed",
         "message": "c[256] is wrong: expected 1.25, got 0 (allowed difference 0); 1 of 257 elements differ",
         "points": 0.0, "max_points": 23.3333},
        {"name": "n_1025", "params": {"n": 1025}, "status": "passed", "checker_status": "passed",
         "message": "", "points": 23.3333, "max_points": 23.3333},
    ],
    "performance": {"status": "skipped", "timing_case": "n_2p26", "points": 0.0, "max_points": 30.0,
                    "message": "Performance is measured only when every case passes; fix the failing cases first."},
    "run": {"status": "failed", "exit_code": 1, "wall_s": 1.2, "description": "", "stderr_head": ""},
    "warnings": ["notes.txt was ignored: the vector_add lab only takes vector_add.cu."],
    "provenance": {"seed": 42, "started_at": "2025-01-01T00:00:00+00:00",
                   "finished_at": "2025-01-01T00:01:00+00:00", "cudalab_version": "0.1.0",
                   "preset": "gpu", "official_build": "/repo/build/gpu", "host": "node1",
                   "python": "3.12.0",
                   "isolation": {"kind": "bubblewrap", "uid": 65534, "cgroup": True, "official": True,
                                 "in_force": ["own PID namespace: every process ends with the run"],
                                 "missing": [], "summary": "bubblewrap sandbox (official)",
                                 "description": "bubblewrap sandbox (official); in force: own PID namespace: "
                                                "every process ends with the run", "allowed_without": False},
                   "gpu": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0",
                   "driver_version": 13000, "runtime_version": 13000, "sm_clock_mhz": 1980.0,
                   "spread": None},
}


FLOOR_MESSAGE = ("Your code's time per call on the grader's clock, 0.0312 ms, is below what this GPU can do at all "
                 "for this case (0.2678 ms: the lab's byte model at 3007 GB/s, the copy bandwidth measured now, or "
                 "its FLOP model at 66.9 TFLOP/s, the FP32 peak). Part of the work was not timed (run before or "
                 "after the timed call, or on another stream), so it earns no performance points.")


def clock(student_ms: float, ratio: float, **changes) -> dict:
    """What the grader's clock said of a grade (timing.ClockScore.to_json)."""
    measured = {"reference_ms": 0.27, "reference_rounds_ms": [0.272, 0.2725, 0.2708], "reference_agreement": 0.0063,
                "student_ms": student_ms, "student_rounds_ms": [student_ms] * 3, "student_reported_ms": 0.01,
                "protocol_ms": 0.98, "ratio": ratio, "floor_ms": 0.2678, "below_floor": False, "message": ""}
    measured.update(changes)
    return measured


def full_marks_flagged():
    """Every case passed, but a time below the physical floor: no speed points, and flagged."""
    result = copy.deepcopy(GRADED)
    for case in result["cases"]:
        case.update(status="passed", checker_status="passed", message="", points=23.3333)
    result["message"] = "3 of 3 cases passed."
    result["score"].update(correctness=70.0, performance=0.0, total=70.0)
    result["performance"] = {
        "status": "zero", "timing_case": "n_2p26", "points": 0.0, "max_points": 30.0,
        "ratio": 0.1156, "samples": 1800, "flagged": True, "message": FLOOR_MESSAGE,
        "clock": clock(0.0312, 0.1156, below_floor=True, message=FLOOR_MESSAGE),
        "rounds": [], "spread": None}
    return result


def not_run():
    result = copy.deepcopy(GRADED)
    result.update(status="not_run", exit_code=23, score=None, cases=[], performance=None, run=None,
                  warnings=[], message="There is no CUDA device on this machine (the reference "
                  "solution exits with 'no device'), so the submission was built but not run. No "
                  "grade was given; grade it on a machine with a GPU.")
    result["provenance"].update(gpu=None, isolation=None)
    return result


def compile_error():
    result = not_run()
    result.update(status="compile_error", exit_code=22,
                  score={"correctness": 0.0, "correctness_max": 70.0, "performance": 0.0,
                         "performance_max": 30.0, "total": 0.0, "total_max": 100.0},
                  message="vector_add.cu did not compile against the official vector_add harness. "
                          "Fix the first error below, then build again.")
    result["build"].update(status="compile_error", feedback=[
        'vector_add.cu(12): error: expected a ";"', "      c[i] = a[i] + b[i]", "                        ^"])
    return result




def full_marks():
    result = full_marks_flagged()
    result["score"].update(performance=30.0, total=100.0)
    said = ("Your program's own CUDA events said 0.2559 ms per call; the grade uses the grader's clock: "
            "0.2565 ms per call.")
    result["performance"].update(status="scored", points=30.0, ratio=0.95, flagged=False, message=said,
                                 clock=clock(0.2565, 0.95, student_reported_ms=0.2559, message=said,
                                             student_rounds_ms=[0.2565, 0.2591, 0.2549]),
                                 regrade_range={"rounds": 3, "low_ratio": 0.9413, "high_ratio": 0.9508,
                                                "points_at_low": 30.0, "points_at_high": 30.0})
    result["warnings"] = []
    return result


def forbidden():
    result = compile_error()
    result.update(status="forbidden", exit_code=26,
                  message="vector_add.cu uses cuBLAS, which the vector_add lab does not allow.")
    result["build"].update(status="forbidden", feedback=[
        "vector_add.cu:3: #include <cublas_v2.h> (cuBLAS would do the lab's work)"])
    return result


def sanitizer_errors():
    result = full_marks()
    result["score"].update(sanitizer_penalty=10.0, total=90.0)
    result["sanitizer"] = {
        "tools_run": ["memcheck", "racecheck"], "clean": False, "problems": {}, "status": "errors",
        "points_off": 10.0,
        "message": "compute-sanitizer found errors, so 10 points were taken off: vector_add.cu:14: "
                   "a read of 4 bytes past the end of an allocation. `cudalab check` shows each at its line.",
        "findings": [{"tool": "memcheck", "kind": "invalid_read", "file": "vector_add.cu", "line": 14,
                      "function": "add", "thread": "(256,0,0)", "block": "(1,0,0)", "size": 4, "count": 3,
                      "sentence": "vector_add.cu:14: a read of 4 bytes past the end of an allocation",
                      "source_line": "c[i] = a[i] + b[i];"}]}
    return result


def timed_out():
    result = copy.deepcopy(GRADED)
    for case in result["cases"]:
        case.update(status="failed", checker_status="missing", points=0.0,
                    message="the program was killed after 20 s (the wall-clock limit); look for a loop "
                            "that never ends or a kernel that never returns")
    result["message"] = "0 of 3 cases passed."
    result["score"].update(correctness=0.0, total=0.0)
    result["run"] = {"status": "timeout", "exit_code": 5, "wall_s": 20.0, "stderr_head": "",
                     "description": "the program was killed after 20 s (the wall-clock limit); look "
                                    "for a loop that never ends or a kernel that never returns"}
    return result


def unisolated():
    result = full_marks()
    result["provenance"]["isolation"].update(official=False, allowed_without=True,
                                             missing=["bubblewrap is not installed"],
                                             summary="no sandbox (unofficial)")
    result["warnings"] = ["This grade was given WITHOUT the sandbox (--allow-unisolated): the student's "
                          "code ran with the grader's own powers, so it is not an official grade. "
                          "Missing: bubblewrap is not installed"]
    return result


def gpu_shared():
    result = full_marks()
    result["provenance"]["gpu_sharing"] = [
        {"known": True, "waited_s": 30.0, "busy_with": ["4242, python, 1200 MiB"]},
        {"known": True, "waited_s": 0.0, "busy_with": []}]
    result["warnings"] = ["Other processes were computing on the GPU while it was timed (4242, python, "
                          "1200 MiB), after waiting 30 s for them: these timings are less reliable than "
                          "usual; grade again on an idle GPU."]
    return result


def grader_error():
    result = not_run()
    result.update(status="error", exit_code=24,
                  score={"correctness": 0.0, "correctness_max": 0.0, "performance": 0.0,
                         "performance_max": 0.0, "total": 0.0, "total_max": 0.0},
                  message="The reference solution's timed run failed (the program exited with code 6 "
                          "(internal)).")
    return result


# The four the report tests have always rendered (their stored copies keep these names).
SCENARIOS = {"graded": lambda: copy.deepcopy(GRADED), "flagged": full_marks_flagged,
             "not_run": not_run, "compile_error": compile_error}

# Every kind of outcome the publish tests render.
OUTCOMES = {**SCENARIOS, "full_marks": full_marks, "forbidden": forbidden,
            "sanitizer_errors": sanitizer_errors, "timed_out": timed_out, "unisolated": unisolated,
            "gpu_shared": gpu_shared, "grader_error": grader_error}


def result_for(kind: str, student: str) -> dict:
    """An outcome of `kind` for the hand-in <student>.tar.gz."""
    result = OUTCOMES[kind]()
    result["submission"] = {"name": student, "folder": f"/batch/handins/{student}"}
    return result


def entry_for(student: str, kind: str | None, *, state: str = "done", **extra) -> dict:
    """One row of a batch: `kind` None for a hand-in without a result."""
    digest = hashlib.sha256(f"{student}.tar.gz".encode()).hexdigest()
    return {"student": student, "handin": {"name": f"{student}.tar.gz", "sha256": digest},
            "state": state, "result": None if kind is None else result_for(kind, student), **extra}


def class_entries(count: int = 40, pending: int = 6) -> list[dict]:
    """A class of `count` hand-ins with every outcome, the last `pending` not graded yet. Scores
    and speed ratios spread over their ranges, the same on every call."""
    kinds = ["full_marks", "full_marks", "flagged", "graded", "full_marks", "compile_error", "full_marks",
             "timed_out", "sanitizer_errors", "full_marks", "forbidden", "gpu_shared", "graded",
             "full_marks", "unisolated", "not_run", "grader_error"]
    entries = []
    for number in range(count):
        student = f"s{1000 + 7 * number}"
        if number >= count - pending:
            entries.append(entry_for(student, None, state="pending"))
            continue
        if number == count - pending - 1:
            entries.append(entry_for(student, None, state="failed_to_grade"))
            continue
        entry = entry_for(student, kinds[number % len(kinds)])
        result = entry["result"]
        if result["performance"] and result["performance"].get("status") == "scored":
            ratio = round(0.8 + 0.11 * ((number * 7) % 23), 4)
            points = round(30.0 * max(0.0, min(1.0, (3.0 - ratio) / (3.0 - 1.1))), 4)
            result["performance"].update(ratio=ratio, points=points)
            result["performance"]["clock"].update(ratio=ratio, student_ms=round(0.27 * ratio, 4))
            penalty = result["score"].get("sanitizer_penalty", 0.0)
            result["score"].update(performance=points, total=round(max(0.0, 70.0 + points - penalty), 4))
        if number == 9:
            entry["changed"] = True
            entry["graded_handin"] = hashlib.sha256(b"the hand-in as it was graded").hexdigest()
        if number in IDENTITY_FLAGS:  # what the batch says of a hand-in's name, manifest or size
            entry["flags"] = dict([IDENTITY_FLAGS[number]])
        entries.append(entry)
    return entries


IDENTITY_FLAGS = {
    2: ("manifest_mismatch", "its manifest (cudalab-manifest.json) names student 's1000'; it was graded as "
                             "'s1014', the id its name gives. A manifest is written by the student and decides "
                             "nothing: check who handed it in."),
    4: ("not_on_roster", "'s1028' (from the name 's1028.tar.gz') is nobody on the roster: add the student to it, "
                         "or rename the hand-in to their id."),
    6: ("over_caps", "The hand-in holds more than 200 entries; its hash covers what was read before that, and "
                     "links were not followed."),
}
