"""datasets/: every committed picture parses and matches its record in images.toml, every
record says where the picture came from and under which licence, and
`datasets/make_images.py --check` finds the files as it would make them."""
from __future__ import annotations

import hashlib
import importlib.util
import subprocess
import sys
import tomllib

import pytest

from cudalab.lab import images
from conftest import REPO_ROOT

DATASETS = REPO_ROOT / "datasets"
SCRIPT = DATASETS / "make_images.py"
FREE_LICENCES = {"CC0-1.0", "public-domain"}
NO_SKIMAGE = importlib.util.find_spec("skimage") is None
needs_skimage = pytest.mark.skipif(NO_SKIMAGE, reason="scikit-image is not installed, so make_images.py cannot "
                                   "regenerate the pictures: pip install scikit-image (the grader's test extra has it)")


def records() -> list[dict]:
    return tomllib.loads((DATASETS / "images.toml").read_text(encoding="utf-8"))["images"]


def make_images(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=300)


def test_every_picture_parses_and_matches_its_record():
    assert len(records()) >= 4
    for record in records():
        path = DATASETS / record["file"]
        assert path.name == f"{record['name']}.pgm" and path.parent == DATASETS / "images"
        width, height, pixels = images.read_pgm(path)
        assert (width, height) == (record["width"], record["height"]), record["name"]
        assert hashlib.sha256(path.read_bytes()).hexdigest() == record["sha256"], record["name"]
        assert 0.0 < images.edge_fraction(pixels) <= 1.0  # not a blank picture


def test_every_record_says_its_source_author_and_licence():
    for record in records():
        assert record["skimage_function"] == f"skimage.data.{record['name']}"
        assert record["source_url"].startswith("https://"), record["name"]
        assert record["author"].strip() and record["licence_statement"].strip(), record["name"]
        assert record["licence"] in FREE_LICENCES, f"{record['name']}: {record['licence']} is not CC0 or public domain"
        assert "docstring of skimage.data." in record["statement_from"]


def test_every_picture_file_has_a_record_and_the_set_is_small():
    files = sorted(p.name for p in (DATASETS / "images").iterdir())
    assert files == sorted(f"{r['name']}.pgm" for r in records())
    assert sum((DATASETS / "images" / name).stat().st_size for name in files) < 1_500_000


def test_widths_that_are_not_multiples_of_32_are_there():
    assert len([r for r in records() if r["width"] % 32]) >= 2
    assert any(r["width"] % 32 == 0 for r in records())


@needs_skimage
def test_make_images_check_passes_on_the_committed_files():
    done = make_images("--check")
    assert done.returncode == 0, done.stderr
    assert "are as make_images.py makes them" in done.stdout


@needs_skimage
def test_make_images_is_deterministic_and_check_names_each_difference(tmp_path):
    assert make_images("--out", str(tmp_path)).returncode == 0
    for record in records():
        assert (tmp_path / record["file"]).read_bytes() == (DATASETS / record["file"]).read_bytes()
    assert (tmp_path / "images.toml").read_text() == (DATASETS / "images.toml").read_text()
    with open(tmp_path / "images" / "camera.pgm", "r+b") as handle:
        handle.seek(100)
        handle.write(b"\x01\x02")
    text = (tmp_path / "images.toml").read_text().replace('author = "Lav Varshney"', 'author = "someone"')
    (tmp_path / "images.toml").write_text(text)
    done = make_images("--check", "--out", str(tmp_path))
    assert done.returncode == 1
    assert "camera.pgm differs from what scikit-image gives now" in done.stderr
    assert "camera's author is 'someone', expected 'Lav Varshney'" in done.stderr
    assert "Traceback" not in done.stderr


def test_make_images_without_scikit_image_says_how_to_install_it(tmp_path):
    blocked = ("import runpy, sys; sys.modules['skimage'] = None; "
               f"sys.argv = [{str(SCRIPT)!r}, '--check']; runpy.run_path({str(SCRIPT)!r}, run_name='__main__')")
    done = subprocess.run([sys.executable, "-c", blocked], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    said = done.stderr.strip().splitlines()
    assert len(said) == 1 and said[0].startswith("error: make_images.py needs scikit-image and numpy (")
    assert said[0].endswith("is not installed): pip install scikit-image")
