"""A lab's SDK, and the manifest of the official build.

The SDK of a lab (``build/<preset>/sdk/<lab>/``) is everything a submission is built
against, and nothing more: labkit's headers and the lab's API header (``include/``), the
official objects in link order (``objects/``: the harness with ``main`` first, then the
lab's problem and labkit; no CPU reference), ``symbols.json`` (the index the symbol check
reads), ``sdk.cmake`` (what ``cmake/submission`` includes) and ``build.json``: the compile
and link commands CMake generates for a submission (cmake/submission, configured once
here), with the sandbox's fixed paths in them, so a submission is built with exactly the
solution's flags and needs only the compilers inside the sandbox, not CMake. The grader's sandbox shows a
submission's build this folder and not the repository, so no solution, no other
submission and no reference source is within reach of an ``#include``.

The manifest (``build/<preset>/official-manifest.json``, and ``manifests/<target>.json``
that each official target writes when it is built) holds a SHA-256 of every official
binary and SDK file, written by the build; the grader checks a file against it before
every use, a second line of defence behind the sandbox.

CMake runs ``python3 -m cudalab.building.sdk assemble ...`` and ``... manifest ...`` at build time,
so this module uses the standard library only.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Sequence

MANIFEST_SCHEMA = "cudalab.manifest/1"
MANIFEST_NAME = "official-manifest.json"
MANIFEST_RECORDS = "manifests"  # one record per official target, written when it is built


class ManifestError(Exception):
    """An official file is missing from the manifest or differs from what the build made."""


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _write_atomically(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


# --- assembling an SDK ------------------------------------------------------------------

def _cmake_quote(path: str) -> str:
    return '"' + path.replace("\\", "/").replace('"', '\\"') + '"'


# Where a submission build sees its pieces inside the grader's sandbox.
INSIDE_SDK, INSIDE_SOURCES, INSIDE_BUILD = "/cudalab/sdk", "/cudalab/src", "/cudalab/build"


def _submission_commands(lab: str, sdk: Path, root: Path, cmake: str, ninja: str, source_name: str) -> dict:
    """Configure cmake/submission once, over a placeholder source, and read back the commands
    that compile the student's file and link the program, moved to the sandbox's paths."""
    with tempfile.TemporaryDirectory(prefix=f"cudalab-sdk-{lab}-") as scratch:
        sources, build = Path(scratch) / "src", Path(scratch) / "build"
        sources.mkdir()
        (sources / source_name).write_text("// placeholder\n")
        subprocess.run([cmake, "-S", str(root / "cmake" / "submission"), "-B", str(build), "-G", "Ninja",
                        f"-DCUDALAB_SDK={sdk}", f"-DCUDALAB_SOURCE={sources / source_name}"],
                       check=True, capture_output=True, text=True)

        def commands(target: str) -> list[str]:
            done = subprocess.run([ninja, "-C", str(build), "-t", "commands", target],
                                  check=True, capture_output=True, text=True)
            return [line for line in done.stdout.splitlines() if line.strip()]

        def inside(command: str) -> str:
            for host, moved in ((str(build), INSIDE_BUILD), (str(sdk), INSIDE_SDK), (str(sources), INSIDE_SOURCES)):
                command = command.replace(host, moved)
            if scratch in command:
                raise RuntimeError(f"a submission command still names {scratch}: {command}")
            return command

        compile_command = inside(commands("submission_impl")[-1])
        link_command = inside(commands("submission")[-1])
        words = shlex.split(compile_command)
        obj = words[words.index("-o") + 1]
    return {"cwd": INSIDE_BUILD, "compile": compile_command, "object": obj, "link": link_command,
            "binary": f"{lab}_submission"}


def assemble(lab: str, out: Path, *, architectures: str, build_type: str, api_header: Path,
             headers: Sequence[Path], objects: Sequence[Path], root: Path, cmake: str, ninja: str,
             source_name: str) -> None:
    """Build the SDK in a fresh folder beside `out`, then put it in place: the folder
    appears whole or not at all."""
    from ..intake import symbols  # the symbol index (standard library only, like this module)

    staging = out.with_name(out.name + ".staging")
    shutil.rmtree(staging, ignore_errors=True)
    (staging / "include" / "labkit").mkdir(parents=True)
    (staging / "objects").mkdir()
    for header in headers:
        shutil.copy2(header, staging / "include" / "labkit" / Path(header).name)
    shutil.copy2(api_header, staging / "include" / Path(api_header).name)
    copied = []
    for index, obj in enumerate(objects):
        target = staging / "objects" / f"{index:02d}-{Path(obj).name}"
        shutil.copy2(obj, target)
        copied.append(target)
    # Each copy is labelled by where its original came from, for the sentences a student reads.
    labelled = [(copy, "labkit" if "labkit" in Path(original).parts else "the lab library")
                for copy, original in zip(copied, objects)]
    index_data = symbols.build_index(
        harness_main=copied[0], official_objects=labelled[1:],
        runtime_archives=symbols.default_runtime_archives(),
        shared_libraries=symbols.default_shared_libraries())
    (staging / "symbols.json").write_text(json.dumps(index_data.to_json(), indent=1), encoding="utf-8")
    relative = [f"${{CMAKE_CURRENT_LIST_DIR}}/objects/{p.name}" for p in copied]
    (staging / "sdk.cmake").write_text(
        f"# Written by the official build (python3 -m cudalab.building.sdk): what a {lab} submission is\n"
        "# compiled and linked against. Paths are relative to this file, so the SDK can be\n"
        "# mounted anywhere (the grader's sandbox mounts it at /cudalab/sdk).\n"
        f"set(CUDALAB_SDK_LAB {_cmake_quote(lab)})\n"
        f"set(CUDALAB_SDK_ARCHITECTURES {_cmake_quote(architectures)})\n"
        f"set(CUDALAB_SDK_BUILD_TYPE {_cmake_quote(build_type)})\n"
        "set(CUDALAB_SDK_INCLUDE_DIR \"${CMAKE_CURRENT_LIST_DIR}/include\")\n"
        "set(CUDALAB_SDK_OBJECTS\n" + "".join(f"  \"{r}\"\n" for r in relative) + ")\n",
        encoding="utf-8")
    build_commands = _submission_commands(lab, staging, root, cmake, ninja, source_name)
    (staging / "build.json").write_text(json.dumps(build_commands, indent=1) + "\n", encoding="utf-8")
    shutil.rmtree(out, ignore_errors=True)
    os.replace(staging, out)


# --- the manifest -----------------------------------------------------------------------

def _official_files(files: Sequence[Path]) -> list[Path]:
    """The files themselves; for an SDK (named by its sdk.cmake), every file in it."""
    found: list[Path] = []
    for path in map(Path, files):
        if path.name == "sdk.cmake":
            found += sorted(p for p in path.parent.rglob("*") if p.is_file())
        else:
            found.append(path)
    return found


def write_manifest(out: Path, root: Path, files: Sequence[Path]) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    entries = {}
    for path in _official_files(files):
        entries[Path(os.path.relpath(path, root)).as_posix()] = sha256_file(path)
    _write_atomically(out, json.dumps({"schema": MANIFEST_SCHEMA, "files": entries}, indent=1) + "\n")


class Manifest:
    """The official build's manifest, read once; `verify(path)` before every use."""

    def __init__(self, build_dir: Path):
        self.build_dir = Path(build_dir)
        self.files: dict[str, str] = {}
        # The whole build's manifest, then each target's own record (written whenever that
        # target is built, so never older than the whole build's): a build of one lab's
        # targets alone is checked against the records it left.
        records = self.build_dir / MANIFEST_RECORDS
        sources = [p for p in [self.build_dir / MANIFEST_NAME] if p.is_file()]
        sources += sorted(records.glob("*.json")) if records.is_dir() else []
        if not sources:
            raise ManifestError(f"The official build in {self.build_dir} has no {MANIFEST_NAME} and no "
                                f"{MANIFEST_RECORDS}/: build it again with `cudalab build`.")
        for path in sources:
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as err:
                raise ManifestError(f"The official build's {path} cannot be read ({err}); "
                                    "build it again with `cudalab build`.") from None
            if not isinstance(data, dict) or data.get("schema") != MANIFEST_SCHEMA \
                    or not isinstance(data.get("files"), dict):
                raise ManifestError(f"{path} is not a {MANIFEST_SCHEMA} manifest; build the official "
                                    "tree again with `cudalab build`.")
            self.files.update(data["files"])

    def verify(self, path: Path) -> None:
        """Raise ManifestError unless `path` is an official file with its recorded hash."""
        key = Path(os.path.relpath(Path(path).resolve(), self.build_dir.resolve())).as_posix()
        wanted = self.files.get(key)
        if wanted is None:
            raise ManifestError(f"{path} is not recorded in the official build's manifest; "
                                "build the official tree again with `cudalab build`.")
        try:
            got = sha256_file(path)
        except OSError as err:
            raise ManifestError(f"The official file {path} cannot be read ({err.strerror}).") from None
        if got != wanted:
            raise ManifestError(f"The official file {path} is not the one the build made (its SHA-256 "
                                "changed). Nothing was graded with it: rebuild the official tree and "
                                "find out what modified it.")

    def verify_tree(self, folder: Path) -> None:
        """Verify every recorded file under `folder` (an SDK) and that it holds no others."""
        folder = Path(folder).resolve()
        prefix = Path(os.path.relpath(folder, self.build_dir.resolve())).as_posix() + "/"
        recorded = {k for k in self.files if k.startswith(prefix)}
        if not recorded:
            raise ManifestError(f"{folder} is not recorded in the official build's manifest; build the "
                                "official tree again with `cudalab build`.")
        present = {Path(os.path.relpath(p, self.build_dir.resolve())).as_posix()
                   for p in folder.rglob("*") if p.is_file()}
        extra = sorted(present - recorded)
        if extra:
            raise ManifestError(f"{folder} holds files the build did not make ({', '.join(extra[:3])}).")
        for key in sorted(recorded):
            self.verify(self.build_dir / key)


