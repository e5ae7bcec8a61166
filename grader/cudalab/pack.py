"""`cudalab pack`: make the hand-in archive (.tar.gz) of a lab from a folder.

The archive holds exactly the files lab.toml names (and README.md where the lab takes
written answers), plus cudalab-manifest.json: the lab, each file's sha256 and size, the
cudalab version, the toolchain, the time and, with --student, who handed it in. Pack takes
those files from the folder and leaves everything else there out (its own earlier archive,
.git/, notes, an editor's folder), saying in one line what it left out; it warns about a
file that is still the starter as shipped. It then runs the checks that would reject the
hand-in (files, compile, symbols, forbidden libraries) on the files it took, and refuses,
saying why, when one fails; `cudalab check ARCHIVE` checks the archive itself, smoke run
and compute-sanitizer included.
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
from dataclasses import dataclass, field
from pathlib import Path

from . import __version__, build, check, console, handin, labs, report
from .config import Config
from .errors import SubmissionError, UsageError
from .exit_codes import Cli
from .labspec import LabSpec
from .runner import fresh_dir
from .sandbox import scratch_root
from .trees import remove_tree

# A student id `pack --student` takes. It names the archive (<lab>-<id>.tar.gz: the name `batch`
# takes the id from) and is recorded in the manifest, where `batch` only compares it with that id.
STUDENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")
# Names of the folder looked at (for the near miss of a misnamed file and the left-out line).
_LISTED = 1000
_LEFT_OUT_SHOWN = 12
# Why the receipt of a pack skips the smoke run (pack builds; the check of the archive runs).
_NOT_RUN_BY_PACK = "pack only builds; `cudalab check` on the archive runs it"


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


@dataclass
class Taken:
    """What pack takes from a folder: the lab's files, what it leaves out, and why it cannot
    pack (nothing is packed when `problems` is not empty)."""

    files: dict[str, bytes] = field(default_factory=dict)  # lab name -> contents
    left_out: list[str] = field(default_factory=list)      # other names there; folders end in '/'
    problems: list[str] = field(default_factory=list)
    untouched: list[str] = field(default_factory=list)     # files still the starter as shipped


@dataclass
class Packed:
    taken: Taken
    receipt: dict | None = None  # None when the lab's files could not be taken
    archive: Path | None = None  # None: nothing was packed
    sha256: str | None = None
    replaced: bool = False       # an earlier archive at that path was replaced


def _is_own_archive(folder: Path, name: str, out: Path) -> bool:
    """Whether `name` in `folder` is the archive this pack writes (or its partial file)."""
    try:
        same_folder = out.resolve().parent == folder.resolve()
    except OSError:
        return False
    return same_folder and name in (out.name, f".{out.name}.partial")


def take_lab_files(config: Config, spec: LabSpec, folder: Path, out: Path) -> Taken:
    """The lab's files from the top of `folder` (read without following links, within their
    limits); the other names there, left out; and, for a lab file that is not there, check's
    sentence for it (did you mean vector_add.cu?)."""
    taken = Taken()
    listing = handin.top_level(folder, _LISTED)
    missing, _ = handin.required_file_findings(listing, spec)
    taken.problems += [f.message for f in missing]
    present = {entry.name for entry in listing.entries}
    for name in handin.accepted_names(spec):
        if name not in present:
            continue
        limit = spec.max_file_bytes if name in spec.files else config.handin_max_file_bytes
        try:
            taken.files[name] = build.read_hand_in_file(folder / name, limit)
        except SubmissionError as err:
            taken.problems.append(str(err))
            continue
        shipped = config.root / "starter" / spec.name / name
        if shipped.is_file() and _same_text(shipped.read_bytes(), taken.files[name]):
            taken.untouched.append(name)
    taken.left_out = [entry.name for entry in listing.entries
                      if entry.name not in handin.accepted_names(spec) and not _is_own_archive(folder, entry.name, out)]
    return taken


def _same_text(a: bytes, b: bytes) -> bool:
    """Equal but for line endings (an editor on Windows may have saved the starter again)."""
    return a.replace(b"\r\n", b"\n") == b.replace(b"\r\n", b"\n")


def pack_folder(config: Config, spec: LabSpec, folder: Path, out: Path, student: str | None) -> Packed:
    """Take the lab's files from `folder`, check them as a hand-in (without running them) and,
    when they would be accepted, write them and the manifest to `out`, replacing an earlier
    archive there."""
    packed = Packed(take_lab_files(config, spec, folder, out))
    if packed.taken.problems:
        return packed
    staged_root = fresh_dir(scratch_root(config), f"pack-{spec.name}")
    try:
        staged = staged_root / "hand-in"
        staged.mkdir()
        for name, data in packed.taken.files.items():
            (staged / name).write_bytes(data)
        packed.receipt = check.check_hand_in(config, staged, spec.name, run=False, not_run_because=_NOT_RUN_BY_PACK)
    finally:
        if not config.keep_temp:
            remove_tree(staged_root)
    packed.receipt["hand_in"]["path"] = str(folder)  # the folder the student named, not the grader's copy
    if not packed.receipt["accepted"]:
        return packed
    files = packed.taken.files
    members = dict(sorted(files.items()))
    members[check.MANIFEST] = (json.dumps(manifest(spec, files, student), indent=2) + "\n").encode()
    packed.replaced = out.is_file()
    write_archive(out, members)
    packed.archive, packed.sha256 = out, handin.sha256_file(out)
    return packed


def left_out_line(spec: LabSpec, left_out: list[str]) -> str:
    shown = ", ".join(left_out[:_LEFT_OUT_SHOWN])
    if len(left_out) > _LEFT_OUT_SHOWN:
        shown += f" and {len(left_out) - _LEFT_OUT_SHOWN} more"
    return f"Left out (not part of the {spec.name} hand-in): {shown}."


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
    if out.is_dir():
        raise UsageError(f"--out {out} is a folder; give the archive's file name, ending in .tar.gz.")

    packed = pack_folder(config, spec, folder, out, args.student)
    taken = packed.taken
    if packed.receipt is None:
        console.error(f"Nothing was packed from {folder}: " + " ".join(taken.problems))
        return int(Cli.REJECTED)
    if not packed.receipt["accepted"]:
        console.text(check.render_receipt(packed.receipt))
        console.error(f"Nothing was packed: the hand-in in {folder} would not be accepted (see FAILED above).")
        return int(Cli.REJECTED)
    if args.json:
        print(json.dumps({"schema": "cudalab.pack/1", "lab": spec.name, "archive": str(out), "sha256": packed.sha256,
                          "files": sorted(taken.files), "left_out": taken.left_out,
                          "untouched_starter": taken.untouched, "receipt": packed.receipt}, indent=2))
    for message in [f["message"] for c in packed.receipt["checks"] for f in c["findings"]]:
        console.warn(message)
    for name in taken.untouched:
        console.warn(f"{name} is still the {spec.name} starter as shipped: none of your work is in it. "
                     "Pack again once you have filled in its TODOs.")
    if taken.left_out:
        console.info(left_out_line(spec, taken.left_out))
    replaced = ", replacing the earlier archive" if packed.replaced else ""
    console.info(f"Packed {', '.join(sorted(taken.files))} into {out}{replaced} (sha256 {packed.sha256}).")
    console.info(f"Hand in {out}. `cudalab check {out}` checks the archive itself, with a smoke run "
                 "where there is a GPU.")
    return int(Cli.DONE)
