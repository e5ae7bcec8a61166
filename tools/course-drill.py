#!/usr/bin/env python3
"""The course service's drill: simulated students submit tries and hand-ins of the hostile
suite's entries, concurrently, through the client's own code (course/client.py); then each
distinct entry is run directly with `cudalab run` (and its hand-in checked with `cudalab
check --no-run`) and the service's verdicts are held to those; the queue's throughput, the
time from submit to the first streamed line and to the first verdict line, and the queue
waits are measured; the leaderboard's and the instructor's pages are saved as HTML.

    python3 tools/course-drill.py [--server URL --tokens CSV] [--students 20]
        [--labs vector_add,reduction] [--executor local|standin] [--out DIR] [--budget-s 240]
        [--direct-jobs 4] [--run-timeout-s 300] [--no-compare]

Without --server it makes a course in a temporary folder (`cudalab course init`, `cudalab
course tokens`) and starts `cudalab serve` on it itself; with --server, --tokens is the CSV
`cudalab course tokens` wrote (the instructor's row gives the instructor page). Student i
takes lab i mod len(labs) and the lab's suite entries in turn (the hung one left out: it
would hold the GPU for the whole time limit), sends one try (every third with --bench) and
one hand-in of it, and chooses a pseudonym. OUT (default course-drill-out/) receives
drill.json, leaderboard-<lab>.html, instructor.html and the service's log; the table is
printed last. Exit 0: every verdict the same as the direct run's; 1: a mismatch or a job
that did not finish within --budget-s; 2: the drill could not run (a sentence says why).

With the stand-in executor (--executor standin, for rehearsals without a GPU) no code runs,
so there is nothing to compare: the direct runs are skipped and said to be.

On the GPU machine (no network; .deps staged here by tools/stage-deps.sh; the build first):

    cmake --preset gpu && cmake --build --preset gpu -j16 && \\
    env PATH=$PWD/.deps/bwrap/usr/bin:/usr/local/cuda/bin:$PATH \\
        PYTHONPATH=$PWD/grader:$PWD/.deps/python:$PWD/.deps/python-3.12 CUDALAB_PRESET=gpu \\
        python3 tools/course-drill.py --students 20 --labs vector_add,reduction --out $OUT/drill

The screenshots are taken afterwards where Chromium is: tools/course-drill-shots.py OUT.
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "grader"))
SUITE = ROOT / "grader" / "tests" / "submissions"
# Entries that hang until the run's time limit: each would hold the one GPU for the whole of it.
HANGS = {"infinite_loop"}
VERDICT_LINE = re.compile(r"^  [\w.-]+: (passed|failed|skipped|error|crashed|timeout|\w+)")


class DrillError(Exception):
    """The drill itself could not run: a sentence saying why and what to do."""


@dataclass
class Submission:
    """One simulated student's try and hand-in, and what the service made of them."""
    student: str
    lab: str
    entry: str
    bench: bool
    job: int | None = None
    state: str = "not sent"
    exit_code: int | None = None
    cases: dict = field(default_factory=dict)      # case -> status, as the service's verdict says
    ratio: float | None = None
    submit_s: float | None = None                  # the request's own time
    first_line_s: float | None = None              # submit to the first streamed line
    first_verdict_s: float | None = None           # submit to the first case's verdict line
    queued_s: float | None = None                  # created to started, by the service's clock
    total_s: float | None = None                   # submit to the end event
    hand_in: str = "not sent"                      # accepted | rejected | failed: ...
    problem: str = ""                              # what went wrong with this student's requests


# --- the entries ------------------------------------------------------------------------------

def suite_entries(lab: str) -> list[str]:
    folder = SUITE / lab
    if not folder.is_dir():
        raise DrillError(f"The hostile suite has no entries for {lab} ({folder} is missing): give labs that "
                         f"have some ({', '.join(sorted(p.name for p in SUITE.iterdir()))}).")
    return sorted(p.name for p in folder.iterdir() if (p / "expect.toml").is_file() and p.name not in HANGS)


def lab_files(lab: str) -> list[str]:
    from cudalab.config import Config
    from cudalab.lab import labs
    return list(labs.load_lab(Config.load(root=ROOT), lab).files)


