"""The sobel lab's worked example: docs/sobel/camera_edges.png is what the solution's
version 2 wrote on a GPU for the photograph datasets/images/camera.pgm (case v2_camera, as
`cudalab run sobel --target solution --case v2_camera --save-images DIR` saves it). It must
be a sensible edge map, and exactly the lab sheet's CPU loop: judged here by an independent
reading of the loop and, where the official tree is built, by the lab's trusted checker."""
from __future__ import annotations

import json
import struct
import subprocess
import tomllib
from pathlib import Path

import pytest

from conftest import official_build_dir
from cudalab.lab import images

ROOT = Path(__file__).resolve().parents[2]
EDGES = ROOT / "docs" / "sobel" / "camera_edges.png"
PHOTO = ROOT / "datasets" / "images" / "camera.pgm"

Image = pytest.importorskip("PIL.Image", reason="Pillow reads the PNG (pip install pillow)")


def _case() -> dict:
    spec = tomllib.loads((ROOT / "labs" / "sobel" / "lab.toml").read_text())
    return next(c for c in spec["cases"] if c["name"] == "v2_camera")


def _edges() -> tuple[int, int, bytes]:
    with Image.open(EDGES) as picture:
        assert picture.mode == "L", "the edge map is 8-bit gray"
        return picture.width, picture.height, picture.tobytes()


def _lab_sheet_loop(width: int, height: int, u: bytes, threshold: int) -> bytes:
    """The assignment's loop, written out again: 255 where sum1^2 + sum2^2 > THRESHOLD."""
    e = bytearray(width * height)
    for i in range(1, height - 1):
        up, row, down = (i - 1) * width, i * width, (i + 1) * width
        for j in range(1, width - 1):
            sum1 = (u[up + j + 1] - u[up + j - 1] + 2 * u[row + j + 1] - 2 * u[row + j - 1]
                    + u[down + j + 1] - u[down + j - 1])
            sum2 = (u[up + j - 1] + 2 * u[up + j] + u[up + j + 1]
                    - u[down + j - 1] - 2 * u[down + j] - u[down + j + 1])
            e[row + j] = 255 if sum1 * sum1 + sum2 * sum2 > threshold else 0
    return bytes(e)


def test_the_gpu_edge_map_of_a_photograph_is_sensible():
    width, height, pixels = _edges()
    assert (width, height) == (512, 512)
    assert set(pixels) == {0, 255}
    share = pixels.count(255) / len(pixels)
    assert 0.05 < share < 0.30, f"{share:.1%} of the pixels are edges"
    # No edge on the border, which the lab sheet's loop never writes.
    assert all(pixels[x] == 0 and pixels[(height - 1) * width + x] == 0 for x in range(width))
    assert all(pixels[y * width] == 0 and pixels[y * width + width - 1] == 0 for y in range(height))


def test_the_gpu_edge_map_is_the_lab_sheets_loop_exactly():
    width, height, pixels = _edges()
    photo_width, photo_height, photo = images.read_pgm(PHOTO)
    assert (photo_width, photo_height) == (width, height)
    assert pixels == _lab_sheet_loop(width, height, photo, _case()["threshold"])


@pytest.mark.needs_build
def test_the_trusted_checker_passes_the_gpu_edge_map(tmp_path):
    width, height, pixels = _edges()
    dump = tmp_path / "dump"
    dump.mkdir()
    header = b"CLAB" + struct.pack("<III", 1, 7, 2) + struct.pack("<QQ", height, width)  # version 1, u8, rank 2
    (dump / "v2_camera.out.bin").write_bytes(header + pixels)
    checker = official_build_dir() / "bin" / "sobel_checker"
    if not checker.is_file():
        pytest.skip(f"{checker} is not built (the sobel lab is not among the built labs)")
    verdict = tmp_path / "verdict.json"
    done = subprocess.run([str(checker), "--seed", "1", "--dump", str(dump), "--verdict", str(verdict),
                           "--case", "v2_camera"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(verdict.read_text())["cases"][0]["status"] == "passed"
