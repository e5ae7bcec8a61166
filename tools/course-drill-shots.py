#!/usr/bin/env python3
"""Screenshots of the pages tools/course-drill.py saved (the GPU machine has no browser):
each OUT/*.html rendered by Debian's Chromium through Playwright into OUT/<name>.png.

    python3 tools/course-drill-shots.py OUT [--chromium /usr/bin/chromium]

The pages carry their own style and no scripts, so a saved page renders as it was served.
Exit 2, with a sentence, where Chromium or Playwright is missing or OUT holds no pages.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path, help="the drill's output folder")
    parser.add_argument("--chromium", type=Path, default=Path("/usr/bin/chromium"))
    args = parser.parse_args(argv)
    pages = sorted(args.out.glob("*.html"))
    if not pages:
        print(f"course-drill-shots: {args.out} holds no saved pages (*.html): run tools/course-drill.py first.",
              file=sys.stderr)
        return 2
    if not args.chromium.is_file():
        print(f"course-drill-shots: no Chromium at {args.chromium}: install Debian's chromium or give --chromium.",
              file=sys.stderr)
        return 2
    try:
        from playwright.sync_api import Error as PlaywrightError, sync_playwright
    except ImportError:
        print("course-drill-shots: Playwright is not installed: `pip install playwright` (tools/setup.sh does).",
              file=sys.stderr)
        return 2
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(args.chromium), args=["--no-sandbox"],
                                                 headless=True)
            page = browser.new_page(viewport={"width": 1200, "height": 800})
            for html in pages:
                page.goto(html.resolve().as_uri())
                shot = html.with_suffix(".png")
                page.screenshot(path=str(shot), full_page=True)
                print(f"{shot}")
            browser.close()
    except PlaywrightError as err:
        print(f"course-drill-shots: Chromium failed: {str(err).splitlines()[0]}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