def archive_of(lab: str, entry: str, files: list[str]) -> bytes:
    """The entry packed as `cudalab pack` packs (the lab's files, .tar.gz), without pack's own
    checks: the service must meet what a student's client would refuse to send too."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name in files:
            path = SUITE / lab / entry / name
            if path.is_file():
                data = path.read_bytes()
                info = tarfile.TarInfo(name)
                info.size, info.mode = len(data), 0o644
                tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


# --- the service --------------------------------------------------------------------------------

def cudalab(*args: str, timeout_s: float = 600, cwd: Path | None = None) -> subprocess.CompletedProcess:
    try:
        return subprocess.run([sys.executable, "-m", "cudalab", *args], capture_output=True, text=True,
                              timeout=timeout_s, cwd=cwd or ROOT, env=child_env())
    except subprocess.TimeoutExpired:
        raise DrillError(f"`cudalab {' '.join(args)}` did not finish within {timeout_s:.0f} s.") from None


def child_env() -> dict[str, str]:
    """This process's environment, with the grader and the staged packages on PYTHONPATH as
    this process found them (the GPU machine has them in .deps only)."""
    paths = [str(ROOT / "grader")] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(dict.fromkeys(paths))}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class OwnService:
    """A course made in a temporary folder and `cudalab serve` on it."""

    def __init__(self, labs: list[str], students: int, executor: str, standin_delay_s: float, log: Path):
        self.folder = Path(tempfile.mkdtemp(prefix="cudalab-drill-course-"))
        roster = self.folder / "roster-in.csv"
        roster.write_text("id,name,lms_id,email\n" + "".join(
            f"d{n:03d},Drill Student {n},lms-d{n:03d},d{n:03d}@example.edu\n" for n in range(students)))
        made = cudalab("course", "init", str(self.folder / "course"), "--labs", ",".join(labs),
                       "--roster", str(roster), "--name", "Course drill")
        if made.returncode != 0:
            raise DrillError(f"`cudalab course init` failed (exit {made.returncode}): {made.stderr.strip()[-800:]}")
        issued = cudalab("course", "--json", "tokens", str(self.folder / "course"))
        if issued.returncode != 0:
            raise DrillError(f"`cudalab course tokens` failed (exit {issued.returncode}): "
                             f"{issued.stderr.strip()[-800:]}")
        self.tokens_file = Path(json.loads(issued.stdout)["tokens_file"])
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        command = ["serve", "--course", str(self.folder / "course"), "--executor", executor,
                   "--port", str(self.port)]
        if executor == "standin":
            command += ["--standin-delay", str(standin_delay_s)]
        with open(log, "wb") as out:
            self.process = subprocess.Popen([sys.executable, "-m", "cudalab", *command], cwd=ROOT, env=child_env(),
                                            stdout=out, stderr=subprocess.STDOUT)

    def wait_ready(self, timeout_s: float = 60) -> None:
        import httpx
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise DrillError(f"`cudalab serve` exited {self.process.returncode} at its start; its log "
                                 f"{self.log} ends: {self.log.read_text(errors='replace')[-800:]}")
            try:
                if httpx.get(self.url + "/api/v1/health", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise DrillError(f"`cudalab serve` did not answer within {timeout_s:.0f} s; see {self.log}.")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


def read_tokens(path: Path) -> tuple[list[tuple[str, str]], str | None]:
    """The students' (id, token) and the instructor's token from `course tokens`' CSV."""
    try:
        rows = list(csv.DictReader(path.read_text(encoding="utf-8").splitlines()))
    except OSError as err:
        raise DrillError(f"Cannot read the tokens file {path}: {err.strerror}.") from None
    if not rows or "token" not in rows[0]:
        raise DrillError(f"{path} is not the tokens list `cudalab course tokens` writes (id,name,email,token).")
    students = [(row["id"], row["token"]) for row in rows if row.get("id")]
    instructor = next((row["token"] for row in rows if not row.get("id")), None)
    return students, instructor


# --- one student --------------------------------------------------------------------------------

