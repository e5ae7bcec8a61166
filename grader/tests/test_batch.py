"""`cudalab batch` end to end on the toy lab: a mixed class of hand-ins (folders, .tar.gz
and .zip; correct, wrong, not compiling, crashing, too slow), graded in a process of its own
(batch_driver.py: the real CLI with the tests' fake build), killed with SIGKILL at several
points and resumed, and compared with a run that was never interrupted."""
from __future__ import annotations

import csv
import io
import json
import os
import signal
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

import pytest

from cudalab.batching import batch
from cudalab.lab import labs
from cudalab.outputs import publish
from cudalab.errors import UsageError

DRIVER = Path(__file__).resolve().parent / "batch_driver.py"

# student -> (how it is handed in, what its code does)
CLASS = {
    "alice": ("folder", {"sample_ms": 1.0}),
    "bob": ("tar.gz", {"wrong_cases": ["c_7"]}),
    "carol": ("zip", {"compile_error": True}),
    "dave": ("folder", {"sample_ms": 12.0}),
    "erin": ("tar.gz", {"crash_after": 1}),
    "frank": ("zip", {"sample_ms": 1.5}),
    "grace": ("folder", {"sample_ms": 1.0}),
}


def _code(behaviour: dict) -> bytes:
    return f"// {behaviour!r}\n".encode()


def write_handin(folder: Path, student: str, form: str, behaviour: dict, name: str | None = None,
                 manifest_student: str | None = None) -> Path:
    files = {"toy.cu": _code(behaviour)}
    if manifest_student is not None:
        files["cudalab-manifest.json"] = json.dumps({"schema": "cudalab.handin-manifest/1", "lab": "toy",
                                                     "student": manifest_student}).encode()
    if form == "folder":
        path = folder / (name or student)
        path.mkdir(parents=True)
        for file, data in files.items():
            (path / file).write_bytes(data)
    elif form == "tar.gz":
        path = folder / (name or f"toy-{student}.tar.gz")
        with tarfile.open(path, "w:gz") as tar:
            for file, data in files.items():
                info = tarfile.TarInfo(file)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    else:
        path = folder / (name or f"{student}.zip")
        with zipfile.ZipFile(path, "w") as archive:
            for file, data in files.items():
                archive.writestr(file, data)
    return path


@pytest.fixture
def handins(tmp_path: Path) -> Path:
    folder = tmp_path / "handins"
    folder.mkdir()
    for student, (form, behaviour) in CLASS.items():
        if student == "frank":  # packed with `cudalab pack --student frank`: the manifest agrees with the name
            write_handin(folder, student, form, behaviour, manifest_student="frank")
        else:
            write_handin(folder, student, form, behaviour)
    (folder / "notes.txt").write_text("not a hand-in\n")
    return folder


