"""publish: per-student feedback (Markdown, HTML) and Gradescope results, the class's
gradebook.csv, canvas.csv and summary.html; stored known-good copies of the pages, the
Gradescope schema, escaping, partial batches and bad input."""
from __future__ import annotations

import base64
import copy
import csv
import io
import json
import os
import re
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

import cudalab
from cudalab.outputs import publish, report
from cudalab.lab.labspec import Question
from cudalab.record import GradeResult
from grade_results import OUTCOMES, assert_matches_golden, class_entries, entry_for

SCHEMA = Path(cudalab.__file__).parent / "schemas" / "gradescope_results.schema.json"
BATCH = {"started_at": "2025-01-01T00:00:00+00:00", "finished_at": None, "gpu": "NVIDIA H100 80GB HBM3",
         "complete": False, "counts": {}}
PLOT = re.compile(r"data:image/svg\+xml;base64,[A-Za-z0-9+/=]+")


def render_feedback_html(result: dict) -> str:
    """The feedback page alone, as publish writes it beside feedback.md."""
    return report.render("feedback.html.j2", GradeResult.from_json(result))


def _validator():
    jsonschema = pytest.importorskip("jsonschema",
                                     reason="jsonschema is a test dependency (pip install -e grader[test])")
    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _rows(path: Path) -> list[list[str]]:
    with open(path, encoding="utf-8", newline="") as handle:
        return list(csv.reader(handle))


# --- per student --------------------------------------------------------------------------------

FEEDBACK_GOLDEN = ["full_marks", "graded", "compile_error", "not_run", "flagged"]


@pytest.mark.parametrize("outcome", FEEDBACK_GOLDEN)
def test_feedback_matches_the_stored_copies(tmp_path, outcome):
    result = OUTCOMES[outcome]()
    paths = publish.write_student(tmp_path, {"student": "alice", "state": "done", "result": result,
                                             "handin": {"name": "alice.tar.gz", "sha256": "0" * 64}},
                                  "Vector addition")
    assert paths["feedback"].read_text() == report.render_feedback(GradeResult.from_json(result)), "feedback.md is the grade's own"
    assert_matches_golden(paths["feedback"].read_text(), f"{outcome}.feedback.md")
    assert_matches_golden(paths["feedback_html"].read_text(), f"{outcome}.feedback.html")
    assert sorted(p.name for p in (tmp_path / "students" / "alice").iterdir()) == \
        ["feedback.html", "feedback.md", "results.json"]


def test_html_feedback_shows_student_text_and_never_runs_it(tmp_path):
    result = OUTCOMES["compile_error"]()
    result["submission"]["name"] = "<img src=x onerror=alert(1)>"
    result["build"]["feedback"] = ['kernel.cu(3): error: "</pre><script>alert(1)</script>" & more',
                                   "```", "c = a + b; // ```` four"]
    result["message"] = "Fix <b>this</b> first."
    html = render_feedback_html(result)
    assert "<script>" not in html and "<img src=x" not in html and "<b>this</b>" not in html
    assert "&lt;/pre&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in html and "&amp; more" in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    markdown = report.render_feedback(GradeResult.from_json(result))
    assert "\n`````\nkernel.cu(3)" in markdown and markdown.count("\n`````\n") == 2, \
        "the code fence outlasts any run of backticks in the compiler output"


def test_markdown_feedback_shows_student_text_without_html_or_links(tmp_path):
    """Student-controlled text (the hand-in's name, messages quoting file names, warnings,
    stderr, compiler output) reaches feedback.md as text: no raw HTML, no link, image or bare
    address; inside a code fence it stays as it is, and the fence stays closed."""
    result = OUTCOMES["graded"]()
    result["submission"]["name"] = '<img src=x onerror=alert(1)>'
    result["message"] = "See [your grade](https://evil.example/phish) or ![x](http://evil.example/t.png) \\[a](b)"
    result["warnings"] = ["<script>alert(1)</script>.cu was ignored", "www.evil.example and <https://evil.example>",
                          "mail me at mallory@evil.example"]
    result["cases"][1]["message"] = "c[1] is <b>wrong</b> | [x](javascript:alert(1))"
    result["cases"][1]["difference_images"] = {"c": "javascript:alert(1)"}
    result["run"].update(status="crashed", description="it crashed", stderr_head="<b>[raw](http://x)</b>\n```")
    markdown = report.render_feedback(GradeResult.from_json(result))
    tokens = MarkdownIt("commonmark").enable("table").parse(markdown)  # as the handouts are rendered
    inline = [child for token in tokens for child in (token.children or [])]
    assert not [t.type for t in tokens + inline if t.type in ("html_block", "html_inline", "link_open", "image")]
    assert "&lt;img src=x onerror=alert(1)&gt;" in markdown and "&lt;script&gt;" in markdown
    assert "\\[your grade\\](https\\://evil.example/phish)" in markdown and "www\\.evil.example" in markdown
    assert "mallory\\@evil.example" in markdown
    assert "c\\[1\\] is &lt;b&gt;wrong&lt;/b&gt; \\| \\[x\\]" in markdown, "one table cell, escaped"
    assert "\n````\n<b>[raw](http://x)</b>\n```\n````\n" in markdown, "fenced text is shown as it is"
    code = [t.content for t in tokens if t.type == "fence"]
    assert "<b>[raw](http://x)</b>\n```\n" in code


