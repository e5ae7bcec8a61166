"""starter: markers, round trip, errors with line numbers, and every lab's starter is current."""
from __future__ import annotations

import pytest

from cudalab import cli
from cudalab.lab import labspec
from cudalab.lab.starter import StarterError, diff_against_starter, generate_starter, starter_pairs
from conftest import REPO_ROOT

SOLUTION = """\
#include "toy.hpp"

__global__ void add(const float* a, const float* b, float* c, std::size_t n) {
    // BEGIN SOLUTION
    const std::size_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
    // END SOLUTION
    // STARTER: // TODO: compute c[i] for this thread's i
}

void toy(const float* a, const float* b, float* c, std::size_t n) {
  // STARTER: int blocks = 0;  // TODO
  // BEGIN SOLUTION
  int blocks = (n + 255) / 256;
  // END SOLUTION
    //STARTER: not a marker (no space), copied as it is
  add<<<blocks, 256>>>(a, b, c, n);
}
"""

STARTER = """\
#include "toy.hpp"

__global__ void add(const float* a, const float* b, float* c, std::size_t n) {
    // TODO: compute c[i] for this thread's i
}

void toy(const float* a, const float* b, float* c, std::size_t n) {
  int blocks = 0;  // TODO
    //STARTER: not a marker (no space), copied as it is
  add<<<blocks, 256>>>(a, b, c, n);
}
"""


def test_generates_the_starter():
    assert generate_starter(SOLUTION) == STARTER


def test_a_file_without_markers_is_copied():
    assert generate_starter(STARTER) == STARTER


def test_crlf_and_empty_starter_lines():
    text = "a\r\n  // STARTER:\r\n  // STARTER: x\r\nb"
    assert generate_starter(text) == "a\r\n\r\n  x\r\nb"


@pytest.mark.parametrize("text, message", [
    ("x\n// BEGIN SOLUTION\ny\n", "f.cu:2: '// BEGIN SOLUTION' is never closed"),
    ("x\n// END SOLUTION\n", "f.cu:2: '// END SOLUTION' without a '// BEGIN SOLUTION'"),
    ("// BEGIN SOLUTION\n  // BEGIN SOLUTION\n// END SOLUTION\n",
     "f.cu:2: '// BEGIN SOLUTION' inside the solution block opened at line 1"),
    ("// BEGIN SOLUTION\n// STARTER: x\n// END SOLUTION\n",
     "f.cu:2: a '// STARTER:' line inside the solution block opened at line 1"),
])
def test_unbalanced_markers_name_the_line(text, message):
    with pytest.raises(StarterError) as err:
        generate_starter(text, "f.cu")
    assert message in str(err.value)


def test_verb_writes_then_checks(toy_root, monkeypatch, capsys):
    monkeypatch.setenv("CUDALAB_ROOT", str(toy_root))
    monkeypatch.setenv("CUDALAB_PRESET", "ci")
    solution = toy_root / "solutions" / "toy" / "toy.cu"
    solution.parent.mkdir(parents=True)
    solution.write_text(SOLUTION)
    assert cli.main(["starter", "toy", "--check"]) == 1
    assert "+    // TODO: compute c[i]" in capsys.readouterr().out
    assert cli.main(["starter", "toy"]) == 0
    assert (toy_root / "starter" / "toy" / "toy.cu").read_text() == STARTER
    assert cli.main(["starter", "toy", "--check"]) == 0


def _labs_with_both_folders():
    for toml in sorted((REPO_ROOT / "labs").glob("*/lab.toml")):
        lab = toml.parent.name
        if (REPO_ROOT / "solutions" / lab).is_dir() and (REPO_ROOT / "starter" / lab).is_dir():
            yield lab


@pytest.mark.parametrize("lab", list(_labs_with_both_folders()) or
                         [pytest.param("-", marks=pytest.mark.skip(
                             reason="no lab has both solutions/<lab> and starter/<lab> yet"))])
def test_every_starter_is_generated_from_its_solution(lab):
    spec = labspec.load(REPO_ROOT / "labs" / lab / "lab.toml")
    for solution, starter in starter_pairs(REPO_ROOT, spec):
        if not starter.is_file() or not solution.is_file():
            pytest.skip(f"{starter if not starter.is_file() else solution} does not exist yet")
        diff = diff_against_starter(solution, starter)
        assert not diff, f"run `cudalab starter {lab}`:\n" + "".join(diff)
