"""The course service started for real (`cudalab serve` on a free localhost port, the stand-in
executor): its schema from the migrations, students kept apart, every bad input answered
with a sentence, the try budget and its refund, a SIGKILL at any moment losing nothing, the
deadline by the service's clock, and PostgreSQL where CUDALAB_POSTGRES_URL names one."""
from __future__ import annotations

import datetime as dt
import json
import os
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine, inspect, text

from cudalab.course import store, tokens
from cudalab.course.service import CourseService
from cudalab.course.spec import load_course
from cudalab.course.work import StandInExecutor
from course_server import GRADER, GZIP, REPO_ROOT, Server, archive, auth, issue_tokens, wait_for_job, write_course


@pytest.fixture
def course(tmp_path):
    """A running service over a course of three students; yields (server, tokens, client)."""
    folder = tmp_path / "course"
    ids = write_course(folder, 3)
    issued = issue_tokens(store.database_url(folder, None), ids)
    server = Server(folder).start()
    try:
        with httpx.Client(base_url=server.url, timeout=30) as client:
            yield server, issued, client
    finally:
        server.stop()


def refused(response: httpx.Response, status: int) -> str:
    """The sentence of a refusal, after checking it is one: the status, JSON, no traceback."""
    assert response.status_code == status, (response.status_code, response.text)
    assert "Traceback" not in response.text
    body = response.json()
    assert isinstance(body.get("error"), str) and body["error"].endswith((".", ")")) and len(body["error"]) > 20
    return body["error"]


# --- the schema ----------------------------------------------------------------------------

def test_migrating_an_empty_database_gives_exactly_the_models_schema(tmp_path):
    url = f"sqlite:///{tmp_path / 'empty.db'}"
    store.open_database(url)
    engine = create_engine(url)
    with engine.connect() as connection:
        differences = compare_metadata(MigrationContext.configure(connection), store.Base.metadata)
        assert differences == []
        assert connection.execute(text("PRAGMA journal_mode")).scalar() == "wal"
    store.open_database(url)  # a second start finds it at the newest version: nothing to do, no error


def test_an_upload_is_kept_once_under_its_hash(tmp_path):
    first = store.store_upload(tmp_path, b"same bytes")
    assert store.store_upload(tmp_path, b"same bytes") == first
    assert store.upload_path(tmp_path, first).read_bytes() == b"same bytes"
    assert [p.name for p in store.upload_path(tmp_path, first).parent.iterdir()] == [first]  # no temp left


