"""One typed configuration: every shared default, with a description, in one place.

Each setting can be overridden from the environment as ``CUDALAB_<NAME>`` (for example
``CUDALAB_PRESET=ci`` or ``CUDALAB_PROCESS_TIMEOUT_S=30``); the CLI overrides a few more.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import pwd
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
    work_dir: Path = _setting(None, "Where cudalab writes its results, builds and temporary files: "
                              "per user, so that one installed repository can serve many "
                              "(default $XDG_CACHE_HOME/cudalab/<repository>-<hash of its path>, else "
                              "~/.cache/cudalab/<repository>-<hash of its path>).")
    process_timeout_s: float = _setting(120.0, "Wall-clock limit for one run of a lab binary or "
                                        "checker; past it the whole process group is killed.")
    build_timeout_s: float = _setting(600.0, "Wall-clock limit for one CMake configure or build.")
    cpu_time_factor: float = _setting(2.0, "A process's CPU-time limit, as a multiple of its "
                                      "wall-clock limit.")
    output_cap_bytes: int = _setting(64 * KIB, "How much of a process's stdout and of its stderr "
                                     "is kept; the rest is read and dropped.")
    file_size_limit_bytes: int = _setting(4 * GIB, "The largest file a student process may write "
                                          "(RLIMIT_FSIZE); output dumps can reach about 1 GiB.")
    bwrap: str = _setting("", "The bubblewrap program that sandboxes untrusted processes. Empty: "
                          "`bwrap` on PATH, else <root>/.deps/bwrap/usr/bin/bwrap (unpacked by "
                          "tools/stage-deps.sh). Without it, runs go unsandboxed and say so.")
    sandbox_uid: int = _setting(65534, "The unprivileged uid (and gid) that sandboxed processes "
                                "run as when the grader runs as root; files they must read "
                                "have to be reachable by it.")
    run_memory_bytes: int = _setting(16 * GIB, "Memory limit (cgroup v2 memory.max, else cgroup v1 "
                                     "memory.limit_in_bytes, no swap) of one run of a lab binary or "
                                     "checker; also each process's RLIMIT_DATA in a run without the "
                                     "GPU; 0 for none.")
    build_memory_bytes: int = _setting(8 * GIB, "Memory limit (cgroup v2 memory.max, else cgroup v1 "
                                       "memory.limit_in_bytes, no swap) of one compile of student "
                                       "code; also each compiler process's RLIMIT_DATA; 0 for none.")
    run_folder_bytes: int = _setting(8 * GIB, "Most bytes a run of a lab binary or checker may keep "
                                     "in its folder (a tmpfs of its own where the grader may mount one), "
                                     "and a run or compile in its private /tmp; output dumps can reach "
                                     "about 2 GiB.")
    run_folder_files: int = _setting(100_000, "Most files and folders a run of a lab binary or checker "
                                     "may keep in its folder (the tmpfs's inode count).")
    run_pids: int = _setting(256, "Most processes and threads one run of a lab binary or checker "
                             "may have at once (cgroup v2 pids.max, else RLIMIT_NPROC).")
    build_pids: int = _setting(1024, "Most processes and threads one compile of student code may "
                               "have at once (cgroup v2 pids.max, else RLIMIT_NPROC).")
    timing_warmup: int = _setting(5, "Untimed samples at the start of every paced timing run.")
    samples_min: int = _setting(20, "Fewest timed samples in one paced timing run: what a round of a "
                                "lab whose call takes longer than timing_target_s / samples_min gets "
                                "(occupancy and sort: 18 to 21 ms a call on an H100, whose grades "
                                "agreed within 0.15 % at 20 samples as at 30). A lab may ask for more "
                                "([scoring] timing_samples_min: matmul, 30).")
    samples_max: int = _setting(20000, "Most timed samples in one paced timing run.")
    timing_target_s: float = _setting(0.25, "How long the timed samples of the reference's first "
                                      "process in one session take on the grader's clock (its second "
                                      "process and the submission then get as many samples). With "
                                      "three rounds, regrades of the same code agree within 1% for "
                                      "calls longer than about 0.3 ms; labs of shorter calls ask for "
                                      "more, shorter rounds (docs/architecture.md, 'Grading timing').")
    gpu_slots: int = _setting(3, "Grades of a batch that share each GPU, taking turns on it "
                              "(gpu.exclusive): while one is timed, the others do their CPU work.")
    timing_cpus: int = _setting(-1, "CPUs kept free for timing: builds and checkers run on the "
                                "others, so that they never compete with a timed program for a "
                                "core; -1: three eighths of the CPUs on a machine of 8 or more, none "
                                "on a smaller one.")
    timing_rounds: int = _setting(3, "Rounds of alternating reference/submission timing runs.")
    kept_samples: int = _setting(2, "Timed samples per submission session, drawn in secret, that the "
                                 "auditor keeps for the trusted checker (each judged against its own "
                                 "inputs). Every sample is sealed and verified by the auditor alike, so "
                                 "the program cannot tell which were kept.")
    sample_timeout_s: float = _setting(30.0, "How long one paced sample may take before the run "
                                       "is stopped.")
    timing_floor_fraction: float = _setting(0.8, "A submission whose time per call is below this "
                                            "fraction of the physical floor (the lab's byte model at the "
                                            "measured copy bandwidth, or its FLOP model at the FP32 peak) "
                                            "is a violation: no performance points, and flagged.")
    gpu_device: str = _setting("", "The GPU the lab's programs use, as CUDA_VISIBLE_DEVICES sees it "
                               "(an index or a UUID); empty: whatever the grader's environment says. "
                               "`cudalab batch` sets it for each GPU it grades on.")
    gpu_idle_wait_s: float = _setting(300.0, "How long timing waits for other processes to leave "
                                      "the GPU before it times anyway and says so.")
    compile_feedback_lines: int = _setting(40, "How many compiler lines about the student's "
                                           "files the feedback keeps.")
    handin_max_entries: int = _setting(200, "Most entries (files and folders) a hand-in may hold; "
                                       "reading stops past it.")
    handin_max_file_bytes: int = _setting(1 * MIB, "The largest file other than the lab's own files "
                                          "a hand-in may hold (the lab's files: max_file_bytes of "
                                          "lab.toml).")
    handin_max_total_bytes: int = _setting(8 * MIB, "The most a hand-in may unpack to in all; an "
                                           "archive that unpacks to more stops there.")
    handin_max_archive_bytes: int = _setting(8 * MIB, "The largest hand-in archive file taken.")
    sanitizer_timeout_s: float = _setting(180.0, "Wall-clock limit for one compute-sanitizer tool's "
                                          "run of the smallest cases.")
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
        values["work_dir"] = Path(values.get("work_dir") or default_work_dir(root.resolve(), env)).resolve()
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


def default_work_dir(root: Path, env) -> Path:
    """Per user and per repository: $XDG_CACHE_HOME (else ~/.cache) /cudalab/<name>-<hash of
    the repository's path>, so that two checkouts never share results. Without either
    variable, the cache of the user's home folder as the system records it: never a folder
    of a fixed name in the shared temporary folder, which another user could make first."""
    cache = env.get("XDG_CACHE_HOME") or (str(Path(env["HOME"]) / ".cache") if env.get("HOME") else "")
    if not cache:
        try:
            home = pwd.getpwuid(os.getuid()).pw_dir
        except KeyError:
            home = ""
        if not home or home == "/" or not os.path.isdir(home):
            raise UsageError(f"cudalab has no folder of its own for its work files: neither XDG_CACHE_HOME nor "
                             f"HOME is set, and uid {os.getuid()} has no home folder. Set CUDALAB_WORK_DIR to a "
                             "folder that only you can write.")
        cache = str(Path(home) / ".cache")
    key = hashlib.sha256(str(root).encode("utf-8", "surrogateescape")).hexdigest()[:10]
    return Path(cache) / "cudalab" / f"{root.name}-{key}"


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
