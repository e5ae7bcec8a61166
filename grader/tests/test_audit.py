"""The auditor and the reference program kept for every timing round (audit.py): one process
of each serves every session, what a timed program is told (nothing it could use), the kept
samples the auditor writes, failures of official code as grader errors, and fresh
processes after one."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest

from cudalab.isolation import gpu
from cudalab.lab import labs
from cudalab.grading.audit import AuditServer
from cudalab.errors import GraderError
from cudalab.isolation.runner import Runner
from cudalab.grading.timing import Pace, ProtocolError, send_line
from conftest import seal, write_fake


def pace(**overrides) -> Pace:
    values = dict(warmup=1, samples=None, target_s=0.01, samples_min=5, samples_max=50, keep=0,
                  sample_timeout_s=5.0, student=False, stop_when=None)
    values.update(overrides)
    return Pace(**values)


def server(toy_config, toy_root, tmp_path, **behaviour) -> AuditServer:
    if behaviour:
        write_fake(toy_root / "build" / "ci" / "bin" / "toy_solution", name="toy_solution", **behaviour)
        seal(toy_root)
    runner = Runner(toy_config, labs.load_lab(toy_config, "toy"), tmp_path / "scratch")
    return AuditServer(runner, runner.official("solution"), "b_1000", 5.0, slots=2)


def alive(pid: int) -> bool:
    """A process that has not ended (a zombie left to an init that reaps late has ended)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2:].split()[0] != "Z"


def processes(runner: Runner, flag: str) -> list[str]:
    return [t["what"] for t in runner.times if flag in t["what"]]


def timed_program(audit: AuditServer, binary: Path, session: Pace) -> dict:
    """One session of `binary` as a grade times a submission: a fresh process laid out in the
    auditor's arena; returns its run JSON (with every line it was sent)."""
    start = audit.program_start()
    outcome = {}

    def talk():
        try:
            outcome["run"] = audit.round(session, start.ready(5.0))
            send_line(start.to_program, "end")
            return True
        except ProtocolError as err:
            outcome["breach"] = err
            return False
        finally:
            start.close()
    _, folder = audit.runner.run(binary, start.argv, pass_fds=start.pass_fds, during=talk)
    if "breach" in outcome:
        raise outcome["breach"]
    said = json.loads((folder / "run.json").read_text())
    said["paced_run"] = outcome["run"]
    return said


def test_one_auditor_and_the_reference_programs_serve_every_session_until_closed(toy_config, toy_root, tmp_path):
    audit = server(toy_config, toy_root, tmp_path)
    assert audit.pids() == frozenset()
    first_round = audit.round(pace())
    first = first_round.reference
    pids = audit.pids()
    assert pids and all(alive(pid) for pid in pids)
    second = audit.round(pace(samples=first.timed)).reference
    third = audit.round(pace(samples=first.timed, warmup=0)).reference
    assert first.timed >= 5 and second.timed == third.timed == first.timed
    assert first_round.second.timed == first.timed
    assert audit.pids() == pids  # the same three programs all along
    assert processes(audit.runner, "--paced") == processes(audit.runner, "--audit") == []  # not ended yet
    clocks = audit.close()
    assert clocks == [1980.0, 1970.0]  # the reference's run.json, read once it ended
    assert processes(audit.runner, "--paced") == ["toy_solution --paced"] * 2  # its two processes
    assert processes(audit.runner, "--audit") == ["toy_solution --audit"]
    assert audit.pids() == frozenset() and not [pid for pid in pids if alive(pid)]
    assert audit.close() == clocks  # closing again does nothing
    assert not any((tmp_path / "scratch").iterdir())  # their folders are gone


def test_a_timed_program_is_told_go_and_nothing_else_whatever_is_kept(toy_config, toy_root, tmp_path):
    """The program under test learns no seed, no kind of sample and nothing about which of
    its samples the auditor keeps: every line it gets is 'go N' with N counting up, then 'end'."""
    audit = server(toy_config, toy_root, tmp_path)
    binary = write_fake(tmp_path / "student" / "toy_submission", name="toy_submission", sample_ms=0.5)
    said = timed_program(audit, binary, pace(samples=40, keep=2, student=True))
    run = said["paced_run"].student
    assert run.timed == 40 and len(run.kept) == 2 and not run.wrong
    lines = said["seen"]
    assert lines[-1] == "end" and all(re.fullmatch(r"go \d+", line) for line in lines[:-1])
    numbers = [int(line.split()[1]) for line in lines[:-1]]
    assert numbers == sorted(set(numbers))  # counting up (the reference's samples come between, in secret)
    assert {k.number for k in run.kept} <= set(numbers)
    # Its own folder holds nothing of the kept samples: the auditor wrote them where the
    # program cannot see them, and they come to the grader only when asked for.
    kept = [audit.dump(k.slot) for k in run.kept]
    assert all((d.path / "b_1000.c.bin").read_text() == f"{k.seed}:b_1000\n" for d, k in zip(kept, run.kept))
    for dump in kept:
        dump.release()
    audit.close()