def test_difference_images_are_linked_only_below_the_feedback(tmp_path):
    result = OUTCOMES["graded"]()
    result["cases"][1]["difference_images"] = {"c": "images/n_257/c.png", "d": "javascript:alert(1)",
                                               "e": "../../other/e.png"}
    html = render_feedback_html(result)
    assert '<a href="images/n_257/c.png">difference image of c</a>' in html
    assert "javascript:" not in html and "../../other" not in html
    markdown = report.render_feedback(GradeResult.from_json(result))
    assert "([difference image of c](images/n_257/c.png))" in markdown
    assert "javascript" not in markdown and "../../other" not in markdown


def test_a_sanitizer_that_was_not_run_still_renders():
    result = OUTCOMES["full_marks"]()
    result["sanitizer"] = {"status": "skipped", "points_off": 0.0,
                           "message": "compute-sanitizer is not on this machine, so no points were taken off "
                                      "for it."}
    for page in (report.render_feedback(GradeResult.from_json(result)), render_feedback_html(result)):
        assert "compute-sanitizer is not on this machine" in page


@pytest.mark.parametrize("outcome", sorted(OUTCOMES))
def test_gradescope_results_follow_the_schema(tmp_path, outcome):
    validator = _validator()
    entry = entry_for("bob", outcome)
    result = entry["result"]
    paths = publish.write_student(tmp_path, entry, "Vector addition")
    body = json.loads(paths["gradescope"].read_text())
    errors = sorted(validator.iter_errors(body), key=str)
    assert not errors, [e.message for e in errors]
    counts = result["status"] in publish.GRADE_STATUSES
    assert body.get("score") == (result["score"]["total"] if counts else None), "no score without a grade"
    assert body["extra_data"]["graded"] is counts and body["extra_data"]["cudalab_status"] == result["status"]
    expected = (["build"] if result["status"] in ("compile_error", "submission_error", "forbidden") else []) \
        + [f"correctness: {case['name']}" for case in result["cases"] if counts]
    assert [test["name"] for test in body["tests"]][:len(expected)] == expected
    if result["performance"] and counts:
        perf = next(t for t in body["tests"] if t["name"] == "performance")
        assert (perf["score"], perf["max_score"]) == (result["performance"]["points"],
                                                      result["performance"]["max_points"])
    ratio = GradeResult.from_json(result).ratio
    if ratio is None or not counts:
        assert "leaderboard" not in body
    else:
        assert body["leaderboard"] == [{"name": "speed ratio", "value": ratio, "order": "asc"}]


def test_gradescope_results_of_each_kind(tmp_path):
    def gradescope(student, outcome):
        paths = publish.write_student(tmp_path, entry_for(student, outcome), "V")
        return json.loads(paths["gradescope"].read_text())

    flagged = gradescope("a", "flagged")  # every case passed, but a time below the physical floor
    assert flagged["score"] == 70.0 and flagged["execution_time"] == 60
    assert [t["status"] for t in flagged["tests"]] == ["passed"] * 3 + ["failed"]
    assert "below what this GPU can do at all" in flagged["tests"][-1]["output"]
    failing = gradescope("b", "graded")
    assert [t["status"] for t in failing["tests"]] == ["passed", "failed", "passed", "failed"]
    assert "c[256] is wrong" in failing["tests"][1]["output"]
    broken = gradescope("c", "compile_error")
    assert broken["score"] == 0.0 and broken["tests"][0]["name"] == "build"
    assert 'error: expected a ";"' in broken["tests"][0]["output"]
    penalised = gradescope("d", "sanitizer_errors")
    assert penalised["score"] == 90.0 and penalised["tests"][-1]["name"] == "compute-sanitizer"
    unrun = gradescope("e", "not_run")
    assert "score" not in unrun and unrun["tests"] == []
    assert "Not graded (no GPU on the grading machine): no score was given" in unrun["output"]


