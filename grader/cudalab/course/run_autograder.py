#!/usr/bin/env python3
"""Gradescope's run_autograder for a cudalab course (written into the bundle by
`cudalab course gradescope`): it forwards the student's submission to the course service,
which grades it on the course's GPU as `cudalab grade` does, and writes the results.json
Gradescope shows.

It needs only Python 3's standard library, since Gradescope's image has no cudalab: it
packs the lab's files from the submission the way `cudalab pack` does (plain files only,
no links, each within its size limit), posts them with the course key and the submitter's
email and student id, polls the job, and fetches the service's results.json. On any failure
(the service down, a timeout, an answer it cannot read) it still writes a results.json that
says what happened and that the student is not at fault, so Gradescope never shows a crash.

Paths: everything is under /autograder, or under $CUDALAB_AUTOGRADER_ROOT when set (tests).
The bundle's settings (server, lab, course key, file names) are in
source/cudalab_gradescope.json, readable only by its owner.
"""
from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import stat
import sys
import tarfile
import time
import urllib.error
import urllib.request
from pathlib import Path

SETTINGS = "cudalab_gradescope.json"
MANIFEST_NAME = "cudalab-manifest.json"
NOT_YOUR_FAULT = ("This is not a problem with your code: your submission was not graded. Submit again in a "
                  "few minutes; if it keeps happening, tell your instructor (the message above says why).")


class ForwardError(Exception):
    """Why the submission could not be graded, in a sentence for the student."""


def root() -> Path:
    return Path(os.environ.get("CUDALAB_AUTOGRADER_ROOT", "/autograder"))


def write_results(results: dict) -> Path:
    folder = root() / "results"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "results.json"
    temp = folder / ".results.json.partial"
    temp.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    temp.replace(path)
    return path


def failure_results(why: str) -> dict:
    return {"score": 0, "output": f"{why}\n\n{NOT_YOUR_FAULT}", "visibility": "visible",
            "stdout_visibility": "visible"}


def read_settings() -> dict:
    path = root() / "source" / SETTINGS
    try:
        settings = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ForwardError(f"The autograder's settings ({path}) cannot be read ({err}): the course's bundle is "
                           "damaged; the instructor must upload it again.") from None
    for key in ("server", "lab", "course_key", "files"):
        if key not in settings:
            raise ForwardError(f"The autograder's settings ({path}) have no '{key}': the course's bundle is "
                               "damaged; the instructor must upload it again.")
    return settings


def submitter() -> dict:
    """The submitter's email and student id from Gradescope's submission_metadata.json."""
    path = root() / "submission_metadata.json"
    try:
        users = json.loads(path.read_text(encoding="utf-8")).get("users") or []
    except (OSError, ValueError, AttributeError) as err:
        raise ForwardError(f"Gradescope's submission_metadata.json cannot be read ({err}), so the course service "
                           "cannot tell whose submission this is.") from None
    if not users or not isinstance(users[0], dict):
        raise ForwardError("Gradescope's submission_metadata.json names no submitter, so the course service cannot "
                           "tell whose submission this is.")
    if len(users) > 1:
        raise ForwardError("This is a group submission; the course grades each student's own submission. Submit "
                           "alone.")
    user = users[0]
    return {"email": str(user.get("email") or ""), "id": str(user.get("sid") or "")}


def _lab_folder(submission: Path, files: list[str]) -> Path:
    """Where the lab's files are: the submission's top, or the one folder they were zipped in."""
    if any((submission / name).is_file() for name in files):
        return submission
    inner = [p for p in submission.iterdir() if p.is_dir() and not p.is_symlink()] if submission.is_dir() else []
    if len(inner) == 1 and any((inner[0] / name).is_file() for name in files):
        return inner[0]
    return submission


