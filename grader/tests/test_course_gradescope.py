"""The Gradescope bundle for real: written by `cudalab course gradescope`, unpacked into an
/autograder-like folder, its run_autograder run as Gradescope runs it (a subprocess, the
standard library only) against a stand-in course service, and its results.json checked
against Gradescope's format -- on success and on every failure, where it must say the
student is not at fault instead of crashing."""
from __future__ import annotations

import io
import json
import os
import socket
import stat
import subprocess
import sys
import tarfile
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from cudalab import cli
from cudalab.course import tokens

SCHEMA = Path(__file__).resolve().parents[1] / "cudalab" / "schemas" / "gradescope_results.schema.json"
GRADED = {"score": 7.5, "output": "graded on the course's H100", "tests": [
    {"name": "c_small", "score": 5, "max_score": 5, "status": "passed"}]}


class StandIn:
    """The three endpoints a bundle calls, per the service's contract; `mode` picks an outcome."""

    def __init__(self, key: str, mode: str = "ok"):
        self.key, self.mode, self.received, self.polls = key, mode, [], 0
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def answer(self, status: int, body, raw: bytes | None = None):
                data = raw if raw is not None else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def authorised(self) -> bool:
                if self.headers.get("Authorization") != f"Bearer {stand_in.key}":
                    self.answer(401, {"error": "That token is not one this course issued."})
                    return False
                return True

            def do_POST(self):
                if not self.authorised():
                    return
                data = self.rfile.read(int(self.headers["Content-Length"]))
                stand_in.received.append({"path": self.path, "headers": dict(self.headers), "body": data})
                if stand_in.mode == "bad_answer":
                    return self.answer(202, None, raw=b"<html>proxy error</html>")
                self.answer(202, {"job": 41})

            def do_GET(self):
                if not self.authorised():
                    return
                if self.path == "/api/v1/jobs/41":
                    stand_in.polls += 1
                    state = {"slow": "queued", "grader_failed": "grader_failed"}.get(
                        stand_in.mode, "done" if stand_in.polls > 1 else "running")
                    return self.answer(200, {"job": 41, "state": state})
                if self.path == "/api/v1/jobs/41/gradescope":
                    return self.answer(200, GRADED)
                self.answer(404, {"error": "no such job"})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def course(tmp_path, toy_env):
    (tmp_path / "export.csv").write_text("id,name,lms_id,email\ns1,Ann,101,ann@x.edu\n")
    folder = tmp_path / "course"
    assert cli.main(["course", "init", str(folder), "--labs", "toy", "--roster", str(tmp_path / "export.csv")]) == 0
    assert cli.main(["course", "tokens", str(folder)]) == 0
    return folder


def autograder(tmp_path: Path, bundle: Path, files: dict[str, bytes] | None = None,
               users=({"email": "ann@x.edu", "sid": "s1", "name": "Ann"},), **settings) -> Path:
    """Gradescope's /autograder for one submission: the bundle in source/, run_autograder
    beside it, the submission and its metadata."""
    root = tmp_path / "autograder"
    with zipfile.ZipFile(bundle) as archive:
        archive.extractall(root / "source")
    (root / "run_autograder").write_bytes((root / "source" / "run_autograder").read_bytes())
    settings_file = root / "source" / "cudalab_gradescope.json"
    body = json.loads(settings_file.read_text())
    body.update({"poll_s": 0.05, "grade_timeout_s": 2, "request_timeout_s": 2, **settings})
    settings_file.write_text(json.dumps(body))
    (root / "submission").mkdir()
    for name, data in (files if files is not None else {"toy.cu": b"// mine\n", "notes.txt": b"x"}).items():
        (root / "submission" / name).write_bytes(data)
    (root / "submission_metadata.json").write_text(json.dumps({"users": list(users), "assignment": {"id": 1}}))
    return root


