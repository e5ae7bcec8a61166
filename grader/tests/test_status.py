"""The table of grade statuses (cudalab/status.py) and the grade record's schema
(schemas/grade.schema.json): every status a code path writes is in the table, the modules that
read statuses take them from it, and every grade the tests write matches the schema."""
from __future__ import annotations

import ast
import io
import json
import re
import shutil
import tokenize
from collections import Counter
from pathlib import Path

import pytest

import grade_results
from conftest import GRADE_SCHEMA, grade_problems, grade_validator
import cudalab
from cudalab.batching import batch
from cudalab import errors
from cudalab.outputs import publish, report
from cudalab.exit_codes import Cli
from cudalab.record import GradeResult
from cudalab.status import (GRADE_STATUSES, REJECTING, WORDS, CaseStatus, PerformanceStatus, RunStatus,
                            SanitizerStatus, Status, has_grade, values)

PACKAGE = Path(cudalab.__file__).resolve().parent
# The engine's modules, wherever in the package they live (a command only prints).
ENGINE = {p.relative_to(PACKAGE).as_posix(): p for p in sorted(PACKAGE.rglob("*.py"))
          if "commands" not in p.relative_to(PACKAGE).parts}


def engine_module(name: str) -> Path:
    """The engine module whose file is called `name` (grade.py)."""
    found = [path for path in ENGINE.values() if path.name == name]
    assert len(found) == 1, f"{name}: {len(found)} engine modules have that name"
    return found[0]
GOLDEN_RECORD = Path(__file__).parent / "golden" / "grade.record.json"


# --- the table covers every status written -------------------------------------------------

def _written_statuses(tree: ast.AST) -> list[tuple[int, ast.expr]]:
    """(line, expression) for each status a module writes into a grade result: the "status" of
    a dict literal that also has an "exit_code", status= beside exit_code= in a call, and the
    status given to grade._set_status."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            keys = [k.value for k in node.keys if isinstance(k, ast.Constant)]
            if "status" in keys and "exit_code" in keys:
                found.append((node.lineno, node.values[keys.index("status")]))
        elif isinstance(node, ast.Call):
            names = {kw.arg: kw.value for kw in node.keywords}
            if "status" in names and "exit_code" in names:
                found.append((node.lineno, names["status"]))
            func = node.func
            if isinstance(func, ast.Name) and func.id == "_set_status" and len(node.args) >= 2:
                found.append((node.lineno, node.args[1]))
    return found


def _status_of(expr: ast.expr) -> Status | None:
    """The status an expression names: a string, Status.X or Status.X.value; None for anything
    computed (its callers are checked where it is computed)."""
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return Status(expr.value)  # ValueError: a word the table does not have
    if isinstance(expr, ast.Attribute) and expr.attr == "value":
        expr = expr.value
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == "Status":
        return Status[expr.attr]
    return None


@pytest.mark.parametrize("module", sorted(ENGINE))
def test_every_status_a_module_writes_is_in_the_table(module):
    tree = ast.parse(ENGINE[module].read_text(encoding="utf-8"))
    for line, expr in _written_statuses(tree):
        if isinstance(expr, ast.Constant):
            pytest.fail(f"{module}:{line} writes the status {expr.value!r} as a string: take it from "
                        "status.Status")
        _status_of(expr)


def test_the_scan_finds_the_writers():
    """The scan above sees the places that write a result's status, so it can catch a new word."""
    writers = {}
    for module in ("grade.py", "batch.py", "publish.py"):
        tree = ast.parse(engine_module(module).read_text(encoding="utf-8"))
        writers[module] = {_status_of(expr) for _, expr in _written_statuses(tree)}
    assert {Status.GRADED, Status.NOT_RUN, Status.ERROR} <= writers["grade.py"]
    assert Status.ERROR in writers["batch.py"] and Status.ERROR in writers["publish.py"]


def _error_classes(cls=errors.CudalabError):
    yield cls
    for sub in cls.__subclasses__():
        yield from _error_classes(sub)


