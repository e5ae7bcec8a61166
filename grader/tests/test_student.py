"""A student's first hour: a fresh copy of the repository, the handout's and then the
README's commands word for word (copy the starter, run, fix, run, grade, pack, check), and
the rough edges a new student meets: `new`, `starter` never overwriting work, `--json` on
every verb, seeds checked, and no Python traceback whatever the arguments."""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cudalab import cli
from cudalab.config import cuda_device_present
from cudalab.exit_codes import Cli
from conftest import REPO_ROOT

GPU = cuda_device_present()
_NOT_COPIED = shutil.ignore_patterns("build", ".venv", ".deps", ".grade", ".git", "__pycache__",
                                     "*.egg-info", ".pytest_cache")


def fresh_copy(dest: Path) -> Path:
    """The repository as a fresh clone has it: no build, no virtual environment."""
    shutil.copytree(REPO_ROOT, dest, ignore=_NOT_COPIED, symlinks=True)
    return dest


def commands(markdown: str, after: str) -> list[str]:
    """The lines of the first ```sh block after the text `after`, comments dropped."""
    tail = markdown[markdown.index(after):]
    block = re.search(r"```sh\n(.*?)```", tail, re.S).group(1)
    return [line.split("  #")[0].strip() for line in block.splitlines() if line.strip()]


class Student:
    """Runs the documented commands as a student would type them: `cudalab` is the clone's
    own package (what `source .venv/bin/activate` puts on PATH), `~` is a fresh home."""

    def __init__(self, repo: Path, home: Path):
        self.repo, self.home, self.cwd = repo, home, repo
        self.env = {key: value for key, value in os.environ.items()
                    if not key.startswith("CUDALAB_") and key not in ("XDG_CACHE_HOME",)}
        self.env.update(HOME=str(home), PYTHONPATH=str(repo / "grader"))
        self.log: list[tuple[str, int, str]] = []

    def type(self, line: str) -> int:
        words = shlex.split(line.replace("~", str(self.home)))
        if words[0] == "cd":
            self.cwd = (self.cwd / words[1]).resolve()
            return 0
        assert words[0] == "cudalab", f"the docs ask for a command the test does not know: {line}"
        done = subprocess.run([sys.executable, "-m", "cudalab", *words[1:]], cwd=self.cwd, env=self.env,
                              capture_output=True, text=True, timeout=1200)
        said = done.stdout + done.stderr
        self.log.append((line, done.returncode, said))
        assert "Traceback" not in said and "internal error in cudalab" not in said, f"{line}\n{said}"
        return done.returncode


def test_a_new_student_follows_the_handout_then_the_readme(tmp_path):
    repo = fresh_copy(tmp_path / "cudalab")
    home = tmp_path / "home"
    home.mkdir()
    student = Student(repo, home)
    handout = commands((repo / "handouts" / "vector_add.md").read_text(), "Start from a copy of the starter")
    readme = commands((repo / "README.md").read_text(), "Then work on a copy of the starter")
    assert handout[0].startswith("cudalab new vector_add") and readme[0].startswith("cudalab new vector_add")

    # The starter as it is: it builds (the official tree first) and fails every case.
    codes = {line: student.type(line) for line in handout}
    first_run = next(said for line, _, said in student.log if line.startswith("cudalab run"))
    assert "Building what the vector_add lab needs first" in first_run
    assert "Running your vector_add.cu from" in first_run
    runs = [code for line, code in codes.items() if line.startswith("cudalab run")]
    assert runs == ([1, 1] if GPU else [Cli.NO_DEVICE] * 2)
    grade_code = next(code for line, code in codes.items() if line.startswith("cudalab grade"))
    assert grade_code == (0 if GPU else Cli.NO_DEVICE)
    if not GPU:
        assert "not run here" in student.log[-1][2] or "no CUDA device" in student.log[-1][2]

    # The fix: the course solution's code in the student's file; then the README, word for word.
    work = home / "vector_add"
    shutil.copy(repo / "solutions" / "vector_add" / "vector_add.cu", work / "vector_add.cu")
    student.cwd = repo
    for line in readme:
        if line.startswith("cudalab new"):
            assert student.type(line) == Cli.USAGE  # never over the student's work
            assert "already exists: your work is never overwritten" in student.log[-1][2]
            continue
        code = student.type(line.replace("ID", "s123"))
        if line.startswith("cudalab run"):
            assert code == (0 if GPU else Cli.NO_DEVICE), student.log[-1][2]
        elif line.startswith("cudalab grade"):
            assert code == (0 if GPU else Cli.NO_DEVICE), student.log[-1][2]
            if GPU:
                assert re.search(r"Score: (9\d|100)(\.\d+)? / 100", student.log[-1][2]), student.log[-1][2]
        else:
            assert code == 0, student.log[-1][2]
    assert (work / "vector_add-s123.tar.gz").is_file()
    assert "ACCEPTED" in student.log[-1][2]
    results = list((home / ".cache" / "cudalab").glob("*/results/vector_add/vector_add-*/result.json"))
    assert len(results) == 1, "per-user results, filed under the folder's name and path"


# --- the pieces -------------------------------------------------------------------------------