def start(toy_config, handins: Path, out: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(DRIVER), str(toy_config.root), str(toy_config.work_dir), "--",
                             "batch", "toy", str(handins), "--out", str(out), "--jobs", "3", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def run_batch(toy_config, handins: Path, out: Path, *extra: str) -> tuple[int, str, str]:
    proc = start(toy_config, handins, out, *extra)
    stdout, stderr = proc.communicate(timeout=600)
    return proc.returncode, stdout, stderr


def records(out: Path) -> dict[str, dict]:
    found = {}
    for path in sorted((out / "records").glob("*.json")):
        record = json.loads(path.read_text())
        found[record["job"]["student"]] = record
    return found


def gradebook(out: Path) -> dict[str, dict]:
    with open(out / "gradebook.csv", newline="", encoding="utf-8") as handle:
        return {row["student"]: row for row in csv.DictReader(handle)}


def outcome(out: Path) -> dict[str, tuple]:
    """What a batch decided, student by student (seeds and times aside)."""
    return {student: (row["status"], row["correctness"], row["performance"] != "0" and row["performance"] != "")
            for student, row in gradebook(out).items()}


@pytest.fixture
def uninterrupted(toy_config, handins, tmp_path) -> Path:
    out = tmp_path / "uninterrupted"
    code, _, stderr = run_batch(toy_config, handins, out)
    assert code == 0, stderr
    return out


def test_a_mixed_class_is_graded_with_every_output(toy_config, handins, uninterrupted):
    out = uninterrupted
    found = records(out)
    assert set(found) == set(CLASS)
    status = {s: r["result"]["status"] for s, r in found.items()}
    assert status["alice"] == status["grace"] == status["frank"] == "graded"
    assert found["alice"]["result"]["score"]["total"] == 100
    assert found["bob"]["result"]["score"]["performance"] == 0
    assert [c["status"] for c in found["bob"]["result"]["cases"] if c["name"] == "c_7"] == ["failed"]
    assert status["carol"] == "compile_error"
    assert found["erin"]["result"]["score"]["total"] < 100
    assert found["dave"]["result"]["performance"]["status"] == "zero"  # far slower than the reference
    # One reference program served every grade's timing rounds (reference.py): no grade started
    # its own, while each submission ran a program of its own per round.
    for student in ("alice", "grace", "frank"):
        runs = [p["what"] for p in found[student]["result"]["provenance"]["processes"]]
        assert not any(what.startswith("toy_solution --paced") for what in runs)
        assert sum(what.startswith("toy_submission --paced") for what in runs) == 2
    # The id came from each hand-in's name (frank's manifest agrees: no flag); each hand-in's hash is kept.
    assert found["frank"]["job"]["id_from"] == "name" and found["frank"]["job"]["flags"] == {}
    assert found["bob"]["job"]["id_from"] == "name" and len(found["bob"]["job"]["sha256"]) == 64
    # The class outputs and every student's feedback.
    assert set(gradebook(out)) == set(CLASS)
    for student in CLASS:
        folder = publish.student_dir(out, student)
        assert (folder / "feedback.md").is_file() and (folder / "feedback.html").is_file()
        assert json.loads((folder / "results.json").read_text())["tests"]
    assert (out / "canvas.csv").is_file() and 'class="partial"' not in (out / "summary.html").read_text()
    info = json.loads((out / "batch.json").read_text())
    assert info["lab"] == "toy" and info["schema"] == batch.SCHEMA


def test_a_second_run_grades_nothing_again(toy_config, handins, uninterrupted):
    before = records(uninterrupted)
    code, _, stderr = run_batch(toy_config, handins, uninterrupted)
    assert code == 0, stderr
    assert "7 hand-ins, 7 graded before, 0 to grade now" in stderr
    assert "skipped notes.txt: it is neither a folder nor" in stderr
    after = records(uninterrupted)
    assert {s: r["result"]["provenance"]["seed"] for s, r in after.items()} == \
        {s: r["result"]["provenance"]["seed"] for s, r in before.items()}


@pytest.mark.parametrize("kill_after", [0, 2, 5, len(CLASS)])
def test_a_batch_killed_with_sigkill_resumes_without_losing_or_repeating(toy_config, handins, tmp_path,
                                                                        uninterrupted, kill_after):
    """SIGKILL after `kill_after` grades were committed (0: while it builds; all: while it
    writes the outputs), then the same command again: what was committed is kept as it was,
    the rest is graded once, and the outcome is the uninterrupted run's."""
    out = tmp_path / f"killed-{kill_after}"
    proc = start(toy_config, handins, out)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        if len(list((out / "records").glob("*.json"))) >= kill_after and (kill_after or (out / "batch.json").exists()):
            break
        time.sleep(0.02)
    assert proc.poll() is None, "the batch ended before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate()
    committed = records(out)
    assert len(committed) >= kill_after
    code, _, stderr = run_batch(toy_config, handins, out)
    assert code == 0, stderr
    assert f"{len(committed)} graded before, {len(CLASS) - len(committed)} to grade now" in stderr
    final = records(out)
    assert set(final) == set(CLASS)
    for student, record in committed.items():  # nothing graded twice
        assert final[student]["result"]["provenance"]["seed"] == record["result"]["provenance"]["seed"]
    assert outcome(out) == outcome(uninterrupted)


def test_a_changed_handin_is_noticed_and_kept_until_regraded(toy_config, handins, uninterrupted):
    before = records(uninterrupted)["bob"]
    (handins / "toy-bob.tar.gz").unlink()
    write_handin(handins, "bob", "tar.gz", {"sample_ms": 1.0})
    code, _, stderr = run_batch(toy_config, handins, uninterrupted)
    assert code == 0, stderr
    assert "changed since graded: bob" in stderr
    assert records(uninterrupted)["bob"]["result"]["provenance"]["seed"] == before["result"]["provenance"]["seed"]
    assert "bob" in (uninterrupted / "summary.html").read_text()
    code, _, stderr = run_batch(toy_config, handins, uninterrupted, "--regrade", "bob")
    assert code == 0, stderr
    regraded = records(uninterrupted)["bob"]
    assert regraded["job"]["sha256"] != before["job"]["sha256"]
    assert regraded["result"]["score"]["correctness"] == regraded["result"]["score"]["correctness_max"]


def test_json_progress_is_one_object_per_line(toy_config, handins, tmp_path):
    code, stdout, stderr = run_batch(toy_config, handins, tmp_path / "json", "--json")
    assert code == 0, stderr
    events = [json.loads(line) for line in stdout.splitlines()]
    assert events[0]["event"] == "begin" and events[0]["total"] == len(CLASS)
    assert events[0]["skipped"] == [{"name": "notes.txt",
                                     "reason": "it is neither a folder nor a .tar.gz, .tgz, .tar or .zip archive"}]
    done = [e for e in events if e["event"] == "done"]
    assert sorted(e["student"] for e in done) == sorted(CLASS)
    assert done[-1]["graded"] == len(CLASS) and done[-1]["rate_per_min"] > 0
    assert events[-1]["event"] == "end" and events[-1]["info"]["complete"] is True


def test_bad_requests_get_a_sentence(toy_config, handins, uninterrupted, tmp_path):
    code, _, stderr = run_batch(toy_config, handins, uninterrupted, "--regrade", "mallory")
    assert code != 0 and "--regrade names no hand-in" in stderr and "alice" in stderr
    assert "Traceback" not in stderr
    code, _, stderr = run_batch(toy_config, tmp_path / "nowhere", tmp_path / "out2")
    assert code != 0 and "is not a folder" in stderr and "Traceback" not in stderr
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "thesis.pdf").write_text("mine")
    code, _, stderr = run_batch(toy_config, handins, tmp_path / "other")
    assert code != 0 and "is not empty and is not a batch results folder" in stderr