def test_the_schema_is_not_a_rubber_stamp():
    validator = _validator()
    good = {"score": 1.0, "tests": [{"name": "a", "score": 1.0, "max_score": 1.0, "status": "passed"}]}
    assert validator.is_valid(good)
    for bad in ({"tests": [{"name": "a"}]}, {"score": 1.0, "visibility": "public"}, {"score": "1"},
                {"score": 1.0, "tests": [{"score": 1.0, "status": "ok"}]}, {"score": 1.0, "scores": 2.0},
                {"score": 1.0, "leaderboard": [{"name": "speed", "value": 1.0, "order": "up"}]}):
        assert not validator.is_valid(bad), bad


def test_a_hand_in_the_grader_failed_on_gets_a_page_saying_so(tmp_path):
    paths = publish.write_student(tmp_path, entry_for("carol", None, state="failed_to_grade"), "Vector addition")
    markdown = paths["feedback"].read_text()
    assert "**Not graded: the grader failed.**" in markdown and "seed" not in markdown
    assert "Vector addition: feedback for carol.tar.gz" in paths["feedback_html"].read_text()
    body = json.loads(paths["gradescope"].read_text())
    assert "score" not in body and body["extra_data"]["graded"] is False
    assert "Not graded (grader error (not the student's fault))" in body["output"]


def test_a_pending_hand_in_has_no_feedback_yet(tmp_path):
    with pytest.raises(publish.PublishError, match="has not been graded yet"):
        publish.write_student(tmp_path, entry_for("dave", None, state="pending"), "V")
    assert not (tmp_path / "students").exists()


@pytest.mark.parametrize("student", ["s123", "Alice.Smith-2", "x" * 64])
def test_a_plain_id_is_its_own_folder(student):
    assert publish.safe_id(student) == student


@pytest.mark.parametrize("student", ["../../etc", "/abs", ".hidden", "a/b", "a b", "ü", "x" * 65, "-x", "\x00",
                                     "..", "CON:"])
def test_any_other_id_gets_a_folder_inside_students(tmp_path, student):
    folder = publish.student_dir(tmp_path, student)
    assert folder.parent == tmp_path / "students" and re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", folder.name)
    assert len(folder.name) <= 64 and folder.name != student
    assert publish.safe_id(student + "!") != folder.name, "different ids, different folders"
    paths = publish.write_student(tmp_path, entry_for(student, "full_marks"), "V")
    assert all(p.parent == folder for p in paths.values())


@pytest.mark.parametrize("entry, words", [
    ("s1", "must be a mapping"),
    ({"state": "done", "result": {}}, "no student id"),
    ({"student": "  ", "state": "done"}, "no student id"),
    ({"student": "s1", "state": "graded"}, "state 'graded'"),
    ({"student": "s1", "state": "done", "result": None}, "holds no result"),
    ({"student": "s1", "state": "done", "result": {"schema": "cudalab.grade/0"}}, "not a cudalab.grade/1"),
    ({"student": "s1", "state": "done", "result": ["x"]}, "not a cudalab.grade/1"),
    ({"student": "s1", "state": "done", "handin": "s1.zip", "result": None}, "not a mapping"),
    ({"student": "s1", "state": "done", "handin": {"name": 3}, "result": {"schema": "cudalab.grade/1"}},
     "not text"),
    ({"student": "s1", "state": "done", "result": {"schema": "cudalab.grade/1", "status": "graded"}},
     "not a complete cudalab.grade/1"),
    ({"student": "s1", "state": "done", "result": OUTCOMES["full_marks"]() | {"performance": "fast"}},
     'performance is "fast", not an object'),
    ({"student": "s1", "state": "done", "result": OUTCOMES["graded"]() | {"cases": ["n_1"]}},
     "case 1 is str, not an object"),
    ({"student": "s1", "state": "done", "result": OUTCOMES["graded"]() | {"score": {"total": "high"}}},
     "score has no 'correctness'"),
])
def test_bad_entries_are_refused_in_a_sentence(tmp_path, entry, words):
    with pytest.raises(publish.PublishError, match=re.escape(words)):
        publish.write_student(tmp_path, entry, "V")


def _with_case_status(result: dict, word: str) -> dict:
    result["cases"][0]["status"] = word
    return result


