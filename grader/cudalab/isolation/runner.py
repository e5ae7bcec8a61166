"""Running a lab's programs for a grade, a student's run or the ladder: every lab binary
and every checker runs in the sandbox, official binaries only after their hash has been
checked against the manifest of the official build, and what a program wrote is read
without trusting it (no links followed, sizes capped).

Inside the sandbox a program sees itself at /cudalab/bin/<name> and its own folder at
/cudalab/run (cwd and HOME, the only place it can write); a checker also sees the dump
it judges, read-only, at /cudalab/dump.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import stat
import subprocess
import tempfile
from pathlib import Path
from typing import Callable, Sequence

from . import cpus, gpu as gpu_module, libraries, safe_files
from ..lab import labs
from ..config import Config
from ..errors import GraderError
from ..exit_codes import Harness
from ..lab.labspec import LabSpec
from .sandbox import Bind, ProcessResult, Sandbox, run_limits, scratch_root, toolchain_roots
from ..building.sdk import Manifest, ManifestError
from .trees import remove_tree

RUN = "/cudalab/run"
BIN = "/cudalab/bin"
DUMP = "/cudalab/dump"
_JSON_LIMIT = 16 * 1024 * 1024


def fresh_dir(parent: Path, stem: str) -> Path:
    """A new folder with an unpredictable name, in a folder of the grader's (a scratch root
    or a folder made here): mode 0700, or 0711 when the grader is root, so that the sandbox
    user can pass through to the run folders in it without listing or writing it."""
    parent.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix=f"{stem}-", dir=parent))
    if os.geteuid() == 0:
        folder.chmod(0o711)
    return folder


def _host() -> str:
    """This host's name as scratch folders carry it."""
    return re.sub(r"[^A-Za-z0-9-]", "", socket.gethostname())[:32] or "host"


def _owner_tag() -> str:
    """This process's mark on the scratch folders it makes: its host and pid."""
    return f"@{_host()}@p{os.getpid()}"


_OWNED = re.compile(r"@(?P<host>[A-Za-z0-9-]{1,32})@p(?P<pid>\d+)-")  # '@' is in no stem and no host
# A scratch folder its process handed to another on purpose (a Slurm build task's build, which
# the GPU task copies later) holds this file, and is never taken for abandoned.
HANDED_OVER = ".handed-over"


def hand_over(folder: Path) -> None:
    """Mark a scratch folder as handed to another process: it outlives its maker on purpose."""
    (folder / HANDED_OVER).write_text("kept for the process this folder was handed to\n")


def _process_is_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # someone else's, alive
    return False


def remove_abandoned(root: Path) -> list[str]:
    """Remove the scratch folders in `root` left by a grader process of this host that is
    gone (a batch killed with SIGKILL, a machine that lost power): folders named by
    scratch_dir() whose pid no longer runs here. Folders of other hosts (a shared work folder),
    of live processes and those handed over (hand_over) are left alone. Returns the names
    removed."""
    host, removed = _host(), []
    try:
        entries = list(os.scandir(root))
    except OSError:
        return removed
    for entry in entries:
        owned = _OWNED.search(entry.name)
        if owned is None or owned["host"] != host or not entry.is_dir(follow_symlinks=False):
            continue
        if os.path.lexists(os.path.join(entry.path, HANDED_OVER)):
            continue
        if int(owned["pid"]) != os.getpid() and _process_is_gone(int(owned["pid"])):
            remove_tree(Path(entry.path))
            removed.append(entry.name)
    return removed


_swept: set[str] = set()


def scratch_dir(config: Config, stem: str) -> Path:
    """A new folder for one command's work in the scratch root (sandbox.scratch_root), named
    with this host and pid; the first one a process makes also removes what processes of
    this host that are gone left behind there (remove_abandoned)."""
    root = scratch_root(config)
    if str(root) not in _swept:
        _swept.add(str(root))
        remove_abandoned(root)
    return fresh_dir(root, f"{stem}{_owner_tag()}")