def drill_student(server: str, token: str, sub: Submission, archive: bytes, budget_end: float) -> Submission:
    import httpx
    from cudalab.course.client import CourseClient, ServiceError, StreamState
    try:
        # A hand-in's checks compile it while the request waits: the whole budget, not a minute.
        with CourseClient(server, token, timeout_s=max(60.0, budget_end - time.monotonic())) as client:
            pseudonym = f"drill-{sub.student}"
            httpx.put(f"{server}/api/v1/me/pseudonym", json={"pseudonym": pseudonym},
                      headers={"Authorization": f"Bearer {token}"}, timeout=30)
            sent = time.monotonic()
            started = client.start_try(sub.lab, archive, sub.bench)
            sub.submit_s = time.monotonic() - sent
            sub.job, sub.state = started["job"], "queued"
            for event in client.events(sub.job, StreamState()):
                at = time.monotonic() - sent
                if event.get("type") == "line":
                    sub.first_line_s = sub.first_line_s if sub.first_line_s is not None else at
                    if sub.first_verdict_s is None and VERDICT_LINE.match(str(event.get("text", ""))):
                        sub.first_verdict_s = at
                elif event.get("type") == "end":
                    sub.total_s = at
                if time.monotonic() > budget_end:
                    sub.problem = "the try did not finish within the drill's --budget-s"
                    break
            job = client.job(sub.job)
            sub.state, sub.exit_code, sub.ratio = job.get("state", "?"), job.get("exit_code"), job.get("ratio")
            sub.cases = case_statuses(job.get("verdict"))
            sub.queued_s = seconds_between(job.get("created_at"), job.get("started_at"))
            try:
                _, repeated = client.hand_in(sub.lab, archive)
                sub.hand_in = "accepted"
            except ServiceError as err:
                sub.hand_in = "rejected" if err.checks else f"failed: {err}"
    except ServiceError as err:
        sub.problem = str(err)
    except httpx.HTTPError as err:
        sub.problem = f"the service stopped answering: {err}"
    return sub


def case_statuses(verdict) -> dict:
    if not isinstance(verdict, dict):
        return {}
    return {name: case.get("status") for name, case in (verdict.get("verdicts") or {}).items()
            if isinstance(case, dict)}


def seconds_between(start, end) -> float | None:
    import datetime as dt
    try:
        return (dt.datetime.fromisoformat(end) - dt.datetime.fromisoformat(start)).total_seconds()
    except (TypeError, ValueError):
        return None


# --- the direct runs and the comparison ----------------------------------------------------------

def direct_verdict(lab: str, entry: str, bench: bool, files: list[str], timeout_s: float) -> dict:
    """What `cudalab run LAB FOLDER --json` gives for the entry, and then, for a bench try whose
    cases all passed, `cudalab run ... --bench` (as the service runs a bench try), on a copy
    of its lab files (as the service unpacks them), with the service's seed policy (run's
    default): the last command's exit code and the cases' verdicts."""
    with tempfile.TemporaryDirectory(prefix="cudalab-drill-run-") as temp:
        folder = Path(temp) / "submission"
        folder.mkdir()
        for name in files:
            if (SUITE / lab / entry / name).is_file():
                shutil.copyfile(SUITE / lab / entry / name, folder / name)
        ran = cudalab("run", lab, str(folder), "--json", timeout_s=timeout_s)
        try:
            body = json.loads(ran.stdout)
        except ValueError:
            body = None
        if bench and ran.returncode == 0:
            ran = cudalab("run", lab, str(folder), "--json", "--bench", timeout_s=timeout_s)
        archive = Path(temp) / f"{lab}.tar.gz"
        archive.write_bytes(archive_of(lab, entry, files))
        checked = cudalab("check", str(archive), "--lab", lab, "--no-run", "--json", timeout_s=timeout_s)
        try:
            receipt = json.loads(checked.stdout)
        except ValueError:
            receipt = {}
    accepted = receipt.get("accepted") if isinstance(receipt, dict) else None
    return {"exit_code": ran.returncode, "cases": case_statuses(body),
            "hand_in": "accepted" if accepted else "rejected" if accepted is False else "failed"}