@pytest.mark.parametrize("result, said", [
    (_with_case_status(OUTCOMES["graded"](), "passed-ish"), "case 1.status is 'passed-ish', not one of passed, failed"),
    (OUTCOMES["graded"]() | {"run": {"status": "exploded"}}, "run.status is 'exploded', not one of passed"),
    (OUTCOMES["full_marks"]() | {"sanitizer": {"status": "mostly"}}, "sanitizer.status is 'mostly'"),
    (OUTCOMES["graded"]() | {"exit_code": 24}, "says 'graded' with exit code 24"),
])
def test_a_result_with_a_status_this_grader_does_not_know_is_refused(tmp_path, result, said):
    """Proves: every output reads a result through the typed record, so a case verdict, a run's
    end, a sanitizer status or an exit code it does not know is refused with a sentence that
    names the field, for the student's files and the class's alike, never filed under a guess
    (a case that is not "passed" counted as failed, an unknown run as wrong results)."""
    entry = {"student": "s1", "state": "done", "result": result}
    with pytest.raises(publish.PublishError, match=r"The result of 's1' is not a complete cudalab\.grade/1 document "
                                                   rf"\(.*{re.escape(said)}.*\); grade the hand-in again\."):
        publish.write_student(tmp_path, entry, "V")
    with pytest.raises(publish.PublishError, match=re.escape(said)):
        _publish_class(tmp_path, [entry])


# --- per class ---------------------------------------------------------------------------------

def _publish_class(out: Path, entries=None, batch=None, **kwargs):
    entries = class_entries() if entries is None else entries
    return publish.write_class(out, "vector_add", "Vector addition", entries, BATCH if batch is None else batch,
                               **kwargs), entries


def test_gradebook_has_one_row_per_student_in_id_order(tmp_path):
    paths, entries = _publish_class(tmp_path)
    rows = list(csv.DictReader(io.StringIO(paths["gradebook"].read_text(), newline="")))
    assert list(rows[0]) == list(publish.GRADEBOOK_COLUMNS)
    assert [r["student"] for r in rows] == sorted(e["student"] for e in entries)
    by_id = {r["student"]: r for r in rows}
    full = by_id["s1000"]
    assert (full["status"], full["correctness"], full["performance"], full["total"], full["total_max"],
            full["ratio"], full["flags"], full["handin"]) == \
        ("graded", "70", "30", "100", "100", "0.8", "", "s1000.tar.gz")
    assert full["sha256"] == entries[0]["handin"]["sha256"]
    assert by_id["s1021"]["total"] == "46.6667" and by_id["s1021"]["ratio"] == ""
    assert by_id["s1035"]["status"] == "compile_error" and by_id["s1035"]["total"] == "0"
    assert by_id["s1063"]["flags"] == "changed"
    changed = next(e for e in entries if e["student"] == "s1063")
    assert by_id["s1063"]["sha256"] == changed["graded_handin"] != changed["handin"]["sha256"], \
        "the hash of the hand-in the grade is of, not of the one that replaced it"
    assert by_id["s1014"]["flags"] == "manifest_mismatch;timing" and by_id["s1056"]["flags"] == "sanitizer"
    pending = [r for r in rows if r["status"] == "pending"]
    assert len(pending) == 6 and all(r["total"] == r["correctness"] == r["ratio"] == "" for r in pending)
    assert all("partial" in r["message"] for r in pending)
    unrun = [r for r in rows if r["status"] in ("not_run", "error", "failed_to_grade")]
    assert unrun and all(r["total"] == "" for r in unrun), "no zero for what the grader could not grade"


def test_no_csv_cell_can_be_read_as_a_formula(tmp_path):
    """Every column of both CSVs that student or roster text reaches, with each character a
    spreadsheet takes as the start of a formula (OWASP), is quoted as text."""
    entry = entry_for("=cmd|' /C calc'!A0", "full_marks", name='=HYPERLINK("http://x","click")',
                      lms_id="+41", section="@SUM(A1)")
    entry["handin"]["name"] = "+SUM(A1:A9).zip"
    entry["result"]["message"] = "-2+3 cases passed."
    tabbed = entry_for("\t=1+1", "compile_error", name="\r=1+1", section="  =1")
    paths, _ = _publish_class(tmp_path, [entry, tabbed], {"complete": True})
    gradebook = {row[0]: row for row in _rows(paths["gradebook"])[1:]}
    row = gradebook["'=cmd|' /C calc'!A0"]
    assert row[1] == "'+SUM(A1:A9).zip" and row[-1] == "'-2+3 cases passed."
    assert "'\t=1+1" in gradebook
    canvas = {row[2]: row for row in _rows(paths["canvas"])[2:]}
    assert canvas["'=cmd|' /C calc'!A0"][:5] == ["'=HYPERLINK(\"http://x\",\"click\")", "'+41",
                                                "'=cmd|' /C calc'!A0", "", "'@SUM(A1)"]
    assert canvas["'\t=1+1"][0] == "'\r=1+1" and canvas["'\t=1+1"][4] == "'  =1"
    for path in (paths["gradebook"], paths["canvas"]):
        for cells in _rows(path):
            assert not any(cell.lstrip(" ").startswith(("=", "+", "-", "@", "\t", "\r")) for cell in cells), cells


