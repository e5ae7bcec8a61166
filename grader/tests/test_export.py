"""`cudalab export`: the student bundle holds what students build and run against and none
of the course's solutions; its leak scan finds solution code wherever it was pasted and
nothing in a clean bundle; the bundle builds from a fresh copy and its own grader checks
and packs a hand-in without the solution; in a bundle, the CLI offers the student verbs
and the official build needs no solution."""
from __future__ import annotations

import argparse
import html
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from cudalab.building import build, bundle
from cudalab import cli
from cudalab.outputs import export
from cudalab.lab import labs
from cudalab.commands import handout as handout_command
from cudalab.config import Config, cuda_device_present
from cudalab.errors import UsageError
from cudalab.exit_codes import Cli
from conftest import REPO_ROOT, write_fake

GOLDEN = Path(__file__).parent / "golden"
GPU = cuda_device_present()


def repository_copy(dest: Path, source: Path = REPO_ROOT) -> Path:
    """What export reads of a course repository, copied (no build, no tests)."""
    ignore = shutil.ignore_patterns("build", ".venv", ".deps", ".git", "__pycache__", "*.egg-info", "tests")
    dest.mkdir(parents=True)
    for name in ("CMakeLists.txt", "CMakePresets.json", ".gitignore"):
        shutil.copy2(source / name, dest / name)
    for folder in ("cmake", "common", "labs", "starter", "solutions", "handouts", "datasets", "tools", "grader"):
        shutil.copytree(source / folder, dest / folder, ignore=ignore)
    return dest


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    """A copy of the course's repository with its rendered handouts brought up to date, so
    that these tests do not depend on when the stored copies were last rendered
    (tests/test_handout.py holds the repository itself to that)."""
    root = repository_copy(tmp_path_factory.mktemp("course") / "repo")
    config = Config.load(env={}, root=root, preset="ci", work_dir=root / "work")
    for lab in labs.available_labs(root):
        assert handout_command.main(argparse.Namespace(lab=lab, check=False, json=False), config) == 0
    return root