@pytest.mark.parametrize("error", list(_error_classes()), ids=lambda c: c.__name__)
def test_each_error_reports_a_status_of_the_table(error):
    status = Status.reported(error.status)
    if Status.of(error.status) is None:  # only a usage error (of any command) stops a grade without a grade status
        assert issubclass(error, errors.UsageError) and status is Status.ERROR
    else:
        assert error.exit_code == status.exit_code


@pytest.mark.parametrize("template", sorted(p.name for p in (PACKAGE / "templates").glob("*.j2")))
def test_templates_name_only_statuses_of_the_table(template):
    text = (PACKAGE / "templates" / template).read_text(encoding="utf-8")
    assert not re.search(r"\br\.status\s*(==|!=|in)\s*[\"'(]", text), \
        f"{template} compares a result's status with its own words: use Status, r.status.words or r.status.verdict"
    for name in re.findall(r"\bStatus\.(\w+)", text):
        assert name in Status.__members__, f"{template} names Status.{name}, which the table lacks"


def test_each_status_has_its_own_exit_code_and_words():
    codes = [s.exit_code for s in Status]
    assert len(set(codes)) == len(codes) and all(isinstance(c, Cli) for c in codes)
    assert Status.GRADED.exit_code == Cli.DONE and Status.ERROR.exit_code == Cli.INTERNAL
    assert all(s.words for s in Status) and len({s.reason_key for s in Status}) == len(Status)
    assert values(is_grade=True) == GRADE_STATUSES == ("graded", "compile_error", "submission_error", "forbidden")
    assert REJECTING == ("compile_error", "submission_error", "forbidden")
    assert set(values(scoreless=True)) == {"not_run", "not_isolated"}
    assert all(s.is_grade for s in Status if s.rejects)
    assert not any(s.is_grade for s in Status if s.scoreless)
    assert Status.GRADED == "graded" and json.dumps([Status.NOT_RUN]) == '["not_run"]' and f"{Status.ERROR}" == "error"


# --- the readers take the table -------------------------------------------------------------

def test_report_and_templates_take_the_table_s_words():
    assert report.STATUS_WORDS == WORDS == {s.value: s.words for s in Status}


def test_publish_counts_and_reasons_come_from_the_table():
    assert publish.GRADE_STATUSES == GRADE_STATUSES
    assert publish.COUNT_ORDER[:len(Status)] == tuple(s.value for s in Status)
    assert set(publish.COUNT_ORDER[len(Status):]) == set(publish.STATES) - {"done"}
    for status in Status:
        if status.reason_key is not None:
            assert publish.FAILURE_REASONS[status.reason_key] == status.reason
    assert list(publish.FAILURE_REASONS) == ["compile_error", "submission_error", "forbidden", "timeout", "crashed",
                                             "wrong", "no_performance", "not_isolated", "not_run", "unknown_lab",
                                             "grader_error"]


@pytest.mark.parametrize("status", [s for s in Status if s is not Status.GRADED], ids=str)
def test_publish_files_each_status_under_its_reason_and_grade(status):
    result = grade_results.compile_error()
    result.update(status=status.value, exit_code=int(status.exit_code))
    if status.scoreless:
        result["score"] = None
    entry = publish.read_entry({"student": "s1", "handin": {"name": "s1.tar.gz", "sha256": ""},
                                "state": "done", "result": result})
    assert publish.failure_of(entry)[0] == status.reason_key
    assert entry.counts is status.is_grade
    body = publish.gradescope_results(entry, entry.result)
    assert body["extra_data"]["graded"] is status.is_grade
    assert any(t["name"] == "build" for t in body["tests"]) is status.rejects


@pytest.mark.parametrize("status", [s for s in Status if s.verdict is not None], ids=str)
def test_feedback_says_each_status_s_verdict(status):
    result = grade_results.compile_error()
    result.update(status=status.value, exit_code=int(status.exit_code), score=None)
    markdown = report.render_feedback(GradeResult.from_json(result))
    assert f"**{status.verdict.head}** {status.verdict.text}" in markdown
    html = report.render("feedback.html.j2", GradeResult.from_json(result))  # the page publish writes beside feedback.md
    assert f'class="verdict {status.verdict.kind}"><strong>{status.verdict.head}</strong>' in html


