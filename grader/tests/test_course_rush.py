"""The deadline rush: 200 students each making three tries and one hand-in in the last moments
before a lab's deadline, against the service started for real with the stand-in executor and
a short per-job delay. The deadline is set, by the service's clock, just after the rush: every
hand-in made in the rush is on time and one made after it is late. No request is lost, the
queue is fair across students, and the API's p99 latencies are printed and bounded.

The request's rush is these 800 uploads in the last five minutes; here they come in one minute
(five times as fast, so a harder test), because five minutes of wall time on every CI run is
too long for what it would add. Each student logs in (a first request, whose token the service
checks with argon2 once per token and process) before the window, as students who used the
service during the week have: 200 argon2 checks take about 30 s of both cores of this machine,
and inside the window they would measure the login storm instead of the rush. Their latency
is printed, not bounded.

The latency bound. Measured with this test on the 2-core CI machine, p99 upload / status:
26 / 13 ms with the machine to itself (the students' argon2 logins before the window; with
them inside it, 90 / 34 ms quiet and 3.0 / 0.8 s with a load average of 6). Latency on a
shared machine grows as the share of the CPU left to the service shrinks, so a fixed bound is
either flaky there or loose everywhere. The test therefore measures, from /proc, how much CPU
other processes took during the rush, and divides QUIET_BOUND_S (the 200 ms target itself,
eight times the quiet p99s) by the share of the machine that was left (never below
MIN_SHARE). Both the share and the bound it gave are printed beside the latencies. With two
processes spinning beside it on both cores: 108 / 37 ms, the share measured 12 % and the bound
1 s. A spinning process's time counts as taken even where it only filled time the service left
idle, so the bound errs loose under load, never tight."""
from __future__ import annotations

import asyncio
import datetime as dt
import os
import random
import time
from dataclasses import dataclass

import httpx
import pytest

from cudalab.course import store
from course_server import GZIP, Server, archive, auth, issue_tokens, write_course

STUDENTS = 200
TRIES = 3
WINDOW_S = 60.0            # the request's five minutes, compressed (see the docstring)
THINK_S = 1.0              # a student's pause between their own requests
VISIT_S = TRIES * THINK_S + 5.0   # a visit's length, with room for slow answers: visits start early enough
START_ALLOWANCE_S = 20.0   # the service must be up this long after the course is written
LOGIN_ALLOWANCE_S = 60.0   # and every student logged in this long after that (about 30 s quiet)
DEADLINE_AFTER_S = 10.0    # the deadline: this long after the rush window ends
LATE_HANDINS = 5           # hand-ins sent after the deadline, each must be late
COMMIT_SLACK_S = 0.5
TARGET_S = 0.2
QUIET_BOUND_S = TARGET_S   # asserted on a machine the rush has to itself (8x the p99s measured there)
MIN_SHARE = 0.2            # below this share of the CPU the bound stops growing


def moment(iso: str) -> float:
    return dt.datetime.fromisoformat(iso).timestamp()


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def p99(samples: list[float]) -> float:
    return percentile(samples, 0.99)


# --- how much of the machine the rush had -------------------------------------------------------

TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")


def machine_busy_s() -> float:
    """CPU seconds all processes have been busy since boot (every core together)."""
    with open("/proc/stat") as stat:
        user, nice, system, idle, iowait, irq, softirq, steal = map(int, stat.readline().split()[1:9])
    return (user + nice + system + irq + softirq + steal) * TICK_S


def process_cpu_s(pid: int) -> float:
    """CPU seconds one process (all its threads, and its children it has waited for) has used."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rpartition(")")[2].split()
    return sum(int(spent) for spent in fields[11:15]) * TICK_S   # utime, stime, cutime, cstime


@dataclass
class CpuShare:
    """The share of the machine's CPU that processes other than the service and this test
    left to the rush, measured between start() and stop()."""
    server_pid: int

    def start(self) -> None:
        self.wall, self.busy = time.monotonic(), machine_busy_s()
        self.ours = process_cpu_s(self.server_pid) + process_cpu_s(os.getpid())

    def stop(self) -> float:
        wall = time.monotonic() - self.wall
        busy = machine_busy_s() - self.busy
        ours = process_cpu_s(self.server_pid) + process_cpu_s(os.getpid()) - self.ours
        others = max(0.0, busy - ours)
        return max(0.0, 1.0 - others / (wall * (os.cpu_count() or 1)))


# --- the rush ----------------------------------------------------------------------------------

async def rush(url: str, tokens: dict[str, str]) -> tuple[dict[str, list[float]], list[tuple[str, int]], dict]:
    """Every (logged-in) student's visit: a look at their budget, three tries (each followed by a look at
    the job), a hand-in and a last look, each visit starting at a random moment of the window
    early enough to end in it. Returns the latencies by kind, every job (student, id), and
    every receipt."""
    latencies: dict[str, list[float]] = {"upload": [], "status": []}
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
        me = await timed("status", lambda: client.get("/api/v1/me", headers=auth(token)))
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
        await asyncio.gather(*(student(client, sid, token, starts.uniform(0, WINDOW_S - VISIT_S))
                               for sid, token in tokens.items()))
    return latencies, jobs, receipts


async def log_in(url: str, tokens: dict[str, str]) -> list[float]:
    """Every student's first request, all at once (the argon2 checks): their latencies."""
    async def first(client: httpx.AsyncClient, token: str) -> float:
        started = time.perf_counter()
        me = await client.get("/api/v1/me", headers=auth(token))
        assert me.status_code == 200, me.text
        return time.perf_counter() - started

    async with httpx.AsyncClient(base_url=url, timeout=LOGIN_ALLOWANCE_S,
                                 limits=httpx.Limits(max_connections=STUDENTS)) as client:
        return list(await asyncio.gather(*(first(client, token) for token in tokens.values())))


