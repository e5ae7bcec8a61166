"""`cudalab submit` (commands/submit.py over course/client.py) against a stand-in course
service written here: a real HTTP server on localhost answering the contract's endpoints,
which can drop a job's event stream mid-way and answer 401/403/413/422/429. Every refusal
is a sentence and an exit code, never a traceback; the stream resumes after the last line
seen; the exit code is the one `cudalab run` gave on the service."""
from __future__ import annotations

import gzip
import io
import json
import os
import socket
import tarfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

from conftest import REPO_ROOT

from cudalab import cli
from cudalab.commands import submit as submit_command
from cudalab.course import client
from cudalab.intake import pack as intake_pack
from cudalab.exit_codes import Cli

TOKEN = "cl1_abcdefghijkl_" + "s" * 32
RECEIPT = {"student": "s1", "lab": "toy", "sha256": "ab" * 32, "size": 321, "received_at": "2026-03-01T12:00:00+00:00",
           "lateness": {"status": "on_time", "days_late": 0, "penalty": 0.0, "sentence": "on time"},
           "counts": "last", "checks": ["files", "compile"], "receipt_id": "r-17"}


class StandIn:
    """What the stand-in service does, set by each test, and what it was sent."""

    def __init__(self):
        self.requests: list[tuple[str, str, dict, dict]] = []   # method, path, query, headers
        self.bodies: list[bytes] = []
        self.refuse: dict[str, tuple[int, dict]] = {}            # path prefix -> (status, body)
        self.streams: list[list[dict]] = []                       # events of each connection, in turn
        self.drop_after: list[int | None] = []                    # per connection: events sent before dropping
        self.handins: list[dict] = []


def _handler(stand_in: StandIn):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"   # the body ends where the connection does: a drop is a clean EOF

        def log_message(self, *args):
            pass

        def _answer(self, status: int, body: dict) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _route(self, method: str) -> None:
            url = urlsplit(self.path)
            query = {k: v[0] for k, v in parse_qs(url.query).items()}
            stand_in.requests.append((method, url.path, query, dict(self.headers)))
            if method == "POST":
                stand_in.bodies.append(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            for prefix, (status, body) in stand_in.refuse.items():
                if url.path.startswith(prefix):
                    return self._answer(status, body)
            if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                return self._answer(401, {"error": "That token is not one this course issued."})
            if method == "POST" and url.path == "/api/v1/labs/toy/tries":
                return self._answer(202, {"job": 7, "position": 3, "tries_left": 4})
            if method == "POST" and url.path == "/api/v1/labs/toy/handins":
                repeated = bool(stand_in.handins)
                stand_in.handins = [RECEIPT]
                return self._answer(200 if repeated else 201, {"receipt": RECEIPT, "repeated": repeated})
            if url.path == "/api/v1/handins":
                return self._answer(200, {"handins": stand_in.handins})
            if url.path == "/api/v1/jobs/7/events":
                return self._stream(int(query.get("after", 0)))
            if url.path == "/api/v1/jobs/7":
                return self._answer(200, {"job": 7, "state": "done", "exit_code": 1})
            return self._answer(404, {"error": "No such thing here."})

        def _stream(self, after: int) -> None:
            events = stand_in.streams.pop(0)
            drop = stand_in.drop_after.pop(0) if stand_in.drop_after else None
            self.send_response(200)
            self.send_header("Content-Type", "application/x-ndjson")
            self.end_headers()
            sent = 0
            for event in events:
                if event.get("type") == "line" and event["seq"] <= after:
                    continue
                if drop is not None and sent == drop:
                    return   # the connection closes mid-stream
                self.wfile.write((json.dumps(event) + "\n").encode())
                self.wfile.flush()
                sent += 1

        def do_GET(self):
            self._route("GET")

        def do_POST(self):
            self._route("POST")

    return Handler


@pytest.fixture
def service():
    stand_in = StandIn()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(stand_in))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    stand_in.url = f"http://127.0.0.1:{server.server_address[1]}"
    yield stand_in
    server.shutdown()
    server.server_close()


def pack_without_compiling(config, spec, folder, out, student):
    """pack_folder less the compile check (the toy lab has no SDK to compile against): the
    files pack takes and the archive it writes are pack's own; test_a_real_pack_is_sent
    covers the whole of pack on a real lab."""
    packed = intake_pack.Packed(intake_pack.take_lab_files(config, spec, folder, out), receipt={"accepted": True})
    files = packed.taken.files
    intake_pack.write_archive(out, {**files, "cudalab-manifest.json": json.dumps(
        intake_pack.manifest(spec, files, student)).encode()})
    packed.archive = out
    return packed