def export_bundle(out: Path, *args: str, root: Path) -> tuple[int, str, str]:
    """Run `cudalab export --out OUT ARGS` against `root` in a process of its own; its exit
    status, everything it said, and its stdout alone."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("CUDALAB_")}
    env.update(CUDALAB_ROOT=str(root), CUDALAB_PRESET="ci", PYTHONPATH=str(REPO_ROOT / "grader"))
    done = subprocess.run([sys.executable, "-m", "cudalab", "export", "--out", str(out), *args],
                          env=env, capture_output=True, text=True, timeout=300)
    said = done.stdout + done.stderr
    assert "Traceback" not in said, said
    return done.returncode, said, done.stdout


@pytest.fixture(scope="module")
def vector_add_bundle(course, tmp_path_factory) -> Path:
    """The student bundle of vector_add, exported once for the tests that only read it."""
    out = tmp_path_factory.mktemp("export") / "bundle"
    code, said, _ = export_bundle(out, "--labs", "vector_add", root=course)
    assert code == 0, said
    return out


def bundle_copy(bundle_dir: Path, dest: Path) -> Path:
    shutil.copytree(bundle_dir, dest)
    return dest


# --- what a bundle holds -----------------------------------------------------------------------

def test_the_bundle_holds_what_students_build_and_run_against(vector_add_bundle, course):
    files = {p.relative_to(vector_add_bundle).as_posix() for p in vector_add_bundle.rglob("*") if p.is_file()}
    for needed in ("CMakeLists.txt", "CMakePresets.json", "cmake/CudalabLab.cmake", "cmake/submission/CMakeLists.txt",
                   "common/CMakeLists.txt", "common/labkit/harness.cu", "labs/vector_add/lab.toml",
                   "labs/vector_add/vector_add.hpp", "labs/vector_add/harness.cu", "labs/vector_add/problem.cpp",
                   "labs/vector_add/reference.cpp", "cmake/lab_checker.cpp.in", "starter/vector_add/vector_add.cu",
                   "handouts/vector_add.md", "datasets/images.toml", "tools/setup.sh", "grader/pyproject.toml",
                   "grader/cudalab/cli.py", "grader/cudalab/templates/handout.md.j2", "README.md", bundle.MARKER):
        assert needed in files, needed
    for part in ("solutions", "ladder", "tests", ".git", "build", "__pycache__"):
        assert not any(f"/{part}/" in f"/{name}" for name in files), part
    assert not any(".egg-info/" in name for name in files)
    assert not any(name.startswith(("labs/", "starter/", "handouts/")) and "vector_add" not in name for name in files)
    assert (vector_add_bundle / "tools" / "setup.sh").stat().st_mode & 0o111, "setup.sh stays executable"
    for name in files:  # the same bytes as the repository's, where it has the file
        if (course / name).is_file() and name not in ("README.md", "CMakePresets.json") \
                and not name.startswith("handouts/"):
            assert (course / name).read_bytes() == (vector_add_bundle / name).read_bytes(), name



def test_a_bundles_handouts_name_no_solution_file_and_only_its_own_verbs(vector_add_bundle, course):
    """The handout a student gets in a bundle is the repository's, less what the bundle does
    not hold: no path into solutions/, no `cudalab ladder`, `calibrate` or `grade`."""
    for suffix in (".md", ".html"):
        text = (vector_add_bundle / "handouts" / f"vector_add{suffix}").read_text()
        assert "solutions/" not in text and "cudalab ladder" not in text and "cudalab calibrate" not in text
        assert "cudalab grade" not in text and "cudalab check . --lab vector_add" in text
    repository = (course / "handouts" / "vector_add.md").read_text()
    assert "solutions/vector_add/" in repository and "cudalab grade vector_add ." in repository
    bundled = (vector_add_bundle / "handouts" / "vector_add.md").read_text()
    assert bundled.split("## How it is checked")[1].split("## How it is timed")[0] == \
        repository.split("## How it is checked")[1].split("## How it is timed")[0], "the same lab, the same rules"

def test_the_marker_and_presets_make_a_bundle_build(vector_add_bundle):
    marker = json.loads((vector_add_bundle / bundle.MARKER).read_text())
    assert marker["schema"] == bundle.SCHEMA and marker["labs"] == ["vector_add"]
    assert marker["student_verbs"] == list(bundle.STUDENT_VERBS)
    presets = json.loads((vector_add_bundle / "CMakePresets.json").read_text())
    ours = json.loads((REPO_ROOT / "CMakePresets.json").read_text())
    assert "testPresets" not in presets
    assert [p["name"] for p in presets["configurePresets"]] == [p["name"] for p in ours["configurePresets"]]
    assert presets["buildPresets"] == ours["buildPresets"]
    assert next(p for p in presets["configurePresets"] if p["name"] == "base")["cacheVariables"]["CUDALAB_BUILD_TESTS"] == "OFF"


def test_the_bundle_readme_matches_its_stored_copy():
    config = Config.load(env={}, root=REPO_ROOT, preset="ci")
    readme = export.render_readme([labs.load_lab(config, "vector_add"), labs.load_lab(config, "sobel")],
                                  version="0.1.0")
    golden = GOLDEN / "bundle_readme.md"
    if os.environ.get("CUDALAB_UPDATE_GOLDEN"):
        golden.write_text(readme)
    assert readme == golden.read_text(), "set CUDALAB_UPDATE_GOLDEN=1 to accept a deliberate change"


# --- the leak scan ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def prints(course) -> export.Fingerprints:
    return export.solution_fingerprints(course)


def test_a_bundle_of_every_lab_scans_clean(tmp_path, prints, course):
    """No false positives: the harness shares idioms with the solutions (a grid-stride loop,
    the SM count query), and none of them is long enough to be called a leak."""
    out = tmp_path / "every-lab"
    code, said, _ = export_bundle(out, root=course)
    assert code == 0, said
    assert "Leak scan:" in said and "nothing found" in said
    result = export.leak_scan(out, course, prints)
    assert result.leaks == [] and result.files > 150
    assert set(json.loads((out / bundle.MARKER).read_text())["labs"]) == set(labs.available_labs(REPO_ROOT))


def lines_between(path: Path, first: str, last: str) -> list[str]:
    """The lines of `path` from the first that starts with `first` (stripped) to the next
    that equals `last` (stripped), both included."""
    lines = path.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith(first))
    end = next(i for i in range(start, len(lines)) if lines[i].strip() == last)
    return lines[start:end + 1]


def _append(path: Path, text: str) -> int:
    """Append `text` to `path`; the line number its first line lands on."""
    old = path.read_text() if path.is_file() else ""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(old + text)
    return old.count("\n") + 1


def plant_kernel_in_a_header_comment(bundle_dir: Path) -> tuple[str, int, str]:
    kernel = lines_between(REPO_ROOT / "solutions/vector_add/vector_add.cu", "__global__ void vector_add_float4", "}")
    line = _append(bundle_dir / "common/labkit/check.hpp", "".join(f"// {text}\n" for text in kernel))
    return "common/labkit/check.hpp", line, "solutions/vector_add/vector_add.cu"


def plant_snippet_in_a_template(bundle_dir: Path) -> tuple[str, int, str]:
    loop = lines_between(REPO_ROOT / "solutions/vector_add/vector_add.cu", "for (int k = 0; k < kVectorsPerThread", "}")
    line = _append(bundle_dir / "grader/cudalab/templates/handout.md.j2",
                   "{# a faster loop:\n" + "\n".join(text.strip() for text in loop) + "\n#}\n")
    return "grader/cudalab/templates/handout.md.j2", line + 1, "solutions/vector_add/vector_add.cu"


def plant_code_in_a_calibration_string(bundle_dir: Path) -> tuple[str, int, str]:
    code = (REPO_ROOT / "solutions/vector_add/ladder/grid_stride.cu").read_text()
    body = json.dumps({"schema": "cudalab.calibration/1", "lab": "vector_add",
                       "entries": [{"gpu": "NVIDIA H100", "notes": code}]}, indent=2)
    path = bundle_dir / "labs/vector_add/calibration.json"
    path.write_text(body + "\n")
    return "labs/vector_add/calibration.json", body[:body.index('"notes"')].count("\n") + 1, \
        "solutions/vector_add/ladder/grid_stride.cu"


def plant_code_in_a_generated_html_handout(bundle_dir: Path) -> tuple[str, int, str]:
    kernel = lines_between(REPO_ROOT / "solutions/vector_add/vector_add.cu", "__global__ void vector_add_scalar", "}")
    marked = "\n".join(f'<span class="line">{html.escape(text)}</span>' for text in kernel)
    line = _append(bundle_dir / "handouts/vector_add.html", f"<html><body>\n<pre><code>{marked}</code></pre>\n")
    return "handouts/vector_add.html", line + 1, "solutions/vector_add/vector_add.cu"


@pytest.mark.parametrize("plant", [plant_kernel_in_a_header_comment, plant_snippet_in_a_template,
                                   plant_code_in_a_calibration_string, plant_code_in_a_generated_html_handout],
                         ids=lambda plant: plant.__name__.removeprefix("plant_"))
def test_the_scan_finds_solution_code_wherever_it_was_pasted(plant, vector_add_bundle, tmp_path, prints, course):
    copy = bundle_copy(vector_add_bundle, tmp_path / "bundle")
    where, line, source = plant(copy)
    leaks = export.leak_scan(copy, course, prints).leaks
    assert leaks and {(leak.path, leak.kind, leak.source) for leak in leaks} == {(where, "solution_code", source)}, leaks
    assert leaks[0].line == line
    assert leaks[0].sentence().startswith(f"{where}:{line}: ") and f"of solution code from {source}" in leaks[0].sentence()


@pytest.mark.parametrize("plant, kind", [
    (lambda b: shutil.copy(REPO_ROOT / "solutions/sort/ladder/radix_split.cu", b / "starter/vector_add/notes.txt"),
     "solution_file"),
    (lambda b: shutil.copytree(REPO_ROOT / "solutions/vector_add", b / "solutions/vector_add"), "not_for_students"),
    (lambda b: shutil.copytree(REPO_ROOT / "labs/vector_add/tests", b / "labs/vector_add/tests"), "not_for_students"),
    (lambda b: _append(b / "build/ci/bin/vector_add_solution", "\x7fELF\x02\x01\x01"), "build_output"),
    (lambda b: _append(b / "common/libpartial.a", "!<arch>\nobject"), "build_output"),
    (lambda b: (b / "labs/vector_add/n_257.c.bin").write_bytes(b"CLAB\x01\x00\x00\x00\x01\x00\x00\x00"), "stored_output"),
    (lambda b: _append(b / "starter/vector_add/vector_add.cu", "    // BEGIN SOLUTION\n"), "solution_marker"),
    (lambda b: (b / "labs/answers").symlink_to(REPO_ROOT / "solutions"), "link"),
], ids=["copied_file", "solutions_folder", "lab_tests", "elf_binary", "archive", "labkit_dump", "marker_line", "link"])
def test_the_scan_finds_what_a_bundle_never_carries(plant, kind, vector_add_bundle, tmp_path, prints, course):
    copy = bundle_copy(vector_add_bundle, tmp_path / "bundle")
    plant(copy)
    leaks = export.leak_scan(copy, course, prints).leaks
    assert leaks and all(leak.kind in (kind, "solution_code") for leak in leaks), leaks
    assert any(leak.kind == kind for leak in leaks), leaks


def test_every_solution_with_code_of_its_own_is_found_in_a_comment(prints, course):
    """Each solution file and ladder rung, pasted whole into a comment block of a header,
    is found and named by a file of its own lab. (Files of fewer than 40 tokens of code of
    their own are a define and an include of another rung: that one is fingerprinted.)"""
    header = (course / "common/labkit/check.hpp").read_text()
    checked = 0
    for path in sorted((course / "solutions").rglob("*")):
        if not path.is_file() or len(export.solution_tokens(path.read_text())) < 40:
            continue
        text = header + "/*\n" + path.read_text() + "\n*/\n"
        lab = path.relative_to(course).parts[1]
        leaks = export.scan_file("common/labkit/check.hpp", text.encode(), prints)
        assert any(leak.kind == "solution_code" and leak.source.startswith(f"solutions/{lab}/") for leak in leaks), path
        checked += 1
    assert checked >= 30


def test_tokens_are_read_through_escapes_entities_and_tags():
    text = export.readable_text("x.html", b'<b>a&lt;b</b> "x\\ny\\"z" \\u0041')
    assert text.split() == ["a<b", '"x', 'y"z"', "A"]


# --- the export refuses what it cannot do ------------------------------------------------------

@pytest.mark.parametrize("argv, code, said", [
    (["--labs", "nolab"], Cli.UNKNOWN_LAB, "There is no lab called 'nolab'"),
    (["--labs", ","], Cli.USAGE, "names no lab"),
])
def test_export_refuses_bad_labs(argv, code, said, tmp_path, course):
    got, output, _ = export_bundle(tmp_path / "out", *argv, root=course)
    assert got == code and said in output, output
    assert not (tmp_path / "out").exists()


def test_export_writes_outside_the_repository_and_never_over_other_files(tmp_path, course):
    code, said, _ = export_bundle(course / "build" / "bundle-here", "--labs", "vector_add", root=course)
    assert code == Cli.USAGE and "outside the course's repository" in said
    assert not (course / "build").exists()
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "notes.txt").write_text("mine\n")
    code, said, _ = export_bundle(taken, "--labs", "vector_add", root=course)
    assert code == Cli.USAGE and "is not a student bundle" in said
    assert [p.name for p in taken.iterdir()] == ["notes.txt"]


def test_export_replaces_a_bundle_already_there(tmp_path, course):
    out = tmp_path / "bundle"
    assert export_bundle(out, "--labs", "vector_add", root=course)[0] == 0
    (out / "stale.txt").write_text("from before\n")
    code, said, _ = export_bundle(out, "--labs", "vector_add,sobel", root=course)
    assert code == 0, said
    assert not (out / "stale.txt").exists() and (out / "labs" / "sobel" / "lab.toml").is_file()
    assert [p.name for p in tmp_path.iterdir()] == ["bundle"], "no staging folder is left behind"


def test_export_fails_loudly_when_the_repository_leaks(tmp_path, course):
    repo = repository_copy(tmp_path / "repo", course)
    where, line, source = plant_kernel_in_a_header_comment(repo)
    out = tmp_path / "bundle"
    code, said, stdout = export_bundle(out, "--labs", "vector_add", "--json", root=repo)
    assert code == Cli.REJECTED, said
    assert f"error: {where}:{line}: " in said and source in said
    assert "No bundle was written" in said
    report = json.loads(stdout)
    assert report["status"] == "leak" and report["leak_scan"]["leaks"][0]["path"] == where
    assert not out.exists() and list(tmp_path.iterdir()) == [repo], "nothing of the bundle is left"


def test_export_refuses_a_stale_handout_or_starter(tmp_path, course):
    repo = repository_copy(tmp_path / "repo", course)
    _append(repo / "handouts" / "vector_add.md", "an edit by hand\n")
    _append(repo / "solutions" / "vector_add" / "vector_add.cu", "// a new closing remark\n")
    code, said, _ = export_bundle(tmp_path / "bundle", "--labs", "vector_add", root=repo)
    assert code == Cli.USAGE, said
    assert "handouts/vector_add.md (`cudalab handout vector_add`)" in said
    assert "starter/vector_add/vector_add.cu (`cudalab starter vector_add`)" in said
    assert not (tmp_path / "bundle").exists()


# --- a bundle's grader ----------------------------------------------------------------------

def bundle_cudalab(bundle_dir: Path, home: Path, *argv: str, cwd: Path | None = None) -> tuple[int, str]:
    """`cudalab ARGV` as a student of the bundle types it: the bundle's own package, found
    from the folder the student is in."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("CUDALAB_")
           and key != "XDG_CACHE_HOME"}
    env.update(HOME=str(home), PYTHONPATH=str(bundle_dir / "grader"), CUDALAB_PRESET="ci")
    done = subprocess.run([sys.executable, "-m", "cudalab", *argv], cwd=cwd or bundle_dir, env=env,
                          capture_output=True, text=True, timeout=1200)
    said = done.stdout + done.stderr
    assert "Traceback" not in said and "internal error" not in said, said
    return done.returncode, said