def wait_until(at: dt.datetime) -> None:
    time.sleep(max(0.0, (at - store.now()).total_seconds()))


@pytest.mark.slow
def test_the_deadline_rush_loses_nothing_keeps_the_queue_fair_and_answers_fast(tmp_path):
    """Costs about three minutes: 200 students' tokens hashed, their logins, 800 uploads in one
    minute before the deadline, 600 stand-in jobs, and a few hand-ins after it."""
    folder = tmp_path / "course"
    ids = write_course(folder, STUDENTS)
    issued = issue_tokens(store.database_url(folder, None), ids)   # slow (argon2): before the times are set
    # The deadline by the service's clock (store.now), fixed before the service starts: the
    # rush begins once the service has started and every student has logged in (their allowances
    # from now), and ends DEADLINE_AFTER_S before it. The cut-off
    # is later, so a hand-in after the deadline is taken, and late.
    rush_starts = store.now() + dt.timedelta(seconds=START_ALLOWANCE_S + LOGIN_ALLOWANCE_S)
    deadline = (rush_starts + dt.timedelta(seconds=WINDOW_S + DEADLINE_AFTER_S)).replace(microsecond=0)
    write_course(folder, STUDENTS, deadline=deadline, cutoff=deadline + dt.timedelta(hours=1),
                 capacity=TRIES, refill_per_hour=0)
    server = Server(folder, delay_s=0.02).start(timeout_s=START_ALLOWANCE_S)
    try:
        logins = asyncio.run(log_in(server.url, issued.students))
        assert store.now() < rush_starts, "the students' logins took longer than their allowance: the machine is " \
                                          "far too slow for this test"
        wait_until(rush_starts)
        share = CpuShare(server.process.pid)
        share.start()
        latencies, jobs, receipts = asyncio.run(rush(server.url, issued.students))
        machine_share = share.stop()
        rush_ended = store.now()
        assert rush_ended < deadline, (f"the rush ran {(rush_ended - deadline).total_seconds():.1f} s past the "
                                       "deadline it was given room for: the service answered far too slowly")
        wait_until(deadline + dt.timedelta(seconds=1))
        late = {sid: httpx.post(f"{server.url}/api/v1/labs/vector_add/handins", headers=auth(issued.students[sid]) | GZIP,
                                content=archive(salt=f"{sid}-after-the-deadline"), timeout=60)
                for sid in ids[:LATE_HANDINS]}
        instructor = auth(issued.instructor)
        with httpx.Client(base_url=server.url, timeout=60) as client:
            drained_by = time.monotonic() + 300
            while client.get("/api/v1/instructor/queue", headers=instructor).json() != {"running": [], "queued": []}:
                assert time.monotonic() < drained_by, "the queue did not drain within 5 minutes"
                time.sleep(0.5)
            done = client.get("/api/v1/instructor/jobs", headers=instructor).json()["jobs"]
            handins = client.get("/api/v1/instructor/handins", headers=instructor).json()["handins"]
    finally:
        server.stop()

    # nothing lost: every acknowledged try ran to its verdict, every receipt is on record
    assert len(jobs) == STUDENTS * TRIES and len(done) == len(jobs)
    assert sorted(j["job"] for j in done) == sorted(job for _, job in jobs)
    assert all(j["state"] == "done" and j["exit_code"] == 0 for j in done)
    assert all(answer.status_code == 201 for answer in late.values()), {s: a.text for s, a in late.items()}
    late_receipts = [answer.json()["receipt"] for answer in late.values()]
    assert sorted(r["receipt_id"] for r in handins) == \
        sorted(r["receipt_id"] for r in [*receipts.values(), *late_receipts])

    # the deadline, by the service's clock: every hand-in of the rush on time, every later one late
    assert len(receipts) == STUDENTS
    in_rush = [r for r in receipts.values() if not (rush_starts <= dt.datetime.fromisoformat(r["received_at"]) < deadline)]
    assert in_rush == [], f"receipts timed outside the rush: {in_rush[:3]}"
    assert {r["lateness"]["status"] for r in receipts.values()} == {"on_time"}
    assert all(dt.datetime.fromisoformat(r["received_at"]) > deadline and r["lateness"]["status"] == "late"
               for r in late_receipts), late_receipts

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
    bound_s = QUIET_BOUND_S / max(MIN_SHARE, machine_share)
    print(f"\ndeadline rush, {STUDENTS} students x ({TRIES} tries + 1 hand-in) in {WINDOW_S:.0f} s before the "
          "deadline: " + "; ".join(f"{kind} p50 {percentile(times, 0.5) * 1000:.0f} ms, p99 {p99(times) * 1000:.0f} ms "
                                   f"({len(times)} requests)" for kind, times in latencies.items())
          + f". Target {TARGET_S * 1000:.0f} ms; other processes left the rush {machine_share:.0%} of the CPU, so "
          f"the bound for upload and status was {bound_s * 1000:.0f} ms. Before it, {STUDENTS} logins at once "
          f"(argon2): p50 {percentile(logins, 0.5) * 1000:.0f} ms, p99 {p99(logins) * 1000:.0f} ms, not bounded.")
    assert upload < bound_s and status < bound_s, \
        f"p99 upload {upload * 1000:.0f} ms, status {status * 1000:.0f} ms: over the bound of {bound_s * 1000:.0f} ms"
