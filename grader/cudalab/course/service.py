"""The course service's JSON API (Starlette): students' tries and hand-ins, their jobs'
verdicts streamed as they come, the leaderboard, Gradescope's forwarded submissions and the
instructor's views. docs/architecture.md ("The course service") describes the whole.

What it promises, each kept here:
- A request is answered with JSON, and a bad one with a 4xx and a sentence ({"error": ...}):
  what is wrong and what to do. No traceback is ever sent (an unexpected failure is logged
  on the service's side and answered 503 with a sentence).
- A student sees only their own jobs and hand-ins: another's job is "not found" (404, never
  403, so ids do not leak).
- A hand-in is acknowledged only once its file is fsynced and its row committed, so a
  receipt survives a kill of the service at any moment; the same content again gets the
  same receipt (repeated: true).
- Times (deadlines, lateness, the try budget) are the service's clock, taken when the
  request arrived, never the client's.
"""
from __future__ import annotations

import asyncio
import gzip
import hashlib
import json
import re
import sys
import tarfile
import threading
import traceback
import zlib
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import sessionmaker
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route

from ..errors import UsageError
from ..outputs import publish
from . import leaderboard, policy, pseudonyms, queue, tokens
from .spec import CourseSpec, LabOffer
from .store import HandIn, Job, JobKind, JobLine, JobState, Secret, SecretKind, Student, Upload, now, store_upload, \
    upload_path
from .work import Executor, HandInCheckFailed, Runner

API = "/api/v1"
GZIP_TYPES = ("application/gzip", "application/x-gzip", "application/x-tar+gzip", "application/octet-stream")
FINISHED = (JobState.DONE, JobState.GRADER_FAILED)
EVENTS_POLL_S = 0.2
JSON_BODY_LIMIT = 64 * 1024    # a JSON body is a few fields: more is not a request of this API
TOKEN_CACHE_SIZE = 10_000


class Refusal(Exception):
    """A request answered with a sentence (and any extra JSON fields): a 4xx for what the
    request got wrong, 503 where the grader could not do its part."""

    def __init__(self, status: int, sentence: str, headers: dict | None = None, **extra):
        super().__init__(sentence)
        self.status, self.sentence, self.headers, self.extra = status, sentence, headers or {}, extra

    def response(self) -> JSONResponse:
        return JSONResponse({"error": self.sentence, **self.extra}, status_code=self.status, headers=self.headers)


def iso(at) -> str | None:
    """A time as ISO 8601 in UTC (SQLite gives back times without their zone: they are UTC)."""
    if at is None:
        return None
    return utc(at).isoformat()


def utc(at):
    import datetime as dt
    return at.replace(tzinfo=dt.timezone.utc) if at.tzinfo is None else at.astimezone(dt.timezone.utc)


# --- the service ---------------------------------------------------------------------------------

