"""The Gradescope autograder bundle of one lab (`cudalab course gradescope`): a zip with
setup.sh, run_autograder (course/run_autograder.py, standard library only) and its settings
(the service's address, the lab, its file names and limits, and the course key). Gradescope
unpacks it into /autograder/source; each submission then goes to the course service, which
grades it on the course's GPU, and comes back as Gradescope's results.json.

The course key is a secret: whoever holds the bundle can have any student's code graded
under their name, so the settings file is written with mode 0600 and the bundle must be
uploaded to Gradescope only (the command says so).
"""
from __future__ import annotations

import json
import os
import stat
import zipfile
from pathlib import Path
from urllib.parse import urlsplit

from ..config import Config
from ..errors import UsageError
from ..intake import handin
from ..lab.labspec import LabSpec
from .run_autograder import SETTINGS
from .spec import COURSE_FILE
from .tokens import read_course_key

RUN_AUTOGRADER = Path(__file__).with_name("run_autograder.py")
# What run_autograder waits for: Gradescope's own limit is set in its settings page (40 min by default).
GRADE_TIMEOUT_S = 1800
POLL_S = 5

SETUP_SH = """#!/usr/bin/env bash
# Gradescope runs this once, building the autograder's image: run_autograder needs only
# Python 3's standard library, so nothing else is installed.
set -euo pipefail
if ! command -v python3 >/dev/null; then
  apt-get update && apt-get install -y --no-install-recommends python3
fi
# The settings hold the course key: readable by their owner only.
chmod 0600 /autograder/source/cudalab_gradescope.json
"""


def check_server(url: str) -> str:
    """The service's base URL, refused in a sentence unless it is http(s)://host[:port][/path]."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise UsageError(f"--server {url!r} is not the course service's address: give it as "
                         "https://host[:port], as students reach it.")
    return url.rstrip("/")


def settings(config: Config, lab: LabSpec, server: str, course_key: str) -> dict:
    return {"server": check_server(server), "lab": lab.name, "course_key": course_key,
            "files": list(handin.accepted_names(lab)), "max_file_bytes": lab.max_file_bytes,
            "grade_timeout_s": GRADE_TIMEOUT_S, "poll_s": POLL_S, "request_timeout_s": 30}


def _add(archive: zipfile.ZipFile, name: str, data: bytes, mode: int) -> None:
    info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
    info.external_attr = (stat.S_IFREG | mode) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    archive.writestr(info, data)


def write_bundle(config: Config, lab: LabSpec, course_folder: Path, server: str, out: Path) -> Path:
    """The bundle for `lab` at `out` (a .zip, written whole or not at all, mode 0600)."""
    if out.suffix.lower() != ".zip":
        raise UsageError(f"--out {out} must end in .zip: Gradescope takes the autograder as a zip file.")
    if not (Path(course_folder) / COURSE_FILE).is_file():
        raise UsageError(f"{course_folder} has no {COURSE_FILE}: give the course's folder with --course.")
    body = settings(config, lab, server, read_course_key(course_folder))
    out.parent.mkdir(parents=True, exist_ok=True)
    temp = out.with_name(f".{out.name}.partial")
    temp.unlink(missing_ok=True)
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as handle, zipfile.ZipFile(handle, "w") as archive:
            _add(archive, "setup.sh", SETUP_SH.encode(), 0o755)
            _add(archive, "run_autograder", RUN_AUTOGRADER.read_bytes(), 0o755)
            _add(archive, SETTINGS, (json.dumps(body, indent=2) + "\n").encode(), 0o600)
        temp.replace(out)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    return out
