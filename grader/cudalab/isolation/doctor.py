"""What `cudalab doctor` finds (the verb and its help are commands/doctor.py): what this
machine has for cudalab, what `run`, `check` and `grade` will therefore do here, and the
one step that fixes each gap.
"""
from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .. import console
from . import gpu
from ..lab import labs
from ..config import GIB, Config
from ..exit_codes import Cli
from .sandbox import USERNS_FIX, Sandbox, run_limits

SCHEMA = "cudalab.doctor/1"
CUDA_MAJOR = 13               # the toolkit the labs are written for (README, Requirements)
CMAKE_MINIMUM = (3, 25)
DISK_FREE_BYTES = 5 * GIB     # an official build (about 2 GiB) and a batch's scratch, with room
PYTHON_PACKAGES = {"jinja2": "Jinja2", "rich": "rich", "PIL": "Pillow", "elftools": "pyelftools",
                   "matplotlib": "matplotlib", "markdown_it": "markdown-it-py"}


@dataclass(frozen=True)
class Finding:
    """One thing this machine has or lacks, in words, and the one step that fixes a gap."""
    topic: str
    ok: bool
    found: str
    fix: str = ""


def _output(argv: list[str], timeout_s: float = 30.0) -> str | None:
    """What a program printed (stdout and stderr), or None when it cannot run or fails."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout + done.stderr if done.returncode == 0 else None


def _gpu() -> Finding:
    listed = _output(["nvidia-smi", "-L"])
    devices = [line.strip() for line in (listed or "").splitlines() if line.strip().startswith("GPU ")]
    if not devices:
        why = "nvidia-smi is not on PATH" if shutil.which("nvidia-smi") is None else "nvidia-smi lists no GPU"
        return Finding("GPU", False, f"no CUDA device ({why})",
                       "use a machine with an NVIDIA GPU and its driver (`nvidia-smi -L` lists it); "
                       "on this one, programs build but do not run")
    driver = gpu.driver_release() or "unknown"
    return Finding("GPU", True, f"{'; '.join(devices)} (driver {driver})")


def _nvcc() -> Finding:
    path = shutil.which("nvcc") or next((p for p in ("/usr/local/cuda/bin/nvcc",) if os.access(p, os.X_OK)), None)
    if path is None:
        return Finding("CUDA toolkit", False, "no nvcc on PATH or in /usr/local/cuda/bin",
                       f"install the CUDA {CUDA_MAJOR} toolkit and put its bin folder on PATH")
    said = _output([path, "--version"]) or ""
    release = re.search(r"release (\d+)\.(\d+)", said)
    if release is None:
        return Finding("CUDA toolkit", False, f"{path} does not say its version",
                       f"reinstall the CUDA {CUDA_MAJOR} toolkit")
    version = f"{release[1]}.{release[2]}"
    if int(release[1]) < CUDA_MAJOR:
        return Finding("CUDA toolkit", False, f"nvcc {version} at {path}",
                       f"install the CUDA {CUDA_MAJOR} toolkit (the labs use its CUB and C++20)")
    return Finding("CUDA toolkit", True, f"nvcc {version} at {path}")


def _cmake_and_ninja() -> Finding:
    said = _output(["cmake", "--version"])
    if said is None:
        return Finding("CMake and Ninja", False, "no cmake on PATH", "install CMake 3.25 or newer (apt install cmake)")
    version = re.search(r"version (\d+)\.(\d+)", said)
    if version is None or (int(version[1]), int(version[2])) < CMAKE_MINIMUM:
        shown = f"{version[1]}.{version[2]}" if version else "of unknown version"
        return Finding("CMake and Ninja", False, f"cmake {shown}",
                       "install CMake 3.25 or newer (apt install cmake, or pip install cmake)")
    if shutil.which("ninja") is None:
        return Finding("CMake and Ninja", False, f"cmake {version[1]}.{version[2]}, no ninja on PATH",
                       "install Ninja (apt install ninja-build)")
    return Finding("CMake and Ninja", True, f"cmake {version[1]}.{version[2]}, ninja")


def _sandbox(config: Config) -> Finding:
    """The sandbox in a line: what kind, and what it lacks (`cudalab doctor --json` and every
    result's isolation have the full list of what is in force)."""
    isolation = Sandbox.detect(config).isolation_for(run_limits(config))
    head = isolation.headline()
    if isolation.official:
        lacks = f"; lacking: {'; '.join(isolation.missing)}" if isolation.missing else ""
        return Finding("sandbox", True, head + lacks)
    why = isolation.why_not_official()
    if "user namespaces" in why:
        fix = USERNS_FIX
    elif "bubblewrap" in why and "not found" in why or "no bubblewrap" in why:
        fix = "install bubblewrap (`sudo apt install bubblewrap`, or tools/setup.sh), with user namespaces allowed"
    else:
        fix = "install bubblewrap with user namespaces allowed (`sudo apt install bubblewrap`)"
    return Finding("sandbox", False, f"{head}: {why}", fix)


def _disk(config: Config) -> Finding:
    where = Path(config.work_dir)
    while not where.exists() and where != where.parent:
        where = where.parent
    free = shutil.disk_usage(where).free
    shown = f"{free / GIB:.1f} GiB free at {where}"
    if free < DISK_FREE_BYTES:
        return Finding("disk", False, shown, f"free at least {DISK_FREE_BYTES // GIB} GiB there, or point "
                       "CUDALAB_WORK_DIR at a disk that has it")
    return Finding("disk", True, shown)


def _python() -> Finding:
    missing = [shown for module, shown in PYTHON_PACKAGES.items() if importlib.util.find_spec(module) is None]
    if missing:
        return Finding("Python packages", False, "missing: " + ", ".join(missing),
                       "run tools/setup.sh (or pip install -e grader)")
    return Finding("Python packages", True, ", ".join(PYTHON_PACKAGES.values()))


def _official_build(config: Config) -> Finding:
    built = [lab for lab in labs.available_labs(config.root)
             if labs.official_binary(config, lab, "checker").is_file()]
    if not built:
        return Finding("official build", True, f"not built yet in {config.build_dir}: the first command on a lab "
                       "builds what that lab needs (a minute or two, once)")
    return Finding("official build", True, f"{config.build_dir}: built for {', '.join(built)}")


def examine(config: Config) -> list[Finding]:
    return [_gpu(), _nvcc(), _cmake_and_ninja(), _sandbox(config), _disk(config), _python(),
            _official_build(config)]


def verdicts(findings: list[Finding]) -> dict[str, str]:
    """What `run`, `check` and `grade` will do on this machine, in a sentence each."""
    ok = {f.topic: f.ok for f in findings}
    builds = ok["CUDA toolkit"] and ok["CMake and Ninja"] and ok["Python packages"]
    if not builds:
        cannot = "nothing can be built here: see the fixes above"
        return {"run": cannot, "check": cannot, "grade": cannot}
    device, sandbox = ok["GPU"], ok["sandbox"]
    return {
        "run": ("builds your code and runs every case, judged by the checker" if device else
                "builds your code and checks its form, but runs nothing: there is no CUDA device here"),
        "check": ("checks the hand-in fully, its smoke run and compute-sanitizer included" if device else
                  "checks the hand-in's form and build; its smoke run and compute-sanitizer need a GPU"),
        "grade": ("gives official grades" if device and sandbox else
                  "builds only: no grade without a CUDA device" if not device else
                  "refuses to grade without a sandbox (--allow-unisolated grades anyway, not officially)"),
    }


def exit_code(findings: list[Finding]) -> Cli:
    ok = {f.topic: f.ok for f in findings}
    if not (ok["CUDA toolkit"] and ok["CMake and Ninja"] and ok["Python packages"]):
        return Cli.INTERNAL
    if not ok["GPU"]:
        return Cli.NO_DEVICE
    if not ok["sandbox"]:
        return Cli.NOT_ISOLATED
    return Cli.DONE


def render(findings: list[Finding], said: dict[str, str]) -> str:
    lines = ["What this machine has:"]
    for f in findings:
        lines.append(f"  {'ok ' if f.ok else 'NO '} {f.topic}: {f.found}")
        if f.fix:
            lines.append(f"       to fix: {f.fix}")
    lines += ["", "So here:"] + [f"  cudalab {verb}: {sentence}" for verb, sentence in said.items()]
    return "\n".join(console.printable(line) for line in lines)