def test_student_ids_are_data_never_paths(toy_config, tmp_path):
    folder = tmp_path / "odd"
    folder.mkdir()
    write_handin(folder, "x", "zip", {"sample_ms": 1.0}, name="..zip")
    write_handin(folder, "x", "tar.gz", {"sample_ms": 1.0}, name="toy-a b;rm -rf.tar.gz")
    from cudalab.lab import labs
    jobs, skipped = batch.discover(toy_config, labs.load_lab(toy_config, "toy"), folder)
    assert [job.student for job in jobs] == ["a b;rm -rf"]  # '..zip' is hidden (a dot file): not a hand-in
    assert "/" not in jobs[0].key and " " not in jobs[0].key and ";" not in jobs[0].key


def test_one_hand_in_the_grader_fails_on_never_stops_the_batch(toy_config, tmp_path):
    """Proves: a hand-in whose run leaves a tree 4000 levels deep (which made cleanup raise
    RecursionError and abort the whole batch) is graded, and one the grader itself fails on
    while grading gets an error row (status error, a zero, the reason, not the student's
    fault) while the others are graded; the batch writes every output, exits 24 (not every
    hand-in was graded), and its next run grades only that hand-in again."""
    folder = tmp_path / "handins"
    folder.mkdir()
    write_handin(folder, "alice", "folder", {"sample_ms": 1.0})
    write_handin(folder, "mallory", "folder", {"sample_ms": 1.0, "deep_tree": 4000})
    write_handin(folder, "trent", "tar.gz", {"sample_ms": 1.0, "grader_bug": True})
    write_handin(folder, "grace", "zip", {"sample_ms": 1.0})
    out = tmp_path / "out"
    code, _, stderr = run_batch(toy_config, folder, out)
    assert code == 24, stderr
    found = records(out)
    assert set(found) == {"alice", "mallory", "trent", "grace"}, stderr
    assert {s: r["result"]["status"] for s, r in found.items()} == {
        "alice": "graded", "mallory": "graded", "trent": "error", "grace": "graded"}
    failed = found["trent"]["result"]
    assert failed["score"]["total"] == 0 and failed["score"]["total_max"] == 100
    assert failed["message"].startswith("The grader failed while grading this hand-in (RuntimeError: a bug of "
                                        "the grader's own, raised on request). This is not the student's fault")
    assert failed[batch.GRADER_FAILURE] == {"stage": "grading", "error": "RuntimeError",
                                            "message": "a bug of the grader's own, raised on request"}
    assert set(gradebook(out)) == {"alice", "mallory", "trent", "grace"}
    assert "3 of 4 hand-ins have a grade; 1 not graded: grader error (not the student's fault)." in stderr
    again, _, stderr = run_batch(toy_config, folder, out)
    assert again == 24 and "4 hand-ins, 3 graded before, 1 to grade now (1 without a grade: grader error" in stderr


