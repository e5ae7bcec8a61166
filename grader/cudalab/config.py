"""One typed configuration: every shared default, with a description, in one place.

Each setting can be overridden from the environment as ``CUDALAB_<NAME>`` (for example
``CUDALAB_PRESET=ci`` or ``CUDALAB_PROCESS_TIMEOUT_S=30``); the CLI overrides a few more.
"""
from __future__ import annotations

import dataclasses
import functools
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from .errors import UsageError

KIB = 1024
MIB = 1024 * KIB
GIB = 1024 * MIB


def _setting(default, description: str):
    return field(default=default, metadata={"description": description})


@dataclass(frozen=True)
class Config:
    root: Path = _setting(None, "The repository root: the folder holding labs/ and CMakeLists.txt. "
                          "Found by walking up from the current folder (then from this package).")
    preset: str = _setting(None, "The CMake preset of the official build: 'gpu' when `nvidia-smi -L` "
                           "finds a device, else 'ci'.")
    build_dir: Path = _setting(None, "The official build tree (default <root>/build/<preset>).")
    work_dir: Path = _setting(None, "Where grading writes its results and temporary files "
                              "(default <root>/.grade).")
    process_timeout_s: float = _setting(120.0, "Wall-clock limit for one run of a lab binary or "
                                        "checker; past it the whole process group is killed.")
    build_timeout_s: float = _setting(600.0, "Wall-clock limit for one CMake configure or build.")
    cpu_time_factor: float = _setting(2.0, "A process's CPU-time limit, as a multiple of its "
                                      "wall-clock limit.")
    output_cap_bytes: int = _setting(64 * KIB, "How much of a process's stdout and of its stderr "
                                     "is kept; the rest is read and dropped.")
    file_size_limit_bytes: int = _setting(4 * GIB, "The largest file a student process may write "
                                          "(RLIMIT_FSIZE); output dumps can reach about 1 GiB.")
    network_isolation: bool = _setting(True, "Run student processes without network access "
                                       "(`unshare --net`) where the machine allows it.")
    samples_low: int = _setting(10, "Timed samples in the first of the two bench runs per round.")
    samples_high: int = _setting(40, "Timed samples in the second bench run per round (at least; "
                                 "raised so that the extra samples take timing_target_s).")
    samples_max: int = _setting(2000, "Upper bound on the samples of the second bench run.")
    timing_target_s: float = _setting(0.5, "How long the extra samples of the second bench run "
                                      "should take, so that process start-up noise is small "
                                      "next to them.")
    timing_rounds: int = _setting(3, "Rounds of alternating reference/submission bench runs.")
    timing_disagreement_factor: float = _setting(1.5, "Flag a submission whose own event timing "
                                                 "and the wall clock differ by more than this "
                                                 "factor.")
    timing_noise_floor: float = _setting(0.25, "The least wall-clock noise assumed, as a fraction "
                                         "of the reference's wall time per sample: the wall "
                                         "clock counts against a submission only beyond it.")
    compile_feedback_lines: int = _setting(40, "How many compiler lines about the student's "
                                           "files the feedback keeps.")
    keep_temp: bool = _setting(False, "Keep grading's temporary folders (dumps, logs) for "
                               "debugging instead of deleting them.")

    @classmethod
    def descriptions(cls) -> dict[str, str]:
        return {f.name: f.metadata["description"] for f in dataclasses.fields(cls)}

    @classmethod
    def load(cls, env: dict[str, str] | None = None, cwd: Path | None = None,
             **overrides) -> "Config":
        """Defaults, then CUDALAB_* environment variables, then explicit (CLI) overrides."""
        env = os.environ if env is None else env
        values: dict = {}
        for f in dataclasses.fields(cls):
            text = env.get(f"CUDALAB_{f.name.upper()}")
            if text is not None and text != "":
                values[f.name] = _parse(f, text)
        values.update({k: v for k, v in overrides.items() if v is not None})
        root = Path(values["root"]) if "root" in values else find_root(cwd or Path.cwd())
        preset = values.get("preset") or detect_preset()
        values["root"] = root.resolve()
        values["preset"] = preset
        values["build_dir"] = Path(values.get("build_dir") or root / "build" / preset).resolve()
        values["work_dir"] = Path(values.get("work_dir") or root / ".grade").resolve()
        return cls(**values)

    @property
    def bin_dir(self) -> Path:
        return self.build_dir / "bin"

    @property
    def temp_dir(self) -> Path:
        return self.work_dir / "tmp"


def _parse(f: dataclasses.Field, text: str):
    kind = f.type if isinstance(f.type, str) else f.type.__name__
    try:
        if kind == "bool":
            if text.lower() not in ("1", "0", "true", "false", "yes", "no"):
                raise ValueError
            return text.lower() in ("1", "true", "yes")
        if kind == "int":
            return int(text)
        if kind == "float":
            return float(text)
    except ValueError:
        raise UsageError(f"CUDALAB_{f.name.upper()}={text!r} is not a valid {kind}: "
                         f"{f.metadata['description']}") from None
    return Path(text) if kind == "Path" else text


def is_repo_root(folder: Path) -> bool:
    return (folder / "labs").is_dir() and (folder / "CMakeLists.txt").is_file()


def find_root(start: Path) -> Path:
    """Walk up from `start`, then from this package, to the folder with labs/ + CMakeLists.txt."""
    for origin in (start.resolve(), Path(__file__).resolve().parent):
        for folder in (origin, *origin.parents):
            if is_repo_root(folder):
                return folder
    raise UsageError(f"Could not find the cudalab repository above {start}: no folder there holds "
                     "both labs/ and CMakeLists.txt. Run cudalab inside the repository or set "
                     "CUDALAB_ROOT to it.")


@functools.cache
def cuda_device_present() -> bool:
    """True when `nvidia-smi -L` runs and succeeds (the driver sees at least one GPU)."""
    try:
        done = subprocess.run(["nvidia-smi", "-L"], capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and b"GPU" in done.stdout


def detect_preset() -> str:
    return "gpu" if cuda_device_present() else "ci"
