"""tools/move_modules.py on a made-up repository: what it moves and rewrites, what it leaves
alone (schema names), that a second run changes nothing, that imports merged in later with
the old layout are fixed by running it again, and that an unmapped module stops it.
(move_modules: keep old names; the made-up repositories here use them on purpose.)"""
from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "move_modules.py"


@pytest.fixture(scope="module")
def move_modules():
    spec = importlib.util.spec_from_file_location("move_modules", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module    # its dataclasses look their module up there
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


MAP = '''
[stay]
modules = ["config"]

[subpackages.grading]
doc = """One grade.
Its scores."""
modules = ["grade", "scoring"]
'''


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text).lstrip("\n"))


@pytest.fixture
def repo(tmp_path) -> Path:
    root = tmp_path / "repo"
    write(root, {
        "grader/pyproject.toml": '[tool.setuptools]\npackages = ["cudalab", "cudalab.commands"]\n',
        "grader/cudalab/__init__.py": '__version__ = "1"\n',
        "grader/cudalab/config.py": "LIMIT = 1\n",
        "grader/cudalab/scoring.py": "from .config import LIMIT\n\ndef score():\n    return LIMIT\n",
        "grader/cudalab/grade.py": """
            from pathlib import Path
            from . import __version__, config, scoring
            SCHEMA = "cudalab.grade/1"
            HERE = Path(__file__).resolve().parents[2]

            def late():
                from .scoring import score
                return score()
            """,
        "grader/cudalab/commands/__init__.py": "",
        "grader/cudalab/commands/grade.py": "from ..grade import late\nfrom .. import grade as engine\n",
        "grader/tests/test_it.py": """
            from cudalab import config, grade
            from unittest import mock
            PATCH = mock.patch("cudalab.scoring.score")
            SCHEMA = "cudalab.grade/1"
            """,
        "tools/run.sh": "python3 -m cudalab.grade; cat grader/cudalab/scoring.py\n",
        "tools/module_map.toml": MAP,
        "docs/history.md": "Once cudalab.grade was flat. <!-- move_modules: keep old names -->\n",
    })
    return root


def run(move_modules, root: Path, *extra: str) -> int:
    return move_modules.main(["--root", str(root), "--map", str(root / "tools" / "module_map.toml"), *extra])


def snapshot(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


def test_modules_move_and_every_reference_follows(move_modules, repo, capsys):
    assert run(move_modules, repo) == 0, capsys.readouterr().err
    package = repo / "grader" / "cudalab"
    assert not (package / "grade.py").exists() and (package / "grading" / "grade.py").is_file()
    assert (package / "grading" / "__init__.py").read_text() == '"""One grade.\nIts scores.\n"""\n'
    grade = (package / "grading" / "grade.py").read_text()
    assert "from .. import __version__, config\nfrom . import scoring\n" in grade
    assert "    from .scoring import score\n" in grade           # inside a function too
    assert "parents[3]" in grade and '"cudalab.grade/1"' in grade  # one folder deeper; a schema stays
    assert (package / "grading" / "scoring.py").read_text().startswith("from ..config import LIMIT\n")
    assert (package / "commands" / "grade.py").read_text() == (
        "from ..grading.grade import late\nfrom ..grading import grade as engine\n")
    test = (repo / "grader" / "tests" / "test_it.py").read_text()
    assert "from cudalab import config\nfrom cudalab.grading import grade\n" in test
    assert 'mock.patch("cudalab.grading.scoring.score")' in test and '"cudalab.grade/1"' in test
    assert (repo / "tools" / "run.sh").read_text() == (
        "python3 -m cudalab.grading.grade; cat grader/cudalab/grading/scoring.py\n")
    assert '"cudalab.grading"' in (repo / "grader" / "pyproject.toml").read_text()
    assert "Once cudalab.grade was flat." in (repo / "docs" / "history.md").read_text()   # marked: kept
    before = snapshot(repo)
    assert run(move_modules, repo) == 0
    assert snapshot(repo) == before, "a second run changed something"


def test_a_later_merge_with_old_names_is_fixed_by_running_again(move_modules, repo, capsys):
    assert run(move_modules, repo) == 0
    package = repo / "grader" / "cudalab"
    # A branch written before the move: a new import in a moved module, spelled from where
    # it was, and a test that still uses the old names.
    with (package / "grading" / "scoring.py").open("a") as moved:
        moved.write("from . import config as settings\n")
    write(repo, {"grader/tests/test_new.py": "import cudalab.scoring\nfrom cudalab.grade import late\n"})
    assert run(move_modules, repo) == 0, capsys.readouterr().err
    assert "from .. import config as settings\n" in (package / "grading" / "scoring.py").read_text()
    assert (repo / "grader" / "tests" / "test_new.py").read_text() == (
        "import cudalab.grading.scoring\nfrom cudalab.grading.grade import late\n")


def test_an_unmapped_module_stops_it_before_anything_moves(move_modules, repo, capsys):
    write(repo, {"grader/cudalab/receipt.py": "X = 1\n"})
    before = snapshot(repo)
    assert run(move_modules, repo) == 2
    err = capsys.readouterr().err
    assert "receipt" in err and "module_map.toml" in err
    assert snapshot(repo) == before
    assert run(move_modules, repo, "--allow-unmapped") == 1       # moved, and said what was left
    assert (repo / "grader" / "cudalab" / "receipt.py").is_file()
    assert "left at the top" in capsys.readouterr().err


def test_a_path_from_a_moved_modules_file_is_named(move_modules, repo, capsys):
    write(repo, {"grader/tests/test_paths.py": "from cudalab import scoring\nHERE = scoring.__file__\n"})
    assert run(move_modules, repo) == 1
    assert "grader/tests/test_paths.py:2: finds a path from scoring.__file__" in capsys.readouterr().err
    assert run(move_modules, repo) == 0      # said once, when the module moves


def test_a_subpackage_named_like_a_module_is_refused(move_modules, repo, capsys):
    (repo / "tools" / "module_map.toml").write_text(MAP.replace("subpackages.grading", "subpackages.grade"))
    assert run(move_modules, repo) == 2
    assert "share a name with a module" in capsys.readouterr().err
