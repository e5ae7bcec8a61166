"""The Python mirror of the harness exit codes agrees with common/labkit/exit_codes.hpp."""
from __future__ import annotations

import re

import pytest

from cudalab.exit_codes import Cli, Harness, harness_status
from conftest import REPO_ROOT

HEADER = REPO_ROOT / "common" / "labkit" / "exit_codes.hpp"
CONSTANT = re.compile(r"inline\s+constexpr\s+int\s+kExit(\w+)\s*=\s*(\d+)\s*;")


def snake_upper(camel: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", camel).upper()


def parse_header(text: str) -> dict[str, int]:
    return {snake_upper(name): int(value) for name, value in CONSTANT.findall(text)}


def test_parser_reads_the_documented_form():
    text = "inline constexpr int kExitPassed = 0;\ninline constexpr int kExitCudaError = 3;\n"
    assert parse_header(text) == {"PASSED": 0, "CUDA_ERROR": 3}


def test_header_and_python_agree():
    if not HEADER.is_file():
        pytest.skip(f"{HEADER} does not exist yet (the C++ side has not landed it)")
    from_header = parse_header(HEADER.read_text(encoding="utf-8"))
    assert from_header == {code.name: int(code) for code in Harness}


def test_status_words_match_the_json_vocabulary():
    assert [c.status for c in Harness] == ["passed", "failed", "usage", "cuda_error",
                                           "no_device", "timeout", "internal"]
    assert harness_status(4) == "no_device" and harness_status(42) is None


def test_cli_codes_do_not_overlap_the_harness_codes_they_could_be_confused_with():
    assert {int(c) for c in Cli} == {0, 2, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29}