# --- command line (for CMake) ---------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m cudalab.building.sdk", description=__doc__.splitlines()[0])
    verbs = parser.add_subparsers(dest="verb", required=True)
    a = verbs.add_parser("assemble", help="assemble a lab's SDK")
    a.add_argument("--lab", required=True)
    a.add_argument("--out", type=Path, required=True)
    a.add_argument("--architectures", required=True)
    a.add_argument("--build-type", default="")
    a.add_argument("--api-header", type=Path, required=True)
    a.add_argument("--headers", type=Path, nargs="+", required=True)
    a.add_argument("--objects", type=Path, nargs="+", required=True)
    a.add_argument("--root", type=Path, required=True, help="the repository (for cmake/submission)")
    a.add_argument("--cmake", required=True, help="the cmake program of the official build")
    a.add_argument("--ninja", required=True, help="its ninja program")
    a.add_argument("--source-name", required=True, help="the student's .cu file name")
    m = verbs.add_parser("manifest", help="write the official build's manifest")
    m.add_argument("--out", type=Path, required=True)
    m.add_argument("--root", type=Path, required=True)
    m.add_argument("--files", type=Path, nargs="+", required=True)
    args = parser.parse_args(argv)
    try:
        if args.verb == "assemble":
            assemble(args.lab, args.out, architectures=args.architectures, build_type=args.build_type,
                     api_header=args.api_header, headers=args.headers, objects=args.objects, root=args.root,
                     cmake=args.cmake, ninja=args.ninja, source_name=args.source_name)
        else:
            write_manifest(args.out, args.root, args.files)
    except subprocess.CalledProcessError as err:
        print(f"cudalab.building.sdk {args.verb}: {' '.join(err.cmd)} failed:\n{err.stdout}{err.stderr}", file=sys.stderr)
        return 1
    except (OSError, ValueError, RuntimeError) as err:
        print(f"cudalab.building.sdk {args.verb}: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
