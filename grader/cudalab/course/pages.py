"""The course service's web pages (Starlette routes over Jinja2 templates in
templates/course/; plain HTML and CSS, no script): a student's own tries, hand-ins and
receipts; each lab's leaderboard under pseudonyms; the instructor's view of the queue, the
work over time, per-case pass rates and flags.

Who is asking comes from one cookie holding the token pasted on /login (HttpOnly, so no
script can read it; SameSite=Strict, so no other site's form can send it). Every page but the
leaderboard checks it on each request through the service (a token replaced since is
refused at once) and answers a missing or unknown one with the login page and a sentence.
A student's page is built from queries filtered by that student's id alone, so it can show
nothing of anyone else's.
"""
from __future__ import annotations

import datetime as dt
from collections import Counter, defaultdict
from dataclasses import dataclass

import jinja2
from sqlalchemy import select
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from ..outputs.publish import FLAG_WORDS
from ..status import CaseStatus
from . import leaderboard, policy, pseudonyms
from .store import HandIn, Job, JobKind, JobState, Student, now

COOKIE = "cudalab_token"
COOKIE_MAX_AGE_S = 14 * 24 * 3600
MAX_TOKEN_CHARS = 200          # a real token is ~60; longer is not one, and is not looked up
SHOWN_TRIES = 200              # a student's most recent tries on their page
HOURS_SHOWN = 48               # the instructor's chart: the last two days, hour by hour

_templates = jinja2.Environment(loader=jinja2.PackageLoader("cudalab", "templates/course"),
                                autoescape=True, trim_blocks=True, lstrip_blocks=True,
                                undefined=jinja2.StrictUndefined)


def _utc(at: dt.datetime | None) -> dt.datetime | None:
    """SQLite gives back times without their zone: the service stores UTC."""
    if at is None:
        return None
    return at.replace(tzinfo=dt.timezone.utc) if at.tzinfo is None else at.astimezone(dt.timezone.utc)


def _when(at: dt.datetime | None) -> str:
    return _utc(at).strftime("%Y-%m-%d %H:%M:%S UTC") if at is not None else ""


_templates.filters["when"] = _when


def render(template: str, status: int = 200, **context) -> HTMLResponse:
    return HTMLResponse(_templates.get_template(template).render(**context), status_code=status)


def _token(request: Request) -> str | None:
    token = request.cookies.get(COOKIE)
    return token if token and len(token) <= MAX_TOKEN_CHARS else None


# --- what the pages show -----------------------------------------------------------------------

@dataclass
class LabTries:
    lab: str
    left: int
    capacity: int
    next_at: dt.datetime | None


def student_view(service, student_id: str, at: dt.datetime) -> dict:
    """Everything on a student's page: only rows whose student_id is this student's."""
    with service.sessions() as session:
        student = session.get(Student, student_id)
        tries = session.scalars(select(Job).where(Job.student_id == student_id, Job.kind == JobKind.TRY)
                                .order_by(Job.created_at.desc(), Job.id.desc()).limit(SHOWN_TRIES)).all()
        handins = session.scalars(select(HandIn).where(HandIn.student_id == student_id)
                                  .order_by(HandIn.received_at.desc())).all()
        budgets = []
        for lab in sorted(service.spec.labs):
            offer = service.spec.offer(lab)
            charged = session.scalars(select(Job.created_at).where(
                Job.student_id == student_id, Job.lab == lab, Job.kind == JobKind.TRY, Job.charged.is_(True))).all()
            left, next_at = policy.tries_left(offer.tries, [_utc(t) for t in charged], at)
            budgets.append(LabTries(lab, left, offer.tries.capacity, next_at))
        rows = [{"id": job.id, "lab": job.lab, "bench": job.bench, "state": job.state.value,
                 "position": service.queue_position(job.id) if job.state == JobState.QUEUED else None,
                 "summary": job.summary, "created_at": job.created_at, "charged": job.charged,
                 "ratio": job.ratio} for job in tries]
        receipts = [{"lab": h.lab, "received_at": h.received_at, "sha256": h.upload_sha256,
                     "receipt": h.receipt or {}, "lateness": h.lateness or {}} for h in handins]
        return {"name": student.name if student else "", "pseudonym": student.pseudonym if student else None,
                "tries": rows, "handins": receipts, "budgets": budgets}


