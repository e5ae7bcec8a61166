#!/usr/bin/env bash
# Copies the header-only libraries the build needs (nlohmann-json, doctest) from this
# machine's system into .deps/include (ignored by git), for a machine that has no
# package registry: name .deps in what travels there, and CMake finds them.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mkdir -p "$root/.deps/include"
cp -r /usr/include/nlohmann "$root/.deps/include/"
cp -r /usr/include/doctest "$root/.deps/include/"
echo "staged: $(du -sh "$root/.deps" | cut -f1) in .deps/include"
