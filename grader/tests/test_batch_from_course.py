"""`cudalab batch toy --from-course DIR`: a course database with hand-ins made here (as the
service stores them: uploads under their hash, the service's time of receipt and the late
policy's assessment), graded by the real CLI with the tests' fake build (batch_driver.py,
as test_batch.py does): the hand-in that counts is the one graded, its late penalty is taken
off the total in the class outputs with the reason, roster students with nothing counted
are listed, a rerun grades only what changed, and grading before the deadline is refused."""
from __future__ import annotations

import csv
import datetime as dt
import io
import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from cudalab.course import policy, spec, store

DRIVER = Path(__file__).resolve().parent / "batch_driver.py"
ROSTER = "id,name,lms_id,email\ns1,Ann,101,a@x\ns2,Bob,102,b@x\ns3,Cy,103,c@x\ns4,Di,104,d@x\n"


def archive(behaviour: dict) -> bytes:
    data = f"// {behaviour!r}\n".encode()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        info = tarfile.TarInfo("toy.cu")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def make_course(tmp_path: Path, toy_config, opens: dt.datetime) -> Path:
    folder = tmp_path / "course"
    folder.mkdir()
    (folder / "roster.csv").write_text(ROSTER)
    (folder / "course.toml").write_text(spec.course_toml_text("GPU", ["toy"], "roster.csv", opens))
    return folder


def hand_in(folder: Path, toy_config, student: str, behaviour: dict, at: dt.datetime) -> str:
    """A hand-in as the service keeps one: the upload's file, its rows, the assessment at `at`."""
    offer = spec.load_course(folder, toy_config).offer("toy")
    sessions = store.open_database(store.database_url(folder, None))
    data = archive(behaviour)
    sha256 = store.store_upload(folder, data)
    with sessions() as session, session.begin():
        if session.get(store.Student, student) is None:
            session.add(store.Student(id=student))
        if session.get(store.Upload, sha256) is None:
            session.add(store.Upload(sha256=sha256, size=len(data)))
        session.flush()  # the rows the hand-in refers to, first
        session.add(store.HandIn(student_id=student, lab="toy", upload_sha256=sha256, received_at=at,
                                 lateness=policy.assess(offer, at).to_json(), checks={}, receipt={}))
    return sha256


def run(toy_config, *args: str) -> tuple[int, str]:
    done = subprocess.run([sys.executable, str(DRIVER), str(toy_config.root), str(toy_config.work_dir), "--",
                           "batch", "toy", *args], capture_output=True, text=True, timeout=600)
    return done.returncode, done.stdout + done.stderr


def table(path: Path, key: str) -> dict[str, dict]:
    with open(path, newline="", encoding="utf-8") as handle:
        return {row[key]: row for row in csv.DictReader(handle)}


@pytest.fixture
def past_course(tmp_path, toy_config):
    """A course whose deadline and cut-off have passed: s1 on time; s2 wrong on time, then right
    2 started days late (20 % off); s3 twice on time (the last counts); s4 nothing."""
    now = store.now()
    folder = make_course(tmp_path, toy_config, now - dt.timedelta(days=20))
    deadline = spec.load_course(folder, toy_config).offer("toy").deadline
    shas = {"s1": hand_in(folder, toy_config, "s1", {"sample_ms": 1.0}, deadline - dt.timedelta(hours=1)),
            "s2_first": hand_in(folder, toy_config, "s2", {"wrong_cases": ["c_7"]}, deadline - dt.timedelta(hours=2)),
            "s2": hand_in(folder, toy_config, "s2", {"sample_ms": 1.0}, deadline + dt.timedelta(days=1, minutes=1)),
            "s3_first": hand_in(folder, toy_config, "s3", {"sample_ms": 1.0}, deadline - dt.timedelta(days=2)),
            "s3": hand_in(folder, toy_config, "s3", {"wrong_cases": ["c_7"]}, deadline - dt.timedelta(days=1))}
    return folder, deadline, shas