def _hourly(times: list[dt.datetime], at: dt.datetime) -> list[int]:
    """Counts per hour over the last HOURS_SHOWN hours, oldest first."""
    counts = [0] * HOURS_SHOWN
    for time in times:
        hours_ago = int((at - _utc(time)).total_seconds() // 3600)
        if 0 <= hours_ago < HOURS_SHOWN:
            counts[HOURS_SHOWN - 1 - hours_ago] += 1
    return counts


def case_pass_rates(verdicts: list[dict]) -> list[tuple[str, int, int]]:
    """(case, passed, judged) over run verdicts (`cudalab run --json`'s "verdicts": case ->
    {"status": ...}), in the order cases first appear."""
    passed: Counter = Counter()
    judged: dict[str, int] = {}
    for verdict in verdicts:
        cases = verdict.get("verdicts") if isinstance(verdict, dict) else None
        for case, outcome in (cases.items() if isinstance(cases, dict) else []):
            judged[case] = judged.get(case, 0) + 1
            passed[case] += isinstance(outcome, dict) and outcome.get("status") == CaseStatus.PASSED
    return [(case, passed[case], count) for case, count in judged.items()]


def _grade_flags(verdict: dict | None) -> list[str]:
    """The flag kinds a grade's result carries (as the class summary lists them)."""
    flags = verdict.get("flags") if isinstance(verdict, dict) else None
    kinds = flags.keys() if isinstance(flags, dict) else flags if isinstance(flags, list) else []
    return [kind for kind in kinds if isinstance(kind, str)]


def instructor_view(service, at: dt.datetime) -> dict:
    since = at - dt.timedelta(hours=HOURS_SHOWN)
    with service.sessions() as session:
        active = session.scalars(select(Job).where(Job.state.in_((JobState.QUEUED, JobState.RUNNING)))).all()
        queue = sorted(({"id": job.id, "student": job.student_id, "lab": job.lab, "kind": job.kind.value,
                         "state": job.state.value, "position": service.queue_position(job.id),
                         "created_at": job.created_at} for job in active),
                       key=lambda row: (row["position"] is not None, row["position"] or 0))
        try_times = session.scalars(select(Job.created_at).where(Job.kind == JobKind.TRY, Job.created_at >= since)).all()
        handin_times = session.scalars(select(HandIn.received_at).where(HandIn.received_at >= since)).all()
        pass_rates = []
        for lab in sorted(service.spec.labs):
            finished = session.execute(select(Job.student_id, Job.verdict).where(
                Job.lab == lab, Job.kind == JobKind.TRY, Job.state == JobState.DONE).order_by(Job.created_at)).all()
            latest = {student: verdict for student, verdict in finished}   # each student's latest try
            pass_rates.append({"lab": lab, "students": len(latest),
                         "cases": case_pass_rates([v for v in latest.values() if v])})
        flags: dict[str, list[str]] = defaultdict(list)
        for student, lab, verdict in session.execute(select(Job.student_id, Job.lab, Job.verdict).where(
                Job.kind == JobKind.GRADE, Job.state == JobState.DONE)):
            for kind in _grade_flags(verdict):
                flags[FLAG_WORDS.get(kind, kind)].append(f"{student} ({lab})")
        for student, lab, lateness in session.execute(select(HandIn.student_id, HandIn.lab, HandIn.lateness)):
            if isinstance(lateness, dict) and lateness.get("status") == "late":
                flags["handed in late"].append(f"{student} ({lab}): {lateness.get('sentence', '')}")
        for student, lab, summary in session.execute(select(Job.student_id, Job.lab, Job.summary).where(
                Job.state == JobState.GRADER_FAILED)):
            flags["refunded: the grader failed"].append(f"{student} ({lab}): {summary}")
    tries_per_hour, handins_per_hour = _hourly(list(try_times), at), _hourly(list(handin_times), at)
    return {"queue": queue, "tries_per_hour": tries_per_hour, "handins_per_hour": handins_per_hour,
            "hour_max": max([1, *tries_per_hour, *handins_per_hour]), "hours": HOURS_SHOWN,
            "pass_rates": pass_rates, "flags": dict(sorted(flags.items()))}


# --- the routes --------------------------------------------------------------------------------

def routes(service) -> list:
    """The pages, mounted at / beside the API (service.make_app)."""
    course = service.spec.name

    def login_page(sentence: str = "", status: int = 200, forget: bool = False) -> Response:
        response = render("login.html.j2", status, course=course, sentence=sentence, labs=sorted(service.spec.labs))
        if forget:
            response.delete_cookie(COOKIE, path="/")   # a token that failed is not kept
        return response

    async def login_form(request: Request) -> Response:
        return login_page()

    async def login(request: Request) -> Response:
        try:
            form = await request.form(max_files=0, max_fields=4)
        except Exception:   # a body that is not a form (multipart's own errors are many)
            return login_page("That was not the login form: paste your token into the box below.", 400)
        token = str(form.get("token") or "").strip()
        if not token:
            return login_page("Paste the token your instructor sent you.", 400)
        if len(token) > MAX_TOKEN_CHARS:
            return login_page("That is not a token of this course: a token is one line starting with cl1_.", 401)
        if service.is_instructor(token):
            target = "/instructor"
        elif service.student_for(token) is not None:
            target = "/"
        else:
            return login_page("That token is not known to this course (mistyped, or replaced by a new one): "
                              "use the one your instructor sent you.", 401, forget=True)
        response = RedirectResponse(target, status_code=303)
        response.set_cookie(COOKIE, token, max_age=COOKIE_MAX_AGE_S, path="/", httponly=True, samesite="strict",
                            secure=request.url.scheme == "https")
        return response

    async def logout(request: Request) -> Response:
        response = RedirectResponse("/login", status_code=303)
        response.delete_cookie(COOKIE, path="/")
        return response

    async def student_page(request: Request) -> Response:
        token = _token(request)
        if token is None:
            return login_page("Log in with your token to see your tries and hand-ins." if COOKIE not in request.cookies
                              else "Your login is not valid: log in again with your token.",
                              401 if COOKIE in request.cookies else 200, forget=COOKIE in request.cookies)
        student = service.student_for(token)
        if student is None:
            if service.is_instructor(token):
                return RedirectResponse("/instructor", status_code=303)
            return login_page("Your login is no longer valid (the token was replaced?): log in again with "
                              "the token your instructor sent.", 401, forget=True)
        return student_page_of(student)

    def student_page_of(student, sentence: str = "", status: int = 200) -> Response:
        view = student_view(service, student.id, now())
        return render("student.html.j2", status, course=course, labs=sorted(service.spec.labs), sentence=sentence,
                      pseudonym_rule=pseudonyms.RULE, **view)

    async def choose_pseudonym(request: Request) -> Response:
        token = _token(request)
        student = service.student_for(token) if token is not None else None
        if student is None:
            return login_page("Log in with your token before choosing a pseudonym.", 401, forget=token is not None)
        try:
            form = await request.form(max_files=0, max_fields=4)
        except Exception:   # a body that is not a form (multipart's own errors are many)
            return student_page_of(student, "That was not the pseudonym form: type a pseudonym in the box.", 400)
        try:
            pseudonyms.choose(service.sessions, student.id, form.get("pseudonym"))
        except pseudonyms.PseudonymRefused as refused:
            return student_page_of(student, refused.sentence, refused.status)
        # After a post, a redirect: reloading the page does not send the form again.
        return RedirectResponse("/", status_code=303)

    async def board(request: Request) -> Response:
        lab = request.path_params["lab"]
        if lab not in service.spec.labs:
            return render("message.html.j2", 404, course=course, labs=sorted(service.spec.labs),
                          title="No such lab", sentence=f"The course offers no lab {lab[:64]!r}; its leaderboards "
                          "are linked below.")
        with service.sessions() as session:
            rows = leaderboard.lab_board(session, lab)
        return render("leaderboard.html.j2", course=course, labs=sorted(service.spec.labs), lab=lab, rows=rows)

    async def instructor_page(request: Request) -> Response:
        token = _token(request)
        if token is None or not service.is_instructor(token):
            # A student who wandered here stays logged in as themselves; a bad token is dropped.
            forget = token is not None and service.student_for(token) is None
            return login_page("The instructor page needs the instructor token: log in with it.", 401, forget)
        return render("instructor.html.j2", course=course, labs=sorted(service.spec.labs),
                      **instructor_view(service, now()))

    return [Route("/", student_page, methods=["GET"]),
            Route("/login", login_form, methods=["GET"]),
            Route("/login", login, methods=["POST"]),
            Route("/logout", logout, methods=["POST"]),
            Route("/pseudonym", choose_pseudonym, methods=["POST"]),
            Route("/labs/{lab}/leaderboard", board, methods=["GET"]),
            Route("/instructor", instructor_page, methods=["GET"])]