def test_a_program_that_answers_through_its_signal_page_is_timed_as_one_that_answers_on_its_pipe(
        toy_config, toy_root, tmp_path):
    """A program whose ready line says 'signal' gets "go" and gives "done" through the page the
    grader shared between it and the auditor (labkit/signal_page.hpp), the reference's two
    processes too: it learns the same as over its pipe (a sample number counting up) and is
    timed, kept and verified the same way."""
    audit = server(toy_config, toy_root, tmp_path, signal=True)
    binary = write_fake(tmp_path / "student" / "toy_submission", name="toy_submission", sample_ms=0.5, signal=True)
    said = timed_program(audit, binary, pace(samples=30, keep=2, student=True))
    run, reference, second = said["paced_run"].student, said["paced_run"].reference, said["paced_run"].second
    assert said["page"] is True
    assert run.timed == 30 and len(run.kept) == 2 and not run.wrong and run.reported_ms == [0.5] * 30
    assert reference.timed == second.timed == 30
    lines = said["seen"]
    assert lines[-1] == "end" and all(re.fullmatch(r"go \d+", line) for line in lines[:-1])
    numbers = [int(line.split()[1]) for line in lines[:-1]]
    assert numbers == sorted(set(numbers))
    for k in run.kept:
        audit.dump(k.slot).release()
    audit.close()


@pytest.mark.parametrize("behaviour, what", [
    ({"page_number_off": 1}, r"answered 'go \d+' with 'sample \d+ on its signal page'"),
    ({"page_early": True}, "wrote an answer on its signal page before it was asked for anything"),
])
def test_a_wrong_answer_on_the_signal_page_is_the_programs_breach(toy_config, toy_root, tmp_path, behaviour, what):
    """What a program writes on its page is its own claim: an answer for another sample, or one
    written before anything was asked, breaks the protocol (the program's fault, never the
    grader's), as the same on its pipe would."""
    audit = server(toy_config, toy_root, tmp_path)
    binary = write_fake(tmp_path / "student" / "toy_submission", name="toy_submission", sample_ms=0.5, signal=True,
                        **behaviour)
    with pytest.raises(ProtocolError, match=what) as caught:
        timed_program(audit, binary, pace(samples=10, student=True))
    assert caught.value.program == "student"
    assert audit.round(pace(samples=3)).reference.timed == 3  # the reference's processes carry on
    audit.close()


def test_a_kept_sample_stays_where_the_auditor_wrote_it_until_released(toy_config, toy_root, tmp_path):
    """A kept sample is judged in the auditor's own folder, not copied out: the folder of an
    auditor that ended (a grade's last round, a batch's server replaced) stays until its last
    dump is released, and goes then."""
    audit = server(toy_config, toy_root, tmp_path)
    binary = write_fake(tmp_path / "student" / "toy_submission", name="toy_submission", sample_ms=0.5)
    run = timed_program(audit, binary, pace(samples=10, keep=2, student=True))["paced_run"].student
    first, second = (audit.dump(k.slot) for k in run.kept)
    auditor_folder = first.path.parent.parent
    assert second.path.parent.parent == auditor_folder and first.path != second.path
    audit.close()
    first.release()
    assert not first.path.exists() and second.path.is_dir()  # the other is still being checked
    second.release()
    second.release()  # a second release does nothing
    assert not auditor_folder.exists()


def test_a_reference_that_dies_is_a_grader_error_and_the_next_session_starts_afresh(toy_config, toy_root, tmp_path):
    audit = server(toy_config, toy_root, tmp_path, sample_ms=1.0, paced_crash_at=6)
    audit.round(pace(samples=3))  # a warm-up and three samples for each of its two processes
    with pytest.raises(GraderError, match=r"The grader's timing could not run: .*crashed with SIGSEGV"):
        audit.round(pace(samples=3))
    assert audit.pids() == frozenset()
    again = audit.round(pace(samples=3)).reference  # new programs
    assert again.timed == 3
    audit.close()
    assert processes(audit.runner, "--paced") == ["toy_solution --paced"] * 4


