#!/usr/bin/env bash
# Builds everything and runs every test: ctest (doctest unit tests, lab binaries,
# checkers) and pytest (the grader). Tests that need a GPU report themselves as skipped
# where there is none. Exits non-zero if anything failed.
#
# Which build: where nvidia-smi lists a GPU, the `gpu` preset built for that GPU's compute
# capability (read from nvidia-smi, so the GPU tests get kernels for it: the ci build's
# sm_90 code has no kernel image for an RTX 30xx or 40xx); without a GPU, the fast `ci`
# preset. CUDALAB_PRESET=NAME builds that preset as it is instead. The first line printed
# says which GPU and architectures the build targets; `bash tools/test.sh --plan` prints
# that line and the configure command, and stops there.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
[ -x /usr/local/cuda/bin/nvcc ] && export PATH="/usr/local/cuda/bin:$PATH"
plan_only=0
[ "${1:-}" = "--plan" ] && plan_only=1

# CMAKE_CUDA_ARCHITECTURES of a configure preset in CMakePresets.json.
preset_archs() {
  python3 - "$1" <<'EOF'
import json, sys
presets = {p["name"]: p for p in json.load(open("CMakePresets.json"))["configurePresets"]}
preset = presets.get(sys.argv[1], {})
while preset and "CMAKE_CUDA_ARCHITECTURES" not in preset.get("cacheVariables", {}) and preset.get("inherits"):
    preset = presets.get(preset["inherits"], {})
print(preset.get("cacheVariables", {}).get("CMAKE_CUDA_ARCHITECTURES", "?"))
EOF
}

# "86-real;90" -> "sm_86, sm_90 (+PTX)": what a CMAKE_CUDA_ARCHITECTURES list builds.
describe_archs() {
  local list="$1" out="" ptx="" a
  case "$list" in
    native) echo "the GPU CMake finds here (native)"; return ;;
    all|all-major) echo "$list"; return ;;
  esac
  IFS=';' read -ra items <<<"$list"
  for a in "${items[@]}"; do
    case "$a" in
      *-virtual) ptx=" (+PTX)" ;;
      *-real) out+="${out:+, }sm_${a%-real}" ;;
      *) out+="${out:+, }sm_$a"; ptx=" (+PTX)" ;;
    esac
  done
  echo "${out:-no SASS}$ptx"
}

preset="${CUDALAB_PRESET:-}"
configure_args=()
if [ -n "$preset" ]; then
  echo "test.sh: building preset $preset (CUDALAB_PRESET) for $(describe_archs "$(preset_archs "$preset")")"
else
  # One "name, compute capability, driver version" line per GPU; nothing without one
  # (nvidia-smi then fails or is not installed).
  gpus="" listed=""
  if command -v nvidia-smi >/dev/null 2>&1; then
    gpus="$(nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader 2>/dev/null)" || gpus=""
    # A driver from before R510 lists its GPUs but knows no compute_cap field.
    [ -z "$gpus" ] && nvidia-smi -L 2>/dev/null | grep -q GPU && listed=1
  fi
  names="" archs="" too_old="" old_driver=""
  while IFS=',' read -r name cc driver; do
    name="$(echo "$name" | xargs)" cc="$(echo "$cc" | xargs)" driver="$(echo "$driver" | xargs)"
    [[ "$cc" =~ ^[0-9]+\.[0-9]+$ ]] || continue
    arch="${cc%.*}${cc#*.}"
    # CUDA 13 builds for compute capability 7.5 (Turing) and newer only.
    if [ "$arch" -lt 75 ]; then too_old+="${too_old:+, }$name (sm_$arch)"; continue; fi
    names+="${names:+, }$name (sm_$arch)"
    [[ ";$archs;" == *";$arch-real;"* ]] || archs+="${archs:+;}$arch-real"
    # CUDA 13 runs on the R580 driver branch and newer; under an older one every lab binary
    # stops with driver_too_old (exit 4: ctest's GPU tests skip), so say it once here.
    [[ "$driver" =~ ^[0-9]+ ]] && [ "${BASH_REMATCH[0]}" -lt 580 ] && old_driver="$driver"
  done <<<"$gpus"
  if [ -n "$archs" ]; then
    # SASS for this GPU's own architecture, as the preset's `native` gives (CMakeLists.txt
    # resolves native with nvidia-smi the same way, so the grader's configure of build/gpu
    # and this one agree): no PTX, which only a GPU newer than this one would need.
    preset=gpu
    configure_args=(-DCMAKE_CUDA_ARCHITECTURES="$archs")
    echo "test.sh: building for $names with preset gpu, code for $(describe_archs "$archs")"
    [ -n "$old_driver" ] && echo "test.sh: the NVIDIA driver here ($old_driver) is older than CUDA 13 needs" \
      "(580 or newer): the lab binaries will refuse to run (driver_too_old) until the driver is updated"
  else
    preset=ci
    if [ -n "$too_old" ]; then
      echo "test.sh: $too_old is older than CUDA 13 supports (sm_75 and newer): building preset ci for" \
        "$(describe_archs "$(preset_archs ci)"); the GPU tests will fail on this GPU (no kernel image for it)"
    elif [ -n "$gpus" ] || [ -n "$listed" ]; then
      echo "test.sh: nvidia-smi lists a GPU but not its compute capability (a driver too old for CUDA 13," \
        "which needs 580 or newer?): building preset ci for $(describe_archs "$(preset_archs ci)")"
    else
      echo "test.sh: no GPU here: building preset ci for $(describe_archs "$(preset_archs ci)");" \
        "the GPU tests report themselves as skipped"
    fi
  fi
fi
if [ $plan_only -eq 1 ]; then
  echo "cmake --preset $preset${configure_args[*]:+ ${configure_args[*]}}"
  exit 0
fi

status=0
cmake --preset "$preset" "${configure_args[@]}" >/dev/null && cmake --build --preset "$preset" ||
  { echo "build failed" >&2; exit 1; }
ctest --preset "$preset" || status=1

# The grader's tests use the tree built here (the grader itself would pick `gpu` where
# nvidia-smi lists a GPU and `ci` elsewhere, as above).
export CUDALAB_BUILD_DIR="$root/build/$preset" CUDALAB_PRESET="$preset"
py="$root/.venv/bin/python"
[ -x "$py" ] || py=python3
"$py" -m pytest grader/tests -q -rs
rc=$?
[ $rc -eq 0 ] || status=1
exit $status
