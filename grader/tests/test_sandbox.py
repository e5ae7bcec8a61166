"""sandbox: what a hostile program inside the bubblewrap sandbox can and cannot do, the limits
it runs under, the unsandboxed fallback, and how the result says what was in force.

Programs inside run from the sandbox's read-only /usr (sh, /usr/bin/python3); the grader's
virtual environment is not part of the view.
"""
from __future__ import annotations

import dataclasses
import errno
import json
import os
import shutil
import socket
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pytest

from conftest import REPO_ROOT
from cudalab.config import GIB, MIB, Config
from cudalab.errors import GraderError
from cudalab.isolation.sandbox import (INSIDE_ROOT, Bind, Isolation, Limits, ProcessResult, Sandbox,
                             build_limits, cgroup2_mounts, format_bytes, locate_cgroup2,
                             own_cgroup2_path, run_limits, run_process)
import cudalab.isolation.sandbox as sandbox_module
from cudalab.isolation import trees

PYTHON = "/usr/bin/python3"   # inside the sandbox's view, unlike the venv's python
AS_ROOT = os.geteuid() == 0


def load_config(**overrides) -> Config:
    return Config.load(env={}, root=REPO_ROOT, preset="ci", **overrides)


SANDBOX = Sandbox.detect(load_config())
needs_bwrap = pytest.mark.skipif(
    SANDBOX.isolation.kind != "bubblewrap",
    reason="needs a working bubblewrap sandbox: " + "; ".join(SANDBOX.isolation.missing))
needs_cgroup_memory = pytest.mark.skipif(
    "memory" not in SANDBOX._cgroups.controllers,
    reason="needs a usable cgroup v2 memory controller: " + "; ".join(
        m for m in SANDBOX.isolation.missing if "cgroup" in m))


@pytest.fixture
def space():
    """A folder the sandbox user can reach. pytest's tmp_path lies under
    /tmp/pytest-of-<user> (mode 0700), which uid 65534 cannot pass when the grader is root;
    so, as root, does a TMPDIR that may point anywhere."""
    folder = Path(tempfile.mkdtemp(prefix="cudalab-sandbox-test-", dir="/tmp" if AS_ROOT else None))
    folder.chmod(0o755)
    yield folder
    trees.remove_tree(folder)  # also unmounts the run folder's tmpfs


@pytest.fixture
def workdir(space) -> Bind:
    (space / "run").mkdir()
    return Bind(space / "run", f"{INSIDE_ROOT}/run", writable=True)


@pytest.fixture
def inputs(space) -> Bind:
    (space / "in").mkdir()
    (space / "in" / "file").write_text("original\n")
    return Bind(space / "in", f"{INSIDE_ROOT}/in")


@pytest.fixture
def limits() -> Limits:
    return run_limits(load_config(), timeout_s=20.0)


