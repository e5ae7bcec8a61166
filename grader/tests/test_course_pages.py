"""course/pages.py: the course service's web pages, in an app of their own over a SQLite
database made with store.Base.metadata.create_all and rows added here. A student sees only
their own tries, hand-ins and receipts; the leaderboard shows pseudonyms, never ids, names
or emails; the instructor's page needs the instructor's token; a bad cookie is the login
page with a sentence. The browser tests drive Debian's Chromium through Playwright: they
log in through the form and save a screenshot of each page, checked not blank."""
from __future__ import annotations

import datetime as dt
import html
import shutil
import socket
import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import create_engine
from sqlalchemy.orm import sessionmaker
from starlette.applications import Starlette
from starlette.testclient import TestClient

from cudalab.course import pages, pseudonyms, store
from cudalab.course.spec import CourseSpec, LabOffer, LatePolicy, TryBudget
from cudalab.course.store import HandIn, Job, JobKind, JobState, Student, Upload

CHROMIUM = Path("/usr/bin/chromium")
NOW = store.now()
ANN_TOKEN = "cl1_annannannann_" + "a" * 32
BOB_TOKEN = "cl1_bobbobbobbob_" + "b" * 32
INSTRUCTOR_TOKEN = "cl1_instructorxx_" + "i" * 32
# What is Bob's and must never be on Ann's page (nor anyone's on the leaderboard).
BOB_PRIVATE = ["s2-bob", "Bob Beta", "bob@uni.example", "2002", "bob-summary-7q", "receipt-bob-55", "b" * 64]
ANN_PRIVATE = ["s1-ann", "Ann Alpha", "ann@uni.example"]


class PagesService:
    """The part of CourseService the pages use (the contract's interface), over plain rows."""

    def __init__(self, spec: CourseSpec, sessions: sessionmaker):
        self.spec, self.sessions = spec, sessions
        self._students = {ANN_TOKEN: "s1-ann", BOB_TOKEN: "s2-bob"}

    def student_for(self, token):
        with self.sessions() as session:
            return session.get(Student, self._students.get(token or "", ""))

    def is_instructor(self, token) -> bool:
        return token == INSTRUCTOR_TOKEN

    def queue_position(self, job_id: int):
        with self.sessions() as session:
            queued = [j.id for j in session.query(Job).filter(Job.state == JobState.QUEUED).order_by(Job.id)]
        return queued.index(job_id) + 1 if job_id in queued else None


def offer(lab: str) -> LabOffer:
    return LabOffer(lab=lab, opens=NOW - dt.timedelta(days=7), deadline=NOW + dt.timedelta(days=1),
                    late=LatePolicy(grace_minutes=10, penalty_per_day=0.1, cutoff=None), counts="last",
                    tries=TryBudget(capacity=5, refill_per_hour=1.0))


