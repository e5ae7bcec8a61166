#!/usr/bin/env bash
# Sets up everything cudalab needs on a fresh Debian-like machine, and is quick when
# nothing is missing: build tools, headers and the sandbox from apt (doctest,
# nlohmann-json, bubblewrap), then a virtual environment in .venv with the grader
# installed (Jinja2, rich, pytest).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
# A student bundle (`cudalab export`) builds no tests: it needs no doctest, and the grader
# without its test extras.
bundle=false
[ -f cudalab-bundle.json ] && bundle=true

say() { printf 'setup: %s\n' "$*" >&2; }

# --- CUDA --------------------------------------------------------------------------
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
command -v nvcc >/dev/null 2>&1 || { say "nvcc was not found: install the CUDA toolkit (13.x) first"; exit 1; }

# --- apt packages ------------------------------------------------------------------
missing=()
$bundle || [ -f /usr/include/doctest/doctest.h ] || [ -f "$root/.deps/include/doctest/doctest.h" ] || missing+=(doctest-dev)
[ -f /usr/include/nlohmann/json.hpp ] || [ -f "$root/.deps/include/nlohmann/json.hpp" ] || missing+=(nlohmann-json3-dev)
command -v ninja >/dev/null 2>&1 || missing+=(ninja-build)
command -v cmake >/dev/null 2>&1 || missing+=(cmake)
# The grader's sandbox for student code (grading refuses to run without it).
command -v bwrap >/dev/null 2>&1 || [ -x "$root/.deps/bwrap/usr/bin/bwrap" ] || missing+=(bubblewrap)
# CI only (CUDALAB_SETUP_CI=1, set by .ci/run): a headless browser and a font for the test
# that screenshots the class summary page (grader/tests/test_summary_browser.py; it skips
# where there is no browser, so a teaching machine need not install one).
if [ "${CUDALAB_SETUP_CI:-0}" = 1 ]; then
  command -v chromium >/dev/null 2>&1 || missing+=(chromium)
  [ -f /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || missing+=(fonts-dejavu-core)
fi
if [ ${#missing[@]} -gt 0 ]; then
  if ! command -v apt-get >/dev/null 2>&1; then
    say "missing ${missing[*]} and there is no apt-get: install them with your package manager"; exit 1
  fi
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  say "installing ${missing[*]}"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# --- Python ------------------------------------------------------------------------
python="${PYTHON:-python3}"
"$python" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' \
  || { say "cudalab needs Python 3.11 or newer ($python is $("$python" --version 2>&1))"; exit 1; }
stamp=".venv/.cudalab-installed"
if [ ! -x .venv/bin/python ] || [ ! -f "$stamp" ] || [ grader/pyproject.toml -nt "$stamp" ]; then
  say "creating .venv with the grader"
  "$python" -m venv .venv
  # pip's and setuptools' chatter (an editable install always warns) goes to a log that
  # is shown only when the install fails.
  grader="grader[test,service]"
  $bundle && grader="grader"
  if ! { .venv/bin/python -m pip install -q --upgrade pip && .venv/bin/python -m pip install -q -e "$grader"; } \
      >.venv/pip.log 2>&1; then
    cat .venv/pip.log >&2; say "installing the grader into .venv failed (the log is above)"; exit 1
  fi
  touch "$stamp"
fi
say "ready: .venv/bin/cudalab --help"