def test_a_bundle_offers_the_student_verbs_and_says_why_not_the_others(vector_add_bundle, tmp_path):
    code, said = bundle_cudalab(vector_add_bundle, tmp_path, "--help")
    assert code == 0
    assert all(f"    {verb} " in said for verb in bundle.STUDENT_VERBS)
    assert not any(f"    {verb} " in said for verb in ("grade", "ladder", "starter", "export"))
    for verb, why in (("grade", "course's reference solution"), ("ladder", "the course's own variants"),
                      ("starter", "generated from the course's solution"), ("export", "course's own tools")):
        code, said = bundle_cudalab(vector_add_bundle, tmp_path, verb, "vector_add", "--json")
        assert code == Cli.USAGE and f"`cudalab {verb}` is not part of this student bundle" in said and why in said
    code, said = bundle_cudalab(vector_add_bundle, tmp_path, "new", "vector_add", str(tmp_path / "va"))
    assert code == 0 and (tmp_path / "va" / "vector_add.cu").read_bytes() == \
        (REPO_ROOT / "starter" / "vector_add" / "vector_add.cu").read_bytes()


def test_the_course_grader_offers_every_verb():
    assert bundle.offered_verbs(cli.VERBS) == cli.VERBS and not bundle.package_in_bundle()
    assert bundle.missing_verb(["grade", "vector_add", "."], cli.VERBS) is None


