#!/usr/bin/env bash
# Builds everything for one architecture and runs every test: ctest (doctest unit tests,
# lab binaries, checkers) and pytest (the grader). Tests that need a GPU report
# themselves as skipped where there is none. Exits non-zero if anything failed.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
preset="${CUDALAB_PRESET:-ci}"
[ -x /usr/local/cuda/bin/nvcc ] && export PATH="/usr/local/cuda/bin:$PATH"

status=0
cmake --preset "$preset" >/dev/null && cmake --build --preset "$preset" || { echo "build failed" >&2; exit 1; }
ctest --preset "$preset" || status=1

export CUDALAB_BUILD_DIR="$root/build/$preset" CUDALAB_PRESET="$preset"
py="$root/.venv/bin/python"
[ -x "$py" ] || py=python3
"$py" -m pytest grader/tests -q -rs
rc=$?
[ $rc -eq 0 ] || status=1
exit $status
