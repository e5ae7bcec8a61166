"""The student's side of the course service (`cudalab submit`): the token, the HTTP calls of
the service's JSON API (/api/v1, httpx), the job's event stream followed across dropped
connections, and the receipts kept beside the student's files.

Every way the service can fail to answer or refuse becomes a ServiceError: a sentence and
the CLI's exit code, never a traceback. The service's own sentences (its `{"error": ...}`
answers) are passed on as they are, since they say what to do.
"""
from __future__ import annotations

import json
import os
import re
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from ..errors import UsageError
from ..exit_codes import Cli

TOKEN_ENV = "CUDALAB_TOKEN"
DEFAULT_TOKEN_FILE = Path("~/.config/cudalab/token")
API = "/api/v1"
# Reconnects to a job's event stream in a row that may fail before `submit` gives up, and
# the wait before each (a service restarting takes a few seconds to answer again).
STREAM_RETRIES = 6
STREAM_BACKOFF_S = (0.5, 1.0, 2.0, 4.0, 8.0, 15.0)
RECEIPTS = Path(".cudalab") / "receipts"
_LOOPBACK = {"localhost", "127.0.0.1", "::1"}
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]")


class ServiceError(UsageError):
    """The course service could not be reached, or answered no; exit_code says which. Like a
    usage error it stops a command before any grade, so it has no grade status."""

    status = "service"

    def __init__(self, message: str, exit_code: Cli = Cli.SERVICE_REFUSED, checks: list | None = None):
        super().__init__(message)
        self.exit_code = exit_code
        self.checks = checks or []   # a rejected hand-in's failed checks, as the service listed them


def read_token(env: dict[str, str], token_file: Path | None) -> tuple[str, str]:
    """The student's token and where it came from: CUDALAB_TOKEN, else the token file, which
    must be the student's alone (mode 0600 or stricter: it is a password)."""
    if env.get(TOKEN_ENV, "").strip():
        return env[TOKEN_ENV].strip(), TOKEN_ENV
    path = (token_file or DEFAULT_TOKEN_FILE).expanduser()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        raise ServiceError(f"No token: {TOKEN_ENV} is not set and {path} does not exist. Save the token your "
                           f"instructor sent in {path} (then `chmod 600 {path}`), or give --token-file.",
                           Cli.USAGE) from None
    except OSError as err:
        raise ServiceError(f"Cannot read the token file {path}: {err.strerror}. It must be a plain file "
                           "(not a link) that you own.", Cli.USAGE) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ServiceError(f"The token file {path} is not a plain file.", Cli.USAGE)
        if info.st_mode & 0o077:
            raise ServiceError(f"The token file {path} can be read by others (mode {stat.S_IMODE(info.st_mode):04o}): "
                               f"it is a password. Run `chmod 600 {path}` and submit again.", Cli.USAGE)
        token = os.read(fd, 4096).decode("utf-8", "replace").strip()
    finally:
        os.close(fd)
    if not token:
        raise ServiceError(f"The token file {path} is empty: paste the token your instructor sent into it.", Cli.USAGE)
    return token, str(path)


def check_server_url(url: str) -> str:
    """The service's base URL, without a trailing slash. Plain http is for this machine only:
    elsewhere the token would cross the network readable by anyone on the way."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ServiceError(f"--server {url!r} is not a web address: give the course service's address, "
                           "e.g. https://gpu.example.edu.", Cli.USAGE)
    if parts.scheme == "http" and parts.hostname not in _LOOPBACK:
        raise ServiceError(f"--server {url} uses plain http to another machine, which would send your token "
                           "unencrypted: use the https:// address your instructor gave.", Cli.USAGE)
    return url.strip().rstrip("/")


@dataclass
class StreamState:
    """How far a job's events have been read: what a reconnect asks to resume after."""
    last_seq: int = 0
    reconnects: int = 0
    position: int | None = None
    seen_positions: list[int] = field(default_factory=list)


