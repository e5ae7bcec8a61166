#!/usr/bin/env bash
# Stages what the build and the grader need on a machine that has no package registry (a
# lent GPU machine): the header-only libraries (nlohmann-json, doctest) copied from this
# machine into .deps/include, the grader's pure-Python dependency pyelftools (it reads
# students' compiled objects) copied from this machine's .venv into .deps/python, and
# bubblewrap (the grader's sandbox) unpacked from its Debian package into .deps/bwrap.
# .deps is ignored by git; name it in what travels there, and CMake and the grader find
# what is in it.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mkdir -p "$root/.deps/include"
cp -r /usr/include/nlohmann "$root/.deps/include/"
cp -r /usr/include/doctest "$root/.deps/include/"
python="$root/.venv/bin/python"
[ -x "$python" ] || python="${PYTHON:-python3}"
if ! elftools="$("$python" -c 'import elftools, os; print(os.path.dirname(elftools.__file__))' 2>/dev/null)"; then
  echo "stage-deps: pyelftools is not installed for $python: run tools/setup.sh first" >&2
  exit 1
fi
rm -rf "$root/.deps/python/elftools"
mkdir -p "$root/.deps/python"
cp -r "$elftools" "$root/.deps/python/"
find "$root/.deps/python" -name __pycache__ -type d -prune -exec rm -rf {} +
if [ ! -x "$root/.deps/bwrap/usr/bin/bwrap" ]; then
  scratch="$(mktemp -d)" && chmod 755 "$scratch"  # apt downloads as its own user
  (cd "$scratch" && apt-get download -qq bubblewrap >/dev/null)
  dpkg -x "$scratch"/bubblewrap_*.deb "$root/.deps/bwrap"
  rm -rf "$scratch"
fi
echo "staged: $(du -sh "$root/.deps" | cut -f1) in .deps (include/, python/, bwrap/)"
