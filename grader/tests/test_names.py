"""A name a user mistyped gets the one they most likely meant: lab names here, hand-in file
names in the hand-in check."""
from __future__ import annotations

import os

import pytest

from cudalab.lab import labs
from cudalab.config import Config
from cudalab.errors import UnknownLabError
from cudalab.names import near
from conftest import REPO_ROOT


@pytest.mark.parametrize("typed, meant", [("vectoradd", "vector_add"), ("Vector_Add", "vector_add"),
                                          ("vector-add", "vector_add"), ("sobell", "sobel"),
                                          ("transpos", "transpose"), ("matmult", "matmul")])
def test_a_mistyped_lab_name_is_answered_with_the_lab_meant(typed, meant):
    config = Config.load(root=REPO_ROOT, env=os.environ)
    with pytest.raises(UnknownLabError, match=f"Did you mean {meant}\\?") as raised:
        labs.load_lab(config, typed)
    assert "Labs in this repository: matmul," in str(raised.value)


def test_a_name_like_no_lab_gets_no_guess():
    config = Config.load(root=REPO_ROOT, env=os.environ)
    with pytest.raises(UnknownLabError) as raised:
        labs.load_lab(config, "quantum_chemistry")
    assert "Did you mean" not in str(raised.value)
    assert near("quantum_chemistry", labs.available_labs(REPO_ROOT)) is None


def test_a_file_name_near_miss_keeps_its_extension_rules():
    assert near("vectoradd.cu", ["vector_add.cu"]) == "vector_add.cu"
    assert near("VECTOR_ADD.CU", ["vector_add.cu"]) == "vector_add.cu"
    assert near("notes.txt", ["vector_add.cu"]) is None