# --- who handed it in: the collection's word, never the hand-in's ----------------------------------

def _class_folder(tmp_path: Path, name: str = "identity") -> Path:
    folder = tmp_path / name
    folder.mkdir()
    return folder


def _gradebook_rows(out: Path) -> list[dict]:
    with open(out / "gradebook.csv", newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _canvas_rows(out: Path) -> list[list[str]]:
    with open(out / "canvas.csv", newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))[2:]


def test_a_manifest_naming_a_classmate_takes_nobodys_place(toy_config, tmp_path):
    """mallory packs her hand-in with `--student alice`: both are graded under the ids their
    names give, alice keeps her own grade everywhere, and mallory's row is flagged."""
    folder = _class_folder(tmp_path)
    write_handin(folder, "alice", "folder", {"sample_ms": 1.0})
    write_handin(folder, "mallory", "tar.gz", {"compile_error": True}, manifest_student="alice")
    out = tmp_path / "out"
    code, _, stderr = run_batch(toy_config, folder, out)
    assert code == 0, stderr
    found = records(out)
    assert set(found) == {"alice", "mallory"}
    assert found["alice"]["result"]["status"] == "graded" and found["alice"]["job"]["flags"] == {}
    assert found["mallory"]["job"]["manifest_student"] == "alice"
    assert "names student 'alice'" in found["mallory"]["job"]["flags"]["manifest_mismatch"]
    assert found["mallory"]["result"]["submission"]["flags"] == found["mallory"]["job"]["flags"]
    rows = {row["student"]: row for row in _gradebook_rows(out)}
    assert (rows["alice"]["status"], rows["alice"]["total"], rows["alice"]["flags"]) == ("graded", "100", "")
    assert (rows["mallory"]["status"], rows["mallory"]["flags"]) == ("compile_error", "manifest_mismatch")
    assert {row[2]: row[5] for row in _canvas_rows(out)} == {"alice": "100.00", "mallory": "0.00"}
    page = (out / "summary.html").read_text()
    assert '<a href="students/alice/feedback.html">alice</a>' in page
    assert "manifest names another student" in page and "names student &#39;alice&#39;" in page


def test_two_hand_ins_of_one_student_are_both_graded_shown_and_flagged(toy_config, tmp_path):
    folder = _class_folder(tmp_path)
    write_handin(folder, "bob", "tar.gz", {"sample_ms": 1.0})
    write_handin(folder, "bob", "zip", {"compile_error": True})
    write_handin(folder, "carol", "folder", {"sample_ms": 1.0})
    out = tmp_path / "out"
    code, _, stderr = run_batch(toy_config, folder, out)
    assert code == 0, stderr
    bobs = [json.loads(path.read_text()) for path in (out / "records").glob("*.json")
            if json.loads(path.read_text())["job"]["student"] == "bob"]
    assert sorted((r["job"]["handin"], r["result"]["status"]) for r in bobs) == \
        [("bob.zip", "compile_error"), ("toy-bob.tar.gz", "graded")]
    assert len({r["job"]["key"] for r in bobs}) == 2
    rows = [row for row in _gradebook_rows(out) if row["student"] == "bob"]
    assert sorted((row["handin"], row["flags"]) for row in rows) == \
        [("bob.zip", "duplicate"), ("toy-bob.tar.gz", "duplicate")]
    assert {row[2]: row[5] for row in _canvas_rows(out)} == {"bob": "", "carol": "100.00"}
    for record in bobs:
        assert (out / "students" / record["job"]["key"] / "feedback.md").is_file()
    assert "all 3 hand-ins graded" not in stderr
    assert "1 student handed in more than once: each hand-in was graded and flagged" in stderr
    assert 'id="shared-banner">1 student handed in more than once.' in (out / "summary.html").read_text()


