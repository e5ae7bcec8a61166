"""`cudalab build`: build the official tree, or a submission against it.

A submission is staged first: only the files lab.toml lists are copied (no symlinks, none
over the size limit) into a fresh folder, so a hand-in never brings its own build files.
Then cmake/submission builds it with the official harness: `<dir>/<lab>_submission`.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path

from . import console, labs
from .config import Config, MIB
from .errors import CompileError, GraderError, SubmissionError
from .labspec import LabSpec
from .sandbox import ProcessResult, run_process

_BUILD_LOG_CAP = 4 * MIB
_ERROR = re.compile(r"error|undefined reference|multiple definition", re.IGNORECASE)
_NOISE = re.compile(r"^(\[\d+/\d+\]|FAILED:|ninja: )|\s-c\s.*\s-o\s|\s-o\s.*\s-c\s")


@dataclass
class StagedSubmission:
    folder: Path
    copy_dir: Path
    copied: list[str]
    ignored: list[str] = field(default_factory=list)


@dataclass
class SubmissionBuild:
    binary: Path
    staged: StagedSubmission
    log: str


# --- staging --------------------------------------------------------------------------

def _read_hand_in_file(path: Path, limit: int) -> bytes:
    """Read one required file without following a symlink, refusing anything over `limit`."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)  # a FIFO must not hang us
    except OSError as err:
        if path.is_symlink():
            raise SubmissionError(f"{path} is a symbolic link. Hand in the file itself, "
                                  "not a link to it.") from None
        raise SubmissionError(f"{path} cannot be read ({err.strerror}).") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise SubmissionError(f"{path} is not a plain file. Hand in the source file itself.")
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise SubmissionError(f"{path} is larger than the lab's limit of {limit} bytes. "
                              "Hand in the source only (no data, no generated code).")
    return data


def stage_submission(spec: LabSpec, folder: Path, dest: Path) -> StagedSubmission:
    """Copy exactly the lab's files from `folder` into `dest` (created fresh)."""
    folder = Path(folder)
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise SubmissionError(f"The submission folder {folder} {what}. Give the folder that "
                              f"holds {', '.join(spec.files)}.")
    missing = [name for name in spec.files
               if not (folder / name).exists() and not (folder / name).is_symlink()]
    if missing:
        raise SubmissionError(f"The submission folder {folder} has no {' or '.join(missing)}. "
                              f"The {spec.name} lab needs exactly these files: "
                              f"{', '.join(spec.files)}.")
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for name in spec.files:
        (dest / name).write_bytes(_read_hand_in_file(folder / name, spec.max_file_bytes))
    ignored = sorted(entry.name + ("/" if entry.is_dir() else "")
                     for entry in folder.iterdir() if entry.name not in spec.files)
    return StagedSubmission(folder.resolve(), dest, list(spec.files), ignored)


# --- compiler feedback ------------------------------------------------------------------

def compile_feedback(log: str, files: tuple[str, ...] | list[str], copy_dir: Path,
                     max_lines: int) -> list[str]:
    """The compiler's lines about the student's files (with the context lines indented under
    them), paths shortened to the bare file name; failing that, the error lines; failing
    that, the end of the log."""
    text = log.replace(f"{copy_dir}/", "")
    lines = [line for line in text.splitlines() if not _NOISE.search(line)]
    kept: list[str] = []
    in_block = False
    for line in lines:
        if any(name in line for name in files):
            kept.append(line)
            in_block = True
        elif in_block and (line.startswith((" ", "\t")) or not line.strip()):
            kept.append(line)
        else:
            in_block = False
    if not kept:  # a link error names no source file: keep what the linker says
        kept = [line for line in lines if _ERROR.search(line)]
    if not kept:
        kept = lines[-max_lines:]
    while kept and not kept[-1].strip():
        kept.pop()
    return kept[:max_lines]


# --- running CMake ------------------------------------------------------------------------

def _cmake(config: Config, args: list[str], cwd: Path | None = None) -> ProcessResult:
    console.info("$ cmake " + " ".join(args))
    return run_process(["cmake", *args], timeout_s=config.build_timeout_s,
                       output_cap_bytes=_BUILD_LOG_CAP, cwd=cwd or config.root)


def _log(result: ProcessResult) -> str:
    return result.stdout + result.stderr


def _tail(result: ProcessResult, lines: int = 40) -> str:
    return "\n".join(_log(result).strip().splitlines()[-lines:])


