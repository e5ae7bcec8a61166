"""Shared fixtures: a toy repository with fake lab binaries, folders the sandbox user can
reach, and the skip rules for the `gpu` and `needs_build` markers."""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest

from cudalab.building import sdk
from cudalab.isolation import trees
from cudalab.record import GradeResult, RecordError
from cudalab.config import Config, cuda_device_present

TESTS = Path(__file__).resolve().parent
REPO_ROOT = TESTS.parents[1]
GRADE_SCHEMA = REPO_ROOT / "grader" / "cudalab" / "schemas" / "grade.schema.json"
GRADE_DOCUMENT = "cudalab.grade/1"
GRADES_VALIDATED: list[str] = []  # every grade document the session's tests left in a tmp_path


def grade_validator():
    """A validator of grade results against schemas/grade.schema.json, or None without the
    jsonschema package (a test dependency)."""
    try:
        import jsonschema
    except ImportError:
        return None
    schema = json.loads(GRADE_SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())


def grade_problems(validator, result) -> list[str]:
    """What is wrong with one grade result, as "path: message" lines (none: it is valid)."""
    return [f"{error.json_path}: {error.message}" for error in validator.iter_errors(result)]


def grade_documents(folder: Path):
    """(path, result) for each grade a test left under `folder`: each result.json, and the
    result inside each batch record (records/<key>.json), that says it is a cudalab.grade/1."""
    for path in sorted(folder.rglob("*.json")):
        if path.name != "result.json" and path.parent.name != "records":
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # a test's damaged file, on purpose
        result = data.get("result") if isinstance(data, dict) and path.name != "result.json" else data
        if isinstance(result, dict) and result.get("schema") == GRADE_DOCUMENT:
            yield path, result


def check_grades_in(folder: Path) -> None:
    """Every grade a test wrote under `folder` must match grade.schema.json."""
    validator = grade_validator()
    if validator is None:
        return
    bad = []
    for path, result in grade_documents(folder):
        GRADES_VALIDATED.append(str(path))
        bad += [f"{path.relative_to(folder)}: {line}" for line in grade_problems(validator, result)]
        if not bad:  # ... and reads as a typed record that writes back exactly what was read
            try:
                again = GradeResult.from_json(result).to_json()
            except RecordError as err:
                bad.append(f"{path.relative_to(folder)}: record.GradeResult refused it: {err}")
            else:
                if again != result:
                    bad.append(f"{path.relative_to(folder)}: record.GradeResult wrote it back differently")
    assert not bad, "grades that do not match grade.schema.json:\n" + "\n".join(bad)

TOY_LAB_TOML = """
[lab]
name = "toy"
title = "Toy lab"
files = ["toy.cu"]
api_header = "toy.hpp"
max_file_bytes = 1000

[[outputs]]
name = "c"
dtype = "f32"
abs = 0.0
rel = 0.0
why = "exact"

[[cases]]
name = "c_1"
n = 1

[[cases]]
name = "c_7"
n = 7

[[cases]]
name = "c_300"
n = 300

[bench]
byte_model = "12 * n"

[[bench.cases]]
name = "b_1000"
n = 1000

[[ladder]]
name = "simple"
source = "ladder/simple.cu"

[[ladder]]
name = "the solution"
source = "toy.cu"

[scoring]
correctness_points = 60
performance_points = 40
timing_case = "b_1000"
full_marks_ratio = 1.10
zero_marks_ratio = 3.00
"""

TOY_CASES = ["c_1", "c_7", "c_300"]
TOY_BENCH = ["b_1000"]


def official_build_dir() -> Path:
    config = Config.load(root=REPO_ROOT, env=os.environ)
    return config.build_dir


def pytest_collection_modifyitems(config, items):
    gpu = cuda_device_present()
    manifest = official_build_dir() / sdk.MANIFEST_NAME
    for item in items:
        if "gpu" in item.keywords and not gpu:
            item.add_marker(pytest.mark.skip(
                reason="needs a CUDA device: `nvidia-smi -L` found none on this machine"))
        if "needs_build" in item.keywords and not manifest.is_file():
            item.add_marker(pytest.mark.skip(
                reason=f"needs the official build tree: {manifest} is missing; build it first "
                       "with `cudalab build` (cmake --preset <preset> && cmake --build build/<preset>)"))


