"""What `cudalab pack` does (the verb and its help are commands/pack.py): take a lab's files
from a student's folder, leaving the rest out and naming it, check them as a hand-in, and
write the archive with its manifest.
"""
from __future__ import annotations

import functools
import gzip
import io
import json
import shutil
import subprocess
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import __version__
from . import check, handin
from ..outputs import report
from ..config import Config
from ..errors import SubmissionError
from ..lab.labspec import LabSpec
from ..isolation.runner import scratch_dir
from ..isolation.trees import remove_tree

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
        "schema": handin.MANIFEST_SCHEMA,
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
    listing = handin.top_level(folder)
    missing, _ = handin.required_file_findings(listing, spec)
    taken.problems += [f.message for f in missing]
    present = {entry.name for entry in listing.entries}
    for name in handin.accepted_names(spec):
        if name not in present:
            continue
        limit = spec.max_file_bytes if name in spec.files else config.handin_max_file_bytes
        try:
            taken.files[name] = handin.read_plain_file(folder / name, limit)
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
    staged_root = scratch_dir(config, f"pack-{spec.name}")
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