def read_untrusted_bytes(path: Path, limit: int) -> bytes | None:
    """The first `limit` bytes of a file a program wrote, or None where it is not a regular
    file or cannot be read: never follows a link, never blocks on a FIFO."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read(limit)
    except OSError:
        return None
    finally:
        os.close(fd)


def read_untrusted_json(path: Path, limit: int = _JSON_LIMIT) -> dict | None:
    """A JSON object a program wrote, or None: never follows a link, never blocks on a FIFO,
    never reads more than `limit` bytes."""
    data = read_untrusted_bytes(path, limit + 1)
    if data is None or len(data) > limit:
        return None
    try:
        parsed = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    return parsed if isinstance(parsed, dict) else None


_LDD_LINE = re.compile(r"=>\s+(/\S+)")


def shared_library_roots(config: Config, binaries: Sequence[Path]) -> tuple[Path, ...]:
    """Where the shared libraries of trusted (official) binaries live, when outside /usr:
    the sandbox must show them (a libstdc++ under /opt/gcc, say). Never run on a student's
    binary: ldd may execute the program it inspects."""
    return toolchain_roots(linked_libraries(binaries), protect=[config.root, config.work_dir, config.build_dir])


def linked_libraries(binaries: Sequence[Path]) -> list[str]:
    """The shared libraries trusted (official) binaries load, as ldd finds them."""
    found = []
    for binary in binaries:
        try:
            done = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, timeout=30, check=False)
        except (OSError, subprocess.TimeoutExpired):
            continue
        found += _LDD_LINE.findall(done.stdout)
    return found


def why_nothing_ran(run_json: dict | None) -> str | None:
    """What a lab binary that exited 4 (ran nothing) said about why, without its final
    period: a driver too old for the runtime, a case too large for the GPU, no device. None
    when it said nothing usable."""
    message = (run_json or {}).get("message")
    return message.strip().rstrip(".") if isinstance(message, str) and message.strip() else None


def failure_reason(result: ProcessResult) -> str:
    """Why a run of the submission went wrong, in words, with the first lines of stderr."""
    head = result.stderr_head(4)
    if result.status == "no_device":
        reason = ("the program reported that there is no CUDA device (exit 4), although the "
                  "reference solution ran on this GPU")
    elif result.status == "usage":
        reason = "the program rejected the grader's command line (exit 2)"
    elif result.status == "internal":
        reason = "the harness could not do its job (exit 6), for instance writing its output"
    else:
        reason = result.describe()
    if result.status == "cuda_error" and head:
        return head if head.lower().startswith("cuda error") else f"CUDA error: {head}"
    return f"{reason}: {head}" if head and not result.timed_out and not result.oom_killed else reason


def kept_bench_samples(run_json: dict | None) -> list[tuple[str, int]]:
    """(bench case, seed) of the timed sample a --bench run kept of each case, as its run
    JSON names them; entries without a usable seed are left out."""
    kept = []
    for entry in (run_json or {}).get("bench", []):
        seed = entry.get("checked_sample_seed") if isinstance(entry, dict) else None
        if isinstance(seed, int) and isinstance(entry.get("name"), str):
            kept.append((entry["name"], seed))
    return kept


def paced_argv(case: str, control_in: int, control_out: int, arena_fd: int, arena_bytes: int,
               signal_fd: int | None = None) -> list[object]:
    """A lab program's arguments for being timed on bench case `case` (timing.py's protocol:
    'go N' on control_in, 'done N MS' on control_out, or both through the signal page, the
    case laid out in the auditor's shared arena)."""
    signal = ["--signal", signal_fd] if signal_fd is not None else []
    return ["--paced", "--bench-case", case, "--json", f"{RUN}/run.json", "--control-in", control_in,
            "--control-out", control_out, "--arena", arena_fd, "--arena-bytes", arena_bytes, *signal]


def audit_argv(case: str, control: int, slots: int) -> list[object]:
    """The auditor's arguments (labkit/audit.hpp): its control socket, the sealed samples it
    can keep, and its dump folder for them."""
    return ["--audit", "--bench-case", case, "--control", control, "--slots", slots, "--dump", f"{RUN}/dump",
            "--json", f"{RUN}/run.json"]