def test_canvas_csv_is_what_the_gradebook_import_takes(tmp_path):
    paths, entries = _publish_class(tmp_path)
    rows = _rows(paths["canvas"])
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Vector addition (cudalab)"]
    assert rows[1] == ["    Points Possible", "", "", "", "", "100.00"]
    students = rows[2:]
    assert len(students) == len(entries) and [r[2] for r in students] == sorted(e["student"] for e in entries)
    assert all(r[0] == r[2] and r[1] == r[3] == r[4] == "" for r in students)
    grade = {r[2]: r[5] for r in students}
    assert grade["s1000"] == "100.00" and grade["s1021"] == "46.67" and grade["s1035"] == "0.00"
    assert grade["s1070"] == "0.00", "a forbidden library is the student's zero"
    statuses = {e["student"]: (e["state"], (e["result"] or {}).get("status")) for e in entries}
    blank = {s for s, (state, status) in statuses.items()
             if state != "done" or status in ("not_run", "error", "not_isolated")}
    assert blank and all(grade[s] == "" for s in blank), "pending and ungraded hand-ins stay blank"
    assert all(grade[s] != "" for s in set(grade) - blank)


def test_canvas_csv_uses_names_and_sections_where_known(tmp_path):
    entry = entry_for("s1", "full_marks", name="Smith, Ada", section="Lab A")
    paths, _ = _publish_class(tmp_path, [entry], {"complete": True}, points_possible=None)
    assert _rows(paths["canvas"])[2] == ["Smith, Ada", "", "s1", "", "Lab A", "100.00"]
    assert '"Smith, Ada"' in paths["canvas"].read_text()


def test_canvas_points_possible_when_nothing_is_graded_yet(tmp_path):
    entries = [entry_for("s1", None, state="pending")]
    paths, _ = _publish_class(tmp_path, entries, points_possible=100)
    assert _rows(paths["canvas"])[1][5] == "100.00" and _rows(paths["canvas"])[2][5] == ""
    paths, _ = _publish_class(tmp_path, entries)
    assert _rows(paths["canvas"])[1][5] == ""


def test_results_that_disagree_on_the_points_possible_are_refused(tmp_path):
    entries = [entry_for("s1", "full_marks"), entry_for("s2", "full_marks")]
    entries[1]["result"]["score"]["total_max"] = 120.0
    with pytest.raises(publish.PublishError, match="disagree on the points possible"):
        _publish_class(tmp_path, entries)


def test_a_damaged_result_in_a_class_is_refused_in_a_sentence(tmp_path):
    entries = class_entries()
    entries[3]["result"]["provenance"]["gpu_sharing"] = "busy"
    with pytest.raises(publish.PublishError, match=r"The result of 's1021' .*provenance\.gpu_sharing is \"busy\", not a list"):
        _publish_class(tmp_path, entries)


def test_rows_that_would_share_a_folder_are_refused(tmp_path):
    with pytest.raises(publish.PublishError, match="would share a feedback folder: 's1'"):
        _publish_class(tmp_path, [entry_for("s1", "full_marks"), entry_for("s1", "graded")])
    with pytest.raises(publish.PublishError, match="must be a mapping"):
        _publish_class(tmp_path, [entry_for("s1", "full_marks")], batch=[("complete", True)])
    with pytest.raises(publish.PublishError, match="not a plain folder name"):
        publish.write_student(tmp_path, entry_for("s1", "full_marks", key="../s2"), "V")


def _two_hand_ins_of_s1():
    first = entry_for("s1", "full_marks", key="s1-first")
    second = entry_for("s1", "compile_error", key="s1-second")
    second["handin"]["name"] = "s1-again.tar.gz"
    return [first, second, entry_for("s2", "graded")]


def test_two_hand_ins_of_one_student_are_both_published_and_flagged(tmp_path):
    entries = _two_hand_ins_of_s1()
    paths, _ = _publish_class(tmp_path, entries, {"complete": True})
    for entry in entries:
        publish.write_student(tmp_path, entry, "Vector addition")
    rows = list(csv.DictReader(io.StringIO(paths["gradebook"].read_text(), newline="")))
    both = [r for r in rows if r["student"] == "s1"]
    assert sorted((r["handin"], r["status"], r["flags"]) for r in both) == \
        [("s1-again.tar.gz", "compile_error", "duplicate"), ("s1.tar.gz", "graded", "duplicate")]
    canvas = {row[2]: row[5] for row in _rows(paths["canvas"])[2:]}
    assert canvas == {"s1": "", "s2": "46.67"}, "one row per student; no grade until the instructor decides"
    page = paths["summary"].read_text()
    assert 'id="shared-banner">1 student handed in more than once.' in page
    flagged = page[page.index('<table id="flagged">'):page.index("</table>", page.index('<table id="flagged">'))]
    assert flagged.count("several hand-ins of one student") == 2
    assert "Student &#39;s1&#39; has 2 hand-ins: this one (&#39;s1-again.tar.gz&#39;) and &#39;s1.tar.gz&#39;" in flagged
    for key in ("s1-first", "s1-second"):
        assert f'href="students/{key}/feedback.html"' in page
        assert (tmp_path / "students" / key / "feedback.md").is_file()
    assert "Score: 0" in (tmp_path / "students" / "s1-second" / "feedback.md").read_text()