def test_serve_refuses_a_folder_without_course_toml_in_a_sentence(tmp_path):
    done = subprocess.run([sys.executable, "-m", "cudalab", "serve", "--course", str(tmp_path)], cwd=REPO_ROOT,
                          env={**os.environ, "PYTHONPATH": str(GRADER)}, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "has no course.toml" in done.stderr and "cudalab course init" in done.stderr
    assert "Traceback" not in done.stderr + done.stdout


# --- students kept apart -------------------------------------------------------------------------

def test_a_student_sees_only_their_own_jobs_and_hand_ins(course):
    server, issued, client = course
    ann, bob = issued.students["s000"], issued.students["s001"]
    job = client.post("/api/v1/labs/vector_add/tries", content=archive(salt="ann"), headers=auth(ann) | GZIP).json()["job"]
    handed = client.post("/api/v1/labs/vector_add/handins", content=archive(salt="ann-h"), headers=auth(ann) | GZIP)
    assert handed.status_code == 201, handed.text
    assert wait_for_job(client, ann, job)["state"] == "done"
    for path in (f"/api/v1/jobs/{job}", f"/api/v1/jobs/{job}/events"):
        sentence = refused(client.get(path, headers=auth(bob)), 404)  # not 403: the id does not leak
        assert "no job" in sentence
    assert client.get("/api/v1/handins", headers=auth(bob)).json() == {"handins": []}
    assert [r["sha256"] for r in client.get("/api/v1/handins", headers=auth(ann)).json()["handins"]] == \
        [handed.json()["receipt"]["sha256"]]
    # the instructor sees both; a student may not use the instructor's views; the course key sees no try
    assert client.get(f"/api/v1/jobs/{job}", headers=auth(issued.instructor)).status_code == 200
    assert len(client.get("/api/v1/instructor/handins", headers=auth(issued.instructor)).json()["handins"]) == 1
    refused(client.get("/api/v1/instructor/handins", headers=auth(ann)), 403)
    refused(client.get(f"/api/v1/jobs/{job}", headers=auth(issued.course_key)), 404)
    refused(client.get("/api/v1/me", headers=auth(issued.instructor)), 403)
    # the public leaderboard and health name no student
    board = client.get("/api/v1/labs/vector_add/leaderboard").text
    assert "s000" not in board and "Student" not in board


def test_the_leaderboard_shows_pseudonyms_and_only_fully_correct_benchmarked_tries(course):
    server, issued, client = course
    for sid, name in (("s000", "ann-the-fast"), ("s001", "bob_b")):
        token = issued.students[sid]
        assert client.put("/api/v1/me/pseudonym", json={"pseudonym": name}, headers=auth(token)).json() == \
            {"pseudonym": name}
        job = client.post("/api/v1/labs/vector_add/tries?bench=1", content=archive(salt=sid), headers=auth(token) | GZIP)
        assert wait_for_job(client, token, job.json()["job"])["ratio"] is not None
    failed = client.post("/api/v1/labs/vector_add/tries?bench=1", content=archive("failed", salt="c"),
                         headers=auth(issued.students["s002"]) | GZIP).json()["job"]
    wait_for_job(client, issued.students["s002"], failed)
    rows = client.get("/api/v1/labs/vector_add/leaderboard").json()["rows"]
    assert sorted(r["pseudonym"] for r in rows) == ["ann-the-fast", "bob_b"]
    assert [r["ratio"] for r in rows] == sorted(r["ratio"] for r in rows) and rows[0]["rank"] == 1
    assert set(rows[0]) == {"rank", "pseudonym", "ratio", "noise"}


def test_a_gradescope_submission_is_graded_and_answered_as_results_json(course):
    server, issued, client = course
    key = auth(issued.course_key)
    sent = client.post("/api/v1/gradescope/vector_add", content=archive(salt="gs"),
                       headers=key | GZIP | {"X-Cudalab-Student-Email": "s001@example.edu"})
    assert sent.status_code == 202, sent.text
    job = wait_for_job(client, issued.course_key, sent.json()["job"])
    assert job["kind"] == "grade" and job["charged"] is False  # Gradescope's submissions spend no tries
    results = client.get(f"/api/v1/jobs/{job['job']}/gradescope", headers=key).json()
    assert results["extra_data"]["student"] == "s001" and isinstance(results["tests"], list)
    # the student's own token sees the grade job too; another student's does not
    assert client.get(f"/api/v1/jobs/{job['job']}", headers=auth(issued.students["s001"])).status_code == 200
    refused(client.get(f"/api/v1/jobs/{job['job']}", headers=auth(issued.students["s000"])), 404)


def test_tokens_are_checked_with_argon2_one_at_a_time(tmp_path, monkeypatch):
    """Each argon2 check takes every core and 64 MiB: many at once (the first requests of a
    class, or a flood of wrong secrets for one lookup) would only multiply the memory and hold
    every other request up longer. Eight students' first requests at once are checked one
    after another, and each finds its student."""
    folder = tmp_path / "course"
    ids = write_course(folder, 8)
    url = store.database_url(folder, None)
    issued = issue_tokens(url, ids)
    service = CourseService(load_course(folder), store.open_database(url), StandInExecutor(), tmp_path / "scratch")
    inside = most = 0
    counting_lock = threading.Lock()
    real_verify = tokens.verify

    def counted_verify(hashed: str, secret: str) -> bool:
        nonlocal inside, most
        with counting_lock:
            inside += 1
            most = max(most, inside)
        try:
            time.sleep(0.05)  # long enough for the others to arrive while this one is checked
            return real_verify(hashed, secret)
        finally:
            with counting_lock:
                inside -= 1

    monkeypatch.setattr(tokens, "verify", counted_verify)
    with ThreadPoolExecutor(len(ids)) as pool:
        found = list(pool.map(service.student_for, [issued.students[sid] for sid in ids]))
    assert [student.id for student in found] == ids
    assert most == 1, f"{most} argon2 checks ran at once"


# --- every bad input ---------------------------------------------------------------------------------

BAD = "cl1_AAAAAAAAAAAA_" + "B" * 32


def bad_requests(issued, job: int):
    """(what, method, path, headers, body, status) for every class of bad input."""
    ann = auth(issued.students["s000"])
    bob = auth(issued.students["s001"])
    good = archive(salt="bad-requests")
    yield "no auth", "GET", "/api/v1/me", {}, None, 401
    yield "not bearer", "GET", "/api/v1/me", {"Authorization": "Basic abc"}, None, 401
    yield "malformed token", "GET", "/api/v1/me", auth("nonsense"), None, 401
    yield "unknown token", "GET", "/api/v1/me", auth(BAD), None, 401
    yield "unknown field", "GET", "/api/v1/me?debug=1", ann, None, 400
    yield "try without auth", "POST", "/api/v1/labs/vector_add/tries", GZIP, good, 401
    yield "try with a bad token", "POST", "/api/v1/labs/vector_add/tries", auth(BAD) | GZIP, good, 401
    yield "try on an unknown lab", "POST", "/api/v1/labs/no_such_lab/tries", ann | GZIP, good, 404
    yield "try with bad bench", "POST", "/api/v1/labs/vector_add/tries?bench=yes", ann | GZIP, good, 400
    yield "try with an unknown field", "POST", "/api/v1/labs/vector_add/tries?fast=1", ann | GZIP, good, 400
    yield "try not gzip", "POST", "/api/v1/labs/vector_add/tries", ann | GZIP, b"PK\x03\x04 a zip", 400
    yield "try gzip of no tar", "POST", "/api/v1/labs/vector_add/tries", ann | GZIP, \
        __import__("gzip").compress(b"just text, not a tar header" * 30), 400
    yield "try empty", "POST", "/api/v1/labs/vector_add/tries", ann | GZIP, b"", 400
    yield "try too large", "POST", "/api/v1/labs/vector_add/tries", ann | GZIP, b"\x1f\x8b" + b"0" * (1024 * 1024), 413
    yield "try as text", "POST", "/api/v1/labs/vector_add/tries", ann | {"Content-Type": "text/plain"}, good, 415
    for path in ("/api/v1/labs/vector_add/handins", "/api/v1/gradescope/vector_add"):
        yield f"{path} no auth", "POST", path, GZIP, good, 401
        yield f"{path} not gzip", "POST", path, (auth(issued.course_key) if "gradescope" in path else ann) | GZIP, \
            b"not gzip at all", 400
    yield "hand-in on an unknown lab", "POST", "/api/v1/labs/nope/handins", ann | GZIP, good, 404
    yield "hand-in empty", "POST", "/api/v1/labs/vector_add/handins", ann | GZIP, b"", 400
    yield "gradescope with a student token", "POST", "/api/v1/gradescope/vector_add", ann | GZIP, good, 403
    yield "gradescope without a student", "POST", "/api/v1/gradescope/vector_add", auth(issued.course_key) | GZIP, good, 400
    yield "gradescope for nobody", "POST", "/api/v1/gradescope/vector_add", \
        auth(issued.course_key) | GZIP | {"X-Cudalab-Student-Id": "nobody"}, good, 404
    yield "pseudonym too short", "PUT", "/api/v1/me/pseudonym", ann, json.dumps({"pseudonym": "ab"}).encode(), 400
    yield "pseudonym with spaces", "PUT", "/api/v1/me/pseudonym", ann, json.dumps({"pseudonym": "a b c"}).encode(), 400
    yield "pseudonym not json", "PUT", "/api/v1/me/pseudonym", ann, b"{nope", 400
    yield "pseudonym not an object", "PUT", "/api/v1/me/pseudonym", ann, b"[1]", 400
    yield "pseudonym unknown field", "PUT", "/api/v1/me/pseudonym", ann, json.dumps({"pseudonym": "abc", "x": 1}).encode(), 400
    yield "pseudonym taken", "PUT", "/api/v1/me/pseudonym", bob, json.dumps({"pseudonym": "fastest"}).encode(), 409
    yield "bad job id", "GET", "/api/v1/jobs/abc", ann, None, 404
    yield "huge job id", "GET", "/api/v1/jobs/99999999999999999999", ann, None, 404
    yield "no such job", "GET", "/api/v1/jobs/999999", ann, None, 404
    yield "events bad after", "GET", f"/api/v1/jobs/{job}/events?after=-1", ann, None, 400
    yield "events unknown field", "GET", f"/api/v1/jobs/{job}/events?since=1", ann, None, 400
    yield "gradescope results of a try", "GET", f"/api/v1/jobs/{job}/gradescope", ann, None, 404
    yield "handins of an unknown lab", "GET", "/api/v1/handins?lab=nope", ann, None, 404
    yield "leaderboard of an unknown lab", "GET", "/api/v1/labs/nope/leaderboard", {}, None, 404
    yield "instructor view with a student token", "GET", "/api/v1/instructor/queue", ann, None, 403
    yield "instructor view without a token", "GET", "/api/v1/instructor/jobs", {}, None, 401
    yield "negative job id", "GET", "/api/v1/jobs/-1", ann, None, 404
    yield "job id with a fraction", "GET", "/api/v1/jobs/1.5", ann, None, 404
    yield "job id in other digits", "GET", "/api/v1/jobs/\u0661\u0662", ann, None, 404
    yield "events after not a number", "GET", f"/api/v1/jobs/{job}/events?after=abc", ann, None, 400
    yield "events huge after", "GET", f"/api/v1/jobs/{job}/events?after={10 ** 30}", ann, None, 400
    yield "events of a job id not a number", "GET", "/api/v1/jobs/abc/events", ann, None, 404
    yield "pseudonym with a control character", "PUT", "/api/v1/me/pseudonym", ann, \
        json.dumps({"pseudonym": "abc\u0007def"}).encode(), 400
    yield "pseudonym with a newline at its end", "PUT", "/api/v1/me/pseudonym", ann, \
        json.dumps({"pseudonym": "abcdef\n"}).encode(), 400
    yield "pseudonym with a look-alike letter", "PUT", "/api/v1/me/pseudonym", ann, \
        json.dumps({"pseudonym": "f\u0430stest"}).encode(), 400
    yield "pseudonym not a string", "PUT", "/api/v1/me/pseudonym", ann, json.dumps({"pseudonym": 123}).encode(), 400
    yield "pseudonym in a JSON array", "PUT", "/api/v1/me/pseudonym", ann, json.dumps([{"pseudonym": "abc"}]).encode(), 400
    yield "pseudonym nested too deep to read", "PUT", "/api/v1/me/pseudonym", ann, b"[" * 60000, 400
    yield "pseudonym body not UTF-8", "PUT", "/api/v1/me/pseudonym", ann, b'{"pseudonym": "\xff\xfe"}', 400
    yield "pseudonym body too large", "PUT", "/api/v1/me/pseudonym", ann, b" " * 70000, 413
    yield "pseudonym without a token", "PUT", "/api/v1/me/pseudonym", {}, json.dumps({"pseudonym": "abcd"}).encode(), 401
    yield "token not UTF-8", "GET", "/api/v1/me", {"Authorization": b"Bearer cl1_\xff\xfe"}, None, 401
    yield "gradescope student not UTF-8", "POST", "/api/v1/gradescope/vector_add", \
        auth(issued.course_key) | GZIP | {"X-Cudalab-Student-Email": b"\xff\xfe@example.edu"}, good, 404
    yield "query not UTF-8", "GET", "/api/v1/handins?lab=%ff%fe", ann, None, 404
    yield "a lab name of 5000 characters", "POST", "/api/v1/labs/" + "x" * 5000 + "/tries", ann | GZIP, good, 404
    yield "no such endpoint", "GET", "/api/v1/secrets", ann, None, 404
    yield "wrong method", "DELETE", "/api/v1/me", ann, None, 405


def test_every_bad_input_on_every_endpoint_gets_a_sentence_and_a_4xx(course):
    server, issued, client = course
    ann = auth(issued.students["s000"])
    assert client.put("/api/v1/me/pseudonym", json={"pseudonym": "fastest"}, headers=ann).status_code == 200
    job = client.post("/api/v1/labs/vector_add/tries", content=archive(salt="job"), headers=ann | GZIP).json()["job"]
    for what, method, path, headers, body, status in bad_requests(issued, job):
        response = client.request(method, path, headers=headers, content=body)
        assert response.status_code == status, (what, response.status_code, response.text[:2000])
        assert len(refused(response, status)) < 600, (what, "a sentence, not an echo of the request")
    # none of them cost a try: one was spent, of three
    labs = client.get("/api/v1/me", headers=ann).json()["labs"]
    assert labs[0]["tries_left"] == 2


def test_a_too_large_upload_is_refused_before_it_is_read(course):
    server, issued, client = course
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(b"POST /api/v1/labs/vector_add/tries HTTP/1.1\r\nHost: x\r\nContent-Type: application/gzip\r\n"
                     + f"Authorization: Bearer {issued.students['s000']}\r\nContent-Length: {1 << 30}\r\n\r\n".encode()
                     + b"\x1f\x8b")
        answer = b""
        while b"}" not in answer:  # answered with 1 GiB still unsent
            chunk = sock.recv(65536)
            assert chunk, f"the service closed the connection without a whole answer: {answer!r}"
            answer += chunk
        answer = answer.decode(errors="replace")
    assert answer.startswith("HTTP/1.1 413") and "larger than this course's limit of 1 MiB" in answer


def test_a_too_large_json_body_is_refused_before_it_is_read(course):
    """A pseudonym's PUT that says it brings 1 GiB, or sends more than the limit without
    saying so, is answered 413 with a sentence while the rest is still unsent: the service
    never holds such a body in memory."""
    server, issued, client = course
    for framing in (f"Content-Length: {1 << 30}\r\n\r\n".encode() + b'{"pseudonym": "',
                    b"Transfer-Encoding: chunked\r\n\r\n" + b"".join(b"10000\r\n" + b" " * 0x10000 + b"\r\n"
                                                                     for _ in range(3))):
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
            sock.sendall(b"PUT /api/v1/me/pseudonym HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                         + f"Authorization: Bearer {issued.students['s000']}\r\n".encode() + framing)
            answer = b""
            while b"}" not in answer:  # answered with the rest still unsent
                chunk = sock.recv(65536)
                assert chunk, f"the service closed the connection without a whole answer: {answer!r}"
                answer += chunk
        answer = answer.decode(errors="replace")
        assert answer.startswith("HTTP/1.1 413") and "larger than 64 KiB" in answer, answer


# --- the try budget -------------------------------------------------------------------------------

def test_tries_spend_the_budget_and_a_grader_failure_gives_its_try_back(course):
    server, issued, client = course
    ann = auth(issued.students["s000"])
    jobs = [client.post("/api/v1/labs/vector_add/tries", content=archive(outcome, salt=str(n)), headers=ann | GZIP)
            for n, outcome in enumerate(["passed", "failed", "grader_error"])]
    assert [r.status_code for r in jobs] == [202, 202, 202]
    assert [r.json()["tries_left"] for r in jobs] == [2, 1, 0]
    spent = client.post("/api/v1/labs/vector_add/tries", content=archive(salt="4"), headers=ann | GZIP)
    sentence = refused(spent, 429)
    assert "next one comes at" in sentence and int(spent.headers["Retry-After"]) > 0
    finished = [wait_for_job(client, issued.students["s000"], r.json()["job"]) for r in jobs]
    assert [(j["state"], j["charged"]) for j in finished] == \
        [("done", True), ("done", True), ("grader_failed", False)]
    assert finished[1]["exit_code"] == 1 and finished[2]["exit_code"] == 24
    assert client.get("/api/v1/me", headers=ann).json()["labs"][0]["tries_left"] == 1  # the refund
    again = client.post("/api/v1/labs/vector_add/tries", content=archive(salt="5"), headers=ann | GZIP)
    assert again.status_code == 202
    # another student's budget is their own
    bob = client.post("/api/v1/labs/vector_add/tries", content=archive(salt="b"),
                      headers=auth(issued.students["s001"]) | GZIP)
    assert bob.json()["tries_left"] == 2


def test_a_jobs_events_stream_its_lines_and_a_reconnect_misses_nothing(course):
    server, issued, client = course
    token = issued.students["s002"]
    ahead = client.post("/api/v1/labs/vector_add/tries", content=archive(seconds=1.0, salt="ahead"),
                        headers=auth(issued.students["s001"]) | GZIP)
    job = client.post("/api/v1/labs/vector_add/tries", content=archive(salt="ev"), headers=auth(token) | GZIP).json()["job"]
    events = [json.loads(line) for line in client.get(f"/api/v1/jobs/{job}/events", headers=auth(token)).iter_lines()
              if line]
    assert ahead.status_code == 202 and events[0]["type"] == "position" and events[0]["position"] >= 1  # it waited
    lines = [e for e in events if e["type"] == "line"]
    assert lines and events[-1] == {"type": "end", "state": "done", "exit_code": 0, "summary": "every case passed",
                                     "charged": True}
    resumed = [json.loads(line) for line in
               client.get(f"/api/v1/jobs/{job}/events?after={lines[0]['seq']}", headers=auth(token)).iter_lines() if line]
    assert [e for e in resumed if e["type"] == "line"] == lines[1:]


# --- nothing lost when the service is killed --------------------------------------------------

def test_a_sigkill_mid_queue_and_mid_upload_loses_nothing(tmp_path):
    folder = tmp_path / "course"
    ids = write_course(folder, 3)
    issued = issue_tokens(store.database_url(folder, None), ids)
    server = Server(folder, delay_s=1.5).start()
    client = httpx.Client(base_url=server.url, timeout=30)
    try:
        tokens = [issued.students[sid] for sid in ids]
        receipts = [client.post("/api/v1/labs/vector_add/handins", content=archive(salt=f"h{n}"),
                                headers=auth(t) | GZIP) for n, t in enumerate(tokens)]
        assert [r.status_code for r in receipts] == [201, 201, 201]
        jobs = [client.post("/api/v1/labs/vector_add/tries", content=archive(salt=f"t{n}"),
                            headers=auth(t) | GZIP).json()["job"] for n, t in enumerate(tokens)]
        time.sleep(0.8)  # the first job is running, the rest wait
        assert client.get(f"/api/v1/jobs/{jobs[0]}", headers=auth(tokens[0])).json()["state"] == "running"
        # an upload cut off by the kill: headers and half its body sent
        half = socket.create_connection(("127.0.0.1", server.port))
        body = archive(salt="cut")
        half.sendall(b"POST /api/v1/labs/vector_add/handins HTTP/1.1\r\nHost: x\r\nContent-Type: application/gzip\r\n"
                     + f"Authorization: Bearer {tokens[0]}\r\nContent-Length: {len(body)}\r\n\r\n".encode()
                     + body[:len(body) // 2])
        time.sleep(0.2)
        server.kill()
        half.close()
        client.close()

        restarted = Server(folder, delay_s=0.1).start()
        client = httpx.Client(base_url=restarted.url, timeout=30)
        try:
            for token, receipt in zip(tokens, receipts):  # every acknowledged hand-in is there, as it was
                assert client.get("/api/v1/handins", headers=auth(token)).json()["handins"] == [receipt.json()["receipt"]]
            finished = [wait_for_job(client, token, job) for token, job in zip(tokens, jobs)]
            assert all(j["state"] == "done" and j["exit_code"] == 0 for j in finished)
            assert finished[0]["attempts"] == 2  # the one in flight ran again
            assert any("runs again" in line["text"] for line in finished[0]["lines"])
            again = client.post("/api/v1/labs/vector_add/handins", content=archive(salt="h0"),
                                headers=auth(tokens[0]) | GZIP)
            assert again.status_code == 200 and again.json() == {"receipt": receipts[0].json()["receipt"],
                                                                 "repeated": True}
            cut = client.post("/api/v1/labs/vector_add/handins", content=body, headers=auth(tokens[0]) | GZIP)
            assert cut.status_code == 201  # the cut-off upload was never acknowledged, and is taken now
            assert not list(folder.glob("uploads/*/.incoming-*"))
        finally:
            restarted.stop()
    finally:
        client.close()
        server.stop()


# --- deadlines by the service's clock -----------------------------------------------------------

def test_deadline_grace_and_cutoff_by_the_services_clock(tmp_path):
    folder = tmp_path / "course"
    start = store.now()
    deadline = (start + dt.timedelta(seconds=12)).replace(microsecond=0)
    ids = write_course(folder, 1, deadline=deadline, cutoff=deadline + dt.timedelta(seconds=6))
    issued = issue_tokens(store.database_url(folder, None), ids)
    server = Server(folder).start()
    token = auth(issued.students[ids[0]]) | GZIP
    try:
        with httpx.Client(base_url=server.url, timeout=30) as client:
            def hand_in(salt: str) -> httpx.Response:
                # a client's clock in its headers is ignored: only the service's counts
                return client.post("/api/v1/labs/vector_add/handins", content=archive(salt=salt),
                                   headers=token | {"Date": "Mon, 01 Jan 2001 00:00:00 GMT"})

            on_time = hand_in("early")
            assert store.now() < deadline, "the machine was too slow to hand in before the deadline"
            assert on_time.status_code == 201 and on_time.json()["receipt"]["lateness"]["status"] == "on_time"
            time.sleep(max(0.0, (deadline - store.now()).total_seconds()) + 0.5)
            late = hand_in("late")
            assert late.status_code == 201, late.text
            assert late.json()["receipt"]["lateness"] == {"status": "late", "days_late": 1, "penalty": 0.1,
                                                          "sentence": "late by 1 day: 10 % off"}
            assert dt.datetime.fromisoformat(late.json()["receipt"]["received_at"]) > deadline
            time.sleep(max(0.0, (deadline + dt.timedelta(seconds=6) - store.now()).total_seconds()) + 0.5)
            closed = hand_in("closed")
            assert "hand-ins are closed" in refused(closed, 403)
            assert "hand-ins are closed" in refused(client.post("/api/v1/labs/vector_add/tries",
                                                                content=archive(salt="t"), headers=token), 403)
            assert len(client.get("/api/v1/handins", headers=token).json()["handins"]) == 2
    finally:
        server.stop()


# --- PostgreSQL -------------------------------------------------------------------------------------

def test_the_service_on_postgresql(tmp_path):
    url = os.environ.get("CUDALAB_POSTGRES_URL")
    if not url:
        pytest.skip("CUDALAB_POSTGRES_URL is not set, so the service was not tried on PostgreSQL (.ci/run starts "
                    "Debian's postgresql and sets it).")
    engine = create_engine(url)
    with engine.begin() as connection:  # a clean database: this test's tables only
        for table in reversed(inspect(connection).get_table_names()):
            connection.execute(text(f'DROP TABLE IF EXISTS "{table}" CASCADE'))
    engine.dispose()
    folder = tmp_path / "course"
    ids = write_course(folder, 2)
    issued = issue_tokens(url, ids)
    engine = create_engine(url)
    with engine.connect() as connection:
        assert compare_metadata(MigrationContext.configure(connection), store.Base.metadata) == []
    engine.dispose()
    server = Server(folder, database=url).start()
    try:
        with httpx.Client(base_url=server.url, timeout=30) as client:
            token = issued.students[ids[0]]
            job = client.post("/api/v1/labs/vector_add/tries", content=archive(salt="pg"), headers=auth(token) | GZIP)
            assert job.status_code == 202
            assert wait_for_job(client, token, job.json()["job"])["state"] == "done"
            first = client.post("/api/v1/labs/vector_add/handins", content=archive(salt="pgh"), headers=auth(token) | GZIP)
            again = client.post("/api/v1/labs/vector_add/handins", content=archive(salt="pgh"), headers=auth(token) | GZIP)
            assert first.status_code == 201 and again.json()["repeated"] is True
            refused(client.get(f"/api/v1/jobs/{job.json()['job']}", headers=auth(issued.students[ids[1]])), 404)
    finally:
        server.stop()
