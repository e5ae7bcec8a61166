"""config: defaults with descriptions, environment overrides, root discovery."""
from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from cudalab.config import Config, find_root
from cudalab.errors import UsageError


def test_every_setting_has_a_description():
    descriptions = Config.descriptions()
    assert set(descriptions) == {f.name for f in dataclasses.fields(Config)}
    assert all(len(text) > 20 for text in descriptions.values())


def test_defaults_derive_from_root_and_preset(toy_root):
    config = Config.load(env={}, root=toy_root, preset="ci")
    assert config.build_dir == toy_root.resolve() / "build" / "ci"
    assert config.bin_dir == config.build_dir / "bin"
    assert config.work_dir.parent.name == "cudalab" and config.work_dir.name.startswith("repo-")
    assert config.process_timeout_s == 120.0 and config.build_timeout_s == 600.0
    assert config.file_size_limit_bytes == 4 * 1024 ** 3


def test_work_folders_are_per_user_and_per_repository(toy_root, tmp_path):
    alice = Config.load(env={"HOME": "/home/alice"}, root=toy_root, preset="ci")
    bob = Config.load(env={"XDG_CACHE_HOME": str(tmp_path / "bob-cache")}, root=toy_root, preset="ci")
    assert alice.work_dir.parent == Path("/home/alice/.cache/cudalab")
    assert bob.work_dir.parent == tmp_path / "bob-cache" / "cudalab"
    other = tmp_path / "another" / "repo"
    shutil.copytree(toy_root, other)
    assert Config.load(env={"HOME": "/home/alice"}, root=other, preset="ci").work_dir != alice.work_dir
    explicit = Config.load(env={"HOME": "/home/alice", "CUDALAB_WORK_DIR": str(tmp_path / "w")}, root=toy_root)
    assert explicit.work_dir == tmp_path / "w"


def test_environment_overrides(toy_root, tmp_path):
    env = {"CUDALAB_ROOT": str(toy_root), "CUDALAB_PRESET": "gpu",
           "CUDALAB_BUILD_DIR": str(tmp_path / "b"), "CUDALAB_PROCESS_TIMEOUT_S": "7.5",
           "CUDALAB_TIMING_ROUNDS": "5", "CUDALAB_KEEP_TEMP": "yes"}
    config = Config.load(env=env)
    assert config.preset == "gpu" and config.build_dir == tmp_path / "b"
    assert config.process_timeout_s == 7.5 and config.timing_rounds == 5 and config.keep_temp


def test_cli_overrides_beat_the_environment(toy_root):
    config = Config.load(env={"CUDALAB_ROOT": str(toy_root), "CUDALAB_PRESET": "gpu"}, preset="ci")
    assert config.preset == "ci"


def test_bad_environment_value_is_a_sentence(toy_root):
    with pytest.raises(UsageError, match="CUDALAB_TIMING_ROUNDS='three' is not a valid int"):
        Config.load(env={"CUDALAB_ROOT": str(toy_root), "CUDALAB_TIMING_ROUNDS": "three"})


def test_root_is_found_by_walking_up(toy_root):
    deep = toy_root / "labs" / "toy"
    assert find_root(deep) == toy_root.resolve()
    assert Config.load(env={}, cwd=deep, preset="ci").root == toy_root.resolve()