def sh(script: str, *args: str) -> list[str]:
    return ["/bin/sh", "-c", script, "sh", *args]


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def marked_pids(marker: str) -> list[int]:
    """Live host processes whose command line holds `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue  # it ended while we looked
        if marker.encode() in cmdline and alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def run_watching(marker: str, run) -> tuple[ProcessResult, bool]:
    """Call run() in a thread and report whether a process with `marker` was seen on the host
    meanwhile, so that 'gone afterwards' can never pass because it never existed."""
    outcome: dict = {}
    worker = threading.Thread(target=lambda: outcome.setdefault("result", run()))
    worker.start()
    seen = False
    while worker.is_alive():
        seen = seen or bool(marked_pids(marker))
        time.sleep(0.02)
    worker.join()
    return outcome["result"], seen


# --------------------------------------------------------------------------- the file system

@needs_bwrap
def test_writes_outside_the_run_folder_are_denied(workdir, inputs, limits, tmp_path, space):
    """Proves: the read-only binds (a folder and a single trusted program), /usr and the
    sandbox root refuse writes, a file cannot be removed from a read-only bind, a host folder
    that is not bound cannot be reached (a write to its path lands in the private /tmp at
    most, never on the host), and a write in the run folder reaches the host."""
    tool = space / "tool"
    tool.write_text("#!/bin/sh\necho trusted tool ran\n")
    tool.chmod(0o755)
    targets = [f"{INSIDE_ROOT}/in/file", f"{INSIDE_ROOT}/in/new", f"{INSIDE_ROOT}/bin/tool",
               "/usr/evil", "/evil", f"{tmp_path}/evil"]
    script = ('for target in "$@"; do\n'
              '  if (echo hostile > "$target") 2>/dev/null; then echo "WROTE $target";\n'
              '  else echo "DENIED $target"; fi\n'
              'done\n'
              f'rm -f {INSIDE_ROOT}/in/file 2>/dev/null && echo REMOVED\n'
              f'mkdir -p {tmp_path} && echo hostile > {tmp_path}/evil2 && echo PRIVATE-TMP\n'
              f'echo kept > {INSIDE_ROOT}/run/out\n'
              f'{INSIDE_ROOT}/bin/tool\n')
    result = SANDBOX.run(sh(script, *targets), workdir=workdir,
                         binds=[inputs, Bind(tool, f"{INSIDE_ROOT}/bin/tool")], limits=limits)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.split("\n")[:len(targets)] == [f"DENIED {t}" for t in targets]
    assert "REMOVED" not in result.stdout
    assert result.stdout.endswith("trusted tool ran\n")
    assert tool.read_text() == "#!/bin/sh\necho trusted tool ran\n"
    assert (inputs.host / "file").read_text() == "original\n"
    assert not (inputs.host / "new").exists()
    assert not (tmp_path / "evil").exists() and not (tmp_path / "evil2").exists()
    assert (workdir.host / "out").read_text() == "kept\n"


@needs_bwrap
def test_files_that_are_not_bound_are_invisible(workdir, inputs, limits, space):
    """Proves: the repository, /root, /home, the system's /etc, /sys and the binds' own host
    paths do not exist inside; /etc holds only the loader cache and the alternatives."""
    hidden = [str(REPO_ROOT), "/root", "/home", "/etc/passwd", "/etc/shadow", "/sys",
              str(space), "/work"]
    script = ('for path in "$@"; do test -e "$path" && echo "VISIBLE $path"; done\n'
              'ls -A /etc\n')
    result = SANDBOX.run(sh(script, *hidden), workdir=workdir, binds=[inputs], limits=limits)
    assert result.exit_code == 0, result.stderr
    assert "VISIBLE" not in result.stdout
    assert set(result.stdout.split()) <= {"ld.so.cache", "alternatives"}


@needs_bwrap
def test_hidden_files_give_nothing_to_read(workdir, limits):
    """Proves: a file given to `hide` (a library the lab forbids) yields no byte inside, under
    its own name, while the files beside it are intact."""
    target = Path("/usr/bin/env").resolve()
    script = 'head -c 4 "$1" 2>/dev/null | wc -c; head -c 4 /usr/bin/true | wc -c'
    result = SANDBOX.run(sh(script, str(target)), workdir=workdir, limits=limits, hide=[target])
    assert result.exit_code == 0, result.stderr
    assert result.stdout.split() == ["0", "4"]


@needs_bwrap
def test_covers_show_the_graders_file_and_folder_in_place_of_the_systems(workdir, limits, tmp_path):
    """Proves: a `cover` (a library's header or header folder the lab does not allow) shows
    the grader's stub in place of the system file, read-only, and an empty folder in place
    of the system folder, while the files beside them are intact."""
    stub, empty = tmp_path / "stub.h", tmp_path / "empty"
    stub.write_text('#error "hidden"\n')
    empty.mkdir()
    for path in (tmp_path, stub, empty):
        path.chmod(0o755 if path.is_dir() else 0o644)
    target_file, target_folder = Path("/usr/bin/env").resolve(), Path("/usr/share")
    script = ('cat "$1"; ls -A "$2" | wc -l; head -c 4 /usr/bin/true | wc -c; '
              'echo x > "$1" 2>/dev/null || echo read-only')
    result = SANDBOX.run(sh(script, str(target_file), str(target_folder)), workdir=workdir, limits=limits,
                         cover=[(stub, str(target_file)), (empty, str(target_folder))])
    assert result.exit_code == 0, result.stderr
    assert result.stdout.split("\n")[:4] == ['#error "hidden"', "0", "4", "read-only"]


@needs_bwrap
def test_runs_unprivileged_and_without_capabilities(workdir, limits):
    """Proves: as root, the program runs as sandbox_uid (and its files are owned by it on the
    host); in every case with no effective capabilities and no way to gain any."""
    script = (f"id -u; grep -E '^(CapEff|NoNewPrivs):' /proc/self/status; "
              f"echo mine > {INSIDE_ROOT}/run/mine")
    result = SANDBOX.run(sh(script), workdir=workdir, limits=limits)
    uid, cap_eff, no_new_privs = result.stdout.splitlines()
    expected_uid = load_config().sandbox_uid if AS_ROOT else os.getuid()
    assert int(uid) == expected_uid and (expected_uid != 0 or not AS_ROOT)
    assert SANDBOX.isolation.uid == (expected_uid if AS_ROOT else None)
    assert cap_eff.split() == ["CapEff:", "0000000000000000"]
    assert no_new_privs.split() == ["NoNewPrivs:", "1"]
    assert (workdir.host / "mine").stat().st_uid == expected_uid


@needs_bwrap
def test_binds_are_checked_before_the_run(workdir, space, limits):
    """Proves: a missing host path, two binds on one path and (as root) a writable folder the
    sandbox user cannot reach are refused with a sentence, before anything runs (a
    read-only one is shown through a copy instead: the next test)."""
    with pytest.raises(GraderError, match="does not exist"):
        SANDBOX.run(["/usr/bin/true"], workdir=workdir,
                    binds=[Bind(space / "nothing", f"{INSIDE_ROOT}/in")], limits=limits)
    with pytest.raises(GraderError, match="share one sandbox path"):
        SANDBOX.run(["/usr/bin/true"], workdir=workdir,
                    binds=[Bind(space, f"{INSIDE_ROOT}/run")], limits=limits)
    if AS_ROOT:
        locked = space / "locked"
        (locked / "inner").mkdir(parents=True)
        locked.chmod(0o700)
        with pytest.raises(GraderError, match=f"the folder {locked} .*o\\+x"):
            SANDBOX.run(["/usr/bin/true"], workdir=workdir,
                        binds=[Bind(locked / "inner", f"{INSIDE_ROOT}/in", writable=True)], limits=limits)


def test_inside_paths_must_lie_under_the_sandbox_root(tmp_path):
    """Proves: a bind can never cover the system view or climb out of /cudalab."""
    for inside in ("/usr/lib", "/cudalab", "/cudalab/../etc", "cudalab/run", "/cudalab/run/"):
        with pytest.raises(ValueError, match="under /cudalab/"):
            Bind(tmp_path, inside)
    bind = Bind(str(tmp_path), "/cudalab/run")
    assert bind.host == tmp_path
    assert bind.to_host("/cudalab/run/x/y") == f"{tmp_path}/x/y"
    assert bind.to_host("/cudalab/runner") is None


# --------------------------------------------------------------------------- processes

SETSID_GRANDCHILD = """
import os, sys, time
marker = sys.argv[1] + "-grandchild"   # built here, so only the grandchild's command line has it
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv("/usr/bin/python3", ["/usr/bin/python3", "-c",
                 "open('/cudalab/run/started', 'w').close()\\nimport time\\ntime.sleep(300)",
                 marker])
    os._exit(0)
while not os.path.exists("/cudalab/run/started"):
    time.sleep(0.01)
print("grandchild started", flush=True)
time.sleep(300 if sys.argv[2] == "hang" else 0.5)   # 0.5 s: long enough for the host to see it
"""


@needs_bwrap
def test_a_setsid_grandchild_ends_with_the_run(workdir, limits):
    """Proves: a double-forked, setsid'ed grandchild that still holds stdout and stderr is gone
    from the host as soon as run() returns after a normal exit, and run() does not wait on it."""
    marker = f"cudalab-test-{uuid.uuid4().hex}"
    result, seen = run_watching(marker + "-grandchild", lambda: SANDBOX.run(
        [PYTHON, "-c", SETSID_GRANDCHILD, marker, "exit"], workdir=workdir, limits=limits))
    assert result.exit_code == 0 and "grandchild started" in result.stdout, result.stderr
    assert seen, "the grandchild never showed up on the host, so the test proves nothing"
    assert marked_pids(marker) == []
    assert result.wall_s < 5


@needs_bwrap
def test_timeout_is_prompt_and_ends_every_process(workdir, limits):
    """Proves: on time-out the run ends within a few seconds of the limit although a setsid'ed
    grandchild holds the pipes, is reported as exit 5, and leaves nothing behind."""
    short = dataclasses.replace(limits, timeout_s=1.5)
    marker = f"cudalab-test-{uuid.uuid4().hex}"
    started = time.perf_counter()
    result, seen = run_watching(marker + "-grandchild", lambda: SANDBOX.run(
        [PYTHON, "-c", SETSID_GRANDCHILD, marker, "hang"], workdir=workdir, limits=short))
    elapsed = time.perf_counter() - started
    assert seen
    assert result.timed_out and result.exit_code == 5 and result.status == "timeout"
    assert "killed after 1.5 s" in result.describe()
    assert 1.4 < result.wall_s and elapsed < 1.5 + 3
    assert "grandchild started" in result.stdout
    assert marked_pids(marker) == []


FORK_STORM = """
import os, sys, time
made = 0
for _ in range(2000):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(120)
        os._exit(0)
    made += 1
print(made)
"""


@needs_bwrap
def test_process_count_is_limited(workdir, limits):
    """Proves: a fork storm of up to 2000 children gets fewer than limits.pids of them
    (pids.max or RLIMIT_NPROC), and none of them outlives the run."""
    small = dataclasses.replace(limits, pids=32)
    marker = f"cudalab-test-{uuid.uuid4().hex}"
    result = SANDBOX.run([PYTHON, "-c", FORK_STORM, marker], workdir=workdir, limits=small)
    assert result.exit_code == 0, result.stderr
    made = int(result.stdout)
    assert 0 < made < small.pids
    assert marked_pids(marker) == []
    assert "pids.max 32" in result.isolation or "RLIMIT_NPROC 32" in result.isolation


@needs_bwrap
def test_passed_descriptors_let_the_grader_talk_to_the_program(workdir, limits):
    """Proves: descriptors passed to the sandbox reach the program under their own numbers,
    and `during` runs while the program does (paced timing talks to it this way)."""
    to_child_r, to_child_w = os.pipe()
    from_child_r, from_child_w = os.pipe()
    heard = []

    def talk() -> bool:
        os.write(to_child_w, b"ping\n")
        heard.append(os.read(from_child_r, 100))
        os.close(to_child_w)
        os.close(from_child_r)
        return True
    script = (f"import os; line = os.read({to_child_r}, 100); "
              f"os.write({from_child_w}, b'pong:' + line)")
    result = SANDBOX.run([PYTHON, "-c", script], workdir=workdir, limits=limits,
                         pass_fds=(to_child_r, from_child_w), during=talk)
    assert result.exit_code == 0, result.stderr
    assert heard == [b"pong:ping\n"]


@needs_bwrap
def test_during_can_stop_the_program_at_once(workdir, limits):
    """Proves: when `during` returns False the program is stopped at once, not at the
    wall-clock limit, and the run does not count as a time-out."""
    started = time.perf_counter()
    result = SANDBOX.run([PYTHON, "-c", "import time; time.sleep(60)"], workdir=workdir, limits=limits,
                         during=lambda: False)
    assert time.perf_counter() - started < 5
    assert not result.timed_out and result.returncode != 0


def test_runs_go_beside_the_graders_cgroup_when_it_is_busy(tmp_path, monkeypatch):
    """Proves: when the grader's cgroup has processes of its own (cgroup.subtree_control
    refuses with EBUSY), runs get cgroups beside it, under a parent that already passes
    the controllers down, and no process is moved."""
    parent = tmp_path / "parent"
    own = parent / "grader"
    own.mkdir(parents=True)
    (parent / "cgroup.subtree_control").write_text("memory pids\n")
    (own / "cgroup.subtree_control").write_text("")
    real_write = sandbox_module._write

    def busy(path, text):
        if Path(path) == own / "cgroup.subtree_control":
            raise OSError(errno.EBUSY, "Device or resource busy")
        return real_write(path, text)
    monkeypatch.setattr(sandbox_module, "_write", busy)
    folder, why = sandbox_module._enable_controllers(own, ("memory", "pids"), tmp_path)
    assert (folder, why) == (parent, "")
    assert not (own / "cudalab-grader").exists()


@needs_bwrap
def test_no_network_inside(workdir, limits):
    """Proves: only the loopback interface exists inside, and a listener on the host's own
    127.0.0.1 cannot be reached from there."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.setblocking(False)
        port = listener.getsockname()[1]
        script = ("import socket, sys\n"
                  "print(sorted(line.split(':')[0].strip() "
                  "for line in open('/proc/net/dev').readlines()[2:]))\n"
                  "try:\n"
                  "    socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=3)\n"
                  "    print('connected')\n"
                  "except OSError as err:\n"
                  "    print('failed', err)\n")
        result = SANDBOX.run([PYTHON, "-c", script, str(port)], workdir=workdir, limits=limits)
        interfaces, outcome = result.stdout.splitlines()
        assert interfaces == "['lo']"
        assert outcome.startswith("failed")
        with pytest.raises(BlockingIOError):
            listener.accept()


