"""Builds and checkers run on the work CPUs, the rest being left to timing (cpus.py)."""
from __future__ import annotations

import dataclasses
import os
import subprocess
import sys

import pytest

from cudalab.isolation import cpus
from cudalab.lab import labs
from cudalab.isolation.runner import Runner

ALL = sorted(os.sched_getaffinity(0))
needs_two = pytest.mark.skipif(len(ALL) < 2, reason="needs a machine with 2 CPUs or more")


def with_cpus(config, n: int):
    return dataclasses.replace(config, timing_cpus=n)


def test_how_many_cpus_timing_keeps(toy_config):
    auto = with_cpus(toy_config, -1)
    assert [cpus.reserved_count(auto, n) for n in (1, 2, 4, 7, 8, 16, 64)] == [0, 0, 0, 0, 3, 6, 24]
    assert cpus.reserved_count(with_cpus(toy_config, 3), 16) == 3
    assert cpus.reserved_count(with_cpus(toy_config, 40), 16) == 15  # the work keeps one at least
    assert cpus.work_cpus(with_cpus(toy_config, 0)) is None


def test_kept_samples_checks_run_at_most_one_a_work_cpu(toy_config, monkeypatch):
    monkeypatch.setattr(cpus, "usable", lambda: frozenset(range(16)))
    auto = with_cpus(toy_config, -1)  # 10 work CPUs of 16
    assert [cpus.checks_at_once(auto, n) for n in (0, 1, 4, 10, 72)] == [1, 1, 4, 10, 10]
    assert cpus.checks_at_once(with_cpus(toy_config, 0), 72) == 16  # no reservation: every CPU works
    assert cpus.checks_at_once(with_cpus(toy_config, 15), 9) == 1


@needs_two
def test_a_program_started_on_the_work_cpus_keeps_them_and_the_thread_gets_its_own_back(toy_config):
    config = with_cpus(toy_config, 1)
    assert cpus.work_cpus(config) == frozenset(ALL[:-1])
    show = [sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"]
    with cpus.on_work_cpus(config):
        inside = subprocess.run(show, capture_output=True, text=True, check=True).stdout.strip()
    assert inside == str(ALL[:-1])
    assert sorted(os.sched_getaffinity(0)) == ALL
    assert subprocess.run(show, capture_output=True, text=True, check=True).stdout.strip() == str(ALL)


@needs_two
def test_the_checker_runs_on_the_work_cpus(toy_config, monkeypatch, tmp_path):
    config = with_cpus(toy_config, 1)
    runner = Runner(config, labs.load_lab(config, "toy"), tmp_path / "scratch")
    seen = []
    real = runner.sandbox.run
    monkeypatch.setattr(runner.sandbox, "run", lambda argv, **kw: seen.append(sorted(os.sched_getaffinity(0)))
                        or real(argv, **kw))
    (tmp_path / "dump").mkdir()
    runner.check(tmp_path / "dump", 1)
    assert seen == [ALL[:-1]] and sorted(os.sched_getaffinity(0)) == ALL