def test_a_roster_names_the_students_and_lists_who_handed_nothing_in(toy_config, tmp_path):
    folder = _class_folder(tmp_path)
    # A Canvas download: <sortable name>_<Canvas user id>_<submission id>_<the student's file name>.
    write_handin(folder, "s1", "tar.gz", {"sample_ms": 1.0}, name="lovelaceada_101_9001_toy-s2.tar.gz")
    write_handin(folder, "s2", "zip", {"sample_ms": 1.0}, name="s2.zip")
    write_handin(folder, "zed", "tar.gz", {"compile_error": True})
    roster = tmp_path / "roster.csv"
    roster.write_text("id,name,lms_id,section\ns1,\"Lovelace, Ada\",101,Lab A\ns2,Bob,102,\ns3,Cy,103,Lab B\n")
    out = tmp_path / "out"
    code, _, stderr = run_batch(toy_config, folder, out, "--roster", str(roster))
    assert code == 0, stderr
    found = records(out)
    assert set(found) == {"s1", "s2", "zed"}, "the LMS id decides, not the file name the student chose"
    assert found["s1"]["job"]["id_from"] == "roster" and found["s1"]["job"]["flags"] == {}
    assert "nobody on the roster" in found["zed"]["job"]["flags"]["not_on_roster"]
    canvas = {row[2]: row for row in _canvas_rows(out)}
    assert canvas["s1"] == ["Lovelace, Ada", "101", "s1", "", "Lab A", "100.00"]
    assert canvas["s2"][:2] == ["Bob", "102"] and canvas["zed"][:2] == ["zed", ""]
    assert "1 student on the roster handed nothing in: s3" in stderr
    page = (out / "summary.html").read_text()
    assert "On the roster, no hand-in (1)" in page and "<li>s3 (Cy)</li>" in page
    assert "not on the roster" in page


def test_a_roster_that_is_not_one_is_refused_in_a_sentence(toy_config, tmp_path):
    folder = _class_folder(tmp_path)
    write_handin(folder, "s1", "folder", {"sample_ms": 1.0})
    for text, words in (("name,lms_id\nAda,101\n", "has no id column"),
                        ("id,lms_id\ns1,101\ns2,101\n", "gives lms_id '101' twice (lines 2 and 3)"),
                        ("id,name\n,Ada\n", "line 2, has no id")):
        roster = tmp_path / "roster.csv"
        roster.write_text(text)
        code, _, stderr = run_batch(toy_config, folder, tmp_path / "out", "--roster", str(roster))
        assert code == 2 and words in stderr and "Traceback" not in stderr, stderr


def test_control_characters_in_names_reach_the_terminal_as_visible_text(toy_config, tmp_path):
    """A hand-in whose name carries an OSC 52 (set the clipboard) and a line rewrite (erase
    the line, carriage return, a fake PASS): the batch's lines show them as escapes."""
    folder = _class_folder(tmp_path)
    evil = "\x1b]52;c;cm0gLXJmIH4=\x07\x1b[2K\rPASS\nfake line"
    write_handin(folder, evil, "tar.gz", {"compile_error": True})
    out = tmp_path / "out"
    code, _, stderr = run_batch(toy_config, folder, out)
    assert code == 0, stderr
    assert not any(char in stderr for char in "\x1b\x07\r"), repr(stderr)
    assert "\\x1b]52;c;cm0gLXJmIH4=\\x07\\x1b[2K\\rPASS\\nfake line: compile_error" in stderr
    assert "\nfake line" not in stderr, "an id never starts a line of its own"


# --- what a batch says it graded ------------------------------------------------------------------

def _solution(toy_root: Path, **behaviour) -> None:
    """The toy lab's reference solution, as the official build has it (no_device: this machine
    has no GPU, so every grade is not_run)."""
    from conftest import seal, write_fake
    write_fake(toy_root / "build" / "ci" / "bin" / "toy_solution", name="toy_solution", **behaviour)
    seal(toy_root)


