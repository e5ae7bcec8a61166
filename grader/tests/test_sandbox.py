"""sandbox: process-group kill on time-out, output caps, scrubbed environment, limits."""
from __future__ import annotations

import dataclasses
import os
import sys
import time
from pathlib import Path

import pytest

from cudalab.config import Config
from cudalab.sandbox import network_isolation_available, run_process, run_untrusted


@pytest.fixture
def config(toy_root, tmp_path) -> Config:
    return Config.load(env={}, root=toy_root, preset="ci", work_dir=tmp_path / "work",
                       process_timeout_s=10.0)


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def test_timeout_kills_the_whole_process_group(config, tmp_path):
    pid_file = tmp_path / "grandchild.pid"
    script = (f"import subprocess, sys, time, pathlib\n"
              f"child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'])\n"
              f"pathlib.Path({str(pid_file)!r}).write_text(str(child.pid))\n"
              f"time.sleep(300)\n")
    started = time.perf_counter()
    result = run_untrusted([sys.executable, "-c", script], config, timeout_s=1.5)
    assert time.perf_counter() - started < 10
    assert result.timed_out and result.exit_code == 5 and result.status == "timeout"
    assert "killed after 1.5 s" in result.describe()
    assert 1.4 < result.wall_s < 10
    grandchild = int(pid_file.read_text())
    for _ in range(50):
        if not alive(grandchild):
            break
        time.sleep(0.05)
    assert not alive(grandchild), "the grandchild outlived the time-out"


def test_output_is_capped_and_drained(config):
    capped = dataclasses.replace(config, output_cap_bytes=4096)
    result = run_untrusted([sys.executable, "-c", "import sys\nfor _ in range(20000): print('x' * 99)\n"
                            "print('done', file=sys.stderr)"], capped)
    assert result.exit_code == 0
    assert result.stdout.startswith("x" * 99)
    assert result.stdout.endswith("[output cut at 4 KiB]\n")
    assert len(result.stdout) < 4096 + 100
    assert result.stderr == "done\n"


def test_environment_is_scrubbed(config, monkeypatch):
    monkeypatch.setenv("SECRET_TOKEN", "hunter2")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    result = run_untrusted([sys.executable, "-c", "import os, json; print(json.dumps(dict(os.environ)))"
                            "; print(os.getcwd())"], config)
    import json
    env = json.loads(result.stdout.splitlines()[0])
    cwd = result.stdout.splitlines()[1]
    assert "SECRET_TOKEN" not in env
    assert env["CUDA_VISIBLE_DEVICES"] == "0"
    assert env["LANG"] == env["LC_ALL"] == "C.UTF-8"
    assert env["HOME"] == cwd and Path(cwd).parent == config.temp_dir
    assert not Path(cwd).exists(), "the sandbox folder is removed afterwards"
    assert set(env) <= {"PATH", "LANG", "LC_ALL", "HOME", "TMPDIR", "CUDA_VISIBLE_DEVICES",
                        "LD_LIBRARY_PATH", "LC_CTYPE"}


def test_file_size_limit(config, tmp_path):
    small = dataclasses.replace(config, file_size_limit_bytes=1024 * 1024)
    target = tmp_path / "big"
    result = run_untrusted(["sh", "-c", f"exec head -c 3000000 /dev/zero > {target}"], small)
    assert result.status == "crashed" and result.signal_name == "SIGXFSZ"
    assert "larger than the file size limit" in result.describe()
    assert target.stat().st_size <= 1024 * 1024


def test_core_dumps_are_off_and_cpu_is_limited(config):
    result = run_untrusted(["sh", "-c", "ulimit -c; ulimit -t"], config)
    core, cpu = result.stdout.split()
    assert core == "0" and int(cpu) == int(config.process_timeout_s * config.cpu_time_factor)


def test_isolation_is_said_plainly(config):
    result = run_untrusted(["true"], config)
    if network_isolation_available():
        assert result.isolation.startswith("network namespace")
    else:
        assert result.isolation == "none: unshare unavailable"
    off = run_untrusted(["true"], dataclasses.replace(config, network_isolation=False))
    assert off.isolation == "none: network isolation turned off"


@pytest.mark.skipif(not network_isolation_available(), reason="unshare --net is not available here")
def test_no_network_inside(config):
    result = run_untrusted(["sh", "-c", "cat /proc/net/dev | tail -n +3 | cut -d: -f1"], config)
    assert result.stdout.split() == ["lo"]


def test_crash_and_unknown_exit_are_described():
    crash = run_process([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"],
                        timeout_s=10, output_cap_bytes=1024)
    assert crash.status == "crashed" and "SIGSEGV" in crash.describe()
    odd = run_process([sys.executable, "-c", "raise SystemExit(7)"], timeout_s=10, output_cap_bytes=1024)
    assert odd.status == "unexpected_exit" and "code 7" in odd.describe()
    shell = run_process(["sh", "-c", "exit 139"], timeout_s=10, output_cap_bytes=1024)
    assert "killed by SIGSEGV" in shell.describe()
    missing = run_process(["/no/such/program"], timeout_s=10, output_cap_bytes=1024)
    assert missing.returncode == 127 and "could not start" in missing.stderr