# --------------------------------------------------------------------------- limits and results

@needs_bwrap
def test_output_is_capped_and_drained(workdir, limits):
    """Proves: a flood of output is read to its end (the program finishes) and cut at the cap."""
    capped = dataclasses.replace(limits, output_cap_bytes=4096)
    result = SANDBOX.run([PYTHON, "-c", "import sys\nfor _ in range(20000): print('x' * 99)\n"
                          "print('done', file=sys.stderr)"], workdir=workdir, limits=capped)
    assert result.exit_code == 0
    assert result.stdout.startswith("x" * 99)
    assert result.stdout.endswith("[output cut at 4 KiB]\n")
    assert len(result.stdout) < 4096 + 100
    assert result.stderr == "done\n"


@needs_bwrap
def test_environment_is_scrubbed(workdir, limits, monkeypatch):
    """Proves: the grader's secrets stay out, CUDA_VISIBLE_DEVICES comes along, HOME is the run
    folder and cwd, and the caller's variables are added."""
    monkeypatch.setenv("SECRET_TOKEN", "hunter2")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    result = SANDBOX.run([PYTHON, "-c", "import os, json; print(json.dumps(dict(os.environ)))\n"
                          "print(os.getcwd())"], workdir=workdir, limits=limits,
                         env={"CUDALAB_DUMP": f"{INSIDE_ROOT}/run/dump"})
    env = json.loads(result.stdout.splitlines()[0])
    assert "SECRET_TOKEN" not in env
    assert env["CUDA_VISIBLE_DEVICES"] == "0"
    assert env["LANG"] == env["LC_ALL"] == "C.UTF-8"
    assert env["HOME"] == result.stdout.splitlines()[1] == f"{INSIDE_ROOT}/run"
    assert env["TMPDIR"] == "/tmp"
    assert env["PATH"] == sandbox_module.DEFAULT_INSIDE_PATH
    assert env["CUDALAB_DUMP"] == f"{INSIDE_ROOT}/run/dump"
    assert set(env) <= {"PATH", "LANG", "LC_ALL", "HOME", "TMPDIR", "CUDA_VISIBLE_DEVICES",
                        "LD_LIBRARY_PATH", "LC_CTYPE", "PWD", "CUDALAB_DUMP"}


