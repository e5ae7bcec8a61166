"""`cudalab export`: write the student bundle, with none of the course's solutions in it.

`cudalab export --out DIR [--labs a,b]` writes DIR (a new or empty folder; a bundle
already there is replaced) for the labs named (default: every lab):

  CMakeLists.txt, cmake/   the build; CMakePresets.json without its test presets
  common/                  labkit, without its unit tests
  labs/<lab>/              lab.toml, the API header, the harness, the problem, the CPU
                           reference, the checker and, where there is one, calibration.json
  starter/<lab>/           the starter files
  handouts/<lab>.md        the rendered handout (and <lab>.html where there is one)
  datasets/                the photographs the image labs use
  grader/                  the cudalab package, its pyproject.toml and README.md
  tools/setup.sh, tools/stage-deps.sh, .gitignore
  README.md                for students (templates/bundle_readme.md.j2)
  cudalab-bundle.json      the marker: CMake builds each lab's harness, checker, starter
                           and SDK only, and the CLI offers the student verbs only
                           (cudalab/building/bundle.py says what reads it and how)

It never holds solutions/ (the solutions and their ladders), a test (the labs' tests replay
the solutions' order of additions; grader/tests holds copies of the solutions as hostile
submissions), a stored output, .git or a build tree. The export first checks that each
lab's starter and handout are up to date, as `cudalab starter --check` and `cudalab
handout --check` do: a bundle hands out what the course's solution generates today.

Before the bundle is put in place, `leak_scan` reads every file of it; any finding
removes it and fails the export (exit 27), each finding at its file and line:

* Fingerprints: every file under solutions/ is reduced to its code (comments dropped; of
  a file with `// BEGIN SOLUTION` markers, only what lies between them) as a sequence of
  identifiers and numbers, and every SHINGLE_TOKENS consecutive tokens of it are one
  fingerprint, unless they also occur in the code of a starter file (given on purpose).
* Every file of the bundle, whatever its kind (sources and their comments, templates,
  Markdown, JSON, HTML, generated files), is read as text with string escapes and HTML
  entities decoded and its tags dropped, and its identifiers and numbers are matched
  against the fingerprints. An unbroken stretch of MIN_LEAK_TOKENS tokens or more that
  matches (a line or two of a kernel) is a leak; shorter ones are idioms the harness
  shares with the solutions, such as a grid-stride loop.
* Besides: a file identical to a solution file, a line that is a solution marker, a path
  under solutions/, ladder/ or tests/, .git or a build tree, an ELF object or an archive
  (a build output), a labkit binary dump (a stored output), a link.

The scan finds copies, however they are indented, wrapped or moved into comments and
strings; it does not find disguised ones (renamed identifiers, encoded text).
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from .. import console
from ..lab import labs
from ..config import Config
from ..errors import GraderError, UsageError
from ..exit_codes import Cli
from ..outputs.export import SCHEMA, write_bundle


def _lab_names(config: Config, text: str | None) -> list[str]:
    known = labs.available_labs(config.root)
    if text is None:
        return known
    names = list(dict.fromkeys(name.strip() for name in text.split(",") if name.strip()))
    if not names:
        raise UsageError(f"--labs {text!r} names no lab: give a comma-separated list, e.g. --labs "
                         f"{','.join(known[:2]) or 'vector_add'}.")
    return names


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, required=True, metavar="DIR",
                        help="the folder to write the bundle to, outside the repository (new or empty; a bundle "
                             "already there is replaced)")
    parser.add_argument("--labs", metavar="LAB,LAB", help="the labs to put in it (default: every lab)")


def main(args: argparse.Namespace, config: Config) -> int:
    lab_names = _lab_names(config, args.labs)
    try:
        scan, count, size = write_bundle(config, lab_names, args.out)
    except OSError as err:
        raise GraderError(f"Exporting stopped at {err.filename or args.out} ({err.strerror or err}); no bundle was "
                          "put in place. Fix the permission or free the space, then export again.") from None
    out = args.out.expanduser().resolve()
    if args.json:
        print(json.dumps({"schema": SCHEMA, "status": "leak" if scan.leaks else "exported", "out": str(out),
                          "labs": lab_names, "files": count, "bytes": size, "leak_scan": scan.to_json()}, indent=2))
    if scan.leaks:
        for leak in scan.leaks:
            console.error(leak.sentence())
        console.error(f"No bundle was written: the leak scan found {len(scan.leaks)} thing"
                      f"{'s' if len(scan.leaks) != 1 else ''} (above) that a student bundle must not carry. "
                      "Remove each from the repository's file of that name, then export again.")
        return int(Cli.REJECTED)
    console.info(f"Wrote the student bundle of {', '.join(lab_names)} to {out}: {count} files, "
                 f"{size / 2 ** 20:.1f} MiB.")
    console.info(f"Leak scan: {scan.files} files read for {scan.fingerprints} fingerprints of {scan.sources} "
                 "solution files; nothing found.")
    console.info(f"Students start with {out / 'README.md'}: `bash tools/setup.sh`, then `cudalab new LAB`.")
    return int(Cli.DONE)