def run_autograder(root: Path) -> dict:
    env = {"PATH": os.environ.get("PATH", "/usr/bin"), "CUDALAB_AUTOGRADER_ROOT": str(root)}
    done = subprocess.run([sys.executable, "-I", "-S", str(root / "run_autograder")], env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    results = json.loads((root / "results" / "results.json").read_text())
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(results, json.loads(SCHEMA.read_text()))
    return results


def write_bundle(course: Path, server: str, out: Path) -> Path:
    assert cli.main(["course", "gradescope", "toy", "--course", str(course), "--server", server, "--out", str(out)]) == 0
    return out


def test_the_bundle_holds_what_gradescope_needs_and_keeps_the_key_private(tmp_path, course):
    bundle = write_bundle(course, "https://gpu.example.edu", tmp_path / "toy.zip")
    assert stat.S_IMODE(bundle.stat().st_mode) == 0o600
    with zipfile.ZipFile(bundle) as archive:
        modes = {info.filename: stat.S_IMODE(info.external_attr >> 16) for info in archive.infolist()}
        settings = json.loads(archive.read("cudalab_gradescope.json"))
        runner = archive.read("run_autograder").decode()
    assert modes == {"setup.sh": 0o755, "run_autograder": 0o755, "cudalab_gradescope.json": 0o600}
    assert settings["course_key"] == (course / tokens.COURSE_KEY_FILE).read_text().strip()
    assert settings["server"] == "https://gpu.example.edu" and settings["lab"] == "toy"
    imported = {line.split()[1].split(".")[0] for line in runner.splitlines() if line.startswith(("import ", "from "))}
    assert imported <= set(sys.stdlib_module_names) | {"__future__"}  # Gradescope's image has no cudalab


def test_bundle_refuses_a_bad_server_or_a_course_without_a_key(tmp_path, course, capsys):
    assert cli.main(["course", "gradescope", "toy", "--course", str(course), "--server", "gpu:8000",
                     "--out", str(tmp_path / "b.zip")]) == 2
    assert "is not the course service's address" in capsys.readouterr().err
    (course / tokens.COURSE_KEY_FILE).unlink()
    assert cli.main(["course", "gradescope", "toy", "--course", str(course), "--server", "https://x",
                     "--out", str(tmp_path / "b.zip")]) == 2
    assert "run `cudalab course tokens" in capsys.readouterr().err
    assert not (tmp_path / "b.zip").exists()


def test_a_submission_is_forwarded_and_its_results_written(tmp_path, course):
    key = (course / tokens.COURSE_KEY_FILE).read_text().strip()
    service = StandIn(key)
    try:
        root = autograder(tmp_path, write_bundle(course, service.url, tmp_path / "toy.zip"))
        results = run_autograder(root)
    finally:
        service.close()
    assert results == GRADED
    [posted] = service.received
    assert posted["path"] == "/api/v1/gradescope/toy"
    assert posted["headers"]["X-Cudalab-Student-Email"] == "ann@x.edu"
    assert posted["headers"]["X-Cudalab-Student-Id"] == "s1"
    assert posted["headers"]["Content-Type"] == "application/gzip"
    with tarfile.open(fileobj=io.BytesIO(posted["body"]), mode="r:gz") as archive:
        members = {m.name: archive.extractfile(m).read() for m in archive.getmembers()}
    assert set(members) == {"toy.cu", "cudalab-manifest.json"}  # the lab's files only, as `cudalab pack` takes
    assert members["toy.cu"] == b"// mine\n"
    assert json.loads(members["cudalab-manifest.json"])["lab"] == "toy"


def _closed_port() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


@pytest.mark.parametrize("mode, said", [
    ("down", "could not be reached"),
    ("slow", "did not finish grading job 41 within"),
    ("bad_answer", "something that is not JSON"),
    ("grader_failed", "grader failed on this submission"),
    ("wrong_key", "refused the request (401: That token is not one this course issued.)"),
])
def test_every_failure_gives_a_result_that_says_the_student_is_not_at_fault(tmp_path, course, mode, said):
    key = (course / tokens.COURSE_KEY_FILE).read_text().strip()
    service = StandIn("another key" if mode == "wrong_key" else key, mode)
    try:
        server = _closed_port() if mode == "down" else service.url
        root = autograder(tmp_path, write_bundle(course, server, tmp_path / "toy.zip"))
        results = run_autograder(root)
    finally:
        service.close()
    assert results["score"] == 0 and results["visibility"] == "visible"
    assert said in results["output"] and "not a problem with your code" in results["output"]


@pytest.mark.parametrize("files, users, said", [
    ({"notes.txt": b"x"}, None, "none of the lab's files"),
    ({"toy.cu": b"x" * (1 << 20)}, None, "over the lab's limit"),
    (None, [], "names no submitter"),
])
def test_a_submission_that_cannot_be_sent_is_said_not_crashed(tmp_path, course, files, users, said):
    service = StandIn((course / tokens.COURSE_KEY_FILE).read_text().strip())
    try:
        kwargs = {} if users is None else {"users": users}
        root = autograder(tmp_path, write_bundle(course, service.url, tmp_path / "toy.zip"), files, **kwargs)
        results = run_autograder(root)
    finally:
        service.close()
    assert results["score"] == 0 and said in results["output"] and not service.received


def test_a_linked_lab_file_is_never_followed(tmp_path, course):
    service = StandIn((course / tokens.COURSE_KEY_FILE).read_text().strip())
    try:
        root = autograder(tmp_path, write_bundle(course, service.url, tmp_path / "toy.zip"), {})
        (tmp_path / "secret").write_text("the course key's neighbour")
        (root / "submission" / "toy.cu").symlink_to(tmp_path / "secret")
        results = run_autograder(root)
    finally:
        service.close()
    assert "not a plain file" in results["output"] and not service.received