def test_a_reference_that_breaks_the_protocol_is_a_grader_error(toy_config, toy_root, tmp_path):
    audit = server(toy_config, toy_root, tmp_path, bad_reply="done maybe")
    started = time.monotonic()
    with pytest.raises(GraderError, match="the reference program answered 'go 0' with 'done maybe'"):
        audit.round(pace())
    assert time.monotonic() - started < 5
    assert audit.pids() == frozenset()


def test_an_auditor_that_cannot_start_is_a_grader_error(toy_config, toy_root, tmp_path):
    audit = server(toy_config, toy_root, tmp_path, no_device=True)
    with pytest.raises(GraderError, match="The grader's timing could not run: it did not start"):
        audit.round(pace())
    assert audit.pids() == frozenset()


def _children_of(pid: int) -> list[int]:
    return [int(entry.name) for entry in Path("/proc").iterdir()
            if entry.name.isdigit() and gpu.parent_of(int(entry.name)) == pid]


def test_the_idle_check_ignores_the_kept_programs_but_sees_everything_else(monkeypatch):
    child = subprocess.Popen([sys.executable, "-c", "import subprocess, sys; "
                              "subprocess.run([sys.executable, '-c', 'import time; time.sleep(30)'])"])
    try:
        for _ in range(100):
            grandchildren = _children_of(child.pid)
            if grandchildren:
                break
            time.sleep(0.05)
        assert len(grandchildren) == 1  # the program started one of its own
        grandchild = grandchildren[0]
        roots = frozenset({child.pid})  # what AuditServer.pids() gives: the sandboxes' own pids
        assert gpu.descends_from(grandchild, roots) and gpu.descends_from(child.pid, roots)
        assert not gpu.descends_from(os.getpid(), roots) and not gpu.descends_from(None, roots)
        assert not gpu.descends_from(2 ** 22 + 7, roots)  # no such process
        monkeypatch.setattr(gpu, "_compute_rows", lambda: [f"GPU-1, {grandchild}, /cudalab/bin/toy_solution, 900 MiB",
                                                           "GPU-1, 4242, python3, 500 MiB"])
        assert gpu.compute_processes(ignore=roots) == ["4242, python3, 500 MiB"]
        assert gpu.compute_processes() == [f"{grandchild}, /cudalab/bin/toy_solution, 900 MiB",
                                           "4242, python3, 500 MiB"]
        waited = gpu.wait_until_idle(0.0, ignore=roots)
        assert waited.busy_with == ["4242, python3, 500 MiB"]
    finally:
        child.kill()
        child.wait()


class _FakeNvml:
    """What the idle check uses of nvidia-ml-py's pynvml: two GPUs, processes on the second."""

    def __init__(self, broken: bool = False):
        self.broken = broken

    def nvmlDeviceGetCount(self):
        if self.broken:
            raise RuntimeError("NVML: GPU is lost")
        return 2

    def nvmlDeviceGetHandleByIndex(self, index):
        return index

    def nvmlDeviceGetUUID(self, handle):
        return f"GPU-{handle}"

    def nvmlDeviceGetComputeRunningProcesses(self, handle):
        one = types.SimpleNamespace
        return [one(pid=4242, usedGpuMemory=500 * 1024 * 1024), one(pid=77, usedGpuMemory=None)] if handle == 1 else []

    def nvmlSystemGetProcessName(self, pid):
        if pid == 77:
            raise RuntimeError("NVML: not found")
        return b"/usr/bin/python3"


def test_the_idle_check_asks_nvml_first_and_nvidia_smi_where_nvml_cannot_answer(monkeypatch):
    asked = []
    monkeypatch.setattr(gpu, "_smi", lambda argv: asked.append(argv) or ["GPU-9, 5, smi_program, 1 MiB"])
    monkeypatch.setattr(gpu, "_uuids", {})
    monkeypatch.setattr(gpu, "_nvml", lambda: _FakeNvml())
    assert gpu.compute_processes() == ["4242, /usr/bin/python3, 500 MiB", "77, ?, [N/A]"]
    assert gpu.compute_processes("0") == []
    assert gpu.compute_processes("1", ignore=frozenset({77})) == ["4242, /usr/bin/python3, 500 MiB"]
    assert asked == []  # NVML answered everything, the UUIDs of indices included
    monkeypatch.setattr(gpu, "_nvml", lambda: _FakeNvml(broken=True))  # NVML fails now: nvidia-smi says
    assert gpu.compute_processes() == ["5, smi_program, 1 MiB"]
    assert asked == [gpu._QUERY]
    monkeypatch.setattr(gpu, "_nvml", lambda: None)  # no NVML here at all
    monkeypatch.setattr(gpu, "_smi", lambda argv: None)  # nor nvidia-smi
    assert gpu.compute_processes() is None
    assert gpu.wait_until_idle(10.0).known is False