def mismatches(sub: Submission, direct: dict) -> list[str]:
    """How the service's verdict differs from the direct run's, in words; [] when it does not."""
    found = []
    if sub.exit_code != direct["exit_code"]:
        found.append(f"exit {sub.exit_code} from the service, {direct['exit_code']} from `cudalab run`")
    if sub.cases != direct["cases"]:
        differing = sorted(n for n in set(sub.cases) | set(direct["cases"]) if sub.cases.get(n) != direct["cases"].get(n))
        found.append("cases " + ", ".join(f"{n} {sub.cases.get(n)} vs {direct['cases'].get(n)}" for n in differing[:4]))
    if sub.hand_in != direct["hand_in"]:
        found.append(f"hand-in {sub.hand_in} by the service, {direct['hand_in']} by `cudalab check`")
    return found


# --- the drill ------------------------------------------------------------------------------------

def quantile(values: list[float], q: float) -> float | None:
    values = sorted(v for v in values if v is not None)
    if not values:
        return None
    return values[min(len(values) - 1, round(q * (len(values) - 1)))]


def save_pages(server: str, labs: list[str], instructor: str | None, out: Path) -> list[str]:
    import httpx
    saved = []
    with httpx.Client(base_url=server, timeout=30, follow_redirects=True) as web:
        for lab in labs:
            page = web.get(f"/labs/{lab}/leaderboard")
            (out / f"leaderboard-{lab}.html").write_text(page.text)
            saved.append(f"leaderboard-{lab}.html ({page.status_code})")
        if instructor:
            web.post("/login", data={"token": instructor})
            page = web.get("/instructor")
            (out / "instructor.html").write_text(page.text)
            saved.append(f"instructor.html ({page.status_code})")
    return saved