# --- the grade record's schema ----------------------------------------------------------------

@pytest.fixture(scope="module")
def validator():
    found = grade_validator()
    if found is None:
        pytest.skip("jsonschema is a test dependency (pip install -e grader[test])")
    return found


def test_the_schema_s_statuses_are_the_table_s():
    schema = json.loads(GRADE_SCHEMA.read_text(encoding="utf-8"))
    assert schema["properties"]["status"]["enum"] == [s.value for s in Status]
    assert schema["properties"]["exit_code"]["enum"] == [int(s.exit_code) for s in Status]
    rules = {rule["if"]["properties"]["status"]["const"]: rule["then"]["properties"] for rule in schema["allOf"]}
    assert set(rules) == set(WORDS)
    for status in Status:
        assert rules[status.value]["exit_code"] == {"const": int(status.exit_code)}
        score = rules[status.value].get("score")
        assert score == ({"type": "null"} if status.scoreless
                         else {"$ref": "#/$defs/score"} if status.is_grade else None)


@pytest.mark.parametrize("outcome", sorted(grade_results.OUTCOMES))
def test_the_report_tests_grades_match_the_schema(validator, outcome):
    assert grade_problems(validator, grade_results.OUTCOMES[outcome]()) == []


def test_the_schema_refuses_what_publish_cannot_read(validator):
    graded = grade_results.OUTCOMES["graded"]()
    assert grade_problems(validator, {**graded, "status": "done"})
    assert grade_problems(validator, {**graded, "exit_code": 24})
    assert grade_problems(validator, {**graded, "score": None})
    assert grade_problems(validator, {**grade_results.not_run(), "score": graded["score"]})
    no_status = dict(graded)
    del no_status["status"]
    assert grade_problems(validator, no_status)


def test_the_stored_record_still_loads(validator, tmp_path):
    """A batch record of today's shape (tests/golden/grade.record.json): the batch reads it
    back, its result matches the schema, and publish writes its feedback and Gradescope
    results from it."""
    store = batch.Store(tmp_path / "out")
    store.records.mkdir(parents=True)
    shutil.copy(GOLDEN_RECORD, store.records / "alice.json")
    record = store.record("alice")
    assert record is not None and record["schema"] == batch.RECORD_SCHEMA
    job = batch.Job.from_json(record["job"])
    result = record["result"]
    assert grade_problems(validator, result) == []
    assert result["status"] == Status.GRADED and not batch.is_failed_grade(result)
    paths = publish.write_student(tmp_path / "out", {"student": job.student, "key": job.key, "state": "done",
                                                     "handin": {"name": job.handin.name, "sha256": job.sha256},
                                                     "result": result}, result["lab_title"])
    results = json.loads(Path(paths["gradescope"]).read_text(encoding="utf-8"))
    assert results["score"] == result["score"]["total"] and results["extra_data"]["graded"] is True


def test_every_status_without_a_grade_says_why_and_holds_no_grade():
    """Proves: the table says, for each status that is no grade, why in a few words (a batch's
    last line and summary.html's banner group hand-ins by it), and has_grade is true only for a
    grade status with a score: a grader error's zero is no grade."""
    for status in Status:
        assert (status.why_ungraded is None) == status.is_grade, status
    assert Status.NOT_RUN.why_ungraded == "no GPU on the grading machine"
    assert Status.NOT_ISOLATED.why_ungraded == "no sandbox on the grading machine"
    outcomes = grade_results.OUTCOMES
    assert has_grade(outcomes["compile_error"]()) and has_grade(outcomes["graded"]())
    assert not has_grade(outcomes["not_run"]()) and not has_grade(outcomes["grader_error"]())
    assert not has_grade(outcomes["graded"]() | {"score": None}) and not has_grade(None)


# --- no status is spelled out beside the table ------------------------------------------------

STATUS_ENUMS = (Status, CaseStatus, RunStatus, PerformanceStatus, SanitizerStatus)
STATUS_WORDS = frozenset(member.value for enum in STATUS_ENUMS for member in enum)

