"""What `cudalab pack` makes (the verb and its help are commands/pack.py): a hand-in
archive's members, its manifest and the toolchain it records.
"""
from __future__ import annotations

import functools
import gzip
import io
import shutil
import subprocess
import tarfile
import time
from pathlib import Path

from . import __version__, check, handin, report


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