def pack(settings: dict, student: str) -> bytes:
    """The lab's files from the submission as a .tar.gz like `cudalab pack` writes: plain
    files only (a link is never followed), each within its size limit, with a manifest."""
    submission = root() / "submission"
    folder = _lab_folder(submission, settings["files"])
    limit = int(settings.get("max_file_bytes") or 1 << 20)
    members: dict[str, bytes] = {}
    for name in settings["files"]:
        path = folder / name
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(info.st_mode):
            raise ForwardError(f"{name} in your submission is not a plain file (a link or a folder); submit the "
                               "file itself.")
        if info.st_size > limit:
            raise ForwardError(f"{name} in your submission is {info.st_size} bytes, over the lab's limit of "
                               f"{limit}; submit the lab's source files only.")
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as handle:
            members[name] = handle.read(limit + 1)[:limit]
    if not members:
        raise ForwardError(f"Your submission has none of the lab's files ({', '.join(settings['files'])}) at its "
                           "top level; submit those files.")
    manifest = {"schema": "cudalab.handin-manifest/1", "lab": settings["lab"],
                "files": [{"name": n, "bytes": len(d), "sha256": hashlib.sha256(d).hexdigest()}
                          for n, d in sorted(members.items())],
                "student": student, "packed_by": "gradescope"}
    members[MANIFEST_NAME] = (json.dumps(manifest, indent=2) + "\n").encode()
    now = int(time.time())
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=now) as zipped:
        with tarfile.open(fileobj=zipped, mode="w", format=tarfile.PAX_FORMAT) as archive:
            for name, data in members.items():
                info = tarfile.TarInfo(name)
                info.size, info.mode, info.mtime = len(data), 0o644, now
                info.uid = info.gid = 0
                archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def call(settings: dict, method: str, path: str, body: bytes | None = None, headers: dict | None = None) -> dict:
    """One request to the course service; its JSON answer, or ForwardError saying what failed."""
    url = settings["server"].rstrip("/") + path
    request = urllib.request.Request(url, data=body, method=method, headers={
        "Authorization": f"Bearer {settings['course_key']}", "Accept": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=float(settings.get("request_timeout_s", 30))) as answer:
            text = answer.read(1 << 22)
    except urllib.error.HTTPError as err:
        try:
            said = json.loads(err.read(1 << 16)).get("error")
        except (ValueError, AttributeError, OSError):
            said = None
        raise ForwardError(f"The course service refused the request ({err.code}{': ' + said if said else ''}).") \
            from None
    except (urllib.error.URLError, OSError) as err:
        reason = getattr(err, "reason", err)
        raise ForwardError(f"The course service at {settings['server']} could not be reached ({reason}).") from None
    try:
        data = json.loads(text)
    except ValueError:
        raise ForwardError(f"The course service answered {method} {path} with something that is not JSON.") from None
    if not isinstance(data, dict):
        raise ForwardError(f"The course service answered {method} {path} with JSON that is not an object.")
    return data


def forward() -> dict:
    settings = read_settings()
    who = submitter()
    archive = pack(settings, who["id"] or who["email"])
    headers = {"Content-Type": "application/gzip"}
    if who["email"]:
        headers["X-Cudalab-Student-Email"] = who["email"]
    if who["id"]:
        headers["X-Cudalab-Student-Id"] = who["id"]
    started = call(settings, "POST", f"/api/v1/gradescope/{settings['lab']}", archive, headers)
    job = started.get("job")
    if isinstance(job, bool) or not isinstance(job, int):
        raise ForwardError("The course service took the submission but named no job to follow.")
    waited_until = time.monotonic() + float(settings.get("grade_timeout_s", 1800))
    poll_s = float(settings.get("poll_s", 5))
    while True:
        state = call(settings, "GET", f"/api/v1/jobs/{job}").get("state")
        if state == "done":
            break
        if state == "grader_failed":
            raise ForwardError(f"The course service's grader failed on this submission (job {job}).")
        if state not in ("queued", "running"):
            raise ForwardError(f"The course service says job {job} is {state!r}, which this autograder does not know.")
        if time.monotonic() > waited_until:
            raise ForwardError(f"The course service did not finish grading job {job} within "
                               f"{settings.get('grade_timeout_s', 1800)} s (its queue may be long).")
        time.sleep(poll_s)
    results = call(settings, "GET", f"/api/v1/jobs/{job}/gradescope")
    if not ("score" in results or isinstance(results.get("tests"), list)):
        raise ForwardError(f"The course service's results for job {job} have neither a score nor tests.")
    return results


def main() -> int:
    try:
        results = forward()
    except ForwardError as err:
        results = failure_results(str(err))
    except Exception as err:  # a bug here must still leave Gradescope a result, not a crash
        results = failure_results(f"The autograder failed ({type(err).__name__}: {err}).")
    path = write_results(results)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
