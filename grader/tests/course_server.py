"""A course service started for real, for the course service's tests: a course folder
(course.toml and roster), its students' tokens stored hashed, `cudalab serve` in a
subprocess on a free localhost port with the stand-in executor, and the archives that drive
the stand-in (course/work.py: `standin: OUTCOME [SECONDS]` in a file of the archive)."""
from __future__ import annotations

import datetime as dt
import gzip
import io
import os
import signal
import socket
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from cudalab.course import store, tokens

TESTS = Path(__file__).resolve().parent
REPO_ROOT = TESTS.parents[1]
GRADER = REPO_ROOT / "grader"


def toml_time(at: dt.datetime) -> str:
    return at.astimezone(dt.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def write_course(folder: Path, students: int, *, opens: dt.datetime | None = None,
                 deadline: dt.datetime | None = None, cutoff: dt.datetime | None = None, grace_minutes: int = 0,
                 capacity: int = 3, refill_per_hour: float = 1.0, max_upload_mib: int = 1) -> list[str]:
    """A course of `students` students (s000, s001, ...) offering vector_add; their ids."""
    folder.mkdir(parents=True, exist_ok=True)
    at = store.now()
    opens = opens or at - dt.timedelta(days=1)
    deadline = deadline or at + dt.timedelta(days=7)
    ids = [f"s{n:03d}" for n in range(students)]
    (folder / "roster.csv").write_text("id,name,lms_id,email\n" + "".join(
        f"{sid},Student {sid},lms-{sid},{sid}@example.edu\n" for sid in ids), encoding="utf-8")
    late = f"grace_minutes = {grace_minutes}\npenalty_per_day = 0.1\n"
    if cutoff is not None:
        late += f"cutoff = {toml_time(cutoff)}\n"
    (folder / "course.toml").write_text(f"""name = "Test course"
roster = "roster.csv"
max_upload_mib = {max_upload_mib}

[labs.vector_add]
opens = {toml_time(opens)}
deadline = {toml_time(deadline)}
counts = "last"

[labs.vector_add.late]
{late}
[labs.vector_add.tries]
capacity = {capacity}
refill_per_hour = {refill_per_hour}
""", encoding="utf-8")
    return ids


@dataclass
class Tokens:
    students: dict[str, str]
    instructor: str
    course_key: str


def issue_tokens(url: str, ids: list[str]) -> Tokens:
    """Each student's token, the instructor's and the course key, stored only hashed (as
    `cudalab course tokens` does)."""
    sessions = store.open_database(url)
    issued: dict[str, str] = {}
    with sessions() as session:
        for sid in ids:
            token, lookup, hashed = tokens.issue()
            session.add(store.Student(id=sid, name=f"Student {sid}", lms_id=f"lms-{sid}",
                                      email=f"{sid}@example.edu", token_hash=hashed, token_lookup=lookup))
            issued[sid] = token
        secrets = {}
        for kind in (store.SecretKind.INSTRUCTOR, store.SecretKind.COURSE_KEY):
            token, lookup, hashed = tokens.issue()
            session.add(store.Secret(kind=kind, lookup=lookup, hash=hashed))
            secrets[kind] = token
        session.commit()
    sessions.kw["bind"].dispose()
    return Tokens(issued, secrets[store.SecretKind.INSTRUCTOR], secrets[store.SecretKind.COURSE_KEY])


def archive(outcome: str = "passed", seconds: float | None = None, salt: str = "") -> bytes:
    """A .tar.gz with the lab's file, telling the stand-in what to do; `salt` makes its
    content differ from another's."""
    source = f"// standin: {outcome}{'' if seconds is None else f' {seconds}'}\n// {salt}\n__global__ void k() {{}}\n"
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        data = source.encode()
        info = tarfile.TarInfo("vector_add.cu")
        info.size, info.mtime = len(data), 0
        tar.addfile(info, io.BytesIO(data))
    return gzip.compress(buffer.getvalue(), mtime=0)  # the same content is the same bytes


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Server:
    """`cudalab serve` in a subprocess; start() waits until it answers."""
    course: Path
    database: str | None = None
    delay_s: float = 0.2
    slots: int = 1
    port: int = field(default_factory=free_port)
    process: subprocess.Popen | None = None
    log: Path | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout_s: float = 60.0) -> "Server":
        env = {**os.environ, "PYTHONPATH": str(GRADER), "CUDALAB_STANDIN_SLOTS": str(self.slots)}
        command = [sys.executable, "-m", "cudalab", "serve", "--course", str(self.course), "--executor", "standin",
                   "--standin-delay", str(self.delay_s), "--port", str(self.port)]
        if self.database:
            command += ["--database", self.database]
        self.log = self.course / f"serve-{self.port}-{time.monotonic_ns()}.log"
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(command, cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"cudalab serve exited {self.process.returncode}:\n{self.output()}")
            try:
                if httpx.get(self.url + "/api/v1/health", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.stop()
        raise AssertionError(f"cudalab serve did not answer within {timeout_s} s:\n{self.output()}")

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log and self.log.exists() else ""

    def kill(self) -> None:
        """SIGKILL: the service gets no chance to tidy up."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()


def auth(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


GZIP = {"Content-Type": "application/gzip"}


def wait_for_job(client: httpx.Client, token: str, job: int, timeout_s: float = 60.0) -> dict:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        body = client.get(f"/api/v1/jobs/{job}", headers=auth(token)).json()
        if body["state"] in ("done", "grader_failed"):
            return body
        time.sleep(0.1)
    raise AssertionError(f"job {job} did not finish within {timeout_s} s: {body}")
