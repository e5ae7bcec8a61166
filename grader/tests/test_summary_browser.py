"""summary.html in a real browser: headless Chromium draws the class page of 40 synthetic
hand-ins, and the screenshot must show both plots' bars (their colours, in the plots' places)
and a page that is not blank. Skipped where no Chromium is installed.

CUDALAB_SCREENSHOT_DIR=DIR keeps the screenshot as DIR/summary.png (and the page beside it)."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from cudalab.outputs import publish
from grade_results import class_entries

WIDTH, HEIGHT = 1200, 2400
BATCH = {"started_at": "2025-01-01T00:00:00+00:00", "finished_at": None, "gpu": "NVIDIA H100 80GB HBM3",
         "complete": False}
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def _browser() -> str:
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    pytest.skip("no headless browser here (looked for " + ", ".join(BROWSERS) + "): "
                "install chromium to check that summary.html draws its plots")


def _rgb(colour: str) -> tuple[int, int, int]:
    return tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))


def _pixels_near(image, colour: str, box=None, tolerance: int = 6) -> int:
    """How many pixels of `image` (in `box`, left, top, right, bottom) are within `tolerance`
    of `colour` in every channel."""
    numpy = pytest.importorskip("numpy", reason="counting pixels needs numpy (matplotlib's dependency)")
    region = numpy.asarray(image.crop(box) if box else image, dtype=numpy.int16)
    near = numpy.abs(region - numpy.array(_rgb(colour), dtype=numpy.int16)) <= tolerance
    return int(near.all(axis=-1).sum())


@pytest.fixture(scope="module")
def screenshot(tmp_path_factory):
    image_module = pytest.importorskip("PIL.Image", reason="reading the screenshot needs Pillow")
    browser = _browser()
    out = tmp_path_factory.mktemp("summary")
    publish.write_class(out, "vector_add", "Vector addition", class_entries(40, pending=6), BATCH)
    page = out / publish.SUMMARY_FILE
    png = out / "summary.png"
    command = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
               f"--user-data-dir={out / 'profile'}", f"--screenshot={png}", f"--window-size={WIDTH},{HEIGHT}",
               page.resolve().as_uri()]
    done = subprocess.run(command, capture_output=True, text=True, timeout=180, check=False)
    assert png.is_file(), \
        f"{Path(browser).name} wrote no screenshot (exit {done.returncode}): {done.stderr[-2000:]}"
    keep = os.environ.get("CUDALAB_SCREENSHOT_DIR")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(png, Path(keep) / "summary.png")
        shutil.copyfile(page, Path(keep) / "summary.html")
    with image_module.open(png) as shot:
        return shot.convert("RGB")


def test_the_screenshot_has_the_page_size_and_is_not_blank(screenshot):
    assert screenshot.size == (WIDTH, HEIGHT)
    colours = screenshot.getcolors(maxcolors=WIDTH * HEIGHT)
    white = sum(count for count, pixel in colours if pixel == (255, 255, 255))
    assert len(colours) > 50, "a page of text, tables and plots has many colours"
    assert white < 0.97 * WIDTH * HEIGHT, "the page is not an empty white sheet"
    assert _pixels_near(screenshot, "#fff0c2") > 20_000, "the partial banner is drawn"


def test_both_plots_draw_their_bars_side_by_side(screenshot):
    left = (0, 0, WIDTH // 2, HEIGHT)
    right = (WIDTH // 2, 0, WIDTH, HEIGHT)
    scores = _pixels_near(screenshot, publish.SCORE_COLOUR, left)
    ratios = _pixels_near(screenshot, publish.RATIO_COLOUR, right)
    assert scores > 5_000, f"the score histogram's bars: {scores} pixels of {publish.SCORE_COLOUR}"
    assert ratios > 5_000, f"the speed plot's bars: {ratios} pixels of {publish.RATIO_COLOUR}"
    assert _pixels_near(screenshot, publish.SCORE_COLOUR, right) < 100, "each colour in its own plot"
    assert _pixels_near(screenshot, publish.RATIO_COLOUR, left) < 100, "each colour in its own plot"