@pytest.fixture
def in_repo(monkeypatch, tmp_path):
    monkeypatch.setenv("CUDALAB_ROOT", str(REPO_ROOT))
    monkeypatch.setenv("CUDALAB_WORK_DIR", str(tmp_path / "work"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_new_copies_the_starter_and_never_overwrites(in_repo, capsys):
    assert cli.main(["new", "reduction"]) == 0
    copy = in_repo / "reduction" / "reduction.cu"
    assert copy.read_text() == (REPO_ROOT / "starter" / "reduction" / "reduction.cu").read_text()
    assert "cudalab run reduction reduction" in capsys.readouterr().err
    copy.write_text("// my work\n")
    assert cli.main(["new", "reduction"]) == Cli.USAGE
    assert "already exists: your work is never overwritten" in capsys.readouterr().err
    assert copy.read_text() == "// my work\n"
    assert cli.main(["new", "scan", "elsewhere", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["files"] == ["scan.cu"]


def test_starter_keeps_a_file_edited_in_place_unless_forced(tmp_path, monkeypatch, capsys):
    repo = fresh_copy(tmp_path / "repo")
    monkeypatch.setenv("CUDALAB_ROOT", str(repo))
    monkeypatch.setenv("CUDALAB_WORK_DIR", str(tmp_path / "work"))
    starter = repo / "starter" / "vector_add" / "vector_add.cu"
    starter.write_text(starter.read_text() + "// my kernel\n")
    assert cli.main(["starter", "vector_add"]) == Cli.USAGE
    assert "was not overwritten" in capsys.readouterr().err and starter.read_text().endswith("// my kernel\n")
    assert cli.main(["starter", "vector_add", "--force", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["written"] == [str(starter)]
    assert not starter.read_text().endswith("// my kernel\n")


@pytest.mark.parametrize("verb", ["starter", "handout"])
def test_generating_verbs_speak_json(verb, in_repo, capsys):
    assert cli.main([verb, "scan", "--check", "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["lab"] == "scan" and body["out_of_date"] in (False, [])


@pytest.mark.parametrize("seed", ["-5", "2e3", str(2 ** 63)])
def test_a_bad_seed_is_a_usage_error_not_the_labs_fault(seed, in_repo, capsys):
    assert cli.main(["run", "vector_add", ".", "--seed", seed]) == Cli.USAGE
    err = capsys.readouterr().err
    assert "a seed is a number from 0 to" in err and "problem with the lab" not in err


BAD_ARGUMENTS = [
    [], ["--version"], ["--help"], ["frobnicate"],
    *[[verb] for verb in cli.VERBS],
    *[[verb, "nolab"] for verb in ("new", "build", "run", "pack", "grade", "starter", "ladder", "handout",
                                   "calibrate")],
    ["calibrate", "vector_add", "--samples", "0"], ["run", "vector_add", "no/such/folder"], ["run", "vector_add", "--target", "nonsense"],
    ["run", "vector_add", "--seed", "x"], ["run", "vector_add", "README.md"],
    ["build", "vector_add", "no/such/folder"], ["grade", "vector_add", "no/such/folder", "--out", "/dev/null"],
    ["check", "no/such/hand-in"], ["check", "README.md"], ["check", ".", "--lab", "nolab"],
    ["pack", "vector_add", "no/such/folder"], ["pack", "vector_add", ".", "--student", "a/b"],
    ["pack", "vector_add", ".", "--out", "x.rar"], ["ladder", "vector_add", "--samples", "-1"],
    ["new", "vector_add", "README.md"], ["starter", "vector_add", "--check", "--force"],
]


@pytest.mark.parametrize("argv", BAD_ARGUMENTS, ids=[" ".join(a) or "(none)" for a in BAD_ARGUMENTS])
def test_no_argument_reaches_a_traceback(argv, tmp_path, monkeypatch):
    """Whatever a user types, the answer is a sentence and an exit code, never a traceback."""
    (tmp_path / "README.md").write_text("not a folder\n")
    env = {key: value for key, value in os.environ.items() if not key.startswith("CUDALAB_")}
    env.update(CUDALAB_ROOT=str(REPO_ROOT), CUDALAB_WORK_DIR=str(tmp_path / "work"), HOME=str(tmp_path),
               PYTHONPATH=str(REPO_ROOT / "grader"))
    done = subprocess.run([sys.executable, "-m", "cudalab", *argv], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    said = done.stdout + done.stderr
    assert "Traceback" not in said and "internal error" not in said, said
    assert done.returncode != Cli.INTERNAL or "official build" in said, said
    assert said.strip(), "a failure says something"


@pytest.mark.parametrize("verb", ["run", "build", "grade"])
def test_a_missing_folder_is_21_for_every_verb(verb, in_repo, capsys):
    assert cli.main([verb, "vector_add", "no/such/folder"]) == Cli.SUBMISSION_INVALID
    said = capsys.readouterr()
    assert "no/such/folder does not exist" in said.out + said.err


def test_the_grader_readme_lists_every_verb():
    table = (REPO_ROOT / "grader" / "README.md").read_text()
    assert all(f"| `cudalab {verb}" in table for verb in cli.VERBS)


def test_sweep_fails_when_no_variant_builds(tmp_path):
    done = subprocess.run([sys.executable, str(REPO_ROOT / "tools" / "sweep.py"), "vector_add",
                           "--build-dir", str(tmp_path / "no-official-build")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 of 1 variants did not build or run" in done.stderr


@pytest.mark.skipif(not (REPO_ROOT / ".venv" / ".cudalab-installed").is_file() or shutil.which("apt-get") is None,
                    reason="needs a machine set up by tools/setup.sh (its .venv) with apt-get")
def test_setup_is_quiet_when_it_has_nothing_to_do():
    """setup.sh says what it does in a line or two; pip's and setuptools' chatter goes to a
    log shown only on failure."""
    done = subprocess.run(["bash", str(REPO_ROOT / "tools" / "setup.sh")], capture_output=True, text=True,
                          timeout=600, cwd=REPO_ROOT)
    assert done.returncode == 0, done.stderr
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    assert len(lines) <= 3 and all(line.startswith("setup: ") for line in lines), lines