@pytest.fixture
def tmp_path() -> Path:
    """A fresh folder the sandbox user can reach: pytest's own tmp_path lies under
    /tmp/pytest-of-<user> (mode 0700), which uid 65534 cannot pass when the tests run as root."""
    folder = Path(tempfile.mkdtemp(prefix="cudalab-test-", dir="/tmp" if os.geteuid() == 0 else None))
    folder.chmod(0o755)
    yield folder
    try:
        check_grades_in(folder)  # every grade a test writes has the shape publish reads
    finally:
        trees.remove_tree(folder)  # also unmounts the run folders' tmpfs mounts in it


def write_fake(path: Path, **behaviour) -> Path:
    """Write an executable fake lab binary (or checker, role='checker') at `path`: this
    package's fake_program.py, self-contained, for /usr/bin/python3 (what the sandbox shows)."""
    behaviour.setdefault("cases", TOY_CASES)
    behaviour.setdefault("bench_cases", TOY_BENCH)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/usr/bin/python3\nBEHAVIOUR = {behaviour!r}\n"
                    + (TESTS / "fake_program.py").read_text())
    path.chmod(0o755)
    return path


def seal(root: Path, preset: str = "ci") -> None:
    """Record the toy build's binaries in its manifest, as the real build does."""
    build = root / "build" / preset
    sdk.write_manifest(build / sdk.MANIFEST_NAME, build, sorted((build / "bin").iterdir()))


@pytest.fixture
def toy_root(tmp_path: Path) -> Path:
    """A repository with the toy lab and an official 'build' of fake binaries (no CMake cache,
    so the grader uses it as it is), sealed in its manifest."""
    root = tmp_path / "repo"
    (root / "labs" / "toy").mkdir(parents=True)
    (root / "labs" / "toy" / "lab.toml").write_text(TOY_LAB_TOML)
    (root / "CMakeLists.txt").write_text("# toy\n")
    bin_dir = root / "build" / "ci" / "bin"
    write_fake(bin_dir / "toy_solution", name="toy_solution", sample_ms=2.0)
    write_fake(bin_dir / "toy_checker", role="checker")
    seal(root)
    return root


@pytest.fixture
def toy_config(toy_root: Path, tmp_path: Path) -> Config:
    return Config.load(env={}, root=toy_root, preset="ci", work_dir=tmp_path / "work",
                       process_timeout_s=20.0, timing_rounds=2, timing_target_s=0.2,
                       samples_min=20, timing_warmup=2)


@pytest.fixture
def toy_submission(tmp_path: Path) -> Path:
    folder = tmp_path / "alice"
    folder.mkdir()
    (folder / "toy.cu").write_text("// the student's code\n")
    return folder


@pytest.fixture(autouse=True)
def _hermetic_toy_environment(request, monkeypatch):
    """Tests on the toy lab must not see the caller's official build settings."""
    if "toy_root" in request.fixturenames:
        for name in ("CUDALAB_BUILD_DIR", "CUDALAB_ROOT", "CUDALAB_WORK_DIR"):
            monkeypatch.delenv(name, raising=False)


@pytest.fixture
def toy_env(toy_config, monkeypatch):
    """The toy lab's repository, made the one cudalab commands use (preset ci)."""
    monkeypatch.setenv("CUDALAB_ROOT", str(toy_config.root))
    monkeypatch.setenv("CUDALAB_PRESET", "ci")
    monkeypatch.setenv("CUDALAB_WORK_DIR", str(toy_config.work_dir))
    return toy_config


def pytest_terminal_summary(terminalreporter):
    if GRADES_VALIDATED:
        terminalreporter.write_line(f"{len(GRADES_VALIDATED)} grade result(s) written by the tests matched "
                                    "grade.schema.json")