@pytest.fixture
def student(toy_env, toy_submission, monkeypatch):
    """The toy lab's student folder, with the token in the environment and no waiting between reconnects."""
    monkeypatch.setenv(client.TOKEN_ENV, TOKEN)
    monkeypatch.setattr(client, "STREAM_BACKOFF_S", (0.0,))
    monkeypatch.setattr(submit_command, "pack_folder", pack_without_compiling)
    return toy_submission


def submit(service, folder, *extra) -> int:
    return cli.main(["submit", "toy", str(folder), "--server", service.url, *extra])


LINES = [{"type": "line", "seq": n, "text": f"case c_{n}: line {n}"} for n in (1, 2, 3)]


def test_a_try_streams_the_run_across_a_dropped_connection_and_exits_as_run_did(service, student, capsys):
    """Proves: the try uploads what pack makes (the lab file and its manifest, gzip, with the
    token as a bearer), shows the queue position as it changes, and when the stream drops
    after two lines reconnects with after=2 and prints every line exactly once, exiting with
    the job's own code (1: a case failed)."""
    first = [{"type": "position", "position": 2}, {"type": "position", "position": 1}, *LINES[:2]]
    service.streams = [first, [*LINES, {"type": "end", "state": "done", "exit_code": 1, "summary": "1 of 3 "
                                        "cases failed", "charged": True}]]
    service.drop_after = [4, None]
    assert submit(service, student) == 1
    out, err = capsys.readouterr()
    assert out.splitlines() == ["case c_1: line 1", "case c_2: line 2", "case c_3: line 3"]
    assert "position 3" in err and "position 2 in the queue" in err and "position 1 in the queue" in err
    assert "1 of 3 cases failed" in err and "refunded" not in err and "Traceback" not in err
    afters = [query.get("after") for _, path, query, _ in service.requests if path.endswith("/events")]
    assert afters == ["0", "2"]
    upload = next(h for m, p, _, h in service.requests if m == "POST")
    assert upload["Authorization"] == f"Bearer {TOKEN}" and upload["Content-Type"] == "application/gzip"
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(service.bodies[0]))) as archive:
        assert archive.getnames() == ["toy.cu", "cudalab-manifest.json"]


def test_a_refunded_try_says_so_and_exits_with_the_graders_code(service, student, capsys):
    """Proves: a try the service ended as the grader's failure exits 24, as `cudalab run`
    would, and tells the student it cost no try."""
    service.streams = [[{"type": "end", "state": "grader_failed", "exit_code": 24, "summary": "the grader failed",
                         "charged": False}]]
    assert submit(service, student, "--bench") == Cli.INTERNAL
    assert "refunded" in capsys.readouterr().err
    assert next(q for m, _, q, _ in service.requests if m == "POST") == {"bench": "1"}


def test_a_stream_that_never_comes_back_is_a_sentence(service, student, capsys):
    """Proves: when every reconnect drops before the end, submit gives up after its retries
    with exit 28 and tells the student the try is still queued."""
    service.streams = [[LINES[0]]] * (client.STREAM_RETRIES + 1)
    service.drop_after = [0] * (client.STREAM_RETRIES + 1)
    assert submit(service, student) == Cli.SERVICE_UNREACHABLE
    err = capsys.readouterr().err
    assert "Lost the connection" in err and "still in the queue" in err and "Traceback" not in err


@pytest.mark.parametrize("status, code", [(429, Cli.SERVICE_REFUSED), (413, Cli.SUBMISSION_INVALID),
                                          (403, Cli.SERVICE_REFUSED), (500, Cli.INTERNAL)])
def test_each_refusal_is_the_services_sentence_and_an_exit_code(service, student, capsys, status, code):
    """Proves: 429 (tries spent), 413 (too big), 403 (closed) and a 500 each end submit with
    their own exit code and a sentence (the service's where it gave one), no traceback."""
    sentence = f"Refused with {status}: the next try comes at 12:30 UTC."
    service.refuse["/api/v1/labs/toy/tries"] = (status, {"error": sentence})
    assert submit(service, student) == code
    err = capsys.readouterr().err
    assert (sentence in err) if status < 500 else "failed while sending your try" in err
    assert "Traceback" not in err


def test_a_wrong_token_is_told_where_the_token_came_from(service, student, monkeypatch, capsys):
    """Proves: a 401 is exit 29 with the service's sentence and where to fix the token."""
    monkeypatch.setenv(client.TOKEN_ENV, "cl1_wrongwrongwr_" + "x" * 32)
    assert submit(service, student) == Cli.SERVICE_REFUSED
    err = capsys.readouterr().err
    assert "not one this course issued" in err and client.TOKEN_ENV in err


