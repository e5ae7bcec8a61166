"""course/tokens.py: a token's form, its secret kept only as an argon2 hash, and what a
wrong, damaged or malformed one gets."""
from __future__ import annotations

import re

import pytest

from cudalab.course import tokens


def test_issue_makes_a_token_whose_secret_only_the_hash_checks():
    token, lookup, hashed = tokens.issue()
    assert re.fullmatch(r"cl1_[A-Za-z0-9-]{12}_[A-Za-z0-9-]{32}", token)
    found = tokens.split(token)
    assert found is not None and found[0] == lookup
    secret = found[1]
    assert secret not in hashed and hashed.startswith("$argon2id$")
    assert tokens.verify(hashed, secret)
    assert not tokens.verify(hashed, secret[:-1] + ("A" if secret[-1] != "A" else "B"))


def test_tokens_are_unique():
    issued = [tokens.issue() for _ in range(5)]
    assert len({t for t, _, _ in issued}) == 5 and len({lookup for _, lookup, _ in issued}) == 5


@pytest.mark.parametrize("text", [
    "", "cl1", "cl1__", "cl2_AAAAAAAAAAAA_" + "B" * 32, "cl1_AAAAAAAAAAAA_" + "B" * 31,
    "cl1_AAAAAAAAAAA_" + "B" * 33, " cl1_AAAAAAAAAAAA_" + "B" * 32, "cl1_AAAAAAAAAAAA_" + "B" * 32 + "\n",
    "cl1_AAAAAAAAAAAA_" + "B" * 31 + "/", None, 42, "cl1_AAAAAAAAAAAA_" + "é" * 32,
])
def test_split_refuses_anything_but_a_token(text):
    assert tokens.split(text) is None


def test_verify_says_no_to_a_damaged_hash_rather_than_raising():
    assert not tokens.verify("not a hash", "x" * 32)
    assert not tokens.verify("$argon2id$v=19$m=1,t=1,p=1$AAAA$BBBB", "x" * 32)


# --- `cudalab course tokens` ------------------------------------------------------------------

def _course(tmp_path, toy_env, roster="id,name,lms_id,email\ns1,Ann,101,ann@x.edu\ns2,Bob,102,bob@x.edu\n"):
    from cudalab import cli
    (tmp_path / "export.csv").write_text(roster)
    folder = tmp_path / "course"
    assert cli.main(["course", "init", str(folder), "--labs", "toy", "--roster", str(tmp_path / "export.csv")]) == 0
    return folder


def _read_tokens(path):
    import csv
    return {row["id"] or row["name"]: row for row in csv.DictReader(path.open())}


def test_course_tokens_stores_only_hashes_and_writes_a_private_list(tmp_path, toy_env, capsys):
    import sqlite3
    import stat
    from cudalab import cli
    folder = _course(tmp_path, toy_env)
    assert cli.main(["course", "tokens", str(folder)]) == 0
    out, err = capsys.readouterr()
    files = sorted(folder.glob("tokens-*.csv"))
    assert len(files) == 1 and str(files[0]) in err
    assert stat.S_IMODE(files[0].stat().st_mode) == 0o600
    assert stat.S_IMODE((folder / tokens.COURSE_KEY_FILE).stat().st_mode) == 0o600
    given = _read_tokens(files[0])
    assert set(given) == {"s1", "s2", tokens.INSTRUCTOR_ROW} and given["s1"]["email"] == "ann@x.edu"
    assert "cl1_" not in out + err  # never printed unless asked
    database = sqlite3.connect(folder / "course.db")
    hashes = dict(database.execute("select id, token_hash from students"))
    for student in ("s1", "s2"):
        lookup, secret = tokens.split(given[student]["token"])
        assert tokens.verify(hashes[student], secret)
    dump = "\n".join(database.iterdump())
    for row in given.values():
        assert tokens.split(row["token"])[1] not in dump  # no secret in clear anywhere in the database
    assert tokens.split((folder / tokens.COURSE_KEY_FILE).read_text().strip())[1] not in dump


def test_course_tokens_issues_only_to_who_has_none_and_reissues_on_request(tmp_path, toy_env, capsys):
    import sqlite3
    from cudalab import cli
    folder = _course(tmp_path, toy_env)
    assert cli.main(["course", "tokens", str(folder)]) == 0
    key = (folder / tokens.COURSE_KEY_FILE).read_text()
    first = _read_tokens(next(folder.glob("tokens-*.csv")))
    (folder / "roster.csv").write_text("id,name,lms_id,email\ns1,Ann,101,ann@x.edu\ns2,Bob,102,bob@x.edu\n"
                                       "s3,Cy,103,cy@x.edu\n")
    assert cli.main(["course", "tokens", str(folder), "--reissue", "s1", "--print"]) == 0
    out = capsys.readouterr().out
    lists = sorted(folder.glob("tokens-*.csv"), key=lambda p: p.stat().st_mtime_ns)
    newest = _read_tokens(lists[-1])
    assert set(newest) == {"s1", "s3"} and len(lists) == 2  # the first list is never overwritten
    assert newest["s1"]["token"] != first["s1"]["token"] and newest["s1"]["token"] in out.replace("\n", "")
    assert (folder / tokens.COURSE_KEY_FILE).read_text() == key  # kept
    hashes = dict(sqlite3.connect(folder / "course.db").execute("select id, token_hash from students"))
    assert not tokens.verify(hashes["s1"], tokens.split(first["s1"]["token"])[1])  # the old one stops working
    assert tokens.verify(hashes["s2"], tokens.split(first["s2"]["token"])[1])
    assert cli.main(["course", "tokens", str(folder), "--reissue", "nobody"]) == 2
    assert "nobody on the roster" in capsys.readouterr().err