class Runner:
    """Runs one lab's binaries and checker in the sandbox, in folders under `scratch`."""

    def __init__(self, config: Config, spec: LabSpec, scratch: Path, sandbox: Sandbox | None = None):
        self.config, self.spec, self.scratch = config, spec, scratch
        self.sandbox = sandbox or Sandbox.detect(config)
        self._manifest: Manifest | None = None
        self._toolchain: tuple[Path, ...] | None = None
        self._hidden: tuple[Path, ...] | None = None
        self.times: list[dict] = []  # every program this runner ran: what, and its wall-clock seconds

    def _log_time(self, what: str, result: ProcessResult) -> None:
        self.times.append({"what": what, "wall_s": round(result.wall_s, 3)})

    def _official_binaries(self) -> list[Path]:
        official = [labs.official_binary(self.config, self.spec.name, i) for i in ("solution", "checker")]
        return [b for b in official if b.is_file()]

    @property
    def toolchain(self) -> tuple[Path, ...]:
        """Folders outside /usr the lab's programs need (their shared libraries), found
        once from the official binaries."""
        if self._toolchain is None:
            self._toolchain = shared_library_roots(self.config, self._official_binaries())
        return self._toolchain

    @property
    def hidden(self) -> tuple[Path, ...]:
        """The CUDA shared libraries the lab does not allow, wherever they are installed,
        shown empty to its runs (except any that the official binaries load themselves)."""
        if self._hidden is None:
            needed = {Path(p).resolve() for p in linked_libraries(self._official_binaries())}
            self._hidden = tuple(libraries.lab_run_hidden(self.config, self.spec, needed))
        return self._hidden

    @property
    def manifest(self) -> Manifest:
        if self._manifest is None:
            try:
                self._manifest = Manifest(self.config.build_dir)
            except ManifestError as err:
                raise GraderError(str(err)) from None
        return self._manifest

    def _on_gpu(self, gpu: bool):
        """The GPU is held for the whole of a program that uses it (gpu.exclusive)."""
        return gpu_module.exclusive(self.config.gpu_device) if gpu else contextlib.nullcontext()

    def _env(self, gpu: bool, env: dict[str, str] | None) -> dict[str, str] | None:
        if gpu and self.config.gpu_device:
            return {**(env or {}), "CUDA_VISIBLE_DEVICES": self.config.gpu_device}
        return env

    def official(self, implementation: str) -> Path:
        """An official binary of the lab ('solution', 'checker', 'ladder_<stem>', ...), after
        checking that it is the one the build made."""
        path = labs.official_binary(self.config, self.spec.name, implementation)
        if not path.is_file():
            raise GraderError(f"The official build has no {path}: the {self.spec.name} lab's "
                              "targets were not built.")
        try:
            self.manifest.verify(path)
        except ManifestError as err:
            raise GraderError(str(err)) from None
        return path

    def run(self, binary: Path, args: Sequence[object], *, gpu: bool = True, timeout_s: float | None = None,
            env: dict[str, str] | None = None, pass_fds: Sequence[int] = (),
            during: Callable[[], bool] | None = None, wrapper: Sequence[str] = (),
            wrapper_toolchain: Sequence[Path] = (), official: bool = False,
            started: Callable[[int], None] | None = None, hold_gpu: bool = True,
            folder: Path | None = None) -> tuple[ProcessResult, Path]:
        """Run `binary` with `args` (inside paths: RUN/...) in a folder of its own, under
        `wrapper` when given (a tool such as compute-sanitizer, whose folders outside /usr are
        `wrapper_toolchain`); return the result and that folder (on the host). `official`
        (a ladder rung, checked against the manifest) may load the libraries the lab forbids
        submissions: its library baseline (cuBLAS) is loaded at run time. `started` is told
        the program's host pid; `hold_gpu=False` runs it without holding the GPU for its whole
        life (the auditor and the kept reference: their owner holds the GPU for each of their
        sessions); `folder` is the run's folder when the caller made it (fresh_dir) already."""
        folder = folder or fresh_dir(self.scratch, "run")
        inside = f"{BIN}/{binary.name}"
        with self._on_gpu(gpu and hold_gpu):
            result = self.sandbox.run([*map(str, wrapper), inside, *map(str, args)],
                                      workdir=Bind(folder, RUN, writable=True),
                                      binds=[Bind(binary, inside)], limits=run_limits(self.config, timeout_s),
                                      gpu=gpu, env=self._env(gpu, env), pass_fds=pass_fds, during=during,
                                      started=started,
                                      toolchain=tuple(self.toolchain) + tuple(wrapper_toolchain),
                                      hide=() if official else self.hidden)
        first = str(args[0]) if args else ""
        self._log_time(" ".join(w for w in (Path(str(wrapper[0])).name if wrapper else "", binary.name,
                                            first if first.startswith("--") else "") if w), result)
        return result, folder

    def run_cases(self, binary: Path, args: Sequence[object], **kwargs) -> tuple[ProcessResult, Path]:
        """`run` of the lab's cases (not its timed runs) under the lab's time limit, which a
        timed-out run's message names."""
        limit = self.spec.scoring.time_limit_s
        result, folder = self.run(binary, args, timeout_s=limit, **kwargs)
        result.limit_words = (f"the {self.spec.name} lab's time limit for one run of its cases, "
                              "lab.toml [scoring] time_limit_s")
        return result, folder

    def check(self, dump: Path, seed: int, *, cases: Sequence[str] = (), bench_case: str | None = None,
              images: Path | None = None) -> dict[str, dict]:
        """The trusted checker's verdict on a dump, per case name. It runs in the sandbox (the
        dump is untrusted input); its verdict goes to a folder made now, with an
        unpredictable name, so nothing a student's program left behind can pass for it.
        With `images`, the checker also writes the pictures of every case it checks (a lab
        whose arrays are images: input, expected and dumped output, as PGM), and they are
        moved to images/<case>/."""
        checker = self.official("checker")
        inside = f"{BIN}/{checker.name}"
        argv = [inside, "--seed", str(seed), "--dump", DUMP, "--verdict", f"{RUN}/verdict.json"]
        if images is not None:
            argv += ["--images", f"{RUN}/images"]
        for case in cases:
            argv += ["--case", case]
        if bench_case:
            argv += ["--bench-case", bench_case]
        judged = [bench_case] if bench_case else list(cases) or [c.name for c in self.spec.cases]
        # What a program dumped is data: a link, a FIFO or a device anywhere in it is refused
        # (the submission's failure), never followed, copied or bound.
        problem = safe_files.plain_tree_problem(dump)
        if problem:
            return {name: {"name": name, "status": "failed", "message": unreadable_dump_message(problem)}
                    for name in judged}
        folder = fresh_dir(self.scratch, "verdict")
        if not dump.is_dir():
            dump = fresh_dir(self.scratch, "empty-dump")  # nothing dumped: every case is missing
        gpu = any(name in self.spec.checker_gpu_cases for name in judged)
        with self._on_gpu(gpu), cpus.on_work_cpus(self.config):  # never on the CPUs left to timing
            result = self.sandbox.run(argv, workdir=Bind(folder, RUN, writable=True),
                                      binds=[Bind(checker, inside), Bind(dump, DUMP)],
                                      limits=run_limits(self.config), gpu=gpu,
                                      env=self._env(gpu, None), toolchain=self.toolchain)
        self._log_time("checker" + (" (images)" if images is not None else "")
                       + (f" {bench_case} sample" if bench_case else ""), result)
        verdict = read_untrusted_json(folder / "verdict.json")
        if result.exit_code not in (Harness.PASSED, Harness.FAILED) or verdict is None:
            raise GraderError(f"The checker could not judge the outputs ({result.describe()}: "
                              f"{result.stderr_head(4) or 'no message'}).")
        if images is not None:
            _move_images(folder / "images", images)
        return {c.get("name"): c for c in verdict.get("cases", []) if isinstance(c, dict)}