# The places outside status.py that still spell out a word of those tables, per module: another
# vocabulary that shares the word (a check's severity "error", a ladder row's "skipped", a
# calibration's "not_run", Gradescope's test statuses) or a writer not yet moved onto the enums
# (grade.py, runner.py, batch.py). A module may name fewer; a new one fails
# test_no_module_spells_out_a_status_beside_the_table.
SPELLED_OUT = {
    "building/build.py": {"error": 1, "forbidden": 1},              # a build log's severity; the forbidden check's name
    "grading/calibrate.py": {"error": 1, "passed": 2, "skipped": 3},  # a calibration row's own words
    "grading/calibration.py": {"skipped": 3},                      # a calibration case's status
    "intake/check.py": {"skipped": 1},                            # a receipt check's verdict
    "commands/calibrate.py": {"not_run": 1, "passed": 1, "skipped": 3},
    "commands/ladder.py": {"error": 1, "passed": 2, "skipped": 1},  # a ladder row's verdict
    "commands/run.py": {"error": 1, "failed": 2, "passed": 4, "skipped": 4},  # `cudalab run`'s verdicts
    "course/run_autograder.py": {"error": 1},  # the course service's JSON key for its sentence (standard library only)
    "errors.py": {"usage": 1},                             # a usage error's word: no grade status
    "intake/forbidden.py": {"error": 2, "forbidden": 2},
    "grading/grade.py": {"clean": 1, "error": 1, "errors": 1, "failed": 4, "none": 1, "passed": 7, "scored": 2,
                 "skipped": 2, "zero": 2},                 # the writer of a grade's sections
    "intake/handin.py": {"error": 12},                            # a hand-in finding's severity
    "intake/handin_checks.py": {"error": 10, "failed": 3, "forbidden": 2, "passed": 5, "skipped": 3},  # the receipt's
                                                           # verdicts and severities; the forbidden check's name
    "outputs/handout.py": {"none": 1, "passed": 2, "skipped": 1},  # the measured figures' rows
    "lab/labspec.py": {"forbidden": 2, "none": 2},             # lab.toml's words
    "grading/ladder.py": {"error": 1, "passed": 3, "skipped": 9},  # a ladder row's verdict
    "grading/pacer.py": {"error": 1},
    "grading/profile.py": {"error": 1, "none": 1},
    "outputs/publish.py": {"failed": 1, "passed": 1},              # Gradescope's test statuses
    "grading/run.py": {"passed": 1},
    "isolation/runner.py": {"cuda_error": 1, "failed": 1, "internal": 1, "no_device": 1, "usage": 1},
    "isolation/sandbox.py": {"none": 1},                             # an isolation's kind
    "batching/slurm.py": {"failed": 1},                             # a Slurm job's state
}


def _spelled_out_words(path: Path) -> list[tuple[int, str]]:
    """(line, word) for each string that is exactly a status word: in Python every literal but
    a mapping's key ("passed": ..., row["passed"]), in a template every literal inside {{ }} or
    {% %} (the page's own HTML and prose are not compared with anything)."""
    text = path.read_text(encoding="utf-8")
    found = []
    if path.suffix == ".j2":
        for block in re.finditer(r"\{[{%](.*?)[%}]\}", text, re.S):
            for word in re.finditer(r"[\"']([a-z_]+)[\"']", block[1]):
                if word[1] in STATUS_WORDS:
                    found.append((text.count("\n", 0, block.start()) + 1, word[1]))
        return found
    skipped = (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT)
    tokens = [t for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type not in skipped]
    for before, token, after in zip([None, *tokens], tokens, [*tokens[1:], None]):
        if token.type != tokenize.STRING or token.string.lstrip("rRbBuU")[:1] not in "\"'":
            continue
        word = ast.literal_eval(token.string)
        is_key = (before is not None and after is not None
                  and ((before.string in "{," and after.string == ":") or (before.string, after.string) == ("[", "]")))
        if word in STATUS_WORDS and not is_key:
            found.append((token.start[0], word))
    return found


