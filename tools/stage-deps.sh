#!/usr/bin/env bash
# Stages what the build and the grader need on a machine that has no package registry (a
# lent GPU machine): the header-only libraries (nlohmann-json, doctest) copied from this
# machine into .deps/include, the grader's pure-Python dependencies pyelftools (it reads
# students' compiled objects) and nvidia-ml-py (pynvml: the idle check before each timing
# round) copied from this machine's .venv into .deps/python, and
# bubblewrap (the grader's sandbox) unpacked from its Debian package into .deps/bwrap, and the
# course service's packages (`cudalab serve`, tools/course-drill.py) as wheels for the GPU
# machine's Python (3.12 unless SERVICE_PYTHON says another) unpacked into
# .deps/python-<version>: some have compiled parts, so they are fetched for that Python from
# PyPI, not copied from this machine's .venv.
# .deps is ignored by git; name it in what travels there, and CMake and the grader find
# what is in it.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mkdir -p "$root/.deps/include"
cp -r /usr/include/nlohmann "$root/.deps/include/"
cp -r /usr/include/doctest "$root/.deps/include/"
python="$root/.venv/bin/python"
[ -x "$python" ] || python="${PYTHON:-python3}"
mkdir -p "$root/.deps/python"
for module_and_package in elftools:pyelftools pynvml:nvidia-ml-py; do
  module="${module_and_package%%:*}" package="${module_and_package#*:}"
  # A package's folder, or a single-file module itself.
  if ! found="$("$python" -c "import os, $module as m; f = m.__file__; print(os.path.dirname(f) if os.path.basename(f) == '__init__.py' else f)" 2>/dev/null)"; then
    echo "stage-deps: $package is not installed for $python: run tools/setup.sh first" >&2
    exit 1
  fi
  rm -rf "$root/.deps/python/$(basename "$found")"
  cp -r "$found" "$root/.deps/python/"
done
find "$root/.deps/python" -name __pycache__ -type d -prune -exec rm -rf {} +
if [ ! -x "$root/.deps/bwrap/usr/bin/bwrap" ]; then
  scratch="$(mktemp -d)" && chmod 755 "$scratch"  # apt downloads as its own user
  (cd "$scratch" && apt-get download -qq bubblewrap >/dev/null)
  dpkg -x "$scratch"/bubblewrap_*.deb "$root/.deps/bwrap"
  rm -rf "$scratch"
fi
# The service's packages at the versions this machine's .venv tested, with what they need
# (psycopg and playwright stay behind: the drill uses SQLite, and Chromium is not there).
service_python="${SERVICE_PYTHON:-3.12}"
service_target="$root/.deps/python-$service_python"
if [ ! -f "$service_target/.staged" ]; then
  pins="$("$python" -m pip list --format=freeze 2>/dev/null | grep -iE '^(starlette|uvicorn|h11|click|anyio|idna|sniffio|sqlalchemy|greenlet|alembic|mako|markupsafe|jinja2|argon2-cffi|argon2-cffi-bindings|cffi|pycparser|httpx|httpcore|certifi|typing[-_]extensions|python-multipart)==' || true)"
  if [ -z "$pins" ]; then
    echo "stage-deps: the course service's packages are not installed for $python: run tools/setup.sh first" >&2
    exit 1
  fi
  rm -rf "$service_target"
  # shellcheck disable=SC2086  # one pin a word
  "$python" -m pip install -q --no-deps --target "$service_target" --python-version "$service_python" \
    --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 \
    --only-binary=:all: --implementation cp $pins
  find "$service_target" -name __pycache__ -type d -prune -exec rm -rf {} +
  rm -rf "$service_target/bin"
  touch "$service_target/.staged"
fi
echo "staged: $(du -sh "$root/.deps" | cut -f1) in .deps (include/, python/, python-$service_python/, bwrap/)"