@needs_bwrap
def test_file_size_limit(workdir, limits):
    """Proves: RLIMIT_FSIZE stops a large write, and the signal reaches the result as a crash
    although bubblewrap reports it as exit code 128 + 25."""
    small = dataclasses.replace(limits, file_size_bytes=1024 * 1024)
    result = SANDBOX.run(sh(f"exec head -c 3000000 /dev/zero > {INSIDE_ROOT}/run/big"),
                         workdir=workdir, limits=small)
    assert result.status == "crashed" and result.signal_name == "SIGXFSZ"
    assert "larger than the file size limit" in result.describe()
    assert (workdir.host / "big").stat().st_size <= 1024 * 1024


@needs_bwrap
def test_core_dumps_are_off_and_cpu_is_limited(workdir, limits):
    """Proves: RLIMIT_CORE is 0 and RLIMIT_CPU is the wall limit times cpu_time_factor."""
    result = SANDBOX.run(sh("ulimit -c; ulimit -t"), workdir=workdir, limits=limits)
    core, cpu = result.stdout.split()
    assert core == "0" and int(cpu) == int(limits.timeout_s * limits.cpu_time_factor)


@needs_bwrap
def test_crashes_and_exit_codes_inside_are_described(workdir, limits):
    """Proves: a segfault, a harness exit code and a program that cannot start are told apart
    through the sandbox."""
    crash = SANDBOX.run([PYTHON, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"],
                        workdir=workdir, limits=limits)
    assert crash.status == "crashed" and "SIGSEGV" in crash.describe()
    cuda = SANDBOX.run(sh("exit 3"), workdir=workdir, limits=limits)
    assert cuda.returncode == 3 and cuda.status == "cuda_error"
    missing = SANDBOX.run([f"{INSIDE_ROOT}/run/no-such-program"], workdir=workdir, limits=limits)
    assert missing.returncode == 127 and "could not start" in missing.stderr


def test_crash_and_unknown_exit_are_described():
    """Proves: trusted runs (run_process) keep describing signals and odd exit codes."""
    crash = run_process([sys.executable, "-c",
                         "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"],
                        timeout_s=10, output_cap_bytes=1024)
    assert crash.status == "crashed" and "SIGSEGV" in crash.describe()
    odd = run_process([sys.executable, "-c", "raise SystemExit(7)"], timeout_s=10,
                      output_cap_bytes=1024)
    assert odd.status == "unexpected_exit" and "code 7" in odd.describe()
    shell = run_process(["sh", "-c", "exit 139"], timeout_s=10, output_cap_bytes=1024)
    assert "killed by SIGSEGV" in shell.describe()
    missing = run_process(["/no/such/program"], timeout_s=10, output_cap_bytes=1024)
    assert missing.returncode == 127 and "could not start" in missing.stderr


def test_trusted_timeout_kills_the_process_group(tmp_path):
    """Proves: run_process kills the whole process group on time-out, grandchildren included."""
    pid_file = tmp_path / "grandchild.pid"
    script = (f"import subprocess, sys, time, pathlib\n"
              f"child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'])\n"
              f"pathlib.Path({str(pid_file)!r}).write_text(str(child.pid))\n"
              f"time.sleep(300)\n")
    result = run_process([sys.executable, "-c", script], timeout_s=1.5, output_cap_bytes=1024)
    assert result.timed_out and result.exit_code == 5
    grandchild = int(pid_file.read_text())
    for _ in range(50):
        if not alive(grandchild):
            break
        time.sleep(0.05)
    assert not alive(grandchild), "the grandchild outlived the time-out"


LEFTOVER = """
import os, time
ready_read, ready_write = os.pipe()
if os.fork() == 0:
    os.setsid()                      # out of the process group the time-out kill reaches
    os.write(ready_write, b"x")
    time.sleep(30)
    os._exit(0)
os.read(ready_read, 1)               # the leftover has left the group, still holding stdout
"""


def test_trusted_run_does_not_wait_for_a_leftover_holding_the_pipes():
    """Proves: when a process that left the group keeps stdout open, run_process returns about
    a second after the main process ended, with what was written so far."""
    marker = f"cudalab-test-{uuid.uuid4().hex}"
    started = time.perf_counter()
    result = run_process([sys.executable, "-c", LEFTOVER + "print('main done', flush=True)",
                          marker], timeout_s=20, output_cap_bytes=1024)
    elapsed = time.perf_counter() - started
    leftovers = marked_pids(marker)
    try:
        assert leftovers, "the leftover did not survive, so the test proves nothing"
        assert result.exit_code == 0 and result.stdout == "main done\n"
        assert elapsed < 3
    finally:
        for pid in leftovers:
            os.kill(pid, 9)  # the test's own leftover, by its pid


def test_memory_limit_message():
    """Proves: a run the cgroup OOM killer ended says so, with the limit in words."""
    result = ProcessResult(["/cudalab/bin/prog"], -9, False, 1.0, 10.0, "", "",
                           oom_killed=True, memory_limit_bytes=16 * GIB)
    assert result.status == "crashed"
    assert result.describe().startswith(
        "the program was killed: it used more than the memory limit of 16 GiB")
    assert format_bytes(512 * MIB) == "512 MiB" and format_bytes(3 * GIB // 2) == "1.5 GiB"


def test_limits_come_from_the_config():
    """Proves: run and build limits use their own settings; a memory setting of 0 means none."""
    config = load_config(run_memory_bytes=0, build_pids=99)
    run = run_limits(config, timeout_s=7.0)
    assert run == Limits(timeout_s=7.0, output_cap_bytes=config.output_cap_bytes,
                         memory_bytes=None, pids=config.run_pids,
                         file_size_bytes=config.file_size_limit_bytes,
                         cpu_time_factor=config.cpu_time_factor,
                         folder_bytes=config.run_folder_bytes, folder_files=config.run_folder_files,
                         tmp_bytes=config.run_folder_bytes)
    assert run_limits(config).timeout_s == config.process_timeout_s
    build = build_limits(config)
    assert build.timeout_s == config.build_timeout_s and build.pids == 99
    assert build.memory_bytes == config.build_memory_bytes == 8 * GIB
    assert build.folder_bytes is None and build.tmp_bytes == config.run_folder_bytes  # see build_limits
    assert load_config().run_memory_bytes == 16 * GIB


# --------------------------------------------------------------------------- cgroup v2

HYBRID_MOUNTINFO = """\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
"""
HYBRID_CGROUP = "9:name=systemd:/\n8:pids:/\n4:memory:/process_api/c3ff\n0::/\n"

SYSTEMD_MOUNTINFO = """\
22 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw
29 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw
"""
SYSTEMD_CGROUP = "0::/user.slice/user-1000.slice/session-3.scope\n"


def test_cgroup2_mount_and_own_cgroup_are_parsed():
    """Proves: the cgroup v2 folder is found on a systemd machine, a hybrid one (this
    development machine's own text), under a mount of a subtree, with escaped mount points;
    and cgroup v1 only is told in words."""
    assert cgroup2_mounts(HYBRID_MOUNTINFO) == [("/", "/sys/fs/cgroup/unified")]
    assert own_cgroup2_path(HYBRID_CGROUP) == "/"
    assert locate_cgroup2(HYBRID_MOUNTINFO, HYBRID_CGROUP) == (Path("/sys/fs/cgroup/unified"), "")
    assert locate_cgroup2(SYSTEMD_MOUNTINFO, SYSTEMD_CGROUP) == (
        Path("/sys/fs/cgroup/user.slice/user-1000.slice/session-3.scope"), "")
    subtree = "50 40 0:40 /docker/abc /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"
    assert locate_cgroup2(subtree, "0::/docker/abc/grader\n") == (Path("/sys/fs/cgroup/grader"), "")
    folder, why = locate_cgroup2(subtree, "0::/elsewhere\n")
    assert folder is None and "/elsewhere" in why
    escaped = r"60 40 0:41 / /mnt/my\040cgroup rw - cgroup2 none rw" + "\n"
    assert cgroup2_mounts(escaped) == [("/", "/mnt/my cgroup")]
    folder, why = locate_cgroup2(HYBRID_MOUNTINFO, "4:memory:/x\n1:cpu:/\n")
    assert folder is None and "cgroup v1 only" in why
    folder, why = locate_cgroup2("22 1 259:2 / / rw - ext4 /dev/sda rw\n", SYSTEMD_CGROUP)
    assert folder is None and "no cgroup2 file system" in why


def test_cgroup_without_memory_and_pids_is_refused_in_words(tmp_path):
    """Proves: a cgroup v2 that lacks the memory and pids controllers (as on hybrid machines)
    is not used, and the reason names the folder and the controllers."""
    (tmp_path / "cgroup.controllers").write_text("cpu io\n")
    mountinfo = f"41 31 0:38 / {tmp_path} rw,relatime - cgroup2 cgroup2 rw\n"
    cgroups = sandbox_module._prepare_cgroup2(mountinfo, "0::/\n")
    assert cgroups.parent is None and cgroups.controllers == ()
    assert cgroups.reason.startswith(f"{tmp_path} does not offer the memory and pids controllers")


@needs_bwrap
@needs_cgroup_memory
def test_memory_limit_ends_the_run_and_says_so(workdir, limits):
    """Proves: a program that allocates past memory.max is killed, the result says it used more
    than the limit, and the run's cgroup is removed afterwards."""
    small = dataclasses.replace(limits, memory_bytes=64 * MIB)
    result = SANDBOX.run([PYTHON, "-c", "block = bytearray(512 * 1024 * 1024)\nprint('survived')"],
                         workdir=workdir, limits=small)
    assert result.oom_killed and "survived" not in result.stdout
    assert "used more than the memory limit of 64 MiB" in result.describe()
    assert "cgroup v2: memory.max 64 MiB, memory.swap.max 0" in result.isolation
    assert not list(SANDBOX._cgroups.parent.glob("cudalab-run-*"))


@needs_bwrap
@pytest.mark.skipif(not SANDBOX.isolation.cgroup, reason="needs usable cgroup v2: " + "; ".join(
    m for m in SANDBOX.isolation.missing if "cgroup" in m))
def test_cgroup_kill_ends_leftovers_on_time_out(workdir, limits):
    """Proves: with cgroup v2 the time-out path (cgroup.kill) also leaves nothing behind and
    removes the run's cgroup."""
    short = dataclasses.replace(limits, timeout_s=1.0)
    marker = f"cudalab-test-{uuid.uuid4().hex}"
    result = SANDBOX.run([PYTHON, "-c", SETSID_GRANDCHILD, marker, "hang"], workdir=workdir,
                         limits=short)
    assert result.timed_out and marked_pids(marker) == []
    assert not list(SANDBOX._cgroups.parent.glob("cudalab-run-*"))


@needs_bwrap
@pytest.mark.skipif(SANDBOX._memory_v1 is None, reason="needs a cgroup v1 memory hierarchy the grader can use")
def test_cgroup_v1_memory_limit_ends_a_gpu_run_and_says_so(workdir, limits):
    """Proves: where the memory controller lives in cgroup v1 (this development machine), a run
    with the GPU (no RLIMIT_DATA) is still killed at its memory limit, the result says so, and
    the run's cgroup is removed afterwards."""
    small = dataclasses.replace(limits, memory_bytes=64 * MIB)
    before = set(SANDBOX._memory_v1.glob("cudalab-run-*"))  # a grader killed by another test leaves its own
    result = SANDBOX.run([PYTHON, "-c", "block = bytearray(512 * 1024 * 1024)\nprint('survived')"],
                         workdir=workdir, limits=small, gpu=True)
    assert result.oom_killed and "survived" not in result.stdout
    assert "used more than the memory limit of 64 MiB" in result.describe()
    assert "cgroup v1: memory.limit_in_bytes 64 MiB, no swap" in result.isolation
    assert set(SANDBOX._memory_v1.glob("cudalab-run-*")) <= before


def without_memory_cgroups() -> Sandbox:
    """This machine's sandbox as it would be on a machine with no memory cgroup at all."""
    none = sandbox_module._Cgroups(None, (), "no cgroup here (test)")
    isolation = sandbox_module._describe_isolation(SANDBOX._bubblewrap, "", none, None, "no cgroup v1 here (test)",
                                                   "" if SANDBOX._folders_capped else "no tmpfs here (test)")
    return Sandbox(SANDBOX._bubblewrap, none, isolation, None, SANDBOX._folders_capped)


def test_a_machine_that_cannot_limit_memory_gives_no_official_grades():
    """Proves: with neither a cgroup v2 nor a cgroup v1 memory controller, no run of a CUDA
    program (RLIMIT_DATA cannot limit one) has a memory limit, so the isolation is not
    official and says why in words."""
    bubblewrap = sandbox_module._Bubblewrap("/usr/bin/bwrap", sandbox_module._BWRAP_BASE, 65534, ())
    none = sandbox_module._Cgroups(None, (), "no cgroup2 file system is mounted")
    isolation = sandbox_module._describe_isolation(bubblewrap, "", none, None, "no memory hierarchy (test)")
    assert not isolation.memory_limited and not isolation.official
    assert any(m.startswith("no memory limit on a run that uses the GPU, so grades here are not official")
               and "no memory hierarchy (test)" in m for m in isolation.missing)
    with_v1 = sandbox_module._describe_isolation(bubblewrap, "", none, Path("/sys/fs/cgroup/memory/x"))
    assert with_v1.memory_limited and with_v1.official == (os.geteuid() == 0)


def test_cgroup_v1_memory_is_found_in_mountinfo():
    """Proves: the cgroup v1 memory cgroup is found on a hybrid machine (this development
    machine's own text), and its absence is told in words."""
    assert sandbox_module.locate_memory_v1(HYBRID_MOUNTINFO, HYBRID_CGROUP) == (
        Path("/sys/fs/cgroup/memory/process_api/c3ff"), "")
    folder, why = sandbox_module.locate_memory_v1(SYSTEMD_MOUNTINFO, SYSTEMD_CGROUP)
    assert folder is None and "no cgroup v1 memory entry" in why


ALLOCATE_1_GIB = """
import sys
try:
    block = bytearray(1024 * 1024 * 1024)
except MemoryError:
    sys.exit("out of memory")
print("survived")
"""


@needs_bwrap
def test_without_cgroups_rlimit_data_stops_a_compiler_that_allocates(workdir, limits):
    """Proves: on a machine with no memory cgroup, a run without the GPU (a compile, the
    checker) is held to its memory limit per process by RLIMIT_DATA: a fake compiler that
    allocates 1 GiB under a 256 MiB limit gets no memory and fails."""
    bare = without_memory_cgroups()
    small = dataclasses.replace(limits, memory_bytes=256 * MIB)
    result = bare.run([PYTHON, "-c", ALLOCATE_1_GIB], workdir=workdir, limits=small)
    assert result.exit_code != 0 and "survived" not in result.stdout
    assert "out of memory" in result.stderr
    assert "RLIMIT_DATA 256 MiB per process of a run without the GPU" in result.isolation


@needs_bwrap
@pytest.mark.skipif(not os.path.exists("/usr/local/cuda/bin/nvcc"), reason="needs nvcc at /usr/local/cuda/bin")
def test_without_cgroups_a_compile_of_dev_zero_is_stopped(workdir, limits):
    """Proves: `#include "/dev/zero"`, which grows a compiler until the host runs out of
    memory, is stopped by RLIMIT_DATA where no cgroup exists (about a second at 512 MiB)."""
    (workdir.host / "zero.cu").write_text('#include "/dev/zero"\n')
    bare = without_memory_cgroups()
    small = dataclasses.replace(build_limits(load_config()), memory_bytes=512 * MIB, timeout_s=60.0)
    started = time.perf_counter()
    result = bare.run(["/usr/local/cuda/bin/nvcc", "-c", "zero.cu", "-o", "zero.o"], workdir=workdir, limits=small)
    assert result.exit_code != 0 and not result.timed_out
    assert "out of memory" in result.stdout + result.stderr
    assert time.perf_counter() - started < 30


FILL_FOLDER = """
import os, sys
where = sys.argv[1]
written = 0
try:
    with open(os.path.join(where, "big"), "wb") as out:
        while written < 64 * 1024 * 1024:
            out.write(b"x" * 65536)
            written += 65536
except OSError as err:
    print("stopped", err.errno)
"""
MANY_FILES = """
import os
try:
    for i in range(100000):
        open(f"f{i}", "w").close()
except OSError as err:
    print("stopped", err.errno)
"""


@needs_bwrap
@pytest.mark.skipif(not SANDBOX._folders_capped, reason="needs a grader that may mount a tmpfs (root)")
def test_a_run_that_fills_its_folder_is_stopped_and_told_so(workdir, limits):
    """Proves: a run folder is a tmpfs of its own, capped in bytes and in files, as is the
    private /tmp in bytes; a program that fills one gets ENOSPC and a result that says, in
    words, that it filled its folder to the limit; and removing the folder unmounts it."""
    small = dataclasses.replace(limits, folder_bytes=4 * MIB, folder_files=64, tmp_bytes=4 * MIB)
    (workdir.host / "given.txt").write_text("put there by the grader\n")
    flood = SANDBOX.run([PYTHON, "-c", FILL_FOLDER, f"{INSIDE_ROOT}/run"], workdir=workdir, limits=small)
    assert flood.stdout.split() == ["stopped", str(errno.ENOSPC)]
    assert flood.folder_full == "4 MiB and 64 files and folders"
    assert flood.describe().startswith("the program filled its folder to the limit (4 MiB and 64 files and "
                                       "folders) and could write no more")
    assert (workdir.host / "given.txt").read_text() == "put there by the grader\n"
    assert "run folder: a tmpfs of its own of 4 MiB and 64 files and folders" in flood.isolation
    assert os.path.getsize(workdir.host / "big") <= 4 * MIB
    (workdir.host / "big").unlink()
    files = SANDBOX.run([PYTHON, "-c", MANY_FILES], workdir=workdir, limits=small)
    assert files.stdout.split() == ["stopped", str(errno.ENOSPC)] and files.folder_full is not None
    in_tmp = SANDBOX.run([PYTHON, "-c", FILL_FOLDER, "/tmp"], workdir=workdir, limits=small)
    assert in_tmp.stdout.split() == ["stopped", str(errno.ENOSPC)]
    assert trees.remove_tree(workdir.host) and not workdir.host.exists()
    assert str(workdir.host) not in Path("/proc/self/mountinfo").read_text()


@pytest.mark.gpu
@needs_bwrap
def test_gpu_is_reachable_inside_with_gpu_true(workdir, limits):
    """Proves: gpu=True brings the NVIDIA devices and /sys into the sandbox, so the driver
    finds the GPU; without it there is no GPU device inside."""
    smi = shutil.which("nvidia-smi")
    if smi is None or not smi.startswith("/usr/"):
        pytest.skip(f"nvidia-smi is at {smi}, outside /usr, so not in the sandbox's view")
    with_gpu = SANDBOX.run([smi, "-L"], workdir=workdir, limits=limits, gpu=True)
    assert with_gpu.exit_code == 0 and "GPU" in with_gpu.stdout, with_gpu.stderr
    without = SANDBOX.run(sh("ls /dev | grep -c '^nvidia' || true"), workdir=workdir,
                          limits=limits)
    assert without.stdout.strip() == "0"


# --------------------------------------------------------------------------- fallback and isolation

def test_fallback_without_bubblewrap_translates_paths(workdir, inputs, limits):
    """Proves: with no bubblewrap the run still works: inside paths in argv and env become host
    paths, cwd and HOME are the run folder, and the result says bubblewrap is missing."""
    fallback = Sandbox.detect(load_config(bwrap="/no/such/bwrap"))
    assert fallback.isolation.kind == "none" and not fallback.isolation.official
    assert fallback.isolation.missing[0].startswith("bubblewrap not found at /no/such/bwrap")
    script = 'cat "$1" > "$2"; pwd; echo "$HOME"; echo "$DUMP"'
    result = fallback.run(sh(script, f"{INSIDE_ROOT}/in/file", f"{INSIDE_ROOT}/run/copy"),
                          workdir=workdir, binds=[inputs], limits=limits,
                          env={"DUMP": f"{INSIDE_ROOT}/run/dump"})
    assert result.exit_code == 0, result.stderr
    assert (workdir.host / "copy").read_text() == "original\n"
    assert result.stdout.splitlines() == [str(workdir.host), str(workdir.host),
                                          f"{workdir.host}/dump"]
    assert result.isolation.startswith("no sandbox (not official)")
    assert "bubblewrap not found" in result.isolation


def test_fallback_keeps_the_limits(workdir, limits, monkeypatch):
    """Proves: unsandboxed runs still get a scrubbed environment, RLIMIT_CORE/CPU, and a
    process-group kill on time-out."""
    monkeypatch.setenv("SECRET_TOKEN", "hunter2")
    fallback = Sandbox.detect(load_config(bwrap="/no/such/bwrap"))
    result = fallback.run(sh("ulimit -c; ulimit -t; echo ${SECRET_TOKEN:-none}"),
                          workdir=workdir, limits=limits)
    assert result.stdout.split() == ["0", str(int(limits.timeout_s * limits.cpu_time_factor)),
                                     "none"]
    short = dataclasses.replace(limits, timeout_s=1.0)
    started = time.perf_counter()
    slow = fallback.run(sh("sleep 30"), workdir=workdir, limits=short)
    assert slow.timed_out and time.perf_counter() - started < 4


def test_fallback_maps_the_inside_paths_of_a_shell_command_line(workdir, inputs, limits):
    """Proves: without bubblewrap a shell command line (how the build runs CMake's compile and
    link commands) sees the inside paths it names as the sandbox would show them, as words
    and as options' values, while a relative path that merely has cudalab/ in it stays
    relative."""
    fallback = Sandbox.detect(load_config(bwrap="/no/such/bwrap"))
    script = (f"mkdir -p obj/cudalab/in && echo relative > obj/cudalab/in/file && "
              f"cat {INSIDE_ROOT}/in/file obj/cudalab/in/file > {INSIDE_ROOT}/run/copy && "
              f"echo --from={INSIDE_ROOT}/in/file -I{INSIDE_ROOT}/in,{INSIDE_ROOT}/run")
    result = fallback.run(["/bin/sh", "-c", script], workdir=workdir, binds=[inputs], limits=limits)
    assert result.exit_code == 0, result.stderr
    assert (workdir.host / "copy").read_text() == "original\nrelative\n"
    assert result.stdout.split() == [f"--from={inputs.host}/file", f"-I{inputs.host},{workdir.host}"]


@pytest.mark.parametrize("bind_folder", ["with space", "it's"])
def test_fallback_quotes_host_paths_for_the_shell(space, limits, bind_folder):
    """Proves: a host folder with characters the shell would split on still reaches the
    command whole (the scratch folder lies under the user's home, whatever its name)."""
    fallback = Sandbox.detect(load_config(bwrap="/no/such/bwrap"))
    host = space / bind_folder
    host.mkdir()
    (host / "file").write_text("inside\n")
    workdir = Bind(space / "run", f"{INSIDE_ROOT}/run", writable=True)
    workdir.host.mkdir()
    result = fallback.run(["/bin/sh", "-c", f"cat {INSIDE_ROOT}/src/file"], workdir=workdir,
                          binds=[Bind(host, f"{INSIDE_ROOT}/src")], limits=limits)
    assert result.exit_code == 0 and result.stdout == "inside\n", result.stderr


def test_probe_failure_is_reported(space):
    """Proves: a bubblewrap that cannot create namespaces here is not used, and its own words
    end up in Isolation.missing."""
    fake = space / "fake-bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    isolation = Sandbox.detect(load_config(bwrap=str(fake))).isolation
    assert isolation.kind == "none"
    assert "cannot create a sandbox here" in isolation.missing[0]
    assert "No permissions to create new namespace" in isolation.missing[0]


def test_a_bubblewrap_refused_every_way_says_so_once(space):
    """Proves: where every way of starting bubblewrap fails alike (no user namespaces for this
    user), the reason says bubblewrap's words once, not once per attempt, and names the cause."""
    fake = space / "fake-bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n")
    fake.chmod(0o755)
    isolation = Sandbox.detect(load_config(bwrap=str(fake))).isolation
    why = isolation.why_not_official()
    assert why.count("setting up uid map") == 1 and "every way it was tried" in why
    assert "does not let this user create user namespaces" in why and len(why) < 400


@needs_bwrap
def test_isolation_says_what_is_in_force(workdir, limits):
    """Proves: the sandbox's Isolation, its JSON and its one-line description name what is in
    force and what is missing, and every result carries the run's own numbers."""
    isolation = SANDBOX.isolation
    assert isolation.kind == "bubblewrap" and isolation.official
    assert isolation.to_json() == {"kind": "bubblewrap", "uid": isolation.uid,
                                   "cgroup": isolation.cgroup, "memory_limited": True, "official": True,
                                   "in_force": list(isolation.in_force),
                                   "missing": list(isolation.missing)}
    assert "no network (own network namespace, loopback only)" in isolation.in_force
    assert "own PID namespace: every process ends with the run" in isolation.in_force
    text = isolation.describe()
    assert "\n" not in text and text.startswith("bubblewrap sandbox (official); in force: ")
    assert all(sentence in text for sentence in isolation.in_force + isolation.missing)
    if not isolation.cgroup:
        assert any(m.startswith("no memory limit on a run that uses the GPU") for m in isolation.missing) or \
            any(m.startswith("cgroup v1 memory per run") for m in isolation.in_force)
    result = SANDBOX.run(["/usr/bin/true"], workdir=workdir, limits=limits)
    assert result.isolation == SANDBOX.isolation_for(limits).describe()
    assert f"pids.max {limits.pids}" in result.isolation or \
        f"RLIMIT_NPROC {limits.pids}" in result.isolation


def test_official_needs_a_sandbox_and_no_root_child():
    """Proves: only a bubblewrap sandbox whose child is not root counts as official."""
    def isolation(kind: str, uid: int | None) -> Isolation:
        return Isolation(kind=kind, uid=uid, cgroup=False, in_force=(), missing=())
    assert not isolation("none", None).official
    assert isolation("bubblewrap", 65534).official
    assert isolation("bubblewrap", None).official == (os.geteuid() != 0)


def test_toolchain_roots_show_tools_outside_usr_but_never_the_repository():
    """Proves: a compiler or library outside /usr (e.g. /opt/gcc) is shown by its top
    folder, system paths add nothing, and no folder holding the repository is ever shown."""
    if not os.access("/opt", os.W_OK):
        pytest.skip("needs a writable /opt to stand in for a toolchain outside /usr")
    top = Path(tempfile.mkdtemp(prefix="cudalab-toolchain-", dir="/opt"))
    try:
        tool = top / "bin" / "g++"
        tool.parent.mkdir()
        tool.write_text("")
        assert sandbox_module.toolchain_roots([tool, "/usr/bin/true", "/no/such/thing"]) == (top,)
        assert sandbox_module.toolchain_roots([tool], protect=[top / "repo"]) == ()
        assert sandbox_module.toolchain_roots(["/proc/self/exe", "/etc/passwd", "/tmp"]) == ()
    finally:
        shutil.rmtree(top, ignore_errors=True)


@needs_bwrap
def test_a_read_only_bind_out_of_the_sandbox_users_reach_is_shown_through_a_copy(workdir, limits, space):
    """Proves: a file the sandbox user cannot reach (here under a 0700 folder, as a checkout
    in a private home would be) is still shown, read-only, through a reachable copy."""
    if not AS_ROOT:
        pytest.skip("only root switches to the sandbox user")
    private = space / "private"
    private.mkdir(mode=0o700)
    (private / "tool").write_text("content\n")
    private.chmod(0o700)
    result = SANDBOX.run(sh("cat /cudalab/in/tool"), workdir=workdir, limits=limits,
                         binds=[Bind(private / "tool", f"{INSIDE_ROOT}/in/tool")])
    assert result.exit_code == 0 and result.stdout == "content\n", result.stderr


# --------------------------------------------------------------------------- student verbs without a sandbox

_BWRAP_WITHOUT_USER_NAMESPACES = {
    "the uid map is refused": "bwrap: setting up uid map: Permission denied",
    "no user namespaces": "bwrap: No permissions to create new namespace, likely because the kernel does not "
                          "allow non-privileged user namespaces.",
}


@pytest.fixture(params=["bubblewrap is not installed", *_BWRAP_WITHOUT_USER_NAMESPACES])
def without_a_sandbox(request, monkeypatch, tmp_path):
    """A machine where bubblewrap cannot sandbox: not on PATH (nor staged), or installed but
    refused user namespaces (AppArmor, a container, WSL), as a real one says it."""
    monkeypatch.setattr(sandbox_module, "_detected", {})  # probe this machine afresh
    for key in [k for k in os.environ if k.startswith("CUDALAB_")]:
        monkeypatch.delenv(key)
    if request.param in _BWRAP_WITHOUT_USER_NAMESPACES:
        fake = tmp_path / "bwrap"
        fake.write_text(f"#!/bin/sh\necho '{_BWRAP_WITHOUT_USER_NAMESPACES[request.param]}' >&2\nexit 1\n")
        fake.chmod(0o755)
        monkeypatch.setenv("CUDALAB_BWRAP", str(fake))
    else:
        which = shutil.which
        monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None if name == "bwrap" else which(name, *a, **k))
        monkeypatch.setattr(sandbox_module, "STAGED_BWRAP", Path("no", "staged", "bwrap"))
    monkeypatch.setenv("CUDALAB_ROOT", str(REPO_ROOT))
    monkeypatch.setenv("CUDALAB_PRESET", "ci")
    monkeypatch.setenv("CUDALAB_WORK_DIR", str(tmp_path / "work"))
    return request.param