def test_no_module_spells_out_a_status_beside_the_table():
    """Proves: a grade's status, a case's verdict, a run's, the performance section's and the
    sanitizer's are compared and written through the enums of status.py: no module or template
    names one by its word beyond SPELLED_OUT (the publishing side, report.py, progress.py and
    the templates name none)."""
    sources = sorted([*PACKAGE.rglob("*.py"), *(PACKAGE / "templates").glob("*.j2")])
    problems = []
    for path in sources:
        name = path.relative_to(PACKAGE).as_posix()
        if name == "status.py":
            continue
        counted = Counter(word for _, word in _spelled_out_words(path))
        allowed = SPELLED_OUT.get(name, {})
        for word, count in sorted(counted.items()):
            if count > allowed.get(word, 0):
                lines = ", ".join(str(line) for line, w in _spelled_out_words(path) if w == word)
                problems.append(f"{name} spells out the status {word!r} {count} times (lines {lines}); "
                                f"SPELLED_OUT knows of {allowed.get(word, 0)}: compare with or write the member of "
                                f"status.py's enums instead ({', '.join(e.__name__ for e in STATUS_ENUMS)}); "
                                "where the word is another vocabulary's, add it to SPELLED_OUT with why")
    assert not problems, "\n".join(problems)


def test_the_spelling_scan_sees_a_status_but_not_a_key(tmp_path):
    """The scan above finds a status word compared or written, in Python and in a template, and
    leaves a mapping's key and prose alone, so a new one cannot slip past it."""
    module = tmp_path / "module.py"
    module.write_text('"""A docstring that says passed."""\n'
                      'if run["status"] == "cuda_error":\n'
                      '    counts = {"graded": 1, "failed": 0}\n'
                      '    counts["passed"] += 1\n'
                      '    verdict = "failed"\n', encoding="utf-8")
    assert _spelled_out_words(module) == [(2, "cuda_error"), (5, "failed")]
    template = tmp_path / "page.html.j2"
    template.write_text('<td class="failed">\n{% if c.status == "passed" %}passed{% endif %}\n', encoding="utf-8")
    assert _spelled_out_words(template) == [(2, "passed")]


def test_run_statuses_are_the_harness_s_words_and_the_sandbox_s():
    """Proves: RunStatus has the word of every harness exit code (exit_codes.Harness) and the two
    the sandbox gives a run that ended otherwise, so a grade's run reads into it whatever ended it."""
    from cudalab.exit_codes import Harness
    from cudalab.isolation.sandbox import ProcessResult

    assert {code.status for code in Harness} | {"crashed", "unexpected_exit"} == {s.value for s in RunStatus}
    run = dict(argv=["lab"], timed_out=False, wall_s=0.1, timeout_s=10.0, stdout="", stderr="")
    assert ProcessResult(returncode=-11, **run).status == RunStatus.CRASHED
    assert ProcessResult(returncode=77, **run).status == RunStatus.UNEXPECTED_EXIT
    assert ProcessResult(returncode=3, **run).status == RunStatus.CUDA_ERROR
    assert [s for s in RunStatus if s.finished] == [RunStatus.PASSED, RunStatus.FAILED]
    assert not RunStatus.TIMEOUT.crashed and all(s.crashed for s in RunStatus if not s.finished and s is not RunStatus.TIMEOUT)


@pytest.mark.parametrize("ended", list(RunStatus), ids=str)
def test_publish_files_a_failing_run_under_how_it_ended(ended):
    """Proves: summary.html's reason for a graded hand-in with failing cases follows its run's
    RunStatus: a time-out, a run that stopped short of a verdict (crashed), or wrong results."""
    result = grade_results.OUTCOMES["graded"]()
    result["run"]["status"] = ended.value
    entry = publish.read_entry({"student": "s1", "handin": {"name": "s1.tar.gz", "sha256": ""},
                                "state": "done", "result": result})
    reason = publish.failure_of(entry)[0]
    assert reason == ("timeout" if ended is RunStatus.TIMEOUT else "crashed" if ended.crashed else "wrong")
    assert reason in publish.FAILURE_REASONS
