"""The deadline rush: 200 students each making three tries and one hand-in within a minute, against
the service started for real with the stand-in executor and a short per-job delay. No
request is lost, the queue is fair across students, and the API's p99 latency is printed
and held under a generous bound (the target, 200 ms, is for a quiet 2-core machine; the
bound leaves room for a CI machine shared with other work)."""
from __future__ import annotations

import asyncio
import datetime as dt
import random
import time

import httpx
import pytest

from cudalab.course import store
from course_server import GZIP, Server, archive, auth, issue_tokens, write_course

STUDENTS = 200
TRIES = 3
# The issue's rush is these 800 uploads in the last five minutes; here they come in one
# minute (five times as fast), each student a few seconds apart from their own next request.
WINDOW_S = 60.0
THINK_S = 1.0
COMMIT_SLACK_S = 0.5
P99_BOUND_S = 1.0   # asserted; the target (printed beside it) is 0.2 s
TARGET_S = 0.2


def moment(iso: str) -> float:
    return dt.datetime.fromisoformat(iso).timestamp()


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def p99(samples: list[float]) -> float:
    return percentile(samples, 0.99)


async def rush(url: str, tokens: dict[str, str]) -> tuple[dict[str, list[float]], list[tuple[str, int]], dict]:
    """Every student's visit: a look at their budget, three tries (each followed by a look at
    the job), a hand-in and a last look, each student starting at a random moment of the
    window. Returns the latencies by kind, every job (student, id), and every receipt."""
    latencies: dict[str, list[float]] = {"first": [], "upload": [], "status": []}
    jobs: list[tuple[str, int]] = []
    receipts: dict[str, dict] = {}
    starts = random.Random(26)

    async def timed(kind: str, call):
        started = time.perf_counter()
        response = await call()
        latencies[kind].append(time.perf_counter() - started)
        return response

    async def student(client: httpx.AsyncClient, sid: str, token: str, start_s: float) -> None:
        await asyncio.sleep(start_s)
        me = await timed("first", lambda: client.get("/api/v1/me", headers=auth(token)))
        assert me.status_code == 200 and me.json()["labs"][0]["tries_left"] == TRIES, me.text
        for n in range(TRIES):
            sent = await timed("upload", lambda: client.post("/api/v1/labs/vector_add/tries", headers=auth(token) | GZIP,
                                                             content=archive(salt=f"{sid}-{n}")))
            assert sent.status_code == 202, (sid, n, sent.status_code, sent.text)
            jobs.append((sid, sent.json()["job"]))
            await asyncio.sleep(THINK_S)
            seen = await timed("status", lambda: client.get(f"/api/v1/jobs/{sent.json()['job']}", headers=auth(token)))
            assert seen.status_code == 200, seen.text
        handed = await timed("upload", lambda: client.post("/api/v1/labs/vector_add/handins", headers=auth(token) | GZIP,
                                                           content=archive(salt=f"{sid}-handin")))
        assert handed.status_code == 201, (sid, handed.status_code, handed.text)
        receipts[sid] = handed.json()["receipt"]
        me = await timed("status", lambda: client.get("/api/v1/me", headers=auth(token)))
        assert me.status_code == 200 and me.json()["labs"][0]["tries_left"] == 0, me.text

    async with httpx.AsyncClient(base_url=url, timeout=120, limits=httpx.Limits(max_connections=STUDENTS)) as client:
        await asyncio.gather(*(student(client, sid, token, starts.uniform(0, WINDOW_S))
                               for sid, token in tokens.items()))
    return latencies, jobs, receipts


@pytest.mark.slow
def test_the_deadline_rush_loses_nothing_keeps_the_queue_fair_and_answers_fast(tmp_path):
    """Costs about two minutes: 200 students' tokens hashed, 800 uploads in one minute, 600 stand-in jobs."""
    folder = tmp_path / "course"
    ids = write_course(folder, STUDENTS, capacity=TRIES, refill_per_hour=0)
    issued = issue_tokens(store.database_url(folder, None), ids)
    server = Server(folder, delay_s=0.02).start()
    try:
        latencies, jobs, receipts = asyncio.run(rush(server.url, issued.students))
        instructor = auth(issued.instructor)
        with httpx.Client(base_url=server.url, timeout=60) as client:
            deadline = time.monotonic() + 300
            while client.get("/api/v1/instructor/queue", headers=instructor).json() != {"running": [], "queued": []}:
                assert time.monotonic() < deadline, "the queue did not drain within 5 minutes"
                time.sleep(0.5)
            done = client.get("/api/v1/instructor/jobs", headers=instructor).json()["jobs"]
            handins = client.get("/api/v1/instructor/handins", headers=instructor).json()["handins"]
    finally:
        server.stop()

    # nothing lost: every acknowledged try ran to its verdict, every receipt is on record
    assert len(jobs) == STUDENTS * TRIES and len(done) == len(jobs)
    assert sorted(j["job"] for j in done) == sorted(job for _, job in jobs)
    assert all(j["state"] == "done" and j["exit_code"] == 0 for j in done)
    assert sorted(r["receipt_id"] for r in handins) == sorted(r["receipt_id"] for r in receipts.values())

    # fair: no job started before one of a smaller ordinal (a student's earlier job) that was
    # already waiting when it started. A job's created_at is taken just before its row is
    # committed, so one created in the last moments before another started may not have been
    # in the queue yet: "waiting" means created COMMIT_SLACK_S before.
    by_student: dict[str, list[dict]] = {}
    for job in done:
        by_student.setdefault(job["student"], []).append(job)
    ordinal = {j["job"]: n for jobs_of in by_student.values()
               for n, j in enumerate(sorted(jobs_of, key=lambda j: j["job"]), 1)}
    unfair = [(a["job"], b["job"]) for a in done for b in done
              if ordinal[a["job"]] < ordinal[b["job"]] and a["started_at"] > b["started_at"]
              and moment(a["created_at"]) < moment(b["started_at"]) - COMMIT_SLACK_S]
    by_id = {j["job"]: j for j in done}
    assert unfair == [], (f"{len(unfair)} jobs started before an earlier-ordinal job that was waiting, such as: "
                          + "; ".join(f"{by_id[a]} before {by_id[b]}" for a, b in unfair[:3]))

    upload, status = p99(latencies["upload"]), p99(latencies["status"])
    print(f"\ndeadline rush, {STUDENTS} students x ({TRIES} tries + 1 hand-in) in {WINDOW_S:.0f} s: "
          + "; ".join(f"{kind} p50 {percentile(times, 0.5) * 1000:.0f} ms, p99 {p99(times) * 1000:.0f} ms "
                      f"({len(times)} requests)" for kind, times in latencies.items())
          + f" (target {TARGET_S * 1000:.0f} ms, bound {P99_BOUND_S * 1000:.0f} ms for upload and status; first: "
          "each student's first request, whose token is checked with argon2)")
    assert upload < P99_BOUND_S and status < P99_BOUND_S