class CourseService:
    """One course's service: its spec, database, uploads and runner."""

    def __init__(self, spec: CourseSpec, sessions: sessionmaker, executor: Executor, scratch: Path):
        self.spec, self.sessions, self.executor = spec, sessions, executor
        self.runner = Runner(sessions, spec.folder, executor, scratch)
        self.scratch = Path(scratch)
        # Tokens already verified, by the sha256 of the token, with the hash they matched: a
        # reissued token has another hash, so its old text stops working at once.
        self._verified: dict[str, str] = {}
        self._student_locks: dict[str, threading.Lock] = {}
        self._locks_lock = threading.Lock()
        # The hand-in checks compile: no more of them at once than the executor's slots.
        self._checks = threading.BoundedSemaphore(max(1, executor.slots))
        # One argon2 check at a time: each already uses every core and 64 MiB, so checks side by
        # side only share the CPU worse, hold the other requests up longer and multiply the memory
        # (a flood of wrong secrets for one lookup would otherwise take 64 MiB a thread).
        self._argon2 = threading.Lock()

    def start(self) -> tuple[int, int]:
        """Put back the jobs the last run died under, and start the workers."""
        recovered = queue.recover(self.sessions)
        self.runner.start()
        return recovered

    # -- who is asking --

    def _verify(self, token: str, stored_hash: str | None) -> bool:
        if not stored_hash:
            return False
        key = hashlib.sha256(token.encode()).hexdigest()
        if self._verified.get(key) == stored_hash:
            return True
        parts = tokens.split(token)
        if parts is None:
            return False
        with self._argon2:
            if not tokens.verify(stored_hash, parts[1]):
                return False
        if len(self._verified) >= TOKEN_CACHE_SIZE:
            self._verified.clear()
        self._verified[key] = stored_hash
        return True

    def student_for(self, token: str | None) -> Student | None:
        parts = tokens.split(token) if token else None
        if parts is None:
            return None
        with self.sessions() as session:
            student = session.scalar(select(Student).where(Student.token_lookup == parts[0]))
        return student if student is not None and self._verify(token, student.token_hash) else None

    def _secret_is(self, token: str | None, kind: SecretKind) -> bool:
        parts = tokens.split(token) if token else None
        if parts is None:
            return False
        with self.sessions() as session:
            secret = session.get(Secret, kind)
        return secret is not None and secret.lookup == parts[0] and self._verify(token, secret.hash)

    def is_instructor(self, token: str | None) -> bool:
        return self._secret_is(token, SecretKind.INSTRUCTOR)

    def is_course_key(self, token: str | None) -> bool:
        return self._secret_is(token, SecretKind.COURSE_KEY)

    def queue_position(self, job_id: int) -> int | None:
        with self.sessions() as session:
            return queue.position(session, job_id)

    def student_lock(self, student_id: str) -> threading.Lock:
        """One student's tries are charged one at a time (the budget is read, then spent)."""
        with self._locks_lock:
            return self._student_locks.setdefault(student_id, threading.Lock())

    # -- what the API answers with --

    def offer(self, lab: str) -> LabOffer:
        if lab not in self.spec.labs:
            raise Refusal(404, f"The course {self.spec.name!r} offers no lab {lab[:64]!r}; it offers "
                               f"{', '.join(sorted(self.spec.labs))}.")
        return self.spec.offer(lab)

    def tries_now(self, session, student_id: str, offer: LabOffer, at) -> tuple[int, object]:
        charged = session.scalars(select(Job.created_at).where(
            Job.student_id == student_id, Job.lab == offer.lab, Job.kind == JobKind.TRY, Job.charged.is_(True)))
        return policy.tries_left(offer.tries, [utc(t) for t in charged], at)

    def job_json(self, session, job: Job, with_lines: bool = True) -> dict:
        body = {"job": job.id, "lab": job.lab, "kind": job.kind.value, "state": job.state.value,
                "position": queue.position(session, job.id), "created_at": iso(job.created_at),
                "started_at": iso(job.started_at), "finished_at": iso(job.finished_at),
                "exit_code": job.exit_code, "summary": job.summary, "ratio": job.ratio, "noise": job.noise,
                "bench": job.bench, "charged": job.charged, "attempts": job.attempts, "verdict": job.verdict}
        if with_lines:
            body["lines"] = [{"seq": line.seq, "text": line.text} for line in job.lines]
        return body


# --- reading requests --------------------------------------------------------------------------------

