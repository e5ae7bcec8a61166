#!/usr/bin/env bash
# On a machine with a GPU: configure and build everything for that GPU, run every test
# (the gpu-labelled ones, and the hostile suite graded through the sandbox, included),
# grade the solution and the starter of every lab, check it as a hand-in (compute-sanitizer
# included), optionally benchmark every ladder, and print a short table last.
#   GPU_CHECK_LABS="a b"        the labs whose grades, ladders and sanitizer runs to do (default: all)
#   GPU_CHECK_TESTS="ctest pytest"  the test runners to run (default both; empty: none)
#   GPU_CHECK_PYTEST="-k expr"  extra pytest arguments (e.g. only the suite)
#   GPU_CHECK_LADDERS=1         benchmark the ladders too
#   GPU_CHECK_GRADES=           (empty) skip grading each lab's solution and starter
#   GPU_CHECK_HANDIN=           (empty) skip `cudalab check` of each lab's solution (timed, with receipt)
# Logs and JSON go to build/gpu-check (and $OUT/gpu-check.tar.gz). Needs bubblewrap on PATH
# or unpacked in .deps/bwrap (tools/stage-deps.sh) for the sandbox.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
out="$root/build/gpu-check"
rm -rf "$out" && mkdir -p "$out"
# Everything lands in one archive under $OUT when that is set (few files travel back).
trap '[ -n "${OUT:-}" ] && tar -czf "$OUT/gpu-check.tar.gz" -C "$root/build" gpu-check' EXIT
[ -x /usr/local/cuda/bin/nvcc ] && export PATH="/usr/local/cuda/bin:$PATH"
export PYTHONPATH="$root/grader${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
# What tools/stage-deps.sh staged for a machine without a registry (object_analysis.staged_deps):
# the grader's pure-Python dependencies and the course service's packages (the tests import them).
staged="$(python3 -c 'import sys; from pathlib import Path; from cudalab.intake.object_analysis import staged_deps
print(":".join(str(p) for p in staged_deps(Path(sys.argv[1])) if p.is_dir()))' "$root")"
[ -n "$staged" ] && PYTHONPATH="$PYTHONPATH:$staged"
export CUDALAB_PRESET=gpu
step() { printf '\n=== %s (%s)\n' "$*" "$(date +%T)"; }

step "device"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.total --format=csv | tee "$out/device.txt"
python3 -c 'from cudalab.config import Config; from cudalab.isolation.sandbox import Sandbox
print(Sandbox.detect(Config.load()).isolation.describe())' | tee "$out/isolation.txt"

step "configure + build (preset gpu)"
cmake --preset gpu >"$out/configure.log" 2>&1 || { tail -30 "$out/configure.log"; exit 1; }
cmake --build --preset gpu -j "$(nproc)" >"$out/build.log" 2>&1 || { grep -E "error|FAILED" "$out/build.log" | head -40; exit 1; }
echo "built"

tests=" ${GPU_CHECK_TESTS-ctest pytest} "
if [[ "$tests" == *" ctest "* ]]; then
  step "ctest (all labels)"
  timeout 300 ctest --preset gpu -j 4 2>&1 | tee "$out/ctest.log" | tail -8
fi

labs=${GPU_CHECK_LABS:-$(sed -n 's/^set(CUDALAB_OFFICIAL_LABS "\(.*\)")/\1/p' build/gpu/cudalab-build.cmake | tr ';' ' ')}
for lab in $labs; do
  [ -n "${GPU_CHECK_GRADES-1}" ] && step "grade $lab: solution and starter"
  [ -n "${GPU_CHECK_GRADES-1}" ] && for who in solution starter; do
    /usr/bin/time -f "%e" -o "$out/grade_${lab}_${who}.time" python3 -m cudalab grade "$lab" "$([ $who = solution ] && echo solutions || echo starter)/$lab" \
      --json >"$out/grade_${lab}_${who}.json" 2>"$out/grade_${lab}_${who}.log" || tail -5 "$out/grade_${lab}_${who}.log"
  done
  if [ -n "${GPU_CHECK_LADDERS:-}" ]; then
    step "ladder $lab"
    timeout 300 python3 -m cudalab ladder "$lab" --samples 30 --json >"$out/ladder_$lab.json" 2>"$out/ladder_$lab.log" \
      || tail -20 "$out/ladder_$lab.log"
  fi
  if [ -n "${GPU_CHECK_HANDIN-1}" ]; then
    step "check $lab: the solution handed in alone (full check, build and compute-sanitizer included)"
    handin="$out/handin_$lab" && mkdir -p "$handin"
    python3 -c 'import sys, shutil; from cudalab.lab import labs; from cudalab.config import Config
spec = labs.load_lab(Config.load(), sys.argv[1])
[shutil.copy(f"solutions/{spec.name}/{f}", sys.argv[2]) for f in spec.files]' "$lab" "$handin"
    /usr/bin/time -f "%e" -o "$out/check_${lab}.time" python3 -m cudalab check "$handin" --lab "$lab" \
      --receipt "$out/receipt_${lab}_solution.json" >"$out/check_${lab}.log" 2>&1
    echo "exit $? after $(cat "$out/check_${lab}.time") s"; tail -12 "$out/check_${lab}.log"
  fi
done

if [[ "$tests" == *" pytest "* ]]; then
  step "pytest (grader, gpu tests and the hostile suite included)"
  CUDALAB_SUITE_TABLE="$out/suite.txt" CUDALAB_RECEIPTS_DIR="$out/receipts" timeout "${GPU_CHECK_PYTEST_S:-540}" \
    python3 -m pytest grader/tests -q -rs -p no:cacheprovider ${GPU_CHECK_PYTEST:-} 2>&1 | tee "$out/pytest.log" | tail -15
fi

step "summary"
python3 tools/gpu_summary.py "$out"
