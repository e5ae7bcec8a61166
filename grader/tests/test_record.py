"""The typed grade record (record.GradeResult): every record the grader writes reads back
and writes out unchanged (conftest checks each one a test writes); the stored golden
record reads; a record that cannot be trusted is refused with a sentence."""
from __future__ import annotations

import copy
import json

import pytest

from cudalab.record import Case, GradeResult, RecordError, Score
from cudalab.status import Status
from conftest import TESTS

GOLDEN = json.loads((TESTS / "golden" / "grade.record.json").read_text())


def golden() -> dict:
    body = copy.deepcopy(GOLDEN)
    return body.get("result", body) if body.get("schema") != "cudalab.grade/1" else body


def test_the_golden_record_reads_into_typed_fields_and_writes_back_unchanged():
    body = golden()
    record = GradeResult.from_json(body)
    assert record.status is Status(body["status"]) and record.lab == body["lab"]
    assert isinstance(record.score, Score) and record.total == body["score"]["total"]
    assert all(isinstance(case, Case) for case in record.cases) and len(record.cases) == len(body["cases"])
    assert [c.passed for c in record.cases] == [c["status"] == "passed" for c in body["cases"]]
    assert record.to_json() == body and list(record.to_json()) == list(body)


def test_a_typed_change_is_written_back_with_everything_else_kept():
    body = golden()
    record = GradeResult.from_json(body)
    record.warnings.append("regraded by hand")
    record.score.total = 12.5
    written = record.to_json()
    assert written["warnings"][-1] == "regraded by hand" and written["score"]["total"] == 12.5
    assert written["provenance"] == body["provenance"] and written["performance"] == body["performance"]


@pytest.mark.parametrize("change, said", [
    (lambda b: b.update(schema="cudalab.grade/0"), "is not a cudalab.grade/1 record"),
    (lambda b: b.update(status="graded_by_magic"), "a status this grader does not know"),
    (lambda b: b.update(exit_code=0, status="compile_error"), "with exit code 0, where that status is 22"),
    (lambda b: b["score"].update(total="100"), "score.total is \"100\", not a number"),
    (lambda b: b["cases"][0].update(status="passed-ish"), "case 1.status is 'passed-ish'"),
    (lambda b: b.pop("provenance"), "has no 'provenance'|provenance is NoneType"),
    (lambda b: b["submission"].pop("folder"), "submission has no 'folder'"),
    (lambda b: b["build"].update(feedback=["ok", 3]), "build.feedback holds something other than text"),
])
def test_a_record_that_cannot_be_trusted_is_refused_with_a_sentence(change, said):
    body = golden()
    if body.get("status") != "graded":
        pytest.skip("the golden record is not a graded one")
    change(body)
    with pytest.raises(RecordError, match=said):
        GradeResult.from_json(body)


def test_a_record_written_before_sanitizer_and_flags_existed_still_reads():
    body = golden()
    for key in ("sanitizer",):
        body.pop(key, None)
    body["performance"].pop("flagged", None)
    record = GradeResult.from_json(body)
    assert record.sanitizer is None and record.performance.flagged is False
    assert record.to_json() == body