def bearer(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def require_token(request: Request) -> str:
    token = bearer(request)
    if token is None:
        raise Refusal(401, "This needs your token: send it as 'Authorization: Bearer <token>' (`cudalab submit` "
                           "does that from CUDALAB_TOKEN or its token file).", {"WWW-Authenticate": "Bearer"})
    return token


def allow_params(request: Request, *known: str) -> None:
    unknown = sorted(set(request.query_params) - set(known))
    if unknown:
        allowed = ", ".join(known) if known else "none"
        raise Refusal(400, f"Unknown query parameter {', '.join(unknown)}: this endpoint takes {allowed}.")


def int_param(request: Request, name: str, default: int | None = None, low: int = 0) -> int | None:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    if not re.fullmatch(r"[0-9]{1,12}", raw) or int(raw) < low:
        raise Refusal(400, f"{name}={raw[:40]!r} is not a whole number of at least {low}.")
    return int(raw)


def job_id_of(request: Request) -> int:
    raw = request.path_params["job"]
    if not re.fullmatch(r"[0-9]{1,12}", raw):
        raise Refusal(404, f"There is no job {raw[:40]!r}: a job's id is the number `cudalab submit` printed.")
    return int(raw)


async def read_archive(request: Request, limit: int) -> bytes:
    """The upload: a .tar.gz of at most `limit` bytes, refused (413) as soon as it is larger,
    without reading the rest."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind not in GZIP_TYPES:
        raise Refusal(415, f"An upload must be the raw bytes of a .tar.gz made by `cudalab pack`, sent as "
                           f"Content-Type application/gzip (got {kind or 'none'!r}).")
    said = request.headers.get("content-length")
    too_big = Refusal(413, f"The upload is larger than this course's limit of {limit // (1024 * 1024)} MiB: hand "
                           "in only the lab's files (`cudalab pack` does that).")
    if said is not None and said.isascii() and said.isdigit() and int(said) > limit:
        raise too_big
    data = await bounded_body(request, limit, too_big, "The upload was cut off before it ended: send it again.")
    if not data:
        raise Refusal(400, "The upload is empty: send the .tar.gz that `cudalab pack` made.")
    if not looks_like_tar_gz(data):
        raise Refusal(400, "The upload is not a .tar.gz archive: send the file that `cudalab pack` made "
                           "(not a .zip, a folder or a single source file).")
    return data


async def bounded_body(request: Request, limit: int, too_big: "Refusal", cut_off: str) -> bytes:
    """The request's body, read as it streams and refused with `too_big` the moment it passes
    `limit` bytes (the rest is never read); a client that hangs up midway gets `cut_off`."""
    chunks, size = [], 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise too_big
            chunks.append(chunk)
    except ClientDisconnect:
        raise Refusal(400, cut_off) from None
    return b"".join(chunks)


def looks_like_tar_gz(data: bytes) -> bool:
    """Gzip whose first 512 bytes make a tar header (cheap: the archive itself is read only by
    the grader's own safe reader)."""
    if data[:2] != b"\x1f\x8b":
        return False
    try:
        first = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data[:65536], 512)
        tarfile.TarInfo.frombuf(first[:512], "utf-8", "surrogateescape")
    except (zlib.error, tarfile.TarError, gzip.BadGzipFile, EOFError):
        return False
    return True


async def json_body(request: Request, known: tuple[str, ...]) -> dict:
    """A small JSON object with only the `known` fields: refused (413) as soon as the body
    passes JSON_BODY_LIMIT, without reading the rest, and (400) when it is not JSON, not UTF-8,
    or nested too deep for the parser."""
    too_big = Refusal(413, f"This request's body is larger than {JSON_BODY_LIMIT // 1024} KiB: it takes a small "
                           f"JSON object with {', '.join(known)}.")
    said = request.headers.get("content-length", "")
    if said.isascii() and said.isdigit() and int(said) > JSON_BODY_LIMIT:
        raise too_big
    raw = await bounded_body(request, JSON_BODY_LIMIT, too_big,
                             "The request was cut off before its body ended: send it again.")
    try:
        body = json.loads(raw or b"null")
    except (ValueError, RecursionError):  # RecursionError: arrays or objects nested thousands deep
        raise Refusal(400, f"The body must be a JSON object (UTF-8) with {', '.join(known)}.") from None
    if not isinstance(body, dict):
        raise Refusal(400, f"The body must be a JSON object with {', '.join(known)}.")
    unknown = sorted(set(body) - set(known))
    if unknown:
        raise Refusal(400, f"Unknown field {', '.join(unknown)[:200]}: this takes only {', '.join(known)}.")
    return body


# --- the endpoints -------------------------------------------------------------------------------

def make_app(service: CourseService, pages: list | None = None) -> Starlette:
    """The API under /api/v1, and the pages (course-web's routes) at / where given."""
    spec = service.spec

    def endpoint(work):
        """An endpoint: `work(request)` (async) answers JSON; a Refusal is its 4xx."""
        async def handle(request: Request) -> Response:
            try:
                return await work(request)
            except Refusal as refusal:
                return refusal.response()
            except UsageError as err:
                return Refusal(400, str(err)).response()
        return handle

    def student(request: Request) -> Student:
        token = require_token(request)
        found = service.student_for(token)
        if found is None:
            if service.is_instructor(token) or service.is_course_key(token):
                raise Refusal(403, "This endpoint is a student's: the instructor's token and the course key "
                                   "cannot use it.")
            raise Refusal(401, "This token is not known to this course (mistyped, or replaced by a new one): "
                               "use the token your instructor sent you.", {"WWW-Authenticate": "Bearer"})
        return found

    def instructor(request: Request) -> None:
        token = require_token(request)
        if not service.is_instructor(token):
            raise Refusal(403, "This needs the instructor's token.")

    # -- open to all --

    async def health(request: Request) -> Response:
        allow_params(request)
        return JSONResponse({"course": spec.name, "labs": sorted(spec.labs), "time": iso(now())})

    async def leaderboard(request: Request) -> Response:
        allow_params(request)
        offer = service.offer(request.path_params["lab"])
        return JSONResponse({"lab": offer.lab, "rows": await run_in_threadpool(leaderboard_rows, service, offer.lab)})

    # -- a student's own --

    async def me(request: Request) -> Response:
        allow_params(request)
        at = now()

        def answer():
            who = student(request)
            labs = []
            with service.sessions() as session:
                for lab in sorted(spec.labs):
                    offer = spec.offer(lab)
                    left, next_at = service.tries_now(session, who.id, offer, at)
                    labs.append({"lab": lab, "opens": iso(offer.opens), "deadline": iso(offer.deadline),
                                 "closes": iso(offer.closes), "counts": offer.counts, "tries_left": left,
                                 "tries_capacity": offer.tries.capacity, "next_try_at": iso(next_at),
                                 "lateness_now": policy.assess(offer, at).to_json()})
            return {"student": who.id, "name": who.name, "pseudonym": who.pseudonym, "labs": labs}
        return JSONResponse(await run_in_threadpool(answer))

    async def pseudonym(request: Request) -> Response:
        allow_params(request)
        body = await json_body(request, ("pseudonym",))
        try:
            chosen = pseudonyms.check(body.get("pseudonym"))
        except pseudonyms.PseudonymRefused as refused:
            raise Refusal(refused.status, refused.sentence) from None

        def answer():
            who = student(request)
            try:
                return {"pseudonym": pseudonyms.choose(service.sessions, who.id, chosen)}
            except pseudonyms.PseudonymRefused as refused:
                raise Refusal(refused.status, refused.sentence) from None
        return JSONResponse(await run_in_threadpool(answer))

    async def submit_try(request: Request) -> Response:
        at = now()
        allow_params(request, "bench")
        bench = request.query_params.get("bench", "0")
        if bench not in ("0", "1"):
            raise Refusal(400, f"bench={bench[:20]!r}: it is 0 (the cases only) or 1 (the cases and the timings).")
        offer = service.offer(request.path_params["lab"])
        who = await run_in_threadpool(student, request)
        open_now(offer, at, "try")

        def budget():
            with service.sessions() as session:
                return service.tries_now(session, who.id, offer, at)
        left, next_at = await run_in_threadpool(budget)  # refused before the upload is read, where spent
        if left < 1:
            raise budget_spent(offer, next_at, at)
        data = await read_archive(request, spec.max_upload_bytes)

        def answer():
            with service.student_lock(who.id):
                with service.sessions() as session:
                    left, next_at = service.tries_now(session, who.id, offer, at)
                    if left < 1:
                        raise budget_spent(offer, next_at, at)
                    sha256 = keep_upload(service, session, data)
                    job = queue.enqueue(session, kind=JobKind.TRY, student_id=who.id, lab=offer.lab,
                                        upload_sha256=sha256, bench=bench == "1")
                    session.commit()
                    service.runner.wake.set()
                    return {"job": job.id, "position": queue.position(session, job.id), "tries_left": left - 1}
        return JSONResponse(await run_in_threadpool(answer), status_code=202)

    async def hand_in(request: Request) -> Response:
        at = now()  # the hand-in's time: when it arrived, by the service's clock
        allow_params(request)
        offer = service.offer(request.path_params["lab"])
        who = await run_in_threadpool(student, request)
        lateness = policy.assess(offer, at)
        if not lateness.accepted:
            raise Refusal(403, f"This hand-in was not accepted: {lateness.sentence}.", lateness=lateness.to_json())
        data = await read_archive(request, spec.max_upload_bytes)
        return await run_in_threadpool(accept_hand_in, service, who, offer, lateness, at, data)

    async def handins(request: Request) -> Response:
        allow_params(request, "lab")
        lab = request.query_params.get("lab")
        if lab is not None:
            service.offer(lab)

        def answer():
            who = student(request)
            with service.sessions() as session:
                query = select(HandIn).where(HandIn.student_id == who.id).order_by(HandIn.received_at, HandIn.id)
                if lab is not None:
                    query = query.where(HandIn.lab == lab)
                return {"handins": [row.receipt for row in session.scalars(query)]}
        return JSONResponse(await run_in_threadpool(answer))

    # -- jobs: a student's own, the instructor's all, the course key's grades --

    def visible_job(request: Request, job_id: int) -> Job:
        token = require_token(request)
        with service.sessions() as session:
            job = session.get(Job, job_id)
        missing = Refusal(404, f"There is no job {job_id} of yours: check the number `cudalab submit` printed.")
        if job is None:
            raise missing
        if service.is_instructor(token):
            return job
        if service.is_course_key(token):  # Gradescope's bundle: the grades it asked for, no student's tries
            if job.kind == JobKind.GRADE:
                return job
            raise missing
        who = service.student_for(token)
        if who is None:
            raise Refusal(401, "This token is not known to this course: use the token your instructor sent you.")
        if who.id != job.student_id:
            raise missing  # never 403: another student's job ids do not leak
        return job

    async def job(request: Request) -> Response:
        allow_params(request)
        job_id = job_id_of(request)

        def answer():
            visible_job(request, job_id)
            with service.sessions() as session:
                return service.job_json(session, session.get(Job, job_id))
        return JSONResponse(await run_in_threadpool(answer))

    async def events(request: Request) -> Response:
        allow_params(request, "after")
        job_id = job_id_of(request)
        after = int_param(request, "after", 0)
        await run_in_threadpool(visible_job, request, job_id)
        return StreamingResponse(job_events(service, job_id, after), media_type="application/x-ndjson")

    async def gradescope_submit(request: Request) -> Response:
        allow_params(request)
        token = require_token(request)
        if not await run_in_threadpool(service.is_course_key, token):
            raise Refusal(403, "This needs the course key (the one `cudalab course gradescope` put in the bundle).")
        offer = service.offer(request.path_params["lab"])
        email = request.headers.get("x-cudalab-student-email", "").strip()
        student_id = request.headers.get("x-cudalab-student-id", "").strip()
        if not email and not student_id:
            raise Refusal(400, "Say whose submission this is with X-Cudalab-Student-Email or X-Cudalab-Student-Id.")
        data = await read_archive(request, spec.max_upload_bytes)

        def answer():
            with service.sessions() as session:
                query = select(Student).where(Student.id == student_id) if student_id else \
                    select(Student).where(Student.email == email)
                found = session.scalars(query).all()
                if len(found) != 1:
                    who = student_id or email
                    raise Refusal(404, f"No student {who[:100]!r} on this course's roster"
                                       + (" (or more than one with that email)" if len(found) > 1 else "")
                                       + ": check the roster, or the Gradescope course's emails.")
                sha256 = keep_upload(service, session, data)
                queued = queue.enqueue(session, kind=JobKind.GRADE, student_id=found[0].id, lab=offer.lab,
                                       upload_sha256=sha256, charged=False)
                session.commit()
                service.runner.wake.set()
                return {"job": queued.id, "position": queue.position(session, queued.id)}
        return JSONResponse(await run_in_threadpool(answer), status_code=202)

    async def gradescope_results(request: Request) -> Response:
        allow_params(request)
        job_id = job_id_of(request)

        def answer():
            found = visible_job(request, job_id)
            if found.kind != JobKind.GRADE:
                raise Refusal(404, f"Job {job_id} is a try, not a grade: it has no Gradescope results.")
            if found.state not in FINISHED:
                raise Refusal(409, f"Job {job_id} is {found.state.value}: ask again when it has finished.")
            return gradescope_json(found)
        return JSONResponse(await run_in_threadpool(answer))

    # -- the instructor's --

    async def instructor_queue(request: Request) -> Response:
        allow_params(request)

        def answer():
            instructor(request)
            with service.sessions() as session:
                running = session.scalars(select(Job).where(Job.state == JobState.RUNNING).order_by(Job.started_at))
                return {"running": [service.job_json(session, j, False) | {"student": j.student_id} for j in running],
                        "queued": [service.job_json(session, j, False) | {"student": j.student_id}
                                   for j in queue.waiting(session)]}
        return JSONResponse(await run_in_threadpool(answer))

    async def instructor_jobs(request: Request) -> Response:
        allow_params(request, "lab", "student")
        lab, who = request.query_params.get("lab"), request.query_params.get("student")
        if lab is not None:
            service.offer(lab)

        def answer():
            instructor(request)
            with service.sessions() as session:
                query = select(Job).order_by(Job.id.desc()).limit(2000)
                if lab is not None:
                    query = query.where(Job.lab == lab)
                if who is not None:
                    query = query.where(Job.student_id == who)
                return {"jobs": [service.job_json(session, j, False) | {"student": j.student_id}
                                 for j in session.scalars(query)]}
        return JSONResponse(await run_in_threadpool(answer))

    async def instructor_handins(request: Request) -> Response:
        allow_params(request, "lab")
        lab = request.query_params.get("lab")
        if lab is not None:
            service.offer(lab)

        def answer():
            instructor(request)
            with service.sessions() as session:
                query = select(HandIn).order_by(HandIn.received_at, HandIn.id)
                if lab is not None:
                    query = query.where(HandIn.lab == lab)
                return {"handins": [row.receipt for row in session.scalars(query)]}
        return JSONResponse(await run_in_threadpool(answer))

    routes = [
        Route("/health", endpoint(health), methods=["GET"]),
        Route("/me", endpoint(me), methods=["GET"]),
        Route("/me/pseudonym", endpoint(pseudonym), methods=["PUT"]),
        Route("/labs/{lab}/tries", endpoint(submit_try), methods=["POST"]),
        Route("/labs/{lab}/handins", endpoint(hand_in), methods=["POST"]),
        Route("/labs/{lab}/leaderboard", endpoint(leaderboard), methods=["GET"]),
        Route("/handins", endpoint(handins), methods=["GET"]),
        Route("/jobs/{job}", endpoint(job), methods=["GET"]),
        Route("/jobs/{job}/events", endpoint(events), methods=["GET"]),
        Route("/jobs/{job}/gradescope", endpoint(gradescope_results), methods=["GET"]),
        Route("/gradescope/{lab}", endpoint(gradescope_submit), methods=["POST"]),
        Route("/instructor/queue", endpoint(instructor_queue), methods=["GET"]),
        Route("/instructor/jobs", endpoint(instructor_jobs), methods=["GET"]),
        Route("/instructor/handins", endpoint(instructor_handins), methods=["GET"]),
    ]

    async def http_error(request: Request, err: HTTPException) -> Response:
        sentences = {404: f"There is no {request.url.path[:200]} on this service: the API is under {API} "
                          "(GET /api/v1/health lists the labs).",
                     405: f"{request.method} is not how {request.url.path[:200]} is used: see the course "
                          "service's API in the README."}
        return JSONResponse({"error": sentences.get(err.status_code, str(err.detail))}, status_code=err.status_code)

    async def unexpected(request: Request, err: Exception) -> Response:
        # Logged here, for the instructor; the client gets a sentence, never the traceback.
        traceback.print_exception(err, file=sys.stderr)
        return JSONResponse({"error": "The course service failed to answer this request; nothing you sent was "
                                      "acknowledged. Try again in a minute, and tell the course staff if it keeps "
                                      "happening."}, status_code=503)

    mounts = [Mount(API, routes=routes)] + list(pages or [])
    return Starlette(routes=mounts, exception_handlers={HTTPException: http_error, Exception: unexpected})


# --- the pieces the endpoints share ------------------------------------------------------------------

def open_now(offer: LabOffer, at, what: str) -> None:
    """Tries are taken from the lab's opening until hand-ins close."""
    lateness = policy.assess(offer, at)
    if not lateness.accepted:
        raise Refusal(403, f"No {what} now: {lateness.sentence}.", lateness=lateness.to_json())


def budget_spent(offer: LabOffer, next_at, at) -> Refusal:
    if next_at is None:
        return Refusal(429, f"You have no tries left for {offer.lab}, and this lab's tries do not come back.")
    wait_s = max(1, int((next_at - at).total_seconds() + 0.999))
    return Refusal(429, f"You have no tries left for {offer.lab}: the next one comes at {iso(next_at)} (in "
                        f"{wait_s} s). A try that fails through no fault of your code is given back.",
                   {"Retry-After": str(wait_s)}, next_try_at=iso(next_at))


def keep_upload(service: CourseService, session, data: bytes) -> str:
    """The upload's file fsynced, then its row (the caller commits)."""
    sha256 = store_upload(service.spec.folder, data)
    if session.get(Upload, sha256) is None:
        session.add(Upload(sha256=sha256, size=len(data), stored_at=now()))
        try:
            session.flush()
        except IntegrityError:  # the same content arrived at once from another request
            session.rollback()
    return sha256


def accept_hand_in(service: CourseService, who: Student, offer: LabOffer, lateness, at, data: bytes) -> Response:
    """A hand-in: kept, checked, recorded, then acknowledged; the same content again gets its
    first receipt."""
    with service.sessions() as session:
        sha256 = keep_upload(service, session, data)
        session.commit()
        earlier = session.scalar(select(HandIn).where(HandIn.student_id == who.id, HandIn.lab == offer.lab,
                                                      HandIn.upload_sha256 == sha256))
        if earlier is not None:
            return JSONResponse({"receipt": earlier.receipt, "repeated": True})
    with service._checks:
        service.scratch.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            checked = service.executor.check_hand_in(upload_path(service.spec.folder, sha256), offer.lab,
                                                     service.scratch)
        except HandInCheckFailed as err:  # the grader's failure, not the hand-in's: 503, as for any
            raise Refusal(503, f"The hand-in checks could not run ({err}); nothing was recorded: send it again "
                               "in a minute.", {"Retry-After": "60"}) from None
    checks = checked.get("checks") or []
    if not checked.get("accepted"):
        failed = [f"{c['name']}: " + "; ".join(f["message"] for f in c.get("findings", []) if f.get("severity") == "error")
                  for c in checks if c.get("verdict") == "failed"]
        raise Refusal(422, "This hand-in was not accepted: " + (" ".join(failed) or "a check failed")
                      + ". Run `cudalab check` on it, fix what it marks FAILED, and hand it in again.", checks=checks)
    receipt = {"student": who.id, "lab": offer.lab, "sha256": sha256, "size": len(data), "received_at": iso(at),
               "lateness": lateness.to_json(), "counts": offer.counts,
               "checks": [c["name"] for c in checks if c.get("verdict") == "passed"]}
    with service.sessions() as session:
        row = HandIn(student_id=who.id, lab=offer.lab, upload_sha256=sha256, received_at=at,
                     lateness=lateness.to_json(), checks=checked, receipt=receipt)
        session.add(row)
        try:
            session.flush()
        except IntegrityError:  # the same content handed in at once by another request: that one counts
            session.rollback()
            earlier = session.scalar(select(HandIn).where(HandIn.student_id == who.id, HandIn.lab == offer.lab,
                                                          HandIn.upload_sha256 == sha256))
            return JSONResponse({"receipt": earlier.receipt, "repeated": True})
        row.receipt = {**receipt, "receipt_id": f"{row.id}-{sha256[:12]}"}
        session.commit()
        return JSONResponse({"receipt": row.receipt}, status_code=201)


async def job_events(service: CourseService, job_id: int, after: int):
    """A job's events as NDJSON: its position while it waits (when it changes), each line
    after `after`, and an end."""
    last_position, seq = None, after

    def look():
        with service.sessions() as session:
            found = session.get(Job, job_id)
            lines = session.scalars(select(JobLine).where(JobLine.job_id == job_id, JobLine.seq > seq)
                                    .order_by(JobLine.seq)).all()
            return (found.state, queue.position(session, job_id), [(l.seq, l.text) for l in lines],
                    found.exit_code, found.summary, found.charged)

    while True:
        state, position, lines, exit_code, summary, charged = await run_in_threadpool(look)
        if position is not None and position != last_position:
            last_position = position
            yield json.dumps({"type": "position", "position": position}) + "\n"
        for line_seq, text in lines:
            seq = line_seq
            yield json.dumps({"type": "line", "seq": line_seq, "text": text}) + "\n"
        if state in FINISHED:
            yield json.dumps({"type": "end", "state": state.value, "exit_code": exit_code, "summary": summary,
                              "charged": charged}) + "\n"
            return
        await asyncio.sleep(EVENTS_POLL_S)


def gradescope_json(job: Job) -> dict:
    """Gradescope's results.json for a finished GRADE job (outputs/publish.py writes it)."""
    entry = {"student": job.student_id, "handin": {"name": f"gradescope-{job.id}", "sha256": job.upload_sha256},
             "state": "done" if job.state == JobState.DONE and job.verdict else "failed_to_grade",
             "result": job.verdict if isinstance(job.verdict, dict) and job.verdict.get("schema") else None}
    try:
        checked = publish.read_entry(entry)
    except publish.PublishError as err:
        checked = None
        reason = str(err)
    else:
        reason = job.summary
    if checked is not None and checked.result is not None:
        return publish.gradescope_results(checked, checked.result)
    return {"output": f"Not graded: {reason}", "output_format": "text", "visibility": "visible", "tests": [],
            "extra_data": {"graded": False, "lab": job.lab, "student": job.student_id,
                           "handin_sha256": job.upload_sha256}}


def leaderboard_rows(service: CourseService, lab: str) -> list[dict]:
    """The lab's board as the pages show it (course/leaderboard.py ranks it)."""
    with service.sessions() as session:
        return [row.to_json() for row in leaderboard.lab_board(session, lab)]
