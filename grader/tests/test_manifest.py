"""The official build's manifest: the whole build's official-manifest.json and the record
each official target writes when it is built (manifests/<target>.json), read as one, so a
build of one lab's targets alone is checked against what it made."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from cudalab.building import sdk
from cudalab.building.sdk import Manifest, ManifestError


def official(build: Path, name: str, body: bytes) -> Path:
    path = build / "bin" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(body)
    return path


def test_a_targets_own_record_stands_without_the_whole_builds_manifest(tmp_path):
    checker = official(tmp_path, "lab_checker", b"checker v1")
    sdk.write_manifest(tmp_path / sdk.MANIFEST_RECORDS / "lab_checker.json", tmp_path, [checker])
    assert not (tmp_path / sdk.MANIFEST_NAME).exists()
    Manifest(tmp_path).verify(checker)
    checker.write_bytes(b"checker, changed behind the build's back")
    with pytest.raises(ManifestError, match="differs|does not match|changed"):
        Manifest(tmp_path).verify(checker)


def test_a_target_rebuilt_alone_is_checked_against_its_newer_record(tmp_path):
    checker = official(tmp_path, "lab_checker", b"checker v1")
    solution = official(tmp_path, "lab_solution", b"solution v1")
    sdk.write_manifest(tmp_path / sdk.MANIFEST_NAME, tmp_path, [checker, solution])  # a whole build
    checker.write_bytes(b"checker v2")  # then one lab's targets alone, which write their records
    sdk.write_manifest(tmp_path / sdk.MANIFEST_RECORDS / "lab_checker.json", tmp_path, [checker])
    manifest = Manifest(tmp_path)
    manifest.verify(checker)
    manifest.verify(solution)  # still the whole build's


def test_an_sdk_record_covers_every_file_of_the_sdk(tmp_path):
    folder = tmp_path / "sdk" / "lab"
    (folder / "include").mkdir(parents=True)
    (folder / "sdk.cmake").write_text("# sdk\n")
    (folder / "include" / "lab.hpp").write_text("void lab();\n")
    sdk.write_manifest(tmp_path / sdk.MANIFEST_RECORDS / "lab_sdk.json", tmp_path, [folder / "sdk.cmake"])
    Manifest(tmp_path).verify_tree(folder)
    (folder / "include" / "extra.hpp").write_text("// not the build's\n")
    with pytest.raises(ManifestError, match="did not make"):
        Manifest(tmp_path).verify_tree(folder)


@pytest.mark.parametrize("write, said", [
    (None, "has no official-manifest.json and no manifests/"),
    ("{not json", "cannot be read"),
    (json.dumps({"schema": "something else", "files": {}}), "is not a cudalab.manifest"),
    (json.dumps({"schema": sdk.MANIFEST_SCHEMA, "files": ["a list"]}), "is not a cudalab.manifest"),
])
def test_a_build_without_a_readable_manifest_says_to_build_again(tmp_path, write, said):
    if write is not None:
        (tmp_path / sdk.MANIFEST_RECORDS).mkdir()
        (tmp_path / sdk.MANIFEST_RECORDS / "lab_checker.json").write_text(write)
    with pytest.raises(ManifestError, match=said) as raised:
        Manifest(tmp_path)
    assert "cudalab build" in str(raised.value)
