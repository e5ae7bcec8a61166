#!/usr/bin/env bash
# On a machine with a GPU: configure and build everything for that GPU, run every test
# (the gpu-labelled ones included), benchmark every lab's ladder, grade the solution and
# the starter of every lab, run compute-sanitizer over the solutions, and print a short
# table last. GPU_CHECK_LABS="a b" limits the ladders, grades and sanitizer runs to
# those labs (the tests always cover all of them); GPU_CHECK_TESTS="ctest pytest" (the
# default) names the test runners to run, so a check can be split over two shorter runs. Logs and JSON go to build/gpu-check (and $OUT/gpu-check.tar.gz).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
out="$root/build/gpu-check"
rm -rf "$out" && mkdir -p "$out"
# Everything lands in one archive under $OUT when that is set (few files travel back).
trap '[ -n "${OUT:-}" ] && tar -czf "$OUT/gpu-check.tar.gz" -C "$root/build" gpu-check' EXIT
[ -x /usr/local/cuda/bin/nvcc ] && export PATH="/usr/local/cuda/bin:$PATH"
export PYTHONPATH="$root/grader${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
export CUDALAB_PRESET=gpu
samples="${GPU_CHECK_SAMPLES:-30}"
step() { printf '\n=== %s (%s)\n' "$*" "$(date +%T)"; }

step "device"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.total --format=csv | tee "$out/device.txt"

step "configure + build (preset gpu)"
cmake --preset gpu >"$out/configure.log" 2>&1 || { tail -30 "$out/configure.log"; exit 1; }
cmake --build --preset gpu -j 16 >"$out/build.log" 2>&1 || { grep -E "error|FAILED" "$out/build.log" | head -40; exit 1; }
echo "built"

tests=" ${GPU_CHECK_TESTS-ctest pytest} "
if [[ "$tests" == *" ctest "* ]]; then
  step "ctest (all labels)"
  timeout 300 ctest --preset gpu -j 1 2>&1 | tee "$out/ctest.log" | tail -15
fi


labs=${GPU_CHECK_LABS:-$(sed -n 's/^set(CUDALAB_OFFICIAL_LABS "\(.*\)")/\1/p' build/gpu/cudalab-build.cmake | tr ';' ' ')}
for lab in $labs; do
  step "ladder $lab"
  timeout 300 python3 -m cudalab ladder "$lab" --samples "$samples" --json >"$out/ladder_$lab.json" 2>"$out/ladder_$lab.log" \
    || tail -20 "$out/ladder_$lab.log"
  step "grade $lab: solution and starter"
  python3 -m cudalab grade "$lab" "solutions/$lab" --json >"$out/grade_${lab}_solution.json" 2>"$out/grade_${lab}_solution.log" \
    || tail -20 "$out/grade_${lab}_solution.log"
  python3 -m cudalab grade "$lab" "starter/$lab" --json >"$out/grade_${lab}_starter.json" 2>"$out/grade_${lab}_starter.log" \
    || tail -5 "$out/grade_${lab}_starter.log"
  step "compute-sanitizer memcheck + racecheck: $lab solution"
  for tool in memcheck racecheck; do
    compute-sanitizer --tool $tool --error-exitcode 99 "build/gpu/bin/${lab}_solution" --quiet \
      --case "$(build/gpu/bin/${lab}_solution --list-cases | awk '$1=="case"{print $2}' | sed -n 3p)" \
      >"$out/sanitizer_${lab}_$tool.log" 2>&1
    echo "$tool exit $?" | tee -a "$out/sanitizer_${lab}_$tool.log"
  done
done

if [[ "$tests" == *" pytest "* ]]; then
  step "pytest (grader, gpu tests included)"
  timeout "${GPU_CHECK_PYTEST_S:-360}" python3 -m pytest grader/tests -q -rs 2>&1 | tee "$out/pytest.log" | tail -15
fi

step "summary"
python3 tools/gpu_summary.py "$out"
