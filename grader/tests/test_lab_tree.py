"""The labs/ tree as the build sees it: every labs/<lab>/lab.toml is a lab CMake builds,
found at configure time (no list to edit, nothing cached), and each lab's API header
declares exactly the functions its lab.toml describes."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from cudalab.lab import labspec
from conftest import REPO_ROOT

REAL_LABS = sorted(p.parent.name for p in (REPO_ROOT / "labs").glob("*/lab.toml"))

needs_cmake = pytest.mark.skipif(not all(shutil.which(tool) for tool in ("cmake", "ninja")),
                                 reason="needs cmake and ninja")
needs_cuda_toolchain = pytest.mark.skipif(not all(shutil.which(tool) for tool in ("cmake", "ninja", "nvcc")),
                                          reason="needs cmake, ninja and nvcc to configure the project")

# What a configure of the whole project needs from the tree (no build outputs, no tests' data).
TREE_PARTS = ("CMakeLists.txt", "CMakePresets.json", "cmake", "common", "labs", "grader/cudalab", "datasets",
              "solutions", "starter")


def run_cmake(*argv, cwd: Path) -> str:
    done = subprocess.run(["cmake", *map(str, argv)], cwd=cwd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def copy_of_the_tree(tmp_path: Path) -> Path:
    """What a configure of the whole project reads (TREE_PARTS), copied under tmp_path/tree."""
    root = tmp_path / "tree"
    for part in TREE_PARTS:
        source = REPO_ROOT / part
        if source.is_dir():
            shutil.copytree(source, root / part, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            root.mkdir(exist_ok=True)
            shutil.copy(source, root / part)
    return root


def regenerate(build_dir: Path) -> None:
    """What any build does first: re-run the configure if an input (or a watched glob) changed."""
    done = subprocess.run(["ninja", "-C", str(build_dir), "build.ninja"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def add_lab_copied_from(root: Path, source: str, name: str) -> None:
    """A ninth lab, made the way a course author would: a folder under labs/ (and its
    solution and starter), with no list edited anywhere."""
    folder = root / "labs" / name
    shutil.copytree(root / "labs" / source, folder)
    (folder / f"{source}.hpp").rename(folder / f"{name}.hpp")
    for code in [*folder.glob("*.cpp"), *folder.glob("*.hpp"), *folder.glob("*.cu")]:
        code.write_text(code.read_text().replace(f"lab_{source}", f"lab_{name}"))
    toml = (folder / "lab.toml").read_text()
    (folder / "lab.toml").write_text(toml.replace(f'name = "{source}"', f'name = "{name}"', 1)
                                     .replace(f'"{source}.cu"', f'"{name}.cu"').replace(f'"{source}.hpp"', f'"{name}.hpp"'))
    for kind in ("solutions", "starter"):
        (root / kind / name).mkdir()
        shutil.copy(root / kind / source / f"{source}.cu", root / kind / name / f"{name}.cu")


def written_labs(build_dir: Path) -> list[str]:
    text = (build_dir / "cudalab-build.cmake").read_text()
    return re.search(r'set\(CUDALAB_OFFICIAL_LABS "(.*)"\)', text).group(1).split(";")


# --- the build finds the labs -------------------------------------------------------------------

@needs_cmake
def test_cudalab_find_labs_sees_a_lab_folder_added_after_the_first_configure(tmp_path):
    """cudalab_find_labs alone, in a project with no compiler, so that it runs wherever cmake does."""
    root = tmp_path / "tree"
    shutil.copytree(REPO_ROOT / "cmake", root / "cmake")
    for lab in REAL_LABS:
        (root / "labs" / lab).mkdir(parents=True)
        shutil.copy(REPO_ROOT / "labs" / lab / "lab.toml", root / "labs" / lab / "lab.toml")
    (root / "labs" / "not_a_lab").mkdir()  # a folder without lab.toml is no lab
    project = tmp_path / "project"
    project.mkdir()
    (project / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.25)\nproject(find_labs_probe LANGUAGES NONE)\n"
        f'include("{root / "cmake" / "CudalabLab.cmake"}")\n'
        'cudalab_find_labs(labs)\nfile(WRITE "${CMAKE_BINARY_DIR}/labs.txt" "${labs}")\n')
    build_dir = tmp_path / "build"
    run_cmake("-S", project, "-B", build_dir, "-G", "Ninja", cwd=tmp_path)
    assert (build_dir / "labs.txt").read_text().split(";") == REAL_LABS

    (root / "labs" / "ninth").mkdir()
    (root / "labs" / "ninth" / "lab.toml").write_text("")
    regenerate(build_dir)
    assert (build_dir / "labs.txt").read_text().split(";") == sorted(REAL_LABS + ["ninth"])
    assert "ninth" not in (build_dir / "CMakeCache.txt").read_text()


@needs_cuda_toolchain
def test_a_lab_folder_added_to_a_configured_tree_is_built_by_its_next_build(tmp_path):
    root, build_dir = copy_of_the_tree(tmp_path), tmp_path / "build"
    run_cmake("-S", root, "-B", build_dir, "-G", "Ninja", "-DCMAKE_CUDA_ARCHITECTURES=90",
              "-DCMAKE_BUILD_TYPE=Release", "-DCUDALAB_BUILD_TESTS=OFF", cwd=tmp_path)
    assert written_labs(build_dir) == REAL_LABS
    assert "CUDALAB_LABS" not in (build_dir / "CMakeCache.txt").read_text()

    add_lab_copied_from(root, "vector_add", "vector_add_again")
    regenerate(build_dir)
    assert written_labs(build_dir) == sorted(REAL_LABS + ["vector_add_again"])
    targets = subprocess.run(["ninja", "-C", str(build_dir), "-t", "targets", "all"], capture_output=True,
                             text=True, timeout=60).stdout
    for target in ("vector_add_again_checker", "vector_add_again_solution", "vector_add_again_starter",
                   "vector_add_again_sdk"):
        assert re.search(rf"(^|/){target}:", targets, re.MULTILINE), target
    assert (build_dir / "generated" / "vector_add_again" / "lab_spec.hpp").is_file()
    checker = (build_dir / "generated" / "vector_add_again" / "checker.cpp").read_text()
    assert "lab_vector_add_again::problem(), lab_vector_add_again::reference" in checker


@needs_cuda_toolchain
def test_a_labs_official_targets_build_nothing_of_other_labs_or_the_tests(tmp_path):
    """What `cudalab run LAB` or `grade LAB` builds first (build.official_targets): that
    lab's binaries and SDK, each of which writes its own manifest record."""
    root, build_dir = copy_of_the_tree(tmp_path), tmp_path / "build"
    run_cmake("-S", root, "-B", build_dir, "-G", "Ninja", "-DCMAKE_CUDA_ARCHITECTURES=90",
              "-DCMAKE_BUILD_TYPE=Release", "-DCUDALAB_BUILD_TESTS=ON", cwd=tmp_path)
    spec = labspec.load(root / "labs" / "vector_add" / "lab.toml")
    from cudalab.building import build
    targets = build.official_targets(spec, ("solution", "checker"))
    # Every command the targets need, from nothing (a dry run would stop at the glob check).
    def commands(*wanted: str) -> list[str]:
        done = subprocess.run(["ninja", "-C", str(build_dir), "-t", "commands", *wanted], capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        return done.stdout.splitlines()
    needed = commands(*targets)
    assert any("vector_add.cu" in line for line in needed)
    others = [lab for lab in REAL_LABS if lab != "vector_add"]
    strays = [line for line in needed if any(f"/{lab}/" in line or f"{lab}_" in line for lab in others)
              or "doctest" in line or "/tests/" in line]
    assert not strays, strays[:3]
    assert len(needed) * 4 < len(commands("all"))
    for target in ("vector_add_solution", "vector_add_checker", "vector_add_sdk"):  # each writes its record
        assert any(f"manifests/{target}.json" in line for line in needed), target


def test_a_labs_own_checker_is_one_that_differs_from_the_generated_one():
    """The usual checker is generated (cmake/lab_checker.cpp.in); a lab keeps a checker.cpp
    only when it needs another one, so no copy identical up to the name creeps back."""
    template = (REPO_ROOT / "cmake" / "lab_checker.cpp.in").read_text()
    own = [lab for lab in REAL_LABS if (REPO_ROOT / "labs" / lab / "checker.cpp").is_file()]
    for lab in own:
        generated = template.replace("@lab@", lab)
        mine = (REPO_ROOT / "labs" / lab / "checker.cpp").read_text()
        assert declarations(mine) != declarations(generated), f"labs/{lab}/checker.cpp is the generated checker"
    assert len(own) < len(REAL_LABS) / 2, "most labs use the generated checker"


# --- each lab's API header agrees with its lab.toml ---------------------------------------------

def declarations(header: str) -> list[str]:
    """The declarations of a plain API header: its text without comments and preprocessor
    lines, split at each ';', with whitespace runs made one space."""
    code = re.sub(r"//[^\n]*|/\*.*?\*/", "", header, flags=re.DOTALL)
    code = "\n".join(line for line in code.splitlines() if not line.lstrip().startswith("#"))
    return [" ".join(part.split()) for part in code.split(";") if part.strip()]


def test_the_build_finds_every_real_lab():
    assert len(REAL_LABS) >= 8 and "vector_add" in REAL_LABS


@pytest.mark.parametrize("lab", REAL_LABS)
def test_the_api_header_declares_what_lab_toml_describes(lab):
    spec = labspec.load(REPO_ROOT / "labs" / lab / "lab.toml")
    assert spec.api_header == f"{lab}.hpp", "each lab folder has the same shape: labs/<lab>/<lab>.hpp"
    header = (REPO_ROOT / "labs" / lab / spec.api_header).read_text()
    assert declarations(header) == [" ".join(entry["signature"].split()) for entry in spec.api]


@pytest.mark.parametrize("lab", REAL_LABS)
def test_the_generated_lab_spec_header_is_what_lab_toml_gives(lab, tmp_path):
    """The header CMake writes at configure (labspec emit-header) is emit_header of the lab's
    lab.toml, names that lab and lists every one of its cases."""
    toml = REPO_ROOT / "labs" / lab / "lab.toml"
    spec = labspec.load(toml)
    out = tmp_path / "lab_spec.hpp"
    assert labspec.main(["emit-header", str(toml), str(out)]) == 0
    text = out.read_text()
    assert text == labspec.emit_header(spec)
    assert f'kLabName = "{lab}";' in text
    for case in spec.cases + spec.bench_cases:
        assert f'{{"{case.name}", ' in text


def test_a_header_that_drifts_from_lab_toml_is_seen():
    header = (REPO_ROOT / "labs" / "vector_add" / "vector_add.hpp").read_text()
    drifted = header.replace("std::size_t n)", "int n)")
    spec = labspec.load(REPO_ROOT / "labs" / "vector_add" / "lab.toml")
    assert declarations(drifted) != [" ".join(entry["signature"].split()) for entry in spec.api]