@pytest.mark.needs_build
def test_every_student_verb_builds_the_solution_without_a_sandbox(without_a_sandbox, tmp_path, capsys):
    """Proves: where bubblewrap is missing or cannot create namespaces, run, check, pack and
    grade --allow-unisolated build the course's vector_add solution as the sandbox would
    (CMake's commands see the SDK and the staged file), so nothing reports a made-up
    compile error; run then says there is no GPU (or passes, on a GPU machine)."""
    from cudalab import cli
    from cudalab.config import cuda_device_present
    folder = tmp_path / "mine"
    folder.mkdir()
    shutil.copy(REPO_ROOT / "solutions" / "vector_add" / "vector_add.cu", folder)
    gpu = cuda_device_present()

    assert cli.main(["run", "vector_add", str(folder)]) == (0 if gpu else 23)
    said = capsys.readouterr()
    assert "Running your vector_add.cu" in said.err and "did not compile" not in said.err + said.out
    assert gpu or "no CUDA device" in said.err
    assert "bubblewrap" in said.err  # the run says what isolation it lacks

    assert cli.main(["check", str(folder), "--lab", "vector_add", "--no-run", "--json"]) == 0
    said = capsys.readouterr()
    receipt = json.loads(said.out)
    assert {c["name"]: c["verdict"] for c in receipt["checks"]}["compile"] == "passed"
    assert receipt["accepted"] and receipt["isolation"]["kind"] == "none"
    assert "FAILED" not in said.err

    archive = tmp_path / "vector_add.tar.gz"
    assert cli.main(["pack", "vector_add", str(folder), "--out", str(archive)]) == 0
    said = capsys.readouterr()
    assert archive.is_file() and "FAILED" not in said.err + said.out

    out = tmp_path / "grade"
    code = cli.main(["grade", "vector_add", str(folder), "--allow-unisolated", "--out", str(out), "--json"])
    result = json.loads(capsys.readouterr().out)
    assert result["build"]["status"] == "built", result["message"]
    assert result["status"] == ("graded" if gpu else "not_run") and code == result["exit_code"]
    assert not result["provenance"]["isolation"]["official"]
