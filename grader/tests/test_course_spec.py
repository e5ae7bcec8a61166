"""course/spec.py: course.toml read whole, every bad value refused in a sentence that names
the file and the key, and the file `cudalab course init` writes read back."""
from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from cudalab.batching.batch import read_roster
from cudalab.course import spec
from cudalab.errors import UsageError

UTC = dt.timezone.utc
GOOD = """\
name = "GPU programming"
roster = "roster.csv"

[labs.toy]
opens = 2026-03-01T09:00:00Z
deadline = 2026-03-15T23:59:00-06:00
counts = "best"

[labs.toy.late]
grace_minutes = 15
penalty_per_day = 0.1
cutoff = 2026-03-18T23:59:00-06:00

[labs.toy.tries]
capacity = 5
refill_per_hour = 1.5
"""


def write_course(folder: Path, text: str = GOOD, roster: str | None = "id,name,lms_id,email\ns1,Ann,101,ann@x.edu\n") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "course.toml").write_text(text)
    if roster is not None:
        (folder / "roster.csv").write_text(roster)
    return folder


def test_a_good_course_is_read_whole(tmp_path, toy_config):
    course = spec.load_course(write_course(tmp_path / "c"), toy_config)
    offer = course.offer("toy")
    assert course.name == "GPU programming" and course.max_upload_bytes == 16 * 1024 * 1024
    assert offer.opens == dt.datetime(2026, 3, 1, 9, tzinfo=UTC)
    assert offer.deadline == dt.datetime(2026, 3, 16, 5, 59, tzinfo=UTC)
    assert offer.late == spec.LatePolicy(15, 0.1, dt.datetime(2026, 3, 19, 5, 59, tzinfo=UTC))
    assert offer.tries == spec.TryBudget(5, 1.5) and offer.counts == "best"
    assert [(s.id, s.name, s.lms_id, s.email) for s in course.roster()] == [("s1", "Ann", "101", "ann@x.edu")]


def test_a_lab_not_offered_is_refused_in_a_sentence(tmp_path, toy_config):
    course = spec.load_course(write_course(tmp_path / "c"), toy_config)
    with pytest.raises(UsageError, match=r"offers no lab 'sobel'; it offers toy\. Add a \[labs\.sobel\]"):
        course.offer("sobel")


@pytest.mark.parametrize("change, said", [
    (("counts = \"best\"", "count = \"best\""), r"\[labs\.toy\] has a key 'count'.*opens, deadline, counts"),
    (("name = \"GPU programming\"", "nmae = \"x\""), r"the top level has a key 'nmae'"),
    (("deadline = 2026-03-15T23:59:00-06:00", "deadline = 2026-03-15T23:59:00"),
     r"\[labs\.toy\] deadline is 2026-03-15T23:59:00 without a time zone.*2026-03-15T23:59:00Z"),
    (("deadline = 2026-03-15T23:59:00-06:00", "deadline = \"tomorrow\""), r"\[labs\.toy\] deadline is 'tomorrow', not a date"),
    (("deadline = 2026-03-15T23:59:00-06:00", "deadline = 2026-02-01T00:00:00Z"), r"deadline .* is not after opens"),
    (("cutoff = 2026-03-18T23:59:00-06:00", "cutoff = 2026-03-10T00:00:00Z"), r"\[labs\.toy\.late\] cutoff .* is before the deadline"),
    (("penalty_per_day = 0.1", "penalty_per_day = 10"), r"penalty_per_day is 10: write a number from 0 to 1"),
    (("grace_minutes = 15", "grace_minutes = 1.5"), r"grace_minutes is 1\.5: write a whole number"),
    (("capacity = 5", "capacity = 0"), r"\[labs\.toy\.tries\] capacity is 0: write a whole number 1 or more"),
    (("refill_per_hour = 1.5", "refill_per_hour = true"), r"refill_per_hour is True"),
    (("counts = \"best\"", "counts = \"first\""), r"counts is 'first': write \"last\".* or \"best\""),
    (("[labs.toy]", "[labs.no_such_lab]"), r"\[labs\.no_such_lab\] names no lab of this repository"),
    (("roster = \"roster.csv\"", "roster = \"class.csv\""), r"roster names .*class\.csv, which is not a file"),
    (("opens = 2026-03-01T09:00:00Z", "opens = 2026-03-01T09:00:00Z\nopens = 1"), r"is not valid TOML"),
])
def test_every_bad_value_is_refused_naming_the_file_and_key(tmp_path, toy_config, change, said):
    old, new = change
    assert old in GOOD
    folder = write_course(tmp_path / "c", GOOD.replace(old, new, 1))
    with pytest.raises(UsageError, match=said) as caught:
        spec.load_course(folder, toy_config)
    assert str(folder / "course.toml") in str(caught.value)