def test_roster_students_without_a_hand_in_are_listed(tmp_path):
    batch = {"complete": True, "missing": [{"student": "s9", "name": "<b>Nine</b>"}]}
    paths, _ = _publish_class(tmp_path, [entry_for("s1", "full_marks")], batch)
    page = paths["summary"].read_text()
    listed = page[page.index('<ul class="students" id="missing">'):]
    assert "On the roster, no hand-in (1)" in page and "<li>s9 (&lt;b&gt;Nine&lt;/b&gt;)</li>" in listed


def test_summary_matches_the_stored_copy(tmp_path):
    paths, _ = _publish_class(tmp_path)
    page = paths["summary"].read_text()
    assert len(PLOT.findall(page)) == 2
    assert_matches_golden(PLOT.sub("data:image/svg+xml;base64,PLOT", page), "class.summary.html")


def test_a_partial_batch_says_so_and_a_complete_one_does_not(tmp_path):
    paths, _ = _publish_class(tmp_path / "partial")
    page = paths["summary"].read_text()
    assert 'id="graded-banner">Partial: 30 of 40 hand-ins have a grade.' in page
    assert "<li>6: not reached (the batch has not finished)</li>" in page
    assert "<title>Vector addition: class summary (partial)</title>" in page
    done = [e for e in class_entries() if e["state"] != "pending"]
    paths, _ = _publish_class(tmp_path / "complete", done, {"complete": True})
    page = paths["summary"].read_text()
    assert "Partial" not in page and 'id="graded-banner">30 of 34 hand-ins have a grade.' in page
    paths, _ = _publish_class(tmp_path / "stopped", done, {"complete": False})
    assert "Partial: 30 of 34 hand-ins have a grade." in paths["summary"].read_text(), "the batch's word counts too"
    graded = [e for e in done if (e["result"] or {}).get("status") in publish.GRADE_STATUSES]
    paths, _ = _publish_class(tmp_path / "graded", graded, {"complete": True})
    assert "graded-banner" not in paths["summary"].read_text(), "no banner when every hand-in has a grade"


def test_summary_groups_failures_and_lists_what_to_look_at(tmp_path):
    paths, entries = _publish_class(tmp_path, class_entries() + _two_hand_ins_of_s1()[:2])
    page = paths["summary"].read_text()
    for key in ("compile_error", "forbidden", "timeout", "wrong", "not_run", "grader_error"):
        assert f'id="failure-{key}"' in page, key
    flagged = page[page.index('<table id="flagged">'):page.index("</table>", page.index('<table id="flagged">'))]
    for word in publish.FLAG_WORDS.values():
        assert word in flagged, word
    assert '<a href="students/s1063/feedback.html">s1063</a>' in flagged
    assert "no longer the one graded (graded: sha256 " in flagged
    assert "names student &#39;s1000&#39;; it was graded as &#39;s1014&#39;" in flagged
    fastest = page[page.index('<table id="fastest">'):page.index("</table>", page.index('<table id="fastest">'))]
    ratios = [float(r) for r in
              re.findall(r'<td class="number">(\d+\.?\d*)</td><td class="number">[\d.]+ ms', fastest)]
    assert len(ratios) == 10 and ratios == sorted(ratios) and ratios[0] == 0.8
    assert '<td class="number">6</td>' in page[page.index('<table id="counts">'):], "six pending"


def test_summary_shows_student_ids_as_text(tmp_path):
    entry = entry_for("<script>x</script>", "graded")
    paths, _ = _publish_class(tmp_path, [entry], {"complete": True})
    page = paths["summary"].read_text()
    assert "<script>" not in page and "&lt;script&gt;x&lt;/script&gt;" in page
    assert "students/script_x_script-" in page, "the link goes to the sanitised folder"


def test_plots_are_deterministic_svg_with_the_bar_colours(tmp_path):
    first, _ = _publish_class(tmp_path / "a")
    second, _ = _publish_class(tmp_path / "b")
    assert first["summary"].read_text() == second["summary"].read_text()
    plots = [base64.b64decode(uri.split(",", 1)[1]).decode() for uri in PLOT.findall(first["summary"].read_text())]
    assert "<dc:date>" not in plots[0] and "Matplotlib v" not in plots[0]
    assert publish.SCORE_COLOUR in plots[0] and publish.RATIO_COLOUR in plots[1]