def _has_build_preset(config: Config) -> bool:
    presets = config.root / "CMakePresets.json"
    try:
        data = json.loads(presets.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return any(p.get("name") == config.preset for p in data.get("buildPresets", []))


def build_official(config: Config) -> None:
    """Configure (when needed) and build the official tree with the config's preset."""
    default_dir = (config.root / "build" / config.preset).resolve()
    if not (config.build_dir / "CMakeCache.txt").is_file():
        console.info(f"Configuring the official build in {config.build_dir} (preset {config.preset})")
        args = ["--preset", config.preset]
        if config.build_dir != default_dir:
            args += ["-B", str(config.build_dir)]
        result = _cmake(config, args)
        if result.exit_code != 0:
            raise GraderError(f"Configuring the official build with preset '{config.preset}' "
                              f"failed ({result.describe()}):\n{_tail(result)}")
    console.info(f"Building the official tree in {config.build_dir}")
    if config.build_dir == default_dir and _has_build_preset(config):
        result = _cmake(config, ["--build", "--preset", config.preset])
    else:
        result = _cmake(config, ["--build", str(config.build_dir)])
    if result.exit_code != 0:
        raise GraderError(f"Building the official tree {config.build_dir} failed "
                          f"({result.describe()}):\n{_tail(result)}")


def ensure_official(config: Config, spec: LabSpec,
                    implementations: tuple[str, ...] = ("solution", "checker"),
                    rebuild: bool = True) -> None:
    """Make sure the lab's official binaries exist (by default its reference solution and
    checker). A configured tree is brought up to date (a no-op build when nothing changed);
    a prebuilt tree without a CMake cache is used as it is."""
    needed = [labs.official_binary(config, spec.name, impl) for impl in implementations]
    configured = (config.build_dir / "CMakeCache.txt").is_file()
    if (configured and rebuild) or not all(p.is_file() for p in needed):
        build_official(config)
    missing = [str(p) for p in needed if not p.is_file()]
    if missing:
        raise GraderError(f"The official build has no {' or '.join(missing)}: the {spec.name} "
                          "lab's targets were not built.")


def build_submission(config: Config, spec: LabSpec, folder: Path, work: Path) -> SubmissionBuild:
    """Stage `folder` into work/src and build it in work/build against the official tree."""
    staged = stage_submission(spec, folder, work / "src")
    for name in staged.ignored:
        console.warn(f"ignored {name}: the {spec.name} lab only takes {', '.join(spec.files)}")
    exports = config.build_dir / "cudalab-exports.cmake"
    if not exports.is_file():
        raise GraderError(f"The official build tree {config.build_dir} has no "
                          "cudalab-exports.cmake; build it first with `cudalab build`.")
    build_dir = work / "build"
    if build_dir.exists():
        shutil.rmtree(build_dir)
    configure = _cmake(config, ["-S", str(config.root / "cmake" / "submission"), "-B",
                                str(build_dir), "-G", "Ninja",
                                f"-DCUDALAB_OFFICIAL_BUILD={config.build_dir}",
                                f"-DCUDALAB_LAB={spec.name}",
                                f"-DCUDALAB_SUBMISSION_DIR={staged.copy_dir}"])
    if configure.exit_code != 0:
        raise GraderError(f"Configuring the submission build failed ({configure.describe()}):\n"
                          f"{_tail(configure)}")
    console.info(f"Compiling {', '.join(spec.files)}")
    result = _cmake(config, ["--build", str(build_dir)])
    log = _log(configure) + _log(result)
    if result.exit_code != 0:
        if result.timed_out:
            raise GraderError(f"Compiling the submission took longer than "
                              f"{config.build_timeout_s:g} s and was stopped.")
        feedback = compile_feedback(_log(result), spec.files, staged.copy_dir,
                                    config.compile_feedback_lines)
        raise CompileError(f"{' and '.join(spec.files)} did not compile against the official "
                           f"{spec.name} harness. Fix the first error below, then build again.",
                           feedback)
    binary = build_dir / f"{spec.name}_submission"
    if not binary.is_file():
        raise GraderError(f"The submission build succeeded but made no {binary}.")
    return SubmissionBuild(binary, staged, log)


def submission_work_dir(config: Config, lab: str, folder: Path) -> Path:
    return config.work_dir / lab / Path(folder).resolve().name


# --- the verb ---------------------------------------------------------------------------

def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("lab", nargs="?", help="a lab name; without it, build the whole official tree")
    parser.add_argument("folder", nargs="?", type=Path,
                        help="a submission folder to build against the official tree")


def main(args: argparse.Namespace, config: Config) -> int:
    report: dict = {"schema": "cudalab.build/1", "preset": config.preset,
                    "official_build": str(config.build_dir)}
    if args.lab is None:
        build_official(config)
    else:
        spec = labs.load_lab(config, args.lab)
        report["lab"] = spec.name
        ensure_official(config, spec)
        if args.folder is not None:
            built = build_submission(config, spec, args.folder,
                                     submission_work_dir(config, spec.name, args.folder))
            report.update(binary=str(built.binary), copied=built.staged.copied,
                          ignored=built.staged.ignored)
    report["status"] = "built"
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        console.info("Built." + (f" Binary: {report['binary']}" if "binary" in report else ""))
    return 0
