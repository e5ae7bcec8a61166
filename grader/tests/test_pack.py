"""`cudalab pack`: the README's flow (pack in the folder you work in, fix, pack again) with
whatever else that folder holds, and pack's own words: what it left out, an untouched
starter, why nothing was run."""
from __future__ import annotations

import json
import shutil
import tarfile
from pathlib import Path

import pytest

from cudalab import cli
from conftest import REPO_ROOT

SOLUTION = REPO_ROOT / "solutions" / "vector_add" / "vector_add.cu"
STARTER = REPO_ROOT / "starter" / "vector_add" / "vector_add.cu"


@pytest.fixture
def work(tmp_path, monkeypatch):
    """A student's lab folder, the current folder, with the course's official build."""
    folder = tmp_path / "vector_add"
    folder.mkdir()
    monkeypatch.chdir(folder)
    monkeypatch.setenv("CUDALAB_ROOT", str(REPO_ROOT))
    monkeypatch.setenv("CUDALAB_PRESET", "ci")
    monkeypatch.setenv("CUDALAB_WORK_DIR", str(tmp_path / "cache"))
    return folder


def members(archive: Path) -> list[str]:
    with tarfile.open(archive) as opened:
        return opened.getnames()


def lines_starting(text: str, start: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(start)]


@pytest.mark.needs_build
def test_pack_takes_the_lab_files_and_leaves_the_rest_out(work, capsys):
    """Proves: a folder that also holds .git/ (more entries than a hand-in may have), notes,
    an editor's folder and pack's own earlier archive is packed, twice in a row: the archive
    holds the lab's file and the manifest only, one line names what was left out, and the
    second pack replaces the first archive instead of refusing it."""
    shutil.copy(SOLUTION, work)
    (work / "notes.txt").write_text("ask about grid-stride loops\n")
    (work / ".vscode").mkdir()
    (work / ".vscode" / "settings.json").write_text("{}\n")
    for index in range(300):
        (work / ".git" / "objects" / f"{index:02x}").mkdir(parents=True)
        (work / ".git" / "objects" / f"{index:02x}" / "blob").write_bytes(b"x" * 40_000)

    assert cli.main(["pack", "vector_add", "."]) == 0
    first = capsys.readouterr().err
    assert members(work / "vector_add.tar.gz") == ["vector_add.cu", "cudalab-manifest.json"]
    assert lines_starting(first, "Left out") == [
        "Left out (not part of the vector_add hand-in): .git/, .vscode/, notes.txt."]
    assert "replacing" not in first and "starter" not in first

    (work / "vector_add.cu").write_text(SOLUTION.read_text() + "// fixed after the first pack\n")
    assert cli.main(["pack", "vector_add", "."]) == 0
    second = capsys.readouterr().err
    assert "into vector_add.tar.gz, replacing the earlier archive" in second
    assert lines_starting(second, "Left out") == lines_starting(first, "Left out")  # not the archive
    with tarfile.open(work / "vector_add.tar.gz") as opened:
        assert opened.getnames() == ["vector_add.cu", "cudalab-manifest.json"]
        assert opened.extractfile("vector_add.cu").read().endswith(b"// fixed after the first pack\n")


@pytest.mark.needs_build
def test_pack_warns_when_a_file_is_still_the_starter(work, capsys):
    """Proves: packing the starter as shipped works (it compiles) but says, in a warning,
    that none of the student's work is in it."""
    shutil.copy(STARTER, work)
    assert cli.main(["pack", "vector_add", "."]) == 0
    assert ("warning: vector_add.cu is still the vector_add starter as shipped: none of your work is in it. "
            "Pack again once you have filled in its TODOs.") in capsys.readouterr().err


@pytest.mark.needs_build
def test_not_run_names_the_option_only_when_it_was_given(work, capsys):
    """Proves: pack's receipt says why the smoke run was skipped in pack's own words, never
    an option the student did not give; `check --no-run` still names the option."""
    shutil.copy(SOLUTION, work)
    assert cli.main(["pack", "vector_add", ".", "--json"]) == 0
    said = capsys.readouterr()
    receipt = json.loads(said.out)["receipt"]
    skipped = {c["name"]: c.get("reason") for c in receipt["checks"]}
    assert skipped["smoke_run"] == "not run: pack only builds; `cudalab check` on the archive runs it"
    assert "--no-run" not in said.out + said.err

    (work / "vector_add.cu").write_text('#include "vector_add.hpp"\nvoid vector_add() { undefined_name(); }\n')
    assert cli.main(["pack", "vector_add", "."]) == 27
    said = capsys.readouterr().out
    assert "compile    FAILED" in said and "--no-run" not in said
    shutil.copy(SOLUTION, work)
    (work / "vector_add.tar.gz").unlink()  # check takes a folder as the hand-in it is
    assert cli.main(["check", ".", "--lab", "vector_add", "--no-run"]) == 0
    assert "smoke_run  skipped (not run: --no-run was given)" in capsys.readouterr().out


def test_a_misnamed_file_is_named_and_nothing_else_is_blamed(work, capsys):
    """Proves: pack names the near miss in check's words and says nothing about the other
    files in the folder, which it would leave out anyway."""
    shutil.copy(SOLUTION, work / "vectoradd.cu")
    (work / "notes.txt").write_text("todo\n")
    assert cli.main(["pack", "vector_add", "."]) == 27
    said = capsys.readouterr()
    assert said.err.strip() == ("error: Nothing was packed from .: vectoradd.cu: did you mean vector_add.cu? "
                                "The vector_add lab needs a file called exactly vector_add.cu; rename it.")
    assert not (work / "vector_add.tar.gz").exists()