def run_drill(args: argparse.Namespace) -> int:
    labs = [lab.strip() for lab in args.labs.split(",") if lab.strip()]
    entries = {lab: suite_entries(lab) for lab in labs}
    files = {lab: lab_files(lab) for lab in labs}
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    own = None
    if args.server:
        if not args.tokens:
            raise DrillError("--server needs --tokens: the CSV `cudalab course tokens` wrote for that course.")
        server, tokens_file = args.server.rstrip("/"), args.tokens
    else:
        own = OwnService(labs, args.students, args.executor, args.standin_delay, out / "serve.log")
        server, tokens_file = own.url, own.tokens_file
    try:
        if own:
            own.wait_ready()
        students, instructor = read_tokens(tokens_file)
        if len(students) < args.students:
            raise DrillError(f"{tokens_file} has {len(students)} student tokens, fewer than --students {args.students}.")
        plan = []
        for n, (student, token) in enumerate(students[:args.students]):
            lab = labs[n % len(labs)]
            entry = entries[lab][(n // len(labs)) % len(entries[lab])]
            # The correct entries are timed, so that the leaderboard has rows.
            plan.append((token, Submission(student, lab, entry, bench=entry == "correct" or n % 3 == 2)))
        budget_end = time.monotonic() + args.budget_s
        began = time.monotonic()
        with ThreadPoolExecutor(max_workers=len(plan)) as pool:
            done = list(pool.map(lambda p: drill_student(server, p[0], p[1], archive_of(p[1].lab, p[1].entry, files[p[1].lab]),
                                                         budget_end), plan))
        service_s = time.monotonic() - began
        saved = save_pages(server, labs, instructor, out)
    finally:
        if own:
            own.stop()
    compare = args.executor != "standin" or bool(args.server)
    if args.no_compare:
        compare = False
    direct: dict[tuple, dict] = {}
    if compare:
        # Several at once: their compiles are the long part; the verdicts compared do not
        # depend on the GPU being shared (the times, which would, are not compared).
        keys = sorted({(s.lab, s.entry, s.bench) for s in done})
        with ThreadPoolExecutor(max_workers=max(1, args.direct_jobs)) as pool:
            found = pool.map(lambda key: direct_verdict(*key, files[key[0]], timeout_s=args.run_timeout_s), keys)
            direct = dict(zip(keys, found))
    rows, failures = [], 0
    for sub in done:
        problems = [sub.problem] if sub.problem else []
        if sub.state not in ("done", "grader_failed") and not sub.problem:
            problems.append(f"the try ended {sub.state}")
        if compare and not sub.problem:
            problems += mismatches(sub, direct[(sub.lab, sub.entry, sub.bench)])
        failures += bool(problems)
        rows.append({**asdict(sub), "problems": problems})
    finished = [s for s in done if s.total_s is not None]
    report = {
        "schema": "cudalab.course-drill/1", "server": server, "executor": args.executor if own else "given service",
        "students": len(done), "labs": labs, "compared": compare, "service_s": round(service_s, 2),
        "tries_finished": len(finished),
        "tries_per_minute": round(len(finished) / service_s * 60, 2) if service_s > 0 else None,
        "first_line_s": {"median": quantile([s.first_line_s for s in done], 0.5),
                         "p90": quantile([s.first_line_s for s in done], 0.9)},
        "first_verdict_s": {"median": quantile([s.first_verdict_s for s in done], 0.5),
                            "p90": quantile([s.first_verdict_s for s in done], 0.9)},
        "queued_s": {"median": quantile([s.queued_s for s in done], 0.5),
                     "max": quantile([s.queued_s for s in done], 1.0)},
        "pages": saved, "mismatches": failures, "submissions": rows}
    (out / "drill.json").write_text(json.dumps(report, indent=2) + "\n")
    print_table(report)
    return 1 if failures else 0


def print_table(report: dict) -> None:
    width = max((len(r["entry"]) for r in report["submissions"]), default=5)
    for r in report["submissions"]:
        cases = sum(1 for s in r["cases"].values() if s == "passed")
        said = "; ".join(r["problems"]) or ("same as cudalab run/check" if report["compared"] else "not compared")
        print(f"{r['student']:<6} {r['lab']:<11} {r['entry']:<{width}} {'bench' if r['bench'] else 'try  '} "
              f"exit {str(r['exit_code']):>4}  {cases}/{len(r['cases'])} passed  hand-in {r['hand_in']:<9} {said}")

    def secs(value) -> str:
        return "-" if value is None else f"{value:.2f} s"
    print(f"{report['students']} students, {report['tries_finished']} tries finished in {report['service_s']} s: "
          f"{report['tries_per_minute']} tries per minute; submit to first line {secs(report['first_line_s']['median'])} "
          f"median, {secs(report['first_line_s']['p90'])} p90; to first verdict line "
          f"{secs(report['first_verdict_s']['median'])} median, {secs(report['first_verdict_s']['p90'])} p90; "
          f"queued {secs(report['queued_s']['median'])} median, {secs(report['queued_s']['max'])} max")
    print(f"pages saved: {', '.join(report['pages'])}; "
          + (f"{report['mismatches']} submission(s) differ from the direct runs or did not finish"
             if report["compared"] else "verdicts not compared (the stand-in executor runs no code)"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--server", help="a running course service (default: start one on a temporary course)")
    parser.add_argument("--tokens", type=Path, help="with --server: the CSV `cudalab course tokens` wrote")
    parser.add_argument("--students", type=int, default=20)
    parser.add_argument("--labs", default="vector_add,reduction")
    parser.add_argument("--executor", choices=("local", "standin"), default="local",
                        help="what the service started here runs jobs with (default: local, this machine's GPUs)")
    parser.add_argument("--standin-delay", type=float, default=0.2, help="with --executor standin: seconds a job takes")
    parser.add_argument("--budget-s", type=float, default=240.0, help="stop following tries after this long")
    parser.add_argument("--run-timeout-s", type=float, default=300.0, help="the limit of each direct run")
    parser.add_argument("--direct-jobs", type=int, default=4, help="direct runs at once (default: 4)")
    parser.add_argument("--no-compare", action="store_true", help="skip the direct runs")
    parser.add_argument("--out", type=Path, default=Path("course-drill-out"))
    args = parser.parse_args(argv)
    if args.students < 1:
        print("course-drill: --students must be at least 1.", file=sys.stderr)
        return 2
    try:
        return run_drill(args)
    except DrillError as err:
        print(f"course-drill: {err}", file=sys.stderr)
        return 2
    except ImportError as err:
        print(f"course-drill: a package the service needs is missing ({err}): run tools/setup.sh here, or put "
              ".deps/python-3.12 (tools/stage-deps.sh) on PYTHONPATH on the GPU machine.", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("course-drill: stopped.", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
