"""`cudalab doctor`: what this machine can do, what run, check and grade will therefore do
here, and the one step that fixes each gap; it exits as grade would on a correct hand-in."""
from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cudalab import cli
from cudalab.isolation import doctor
from cudalab.commands import doctor as commands_doctor
from cudalab.config import Config
from cudalab.isolation.doctor import Finding
from cudalab.exit_codes import Cli
from conftest import REPO_ROOT


def fake_tool(folder: Path, name: str, script: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("#!/bin/sh\n" + script)
    (folder / name).chmod(0o755)


def everything_ok() -> list[Finding]:
    return [Finding(topic, True, "fine") for topic in
            ("GPU", "CUDA toolkit", "CMake and Ninja", "sandbox", "disk", "Python packages", "official build")]


def lacking(*topics: str) -> list[Finding]:
    return [dataclasses.replace(f, ok=False, fix="do this") if f.topic in topics else f for f in everything_ok()]


@pytest.mark.parametrize("missing, code, grade_says", [
    ((), Cli.DONE, "gives official grades"),
    (("GPU",), Cli.NO_DEVICE, "no grade without a CUDA device"),
    (("sandbox",), Cli.NOT_ISOLATED, "refuses to grade without a sandbox"),
    (("GPU", "sandbox"), Cli.NO_DEVICE, "no grade without a CUDA device"),
    (("CUDA toolkit",), Cli.INTERNAL, "nothing can be built here"),
])
def test_what_each_verb_will_do_follows_from_what_the_machine_has(missing, code, grade_says):
    findings = lacking(*missing)
    said = doctor.verdicts(findings)
    assert set(said) == {"run", "check", "grade"} and grade_says in said["grade"]
    assert doctor.exit_code(findings) == code
    if "GPU" in missing and "CUDA toolkit" not in missing:
        assert "runs nothing" in said["run"] and "need a GPU" in said["check"]
    shown = doctor.render(findings, said)
    assert shown.count("to fix: do this") == len(missing) and "cudalab grade: " in shown


def test_no_gpu_is_found_and_said_with_its_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    found = doctor._gpu()
    assert not found.ok and "nvidia-smi is not on PATH" in found.found and "NVIDIA GPU" in found.fix


def test_a_gpu_that_nvidia_smi_lists_is_found_with_its_driver(tmp_path, monkeypatch):
    fake_tool(tmp_path / "bin", "nvidia-smi", 'case "$1" in\n'
              '  -L) echo "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1234)";;\n'
              '  *) echo "580.159.04";;\nesac\n')
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:/usr/bin:/bin")
    found = doctor._gpu()
    assert found.ok and "NVIDIA H100 80GB HBM3" in found.found and "driver 580.159.04" in found.found


def test_an_old_toolkit_is_named_with_the_one_that_is_needed(tmp_path, monkeypatch):
    fake_tool(tmp_path / "bin", "nvcc", 'echo "Cuda compilation tools, release 12.4, V12.4.131"\n')
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:/usr/bin:/bin")
    found = doctor._nvcc()
    assert not found.ok and "nvcc 12.4" in found.found and f"CUDA {doctor.CUDA_MAJOR}" in found.fix


def test_a_machine_without_bubblewrap_is_told_what_to_install(tmp_path):
    config = dataclasses.replace(Config.load(root=REPO_ROOT, env=os.environ), bwrap=str(tmp_path / "no-bwrap"))
    found = doctor._sandbox(config)
    assert not found.ok and "not official" in found.found and "bubblewrap" in found.fix.lower()


def test_a_bubblewrap_without_user_namespaces_is_told_how_to_allow_them(tmp_path):
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n")
    fake.chmod(0o755)
    config = dataclasses.replace(Config.load(root=REPO_ROOT, env=os.environ), bwrap=str(fake))
    found = doctor._sandbox(config)
    assert not found.ok and found.found.count("setting up uid map") == 1
    assert "apparmor_restrict_unprivileged_userns=0" in found.fix and "in force" not in found.found


def test_the_verb_prints_its_findings_and_exits_as_grade_would(monkeypatch, capsys):
    monkeypatch.setattr(commands_doctor, "examine", lambda config: lacking("GPU"))
    assert cli.main(["doctor"]) == Cli.NO_DEVICE
    out = capsys.readouterr().out
    assert "NO  GPU: fine" in out and "to fix: do this" in out and "cudalab run: builds your code" in out
    assert cli.main(["doctor", "--json"]) == Cli.NO_DEVICE
    body = json.loads(capsys.readouterr().out)
    assert body["schema"] == doctor.SCHEMA and body["exit_code"] == int(Cli.NO_DEVICE)
    assert [f["topic"] for f in body["findings"]][0] == "GPU" and set(body["verbs"]) == {"run", "check", "grade"}


def test_output_read_by_a_reader_that_stops_early_ends_without_a_traceback():
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "grader")}
    proc = subprocess.Popen([sys.executable, "-m", "cudalab", "doctor", "--json"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env)
    proc.stdout.close()  # before it writes anything: its write meets a closed pipe
    _, err = proc.communicate(timeout=120)
    assert b"Traceback" not in err, err.decode()
    assert proc.returncode == 141
