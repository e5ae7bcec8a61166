"""`cudalab pack`: make the hand-in archive (.tar.gz) of a lab from a folder.

The archive holds exactly the files lab.toml names (and README.md where the lab takes
written answers), plus cudalab-manifest.json: the lab, each file's sha256 and size, the
cudalab version, the toolchain, the time and, with --student, who handed it in. Pack first
runs the checks that would reject the hand-in (files, compile, symbols, forbidden
libraries) and refuses, saying why, when one fails; `cudalab check ARCHIVE` checks the
archive itself, smoke run and compute-sanitizer included.
"""
from __future__ import annotations

import argparse
import functools
import gzip
import io
import json
import re
import shutil
import subprocess
import tarfile
import time
from pathlib import Path

from . import __version__, check, console, handin, labs, report
from .config import Config
from .errors import UsageError
from .exit_codes import Cli

# A student id `pack --student` takes. It names the archive (<lab>-<id>.tar.gz: the name `batch`
# takes the id from) and is recorded in the manifest, where `batch` only compares it with that id.
STUDENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")


def _version_lines(argv: list[str]) -> list[str]:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.strip() for line in done.stdout.splitlines() if line.strip()] if done.returncode == 0 else []


@functools.cache
def toolchain() -> dict:
    """The compilers this machine would build with, as their own version lines say."""
    nvcc = _version_lines([shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc", "--version"])
    host = _version_lines([shutil.which("c++") or shutil.which("g++") or "c++", "--version"])
    return {"nvcc": next((line for line in nvcc if "release" in line), nvcc[-1] if nvcc else None),
            "host_compiler": host[0] if host else None}


def manifest(spec, files: dict[str, bytes], student: str | None) -> dict:
    return {
        "schema": check.MANIFEST_SCHEMA,
        "lab": spec.name,
        "files": [{"name": name, "bytes": len(data), "sha256": check._sha256(data)}
                  for name, data in sorted(files.items())],
        "cudalab_version": __version__,
        "toolchain": toolchain(),
        "created_at": report.timestamp(),
        "student": student,
    }


def write_archive(path: Path, members: dict[str, bytes]) -> None:
    """A .tar.gz of plain files (mode 0644, owner 0, one mtime), written atomically."""
    now = int(time.time())
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=now) as zipped:
        with tarfile.open(fileobj=zipped, mode="w", format=tarfile.PAX_FORMAT) as archive:
            for name, data in members.items():
                info = tarfile.TarInfo(name)
                info.size, info.mode, info.mtime = len(data), 0o644, now
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                archive.addfile(info, io.BytesIO(data))
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.partial")
    temp.write_bytes(buffer.getvalue())
    temp.replace(path)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("lab", help="the lab the hand-in is for")
    parser.add_argument("folder", nargs="?", type=Path, default=Path("."),
                        help="the folder holding your files (default: the current folder)")
    parser.add_argument("--out", type=Path, help="the archive to write (default: ./<lab>[-<student>].tar.gz)")
    parser.add_argument("--student", help="your student id, recorded in the manifest")


def main(args: argparse.Namespace, config: Config) -> int:
    spec = labs.load_lab(config, args.lab)
    if args.student is not None and not STUDENT_ID.fullmatch(args.student):
        raise UsageError(f"--student {args.student!r} is not a plain id: use letters, digits, '.', '_', "
                         "'@' and '-' only (at most 64).")
    folder = Path(args.folder)
    if not folder.is_dir():
        raise UsageError(f"{folder} is not a folder. Give the folder that holds {', '.join(spec.files)}.")
    out = args.out or Path(f"{spec.name}{'-' + args.student if args.student else ''}.tar.gz")
    if not out.name.endswith((".tar.gz", ".tgz")):
        raise UsageError(f"--out {out} must end in .tar.gz or .tgz.")

    receipt = check.check_hand_in(config, folder, spec.name, run=False)
    if not receipt["accepted"]:
        console.text(check.render_receipt(receipt))
        console.error(f"Nothing was packed: the hand-in in {folder} would not be accepted (see FAILED above).")
        return int(Cli.REJECTED)
    hand_in = handin.read_hand_in(folder, spec, config)
    files = {name: entry.data for name, entry in hand_in.files().items()
             if name in handin.accepted_names(spec) and entry.data is not None}
    members = dict(sorted(files.items()))
    members[check.MANIFEST] = (json.dumps(manifest(spec, files, args.student), indent=2) + "\n").encode()
    write_archive(out, members)
    digest = handin.sha256_file(out)
    if args.json:
        print(json.dumps({"schema": "cudalab.pack/1", "lab": spec.name, "archive": str(out), "sha256": digest,
                          "files": sorted(files), "receipt": receipt}, indent=2))
    warnings = [f["message"] for c in receipt["checks"] for f in c["findings"]]
    for message in warnings:
        console.warn(message)
    console.info(f"Packed {', '.join(sorted(files))} into {out} (sha256 {digest}).")
    console.info(f"Hand in {out}. `cudalab check {out}` checks the archive itself, with a smoke run "
                 "where there is a GPU.")
    return int(Cli.DONE)