def test_a_missing_course_file_or_a_bad_roster_is_refused(tmp_path, toy_config):
    with pytest.raises(UsageError, match=r"There is no course\.toml in .*cudalab course init"):
        spec.load_course(tmp_path, toy_config)
    folder = write_course(tmp_path / "c", roster="name\nAnn\n")
    with pytest.raises(UsageError, match=r"has no id column"):
        spec.load_course(folder, toy_config)


def test_roster_email_column_is_read_by_the_one_roster_reader(tmp_path):
    path = tmp_path / "r.csv"
    path.write_text("Email,id,Name\nann@x.edu,s1,Ann\n,s2,Bob\n")
    assert [(s.id, s.email) for s in read_roster(path)] == [("s1", "ann@x.edu"), ("s2", "")]


def test_the_file_course_init_writes_is_read_back(tmp_path, toy_config):
    opens = dt.datetime(2026, 1, 5, 8, 30, 12, 999, tzinfo=UTC)
    folder = write_course(tmp_path / "c", spec.course_toml_text('Odd "name" \\ here', ["toy"], "roster.csv", opens))
    course = spec.load_course(folder, toy_config)
    offer = course.offer("toy")
    assert course.name == 'Odd "name" \\ here'
    assert offer.opens == opens.replace(microsecond=0)
    assert offer.deadline - offer.opens == dt.timedelta(days=14)
    assert offer.late == spec.LatePolicy(0, 0.1, offer.deadline + dt.timedelta(days=3))
    assert offer.tries == spec.TryBudget(10, 2.0) and offer.counts == "last"


# --- `cudalab course init` -----------------------------------------------------------------------

def test_course_init_writes_a_course_that_loads_and_copies_the_roster(tmp_path, toy_env):
    from cudalab import cli
    roster = tmp_path / "export.csv"
    roster.write_text("id,name,lms_id,email\ns1,Ann,101,ann@x.edu\n")
    folder = tmp_path / "course"
    assert cli.main(["course", "init", str(folder), "--labs", "toy", "--roster", str(roster), "--name", "GPU"]) == 0
    course = spec.load_course(folder, toy_env)
    assert course.name == "GPU" and list(course.labs) == ["toy"]
    assert [s.email for s in course.roster()] == ["ann@x.edu"]
    text = (folder / "course.toml").read_text()
    assert text.count("\n# ") >= 10  # every setting says what it means
    before = text
    assert cli.main(["course", "init", str(folder), "--labs", "toy"]) == 2  # never overwrites
    assert (folder / "course.toml").read_text() == before


def test_course_init_without_a_roster_writes_its_header_and_says_so(tmp_path, toy_env, capsys):
    from cudalab import cli
    folder = tmp_path / "course"
    assert cli.main(["course", "init", str(folder)]) == 0
    assert (folder / "roster.csv").read_text() == "id,name,lms_id,email\n"
    assert "header only" in capsys.readouterr().err
    assert spec.load_course(folder, toy_env).roster() == []


def test_course_init_refuses_an_unknown_lab(tmp_path, toy_env, capsys):
    from cudalab import cli
    assert cli.main(["course", "init", str(tmp_path / "c"), "--labs", "toy,nope"]) != 0
    assert "no lab called 'nope'" in capsys.readouterr().err
    assert not (tmp_path / "c" / "course.toml").exists()