def test_a_class_with_nothing_to_plot_says_why(tmp_path):
    paths, _ = _publish_class(tmp_path, [entry_for("s1", "compile_error"), entry_for("s2", None, state="pending")])
    page = paths["summary"].read_text()
    assert len(PLOT.findall(page)) == 1 and "No plot: no hand-in has a measured speed yet" in page
    paths, _ = _publish_class(tmp_path, [entry_for("s2", None, state="pending")])
    assert "No plot: no hand-in has a grade yet." in paths["summary"].read_text()


def test_class_files_are_written_atomically(tmp_path, monkeypatch):
    paths, _ = _publish_class(tmp_path)
    before = {key: path.read_bytes() for key, path in paths.items()}

    def crash(*_args, **_kwargs):
        raise OSError("disk full")
    monkeypatch.setattr(os, "replace", crash)
    entries = class_entries()
    for entry in entries:
        entry["state"], entry["result"] = "pending", None
    with pytest.raises(OSError):
        _publish_class(tmp_path, entries)
    assert {key: path.read_bytes() for key, path in paths.items()} == before, "the old files survive"
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_file()) == \
        ["canvas.csv", "cases.csv", "gradebook.csv", "summary.html"], "no temporary files left"


def test_atomic_write_bytes_replaces_the_whole_file(tmp_path):
    target = tmp_path / "deep" / "plot.bin"
    report.atomic_write_bytes(target, b"\x00\x01" * 10)
    report.atomic_write_bytes(target, b"\xff")
    assert target.read_bytes() == b"\xff" and [p.name for p in target.parent.iterdir()] == ["plot.bin"]


def test_input_is_not_changed(tmp_path):
    entries = class_entries()
    kept = copy.deepcopy(entries)
    _publish_class(tmp_path, entries)
    for entry in entries:
        if entry["state"] != "pending":
            publish.write_student(tmp_path, entry, "Vector addition")
    assert entries == kept


# --- was this graded? ------------------------------------------------------------------------

def _mostly_not_run() -> list[dict]:
    """30 hand-ins on a machine where most found no GPU: 24 not run, 6 with a grade."""
    entries = [entry_for(f"n{number:02d}", "not_run") for number in range(24)]
    return entries + [entry_for(f"g{number}", kind) for number, kind in
                      enumerate(["full_marks", "full_marks", "graded", "graded", "compile_error", "timed_out"])]


def test_a_class_mostly_not_graded_says_so_at_the_top_once(tmp_path):
    """Proves: with 24 of 30 hand-ins not run, the page answers "was this graded?" in a banner
    above everything else (6 of 30 have a grade; 24 had no GPU), says the same reason once with
    its count instead of 24 times, and does not call the class "nothing to look at"."""
    paths, _ = _publish_class(tmp_path, _mostly_not_run(), {"complete": True})
    page = paths["summary"].read_text()
    banner = page.index('id="graded-banner">6 of 30 hand-ins have a grade.')
    assert banner < page.index("<h2>"), "the banner comes first"
    assert "<li>24: no GPU on the grading machine</li>" in page[banner:page.index("</div>", banner)]
    assert page.count("There is no CUDA device on this machine") == 1
    assert "<li>24 hand-ins: There is no CUDA device on this machine" in page
    assert "Nothing to look at" not in page
    assert "Nothing flagged (but see the hand-ins without a grade, at the top)" in page


def test_per_case_pass_rates_and_the_class_statistics(tmp_path):
    """Proves: the page lists each case's passes and failures among the hand-ins with a grade,
    the most often failed first, and the mean and median of their totals; hand-ins without a
    grade count in neither."""
    paths, _ = _publish_class(tmp_path, _mostly_not_run(), {"complete": True})
    page = paths["summary"].read_text()
    table = page[page.index('<table id="cases">'):page.index("</table>", page.index('<table id="cases">'))]
    rows = re.findall(r"<tr><td>(\w+)</td><td class=\"number\">(\d+)</td><td class=\"number\">(\d+)</td>"
                      r"<td class=\"number\">(\d+)%</td></tr>", table)
    # Judged: two full marks (all pass), two failing n_257, one timed out (all fail); the
    # compile error ran no case.
    assert rows == [("n_257", "2", "3", "40"), ("n_1", "4", "1", "80"), ("n_1025", "4", "1", "80")]
    # Totals 100, 100, 46.7, 46.7, 0, 0: mean 48.9, median 46.7.
    assert "Among the 6 hand-ins with a grade: mean 48.9, median 46.7 (of 100)." in page