def test_hand_ins_without_a_grade_are_graded_again_and_the_batch_says_so(toy_config, toy_root, tmp_path):
    """Proves: on a machine without a GPU every hand-in is not_run, and the batch says so in its
    last line (0 of 3 have a grade, and why) and exits 23, not "all 3 graded" and 0; their
    records do not count as done: the next run, with a GPU, grades all three again and says
    why in its first line. Until then results.json holds no score (a 0 would read as one),
    and canvas.csv's Points Possible is the lab's, though no hand-in has a total."""
    folder = _class_folder(tmp_path)
    for student in ("alice", "bob", "carol"):
        write_handin(folder, student, "folder", {"sample_ms": 1.0})
    out = tmp_path / "out"
    _solution(toy_root, sample_ms=2.0, no_device=True)
    code, _, stderr = run_batch(toy_config, folder, out)
    assert code == 23, stderr
    assert {r["result"]["status"] for r in records(out).values()} == {"not_run"}
    said_first = stderr.index("nothing can be graded here (")  # before the first hand-in, not after the last
    assert said_first < stderr.index("[1/3]") and "no device" in stderr[said_first:stderr.index("[1/3]")].lower()
    last = [line for line in stderr.splitlines() if not line.startswith("wrote ")][-1]
    assert last.startswith("0 of 3 hand-ins have a grade; 3 not graded: no GPU on the grading machine. Run the "
                           "same command again"), stderr
    gradescope = json.loads((publish.student_dir(out, "alice") / "results.json").read_text())
    assert "score" not in gradescope and gradescope["tests"] == []
    assert "Not graded (no GPU on the grading machine)" in gradescope["output"]
    with open(out / "canvas.csv", newline="", encoding="utf-8") as handle:
        canvas = list(csv.reader(handle))
    assert canvas[1][5] == "100.00" and [row[5] for row in canvas[2:]] == ["", "", ""]
    page = (out / "summary.html").read_text()
    assert 'id="graded-banner">0 of 3 hand-ins have a grade.' in page
    assert "<li>3: no GPU on the grading machine</li>" in page
    _solution(toy_root, sample_ms=2.0)
    code, _, stderr = run_batch(toy_config, folder, out)
    assert code == 0, stderr
    assert "3 hand-ins, 0 graded before, 3 to grade now (3 without a grade: no GPU on the grading machine)" \
        in stderr
    assert {r["result"]["status"] for r in records(out).values()} == {"graded"}
    assert "all 3 hand-ins have a grade" in stderr and "graded-banner" not in (out / "summary.html").read_text()
    code, _, stderr = run_batch(toy_config, folder, out)
    assert code == 0 and "3 hand-ins, 3 graded before, 0 to grade now\n" in stderr, "a grade is kept"


def test_a_folder_without_hand_ins_is_refused_in_a_sentence(toy_config, tmp_path):
    folder = _class_folder(tmp_path, "empty")
    (folder / "notes.txt").write_text("not a hand-in\n")
    code, _, stderr = run_batch(toy_config, folder, tmp_path / "out")
    assert code == 2 and "Traceback" not in stderr, stderr
    assert f"Found no hand-ins in {folder}: a batch grades one folder, or one .tar.gz, .tgz, .tar or .zip " \
        "archive, per student there" in stderr
    assert "Skipped: notes.txt (it is neither a folder nor" in stderr and "hand-ins graded" not in stderr


def test_a_results_folder_inside_the_hand_ins_is_never_graded_as_a_student(toy_config, tmp_path):
    spec = labs.load_lab(toy_config, "toy")
    folder = tmp_path / "class"
    folder.mkdir()
    write_handin(folder, "alice", "folder", {})
    (folder / "results" / "records").mkdir(parents=True)  # --out class/results, from an earlier run
    jobs, skipped = batch.discover(toy_config, spec, folder, results=(folder / "results").resolve())
    assert [job.student for job in jobs] == ["alice"]
    assert {"name": "results", "reason": "it is this batch's results folder (--out)"} in skipped
    store = batch.Store(folder / "alice" / "results")
    with pytest.raises(UsageError, match="is inside the hand-in alice of .*Give a results folder outside"):
        batch.make_plan(toy_config, spec, store, folder, [], False, False)