class CourseClient:
    def __init__(self, server: str, token: str, *, transport: httpx.BaseTransport | None = None,
                 sleep: Callable[[float], None] = time.sleep, timeout_s: float = 30.0):
        self.server = server
        self._sleep = sleep
        self._http = httpx.Client(base_url=server + API, transport=transport,
                                  headers={"Authorization": f"Bearer {token}"},
                                  timeout=httpx.Timeout(timeout_s, connect=10.0))

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "CourseClient":
        return self

    def __exit__(self, *_exc) -> None:
        self.close()

    # --- one request --------------------------------------------------------------------------
    def _request(self, method: str, path: str, what: str, **kwargs) -> httpx.Response:
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.TimeoutException:
            raise ServiceError(f"The course service at {self.server} did not answer in time while {what}. "
                               "Try again in a minute; if it keeps happening, tell your instructor.",
                               Cli.SERVICE_UNREACHABLE) from None
        except httpx.TransportError as err:
            raise ServiceError(f"Could not reach the course service at {self.server} while {what}: "
                               f"{_transport_words(err)}. Check the --server address and your network.",
                               Cli.SERVICE_UNREACHABLE) from None
        if response.status_code >= 400:
            raise refusal(response, self.server, what)
        return response

    def _json(self, method: str, path: str, what: str, **kwargs) -> tuple[int, dict]:
        response = self._request(method, path, what, **kwargs)
        try:
            body = response.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            raise ServiceError(f"The server at {self.server} answered {what} with something that is not the course "
                               "service's JSON: is --server the address of the course service?",
                               Cli.SERVICE_UNREACHABLE)
        return response.status_code, body

    # --- the API ------------------------------------------------------------------------------
    def start_try(self, lab: str, archive: bytes, bench: bool) -> dict:
        _, body = self._json("POST", f"/labs/{lab}/tries", "sending your try", params={"bench": int(bench)},
                             content=archive, headers={"Content-Type": "application/gzip"})
        if not isinstance(body.get("job"), int):
            raise ServiceError(f"The course service at {self.server} accepted the try but named no job: tell your "
                               "instructor.", Cli.INTERNAL)
        return body

    def hand_in(self, lab: str, archive: bytes) -> tuple[dict, bool]:
        """The receipt, and whether the service already had this exact hand-in."""
        _, body = self._json("POST", f"/labs/{lab}/handins", "handing in", content=archive,
                             headers={"Content-Type": "application/gzip"})
        receipt = body.get("receipt")
        if not isinstance(receipt, dict):
            raise ServiceError(f"The course service at {self.server} answered the hand-in without a receipt: "
                               "it may not have kept it. Hand in again, and tell your instructor.", Cli.INTERNAL)
        return receipt, bool(body.get("repeated"))

    def handins(self, lab: str | None) -> list[dict]:
        _, body = self._json("GET", "/handins", "listing your hand-ins", params={"lab": lab} if lab else None)
        return [r for r in body.get("handins", []) if isinstance(r, dict)]

    def job(self, job_id: int) -> dict:
        return self._json("GET", f"/jobs/{job_id}", "reading your try")[1]

    def events(self, job_id: int, state: StreamState) -> Iterator[dict]:
        """The job's events up to and including its "end", resuming after the last line seen
        whenever the stream drops (a restart of the service included)."""
        failures = 0
        while True:
            try:
                with self._http.stream("GET", f"/jobs/{job_id}/events", params={"after": state.last_seq},
                                       timeout=httpx.Timeout(30.0, connect=10.0, read=120.0)) as response:
                    if response.status_code >= 400:
                        response.read()
                        raise refusal(response, self.server, "following your try")
                    for line in response.iter_lines():
                        event = _event(line)
                        if event is None:
                            continue
                        failures = 0   # the service is answering: a later drop starts the count again
                        if event.get("type") == "line":
                            seq = event.get("seq")
                            if not isinstance(seq, int) or seq <= state.last_seq:
                                continue   # already shown before the reconnect
                            state.last_seq = seq
                        yield event
                        if event.get("type") == "end":
                            return
            except httpx.TransportError as err:
                last_error = _transport_words(err)
            else:
                last_error = "the stream ended before the try did"
            if failures >= STREAM_RETRIES:
                raise ServiceError(f"Lost the connection to the course service at {self.server} while following "
                                   f"job {job_id} ({last_error}), and it did not come back. Your try is still in "
                                   "the queue: `cudalab submit --list` and the service's web page show its result.",
                                   Cli.SERVICE_UNREACHABLE)
            self._sleep(STREAM_BACKOFF_S[min(failures, len(STREAM_BACKOFF_S) - 1)])
            failures += 1
            state.reconnects += 1