def test_no_service_at_the_address_is_a_sentence(student, capsys):
    """Proves: a refused connection (nothing listening) is exit 28 and names the address."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert cli.main(["submit", "toy", str(student), "--server", f"http://127.0.0.1:{port}"]) == Cli.SERVICE_UNREACHABLE
    err = capsys.readouterr().err
    assert f"127.0.0.1:{port}" in err and "Could not reach" in err and "Traceback" not in err


def test_a_token_file_others_can_read_is_refused_with_the_chmod(service, student, tmp_path, monkeypatch, capsys):
    """Proves: without CUDALAB_TOKEN, a token file of mode 0644 is refused (exit 2) with the
    chmod that fixes it, before anything is sent; at 0600 it is used."""
    monkeypatch.delenv(client.TOKEN_ENV)
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    token_file.chmod(0o644)
    assert submit(service, student, "--list", "--token-file", str(token_file)) == Cli.USAGE
    assert f"chmod 600 {token_file}" in capsys.readouterr().err and not service.requests
    token_file.chmod(0o600)
    assert submit(service, student, "--list", "--token-file", str(token_file)) == 0
    assert service.requests[0][3]["Authorization"] == f"Bearer {TOKEN}"


def test_plain_http_to_another_machine_is_refused(student, capsys):
    """Proves: the token is never sent unencrypted to another machine."""
    assert cli.main(["submit", "toy", str(student), "--server", "http://gpu.example.edu"]) == Cli.USAGE
    assert "https://" in capsys.readouterr().err


def test_a_hand_in_prints_and_keeps_its_receipt_and_list_shows_it(service, student, capsys):
    """Proves: a hand-in prints the receipt (id, hash, lateness), keeps a copy under
    FOLDER/.cudalab/receipts/, says when the same content was already handed in, and
    --list shows the hand-in with the path of its kept copy."""
    assert submit(service, student, "--hand-in") == 0
    out = capsys.readouterr().out
    assert "Receipt r-17 for toy" in out and RECEIPT["sha256"] in out and "on time" in out
    kept = list((student / ".cudalab" / "receipts").iterdir())
    assert len(kept) == 1 and json.loads(kept[0].read_text()) == RECEIPT
    assert submit(service, student, "--hand-in") == 0
    assert "already had this exact hand-in" in capsys.readouterr().err
    assert submit(service, student, "--list") == 0
    listed = capsys.readouterr().out
    assert "r-17" in listed and str(kept[0]) in listed


def test_a_hand_in_its_checks_reject_lists_them_and_exits_27(service, student, capsys):
    """Proves: a 422 from the hand-in checks prints each failed check and exits as `check` does."""
    service.refuse["/api/v1/labs/toy/handins"] = (422, {"error": "The hand-in was not accepted: see the failed "
                                                        "checks.", "checks": [{"name": "symbols", "message":
                                                                               "defines main()"}]})
    assert submit(service, student, "--hand-in") == Cli.REJECTED
    captured = capsys.readouterr()
    assert "FAILED symbols: defines main()" in captured.out and "not accepted" in captured.err
    assert not (student / ".cudalab").exists()


@pytest.mark.needs_build
def test_a_real_pack_is_sent_and_a_folder_pack_refuses_sends_nothing(service, tmp_path, monkeypatch, capsys):
    """Proves: submit packs exactly as `cudalab pack` does (the solution's file and the
    manifest, the rest of the folder left out and named), and a folder pack would refuse
    (a misnamed file) is refused with pack's words before anything reaches the service."""
    monkeypatch.setenv("CUDALAB_ROOT", str(REPO_ROOT))
    monkeypatch.setenv("CUDALAB_PRESET", "ci")
    monkeypatch.setenv("CUDALAB_WORK_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv(client.TOKEN_ENV, TOKEN)
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "vectoradd.cu").write_bytes((REPO_ROOT / "solutions" / "vector_add" / "vector_add.cu").read_bytes())
    assert cli.main(["submit", "vector_add", str(folder), "--server", service.url]) == Cli.REJECTED
    assert "did you mean vector_add.cu?" in capsys.readouterr().err and not service.requests
    (folder / "vectoradd.cu").rename(folder / "vector_add.cu")
    (folder / "notes.txt").write_text("ask about grid-stride loops\n")
    service.refuse["/api/v1/labs/vector_add/tries"] = (429, {"error": "No tries left."})
    assert cli.main(["submit", "vector_add", str(folder), "--server", service.url]) == Cli.SERVICE_REFUSED
    assert "Left out (not part of the vector_add hand-in): notes.txt." in capsys.readouterr().err
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(service.bodies[0]))) as archive:
        assert archive.getnames() == ["vector_add.cu", "cudalab-manifest.json"]
