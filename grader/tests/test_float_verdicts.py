"""On a GPU: a reduction that atomicAdds every block's sum into one float gets the same
verdict under ten grading seeds, each failing case explained (the answer changes from run
to run; a near miss against a long chain's bound where it is one). With
CUDALAB_FLOAT_TABLE set, the verdicts are written there as a table."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO_ROOT

SUBMISSION = Path(__file__).resolve().parent / "submissions" / "reduction" / "atomic_add_of_block_sums"
SEEDS = [11, 222, 3333, 44444, 555555, 6666666, 77777777, 888888888, 9999999999, 123456789012]


@pytest.mark.gpu
@pytest.mark.needs_build
def test_atomic_add_of_block_sums_gets_one_verdict_under_ten_seeds(tmp_path):
    env = {key: value for key, value in os.environ.items() if key != "CUDALAB_WORK_DIR"}
    env.update(CUDALAB_WORK_DIR=str(tmp_path / "work"), PYTHONPATH=str(REPO_ROOT / "grader"))
    verdicts: dict[int, dict[str, dict]] = {}
    for seed in SEEDS:
        done = subprocess.run([sys.executable, "-m", "cudalab", "run", "reduction", str(SUBMISSION),
                               "--seed", str(seed), "--json"], capture_output=True, text=True, env=env,
                              cwd=REPO_ROOT, timeout=600)
        assert done.returncode in (0, 1), done.stderr[-2000:]
        verdicts[seed] = json.loads(done.stdout)["verdicts"]
    cases = list(verdicts[SEEDS[0]])
    rows = ["seed".ljust(14) + " ".join(c[:16].ljust(16) for c in cases)]
    for seed in SEEDS:
        rows.append(str(seed).ljust(14) + " ".join(verdicts[seed][c]["status"].ljust(16) for c in cases))
    failing = [c for c in cases if verdicts[SEEDS[0]][c]["status"] != "passed"]
    for case in failing:
        rows.append(f"{case} (seed {SEEDS[0]}): {verdicts[SEEDS[0]][case]['message']}")
    table = "\n".join(rows)
    if os.environ.get("CUDALAB_FLOAT_TABLE"):
        Path(os.environ["CUDALAB_FLOAT_TABLE"]).write_text(table + "\n")
    print(table)
    for case in cases:
        assert len({verdicts[s][case]["status"] for s in SEEDS}) == 1, f"{case} changes verdict with the seed:\n{table}"
    assert failing, "the largest case must fail: the chain is as long as the grid"
    for case in failing:
        for seed in SEEDS:
            message = verdicts[seed][case]["message"]
            assert "The answer changes from run to run" in message or "a tree of additions stays within" in message, \
                f"{case} under seed {seed}: {message}"