def _event(line: str) -> dict | None:
    if not line.strip():
        return None
    try:
        event = json.loads(line)
    except ValueError:
        return None
    return event if isinstance(event, dict) else None


def _transport_words(err: httpx.TransportError) -> str:
    if isinstance(err, httpx.ConnectError):
        return "the connection was refused or the address could not be found"
    if isinstance(err, httpx.TimeoutException):
        return "it stopped answering"
    return "the connection dropped"


# What each refusal means for `submit`'s exit code; the rest of 4xx is SERVICE_REFUSED.
_REFUSAL_CODES = {400: Cli.USAGE, 413: Cli.SUBMISSION_INVALID, 422: Cli.REJECTED}


def refusal(response: httpx.Response, server: str, what: str) -> ServiceError:
    """The sentence and exit code for an answer of 400 or more."""
    try:
        body = response.json()
    except ValueError:
        body = None
    sentence = body.get("error") if isinstance(body, dict) and isinstance(body.get("error"), str) else None
    status = response.status_code
    if status >= 500:
        return ServiceError(f"The course service at {server} failed while {what} (HTTP {status}): nothing of yours "
                            "was charged for it. Try again later, and tell your instructor if it goes on.", Cli.INTERNAL)
    if sentence is None:
        return ServiceError(f"The server at {server} refused {what} with HTTP {status} and no explanation: is "
                            "--server the address of the course service?", Cli.SERVICE_REFUSED)
    if status == 401:
        sentence += (f" Check the token in {TOKEN_ENV} or your token file (ask your instructor for a new one if it "
                     "was replaced).")
    checks = body.get("checks") if isinstance(body.get("checks"), list) else []
    return ServiceError(sentence, _REFUSAL_CODES.get(status, Cli.SERVICE_REFUSED), checks)


def try_exit_code(end: dict) -> int:
    """What `cudalab run` would have exited with: the job's own code; a job with none (the
    service lost it) is the grader's failure, not the student's."""
    code = end.get("exit_code")
    return code if isinstance(code, int) and 0 <= code < 256 else int(Cli.INTERNAL)


def keep_receipt(folder: Path, receipt: dict) -> Path:
    """A copy of the receipt in FOLDER/.cudalab/receipts/, named by lab, time and content."""
    folder = folder / RECEIPTS
    folder.mkdir(parents=True, exist_ok=True)
    stem = "-".join(_SAFE_NAME.sub("_", str(receipt.get(key, ""))) for key in ("lab", "received_at"))
    path = folder / f"{stem}-{str(receipt.get('sha256', ''))[:12]}.json"
    temp = path.with_name(f".{path.name}.partial")
    temp.write_text(json.dumps(receipt, indent=2, sort_keys=True) + "\n")
    temp.replace(path)
    return path


def kept_receipts(folder: Path) -> dict[str, Path]:
    """The receipts kept in FOLDER, by receipt id (or content hash where a copy has no id)."""
    kept: dict[str, Path] = {}
    for path in sorted((folder / RECEIPTS).glob("*.json")) if (folder / RECEIPTS).is_dir() else []:
        try:
            receipt = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(receipt, dict):
            kept[str(receipt.get("receipt_id") or receipt.get("sha256"))] = path
    return kept


def receipt_lines(receipt: dict) -> list[str]:
    """A receipt in words, for the terminal."""
    lateness = receipt.get("lateness") if isinstance(receipt.get("lateness"), dict) else {}
    return [f"Receipt {receipt.get('receipt_id', '?')} for {receipt.get('lab', '?')}, "
            f"received {receipt.get('received_at', '?')} (the service's clock)",
            f"  content sha256 {receipt.get('sha256', '?')} ({receipt.get('size', '?')} bytes)",
            f"  {lateness.get('sentence') or lateness.get('status') or 'lateness not stated'}; "
            f"counts: the {receipt.get('counts', '?')} hand-in",
            f"  checks passed: {', '.join(map(str, receipt.get('checks') or [])) or 'none listed'}"]