def test_the_counted_hand_ins_are_graded_with_the_late_policy(past_course, toy_config):
    folder, deadline, shas = past_course
    code, said = run(toy_config, "--from-course", str(folder), "--jobs", "2")
    out = folder / "grades" / "toy"
    assert code == 0, said
    records = {json.loads(p.read_text())["job"]["student"]: json.loads(p.read_text())
               for p in (out / "records").glob("*.json")}
    assert set(records) == {"s1", "s2", "s3"}
    assert {s: r["job"]["sha256"] for s, r in records.items()} == {s: shas[s] for s in ("s1", "s2", "s3")}
    late = records["s2"]["result"]["late"]
    assert (late["status"], late["days_late"], late["penalty"]) == ("late", 2, pytest.approx(0.2))
    assert late["received_at"] == (deadline + dt.timedelta(days=1, minutes=1)).isoformat()
    assert records["s1"]["result"]["late"]["status"] == "on_time"
    book = table(out / "gradebook.csv", "student")
    assert {s: book[s]["status"] for s in book} == {"s1": "graded", "s2": "graded", "s3": "graded"}, said
    assert float(book["s2"]["total"]) == pytest.approx(0.8 * float(book["s2"]["total_before_late"]))
    assert book["s2"]["late"] == f"late by 2 days: 20 % off ({float(book['s2']['total_before_late']) * 0.2:g} points off)"
    assert book["s1"]["total"] == book["s1"]["total_before_late"] and book["s1"]["late"] == "on time"
    assert book["s3"]["correctness"] != book["s1"]["correctness"]  # s3's last (wrong) hand-in, not its first
    canvas = {row[2]: row for row in csv.reader((out / "canvas.csv").open()) if len(row) > 2}
    assert float(canvas["s2"][-1]) == pytest.approx(float(book["s2"]["total"]), abs=0.01)
    assert "Late hand-ins (1)" in (out / "summary.html").read_text()
    batch = json.loads((out / "batch.json").read_text())
    assert batch["lab"] == "toy"
    summary = (out / "summary.html").read_text()
    assert 'id="missing"' in summary and "s4" in summary.split('id="missing"')[1].split("</ul>")[0]
    assert sorted(p.name for p in (out / "handins").iterdir()) == ["toy-s1.tar.gz", "toy-s2.tar.gz", "toy-s3.tar.gz"]

    # a rerun grades nothing again; a later hand-in that counts is graded, the rest kept
    before = {s: r["graded_at"] for s, r in records.items()}
    hand_in(folder, toy_config, "s1", {"sample_ms": 1.5}, deadline + dt.timedelta(hours=3))
    code, said = run(toy_config, "--from-course", str(folder))
    after = {json.loads(p.read_text())["job"]["student"]: json.loads(p.read_text())
             for p in (out / "records").glob("*.json")}
    assert after["s2"]["graded_at"] == before["s2"] and after["s3"]["graded_at"] == before["s3"]
    assert after["s1"]["graded_at"] != before["s1"]
    assert after["s1"]["result"]["late"]["days_late"] == 1


def test_before_the_deadline_it_refuses_unless_asked(tmp_path, toy_config):
    folder = make_course(tmp_path, toy_config, store.now() - dt.timedelta(days=1))
    hand_in(folder, toy_config, "s1", {"sample_ms": 1.0}, store.now())
    code, said = run(toy_config, "--from-course", str(folder))
    assert code == 2 and "Not grading yet: the deadline of toy" in said and "--before-deadline" in said
    assert not (folder / "grades" / "toy" / "records").exists()
    code, said = run(toy_config, "--from-course", str(folder), "--before-deadline")
    assert "these grades are provisional" in said
    assert (folder / "grades" / "toy" / "records" ).is_dir()


def test_from_course_refuses_a_folder_or_roster_beside_it(tmp_path, toy_config):
    folder = make_course(tmp_path, toy_config, store.now() - dt.timedelta(days=20))
    code, said = run(toy_config, str(tmp_path), "--from-course", str(folder))
    assert code == 2 and "give no hand-ins folder" in said
    code, said = run(toy_config, str(tmp_path))
    assert code == 2 and "--out DIR" in said


def test_a_course_without_hand_ins_says_so(tmp_path, toy_config):
    folder = make_course(tmp_path, toy_config, store.now() - dt.timedelta(days=20))
    store.open_database(store.database_url(folder, None))
    code, said = run(toy_config, "--from-course", str(folder))
    assert code == 2 and "no accepted hand-in of toy" in said and "Traceback" not in said