_IMAGE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def unreadable_dump_message(problem: str) -> str:
    """Why a dump was not judged, in words a student can act on."""
    return (f"the outputs were not judged: {problem}. The grader reads what a program writes only as plain "
            "files in plain folders; write each output as a regular file in the dump folder, with no "
            "symbolic links, FIFOs or devices")


def _move_images(written: Path, images: Path) -> None:
    """Move the checker's <case>/<name>.pgm files from its run folder to images/<case>/:
    plain files with plain names only, reached without following a link at any component,
    nothing deeper. The checker's run folder belonged to the sandbox user."""
    try:
        for path, folder_fd, name, entry in safe_files.walk(written):
            case, _, picture = path.partition("/")
            if not (picture and "/" not in picture and picture.endswith(".pgm") and stat.S_ISREG(entry.st_mode)
                    and _IMAGE_NAME.fullmatch(case) and _IMAGE_NAME.fullmatch(picture)):
                continue
            (images / case).mkdir(parents=True, exist_ok=True)
            target_fd = safe_files.open_folder(images / case)
            try:
                safe_files.move_file(name, folder_fd, picture, target_fd, f"{written}/{path}")
            finally:
                os.close(target_fd)
    except FileNotFoundError:
        return  # the checker drew nothing
    except safe_files.NotPlainError:
        return  # not a tree of plain folders: no pictures from it