@pytest.fixture
def service(tmp_path) -> PagesService:
    engine = create_engine(f"sqlite:///{tmp_path / 'course.db'}", connect_args={"check_same_thread": False})
    store.Base.metadata.create_all(engine)
    sessions = sessionmaker(engine, expire_on_commit=False)
    spec = CourseSpec(folder=tmp_path, name="GPU Programming 101", labs={"vector_add": offer("vector_add"),
                                                                          "sobel": offer("sobel")},
                      roster_file=tmp_path / "roster.csv", max_upload_bytes=16 << 20)
    verdict = {"verdicts": {"c_1": {"status": "passed"}, "c_7": {"status": "passed"}, "c_300": {"status": "failed"}}}
    all_passed = {"verdicts": {"c_1": {"status": "passed"}, "c_7": {"status": "passed"}, "c_300": {"status": "passed"}}}
    with sessions.begin() as session:
        session.add_all([
            Student(id="s1-ann", name="Ann Alpha", email="ann@uni.example", pseudonym="quick_fox"),
            Student(id="s2-bob", name="Bob Beta", email="bob@uni.example", pseudonym="slow_owl"),
            Student(id="s3-cy", name="Cy Gamma", email="cy@uni.example", pseudonym=None),
            Upload(sha256="a" * 64, size=900), Upload(sha256="b" * 64, size=901), Upload(sha256="c" * 64, size=902)])
        session.flush()

        def job(id, student, sha, **fields):
            fields.setdefault("state", JobState.DONE)
            session.add(Job(id=id, kind=JobKind.TRY, student_id=student, lab="vector_add", upload_sha256=sha,
                            ordinal=1, created_at=NOW - dt.timedelta(seconds=10_000 - id), **fields))  # later ids are later
        job(1001, "s1-ann", "a" * 64, bench=True, exit_code=0, ratio=1.10, noise=0.05, summary="ann passed every case",
            verdict=all_passed)
        job(1002, "s1-ann", "a" * 64, exit_code=24, state=JobState.GRADER_FAILED, charged=False,
            summary="the grader failed")
        job(1003, "s1-ann", "a" * 64, state=JobState.QUEUED, summary="")
        job(2002, "s2-bob", "b" * 64, bench=True, exit_code=0, ratio=1.12, noise=0.02, summary="bob-summary-7q",
            verdict=all_passed)
        job(2003, "s2-bob", "b" * 64, exit_code=1, summary="bob-summary-7q", verdict=verdict)
        job(3003, "s3-cy", "c" * 64, bench=True, exit_code=0, ratio=0.5, noise=0.01, summary="cy fast",
            verdict=all_passed)
        late = {"status": "late", "days_late": 1, "penalty": 0.1, "sentence": "late by 1 day: 10 % off"}
        on_time = {"status": "on_time", "days_late": 0, "penalty": 0.0, "sentence": "on time"}
        session.add_all([
            HandIn(student_id="s1-ann", lab="vector_add", upload_sha256="a" * 64, received_at=NOW, lateness=on_time,
                   checks={}, receipt={"receipt_id": "receipt-ann-44", "counts": "last"}),
            HandIn(student_id="s2-bob", lab="vector_add", upload_sha256="b" * 64, received_at=NOW, lateness=late,
                   checks={}, receipt={"receipt_id": "receipt-bob-55", "counts": "last"})])
    return PagesService(spec, sessions)


@pytest.fixture
def app(service) -> Starlette:
    return Starlette(routes=pages.routes(service))


def logged_in(app, token) -> TestClient:
    client = TestClient(app, base_url="https://testserver")
    answer = client.post("/login", data={"token": token}, follow_redirects=False)
    assert answer.status_code == 303, answer.text
    return client


def test_login_sets_a_cookie_scripts_cannot_read_and_refuses_an_unknown_token(app):
    """Proves: a known token gives an HttpOnly, SameSite=Strict (and Secure over https)
    cookie; an unknown, empty or absurdly long token is the login page with a sentence and
    no cookie."""
    client = TestClient(app, base_url="https://testserver")
    answer = client.post("/login", data={"token": ANN_TOKEN}, follow_redirects=False)
    assert answer.status_code == 303 and answer.headers["location"] == "/"
    cookie = answer.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie and "secure" in cookie
    for token, words in [("cl1_nobodynobody_" + "x" * 32, "not known to this course"),
                         ("", "Paste the token"), ("x" * 5000, "not a token of this course")]:
        refused = TestClient(app).post("/login", data={"token": token}, follow_redirects=False)
        assert refused.status_code in (400, 401) and words in refused.text
        assert not refused.cookies.get(pages.COOKIE)   # none set, or the old one deleted