def test_a_bundles_official_build_needs_only_the_checker(toy_config):
    """In a bundle the official build has no solution: a run or a check needs the checker
    (and the SDK) only, and asking for the solution or a rung is told in a sentence."""
    spec = labs.load_lab(toy_config, "toy")
    (toy_config.bin_dir / "toy_solution").unlink()
    (toy_config.root / bundle.MARKER).write_text(json.dumps(bundle.marker(["toy"], "0.1.0", "now")))
    build.ensure_official(toy_config, spec)
    write_fake(toy_config.bin_dir / "toy_starter", name="toy_starter")
    build.ensure_official(toy_config, spec, ("starter", "checker"))
    for asked, said in ((("solution", "checker"), "does not hold the course solution"),
                        (("ladder_simple", "checker"), "does not hold the ladder rung 'simple'")):
        with pytest.raises(UsageError, match=said):
            build.ensure_official(toy_config, spec, asked)


# --- a bundle builds and works from a fresh copy ------------------------------------------------

@pytest.mark.skipif(not all(shutil.which(tool) for tool in ("cmake", "ninja", "nvcc")),
                    reason="needs cmake, ninja and nvcc to build the bundle")
def test_a_fresh_copy_of_the_bundle_builds_and_its_grader_checks_and_packs(vector_add_bundle, tmp_path):
    fresh = bundle_copy(vector_add_bundle, tmp_path / "fresh")
    home = tmp_path / "home"
    home.mkdir()

    def cmake(*argv: str) -> str:
        done = subprocess.run(["cmake", *argv], cwd=fresh, capture_output=True, text=True, timeout=1200)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        return done.stdout

    cmake("--preset", "ci")
    cache = (fresh / "build" / "ci" / "CMakeCache.txt").read_text()
    assert "CUDALAB_STUDENT_BUNDLE:BOOL=ON" in cache and "CUDALAB_LABS" not in cache
    written = (fresh / "build" / "ci" / "cudalab-build.cmake").read_text()
    assert 'set(CUDALAB_OFFICIAL_LABS "vector_add")' in written
    cmake("--build", "--preset", "ci")
    bin_dir = fresh / "build" / "ci" / "bin"
    assert sorted(p.name for p in bin_dir.iterdir()) == ["vector_add_checker", "vector_add_starter"]
    assert (fresh / "build" / "ci" / "sdk" / "vector_add" / "build.json").is_file()
    assert (fresh / "build" / "ci" / "official-manifest.json").is_file()

    listed = subprocess.run([bin_dir / "vector_add_starter", "--list-cases"], capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0 and "n_257" in listed.stdout and "n_2p26" in listed.stdout
    empty = tmp_path / "no-dumps"
    empty.mkdir()
    judged = subprocess.run([bin_dir / "vector_add_checker", "--seed", "1", "--dump", empty, "--verdict",
                             tmp_path / "verdict.json", "--case", "n_257"], capture_output=True, text=True, timeout=60)
    verdict = json.loads((tmp_path / "verdict.json").read_text())
    assert judged.returncode == 1 and verdict["cases"][0]["status"] == "missing"

    work = home / "vector_add"
    assert bundle_cudalab(fresh, home, "new", "vector_add", str(work))[0] == 0
    code, said = bundle_cudalab(fresh, home, "check", ".", "--lab", "vector_add", cwd=work)
    assert code == 0 and "ACCEPTED" in said, said
    assert "compile    ok" in said
    if not GPU:
        assert "smoke_run  skipped (not run: there is no CUDA device on this machine)" in said
    code, said = bundle_cudalab(fresh, home, "pack", "vector_add", ".", "--student", "s123", cwd=work)
    assert code == 0 and "Packed vector_add.cu into vector_add-s123.tar.gz" in said, said
    with tarfile.open(work / "vector_add-s123.tar.gz") as archive:
        assert sorted(archive.getnames()) == ["cudalab-manifest.json", "vector_add.cu"]
    code, said = bundle_cudalab(fresh, home, "check", "vector_add-s123.tar.gz", "--receipt", "receipt.json", cwd=work)
    assert code == 0 and "ACCEPTED" in said and "student:    s123" in said, said
    assert json.loads((work / "receipt.json").read_text())["accepted"] is True

    code, said = bundle_cudalab(fresh, home, "run", "vector_add", ".", cwd=work)
    assert code == (Cli.NO_DEVICE if not GPU else 1), said
    code, said = bundle_cudalab(fresh, home, "run", "vector_add", "--target", "solution", cwd=work)
    assert code == Cli.USAGE and "This is a student bundle, which does not hold the course solution" in said