def test_cases_csv_has_each_hand_ins_verdict_per_case(tmp_path):
    entries = [entry_for("a", "graded"), entry_for("b", "not_run"), entry_for("c", "compile_error"),
               entry_for("d", None, state="pending")]
    paths, _ = _publish_class(tmp_path, entries)
    assert paths["cases"] == tmp_path / "cases.csv"
    assert _rows(paths["cases"]) == [["student", "handin", "n_1", "n_257", "n_1025"],
                                     ["a", "a.tar.gz", "passed", "failed", "passed"],
                                     ["b", "b.tar.gz", "", "", ""], ["c", "c.tar.gz", "", "", ""],
                                     ["d", "d.tar.gz", "", "", ""]]


def test_canvas_points_possible_are_the_results_own_before_the_labs(tmp_path):
    paths, _ = _publish_class(tmp_path, [entry_for("s1", "full_marks")], points_possible=120)
    assert _rows(paths["canvas"])[1][5] == "100.00", "the grades are out of what their results say"
    paths, _ = _publish_class(tmp_path, [entry_for("s1", "not_run")], points_possible=120)
    assert _rows(paths["canvas"])[1][5] == "120.00", "no grade: the lab's maximum"


# --- written answers ---------------------------------------------------------------------------

QUESTIONS = (Question("blocks", "More blocks?", 5.0), Question("work", "More work per thread?", 2.5))


def _answered(entries: list[dict], readmes: dict[str, str | None]) -> list[dict]:
    for entry in entries:
        if entry["student"] in readmes and entry.get("result"):
            entry["result"]["written_answers"] = {
                "readme": readmes[entry["student"]],
                "questions": [{"id": q.id, "text": q.text, "points": q.points} for q in QUESTIONS]}
    return entries


def test_written_answers_reach_the_feedback_as_text_and_the_class_page(tmp_path):
    hostile = "I used 32x8.\n<script>alert(1)</script> [x](http://evil.example)\n```\nstill my answer"
    result = OUTCOMES["graded"]()
    result["written_answers"] = {"readme": hostile,
                                 "questions": [{"id": q.id, "text": q.text, "points": q.points} for q in QUESTIONS]}
    markdown = report.render_feedback(GradeResult.from_json(result))
    assert "## Your written answers" in markdown and "1. (5 points) More blocks?" in markdown
    tokens = MarkdownIt("commonmark").enable("table").parse(markdown)
    inline = [child for token in tokens for child in (token.children or [])]
    assert not [t.type for t in tokens + inline if t.type in ("html_block", "html_inline", "link_open", "image")]
    assert hostile + "\n" in [t.content for t in tokens if t.type == "fence"], "shown exactly as handed in"
    result["written_answers"]["readme"] = None
    assert "No README.md was handed in, so these questions earn no points." in report.render_feedback(GradeResult.from_json(result))

    entries = _answered(class_entries(), {"s1000": "answers", "s1007": None})
    paths, _ = _publish_class(tmp_path, entries, questions=QUESTIONS)
    page = paths["summary"].read_text()
    assert "Written answers (1 of 2)" in page and 'href="students/s1000/feedback.html">s1000</a>' in page
    assert "No README.md: s1007." in page


def test_the_instructors_points_for_written_answers_survive_a_later_run(tmp_path):
    entries = _answered(class_entries(), {"s1000": "answers", "s1007": None})
    paths, _ = _publish_class(tmp_path, entries, questions=QUESTIONS)
    rows = list(csv.DictReader(io.StringIO(paths["gradebook"].read_text(), newline="")))
    columns = ["written blocks (5)", "written work (2.5)"]
    assert list(rows[0]) == list(publish.GRADEBOOK_COLUMNS) + columns
    assert all(r[c] == "" for r in rows for c in columns), "blank until the instructor fills them in"
    # The instructor gives points in the gradebook (a spreadsheet), then the batch runs again.
    for row in rows:
        if row["student"] == "s1000":
            row.update({"written blocks (5)": "4", "written work (2.5)": "2.5"})
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    paths["gradebook"].write_text(out.getvalue())
    paths, _ = _publish_class(tmp_path, entries, questions=QUESTIONS)
    again = {r["student"]: r for r in csv.DictReader(io.StringIO(paths["gradebook"].read_text(), newline=""))}
    assert (again["s1000"]["written blocks (5)"], again["s1000"]["written work (2.5)"]) == ("4", "2.5")
    assert again["s1007"]["written blocks (5)"] == ""
    # A lab without questions has no such columns.
    paths, _ = _publish_class(tmp_path / "plain")
    assert list(csv.DictReader(io.StringIO(paths["gradebook"].read_text(), newline="")).fieldnames) == \
        list(publish.GRADEBOOK_COLUMNS)