def test_a_bad_cookie_is_the_login_page_with_a_sentence(app):
    """Proves: a cookie holding no known token gets the login page (401) saying to log in
    again, not the page, not a traceback."""
    client = TestClient(app)
    client.cookies.set(pages.COOKIE, "cl1_forgedforged_" + "f" * 32)
    answer = client.get("/")
    assert answer.status_code == 401 and "log in again" in answer.text and "<form" in answer.text
    assert "Ann" not in answer.text and "Traceback" not in answer.text
    assert TestClient(app).get("/").text.count('name="token"') == 1   # no cookie: the login form


def test_a_students_page_shows_their_own_work_and_nothing_of_anyone_elses(app):
    """Proves: Ann's page lists her tries (the queued one with its position, the refunded
    one as refunded), her receipt and her tries left, and none of Bob's ids, name, email,
    job ids, summaries, receipts or content hashes."""
    page = logged_in(app, ANN_TOKEN).get("/").text
    for mine in ["Ann Alpha", "quick_fox", "1001", "1002", "1003", "ann passed every case", "refunded",
                 "position 1", "receipt-ann-44", "a" * 64, "on time"]:
        assert mine in page, mine
    for theirs in BOB_PRIVATE + ["s3-cy", "Cy Gamma", "cy fast"]:
        assert theirs not in page, theirs


def test_a_student_chooses_a_pseudonym_on_their_page_by_the_apis_rule(app, service):
    """Proves: the student's page has a form that sets the pseudonym (a 303 back to the page,
    which then shows it, and the database holds it); a name breaking the rule (too short, a
    control character, a space, a non-ASCII look-alike) is refused 400 and one that is another
    student's, in any letter case, 409, each with the rule's or a sentence on the page and
    nothing changed; without a login it is the login page."""
    client = logged_in(app, ANN_TOKEN)
    assert '<form method="post" action="/pseudonym">' in client.get("/").text
    chosen = client.post("/pseudonym", data={"pseudonym": "ann-the-fast"}, follow_redirects=False)
    assert chosen.status_code == 303 and chosen.headers["location"] == "/"
    assert "On the leaderboards you are <strong>ann-the-fast</strong>" in client.get("/").text
    for bad in ["ab", "ab\x07cd", "a b c", "ann\u0430", "x" * 33, ""]:
        answer = client.post("/pseudonym", data={"pseudonym": bad})
        assert answer.status_code == 400 and pseudonyms.RULE in html.unescape(answer.text), bad
    for taken in ["slow_owl", "SLOW_owl"]:
        answer = client.post("/pseudonym", data={"pseudonym": taken})
        assert answer.status_code == 409 and "is taken: choose another" in answer.text, taken
        assert "Traceback" not in answer.text
    with service.sessions() as session:
        assert session.get(Student, "s1-ann").pseudonym == "ann-the-fast"
        assert session.get(Student, "s2-bob").pseudonym == "slow_owl"
    anonymous = TestClient(app).post("/pseudonym", data={"pseudonym": "sneaky"})
    assert anonymous.status_code == 401 and 'name="token"' in anonymous.text


def test_the_leaderboard_shows_pseudonyms_and_shared_ranks_only(app):
    """Proves: the public board (no login) ranks the students with a pseudonym, 1.10 (5 %)
    and 1.12 sharing rank 1, and shows no student id, name or email; the student without a
    pseudonym is not listed."""
    page = TestClient(app).get("/labs/vector_add/leaderboard").text
    assert "quick_fox" in page and "slow_owl" in page
    assert page.count('<td class="num">1</td>') == 2
    for private in ANN_PRIVATE + ["s2-bob", "Bob Beta", "bob@uni.example", "s3-cy", "Cy Gamma", "cy@uni.example"]:
        assert private not in page, private
    missing = TestClient(app).get("/labs/no_such_lab/leaderboard")
    assert missing.status_code == 404 and "offers no lab" in missing.text


def test_the_instructors_page_needs_the_instructors_token_and_shows_the_class(app):
    """Proves: a student's login is sent to the login page (401) for /instructor; the
    instructor sees the queue, per-case pass rates from the latest tries' verdicts (Bob's
    latest failed c_300), the hour chart and the flags (a late hand-in, a refunded try)."""
    student = logged_in(app, ANN_TOKEN)
    answer = student.get("/instructor")
    assert answer.status_code == 401 and "needs the instructor token" in answer.text
    assert "Ann Alpha" in student.get("/").text   # still logged in as herself
    page = logged_in(app, INSTRUCTOR_TOKEN).get("/instructor").text
    assert "Queue now (1)" in page and "1003" in page
    assert "<td>c_300</td><td class=\"num\">2 of 3</td>" in page and "<td>c_1</td><td class=\"num\">3 of 3</td>" in page
    assert "<svg" in page and "handed in late" in page and "late by 1 day" in page and "refunded" in page


# --- in the browser ------------------------------------------------------------------------------

def browser_or_skip():
    if not CHROMIUM.is_file() or shutil.which(str(CHROMIUM)) is None:
        pytest.skip(f"needs Debian's Chromium at {CHROMIUM} (apt-get install chromium) for the page screenshots")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("needs the playwright Python package (pip install playwright) to drive Chromium")
    return sync_playwright


@pytest.fixture
def served(app):
    """The pages on a real HTTP server (uvicorn) on a free localhost port."""
    import uvicorn
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started, "uvicorn did not start serving the pages within 10 s"
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


def not_blank(path: Path) -> float:
    """The screenshot's pixel variance (grey levels): a blank or single-colour page is ~0."""
    from PIL import Image, ImageStat
    with Image.open(path) as picture:
        return ImageStat.Stat(picture.convert("L")).var[0]


def test_every_page_renders_in_chromium_and_a_student_sees_only_their_own(served, tmp_path):
    """Proves: in headless Chromium, logging in through the form works (the cookie is set
    and sent), a pseudonym is chosen through the student page's form (a taken one refused
    with a sentence shown, then a free one shown on the page and the leaderboard), and the login, student, leaderboard and instructor pages each render to a
    screenshot that is not blank; the student's rendered page holds none of Bob's data."""
    sync_playwright = browser_or_skip()
    shots = tmp_path / "screenshots"
    shots.mkdir()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"], headless=True)
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            page.goto(served + "/login")
            page.screenshot(path=str(shots / "login.png"), full_page=True)
            page.fill("#token", ANN_TOKEN)
            page.click("button[type=submit]")
            page.wait_for_url(served + "/")
            page.screenshot(path=str(shots / "student.png"), full_page=True)
            shown = page.inner_text("body")
            assert "Ann Alpha" in shown and "receipt-ann-44" in shown
            assert not [theirs for theirs in BOB_PRIVATE if theirs in page.content()]
            page.fill("#pseudonym", "slow_owl")   # Bob's: refused with a sentence on the page
            page.click("form[action='/pseudonym'] button")
            assert "is taken: choose another" in page.inner_text("[role=alert]")
            page.fill("#pseudonym", "ann-in-chromium")
            page.click("form[action='/pseudonym'] button")
            page.wait_for_url(served + "/")
            assert "On the leaderboards you are ann-in-chromium" in page.inner_text("body")
            page.goto(served + "/labs/vector_add/leaderboard")
            page.screenshot(path=str(shots / "leaderboard.png"), full_page=True)
            assert not [p for p in ANN_PRIVATE if p in page.content()]
            assert "ann-in-chromium" in page.inner_text("body")
            instructor = browser.new_page(viewport={"width": 1400, "height": 900})
            instructor.goto(served + "/login")
            instructor.fill("#token", INSTRUCTOR_TOKEN)
            instructor.click("button[type=submit]")
            instructor.wait_for_url(served + "/instructor")
            instructor.screenshot(path=str(shots / "instructor.png"), full_page=True)
        finally:
            browser.close()
    for name in ("login", "student", "leaderboard", "instructor"):
        assert not_blank(shots / f"{name}.png") > 50, f"{name}.png is blank"
