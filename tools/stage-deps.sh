#!/usr/bin/env bash
# Stages what the build and the grader need on a machine that has no package registry (a
# lent GPU machine): the header-only libraries (nlohmann-json, doctest) copied from this
# machine into .deps/include, the grader's pure-Python dependency pyelftools (it reads
# students' compiled objects) copied from this machine's .venv into .deps/python, and
# bubblewrap (the grader's sandbox) unpacked from its Debian package into .deps/bwrap, and
# the course service's packages from PyPI (below).
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

# The course service's packages (`cudalab serve`: grader/pyproject.toml's service group, but
# psycopg: a GPU machine's service keeps its database in SQLite), for each Python the grader
# runs on (>= 3.11: the version there is not known here), as manylinux x86_64 wheels from
# PyPI into .deps/wheels/cp3XX. The pure-Python ones are unpacked once into .deps/python,
# those with compiled parts into .deps/python-3.XX, where `cudalab serve` finds them (after
# what the machine has installed). SQLAlchemy is staged as its pure-Python wheel (its
# compiled speed-ups are optional and would be a copy a version).
service_packages=("starlette>=0.37" "uvicorn>=0.29" "sqlalchemy>=2" "alembic>=1.13" "argon2-cffi>=23" "httpx>=0.27")
platforms=(--platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64)
for version in 3.11 3.12 3.13; do
  wheels="$root/.deps/wheels/cp${version/./}"
  mkdir -p "$wheels"
  "$python" -m pip download -q --disable-pip-version-check --only-binary=:all: "${platforms[@]}" \
    --python-version "$version" --implementation cp -d "$wheels" "${service_packages[@]}" \
    || { echo "stage-deps: could not download the course service's packages for Python $version" >&2; exit 1; }
done
"$python" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: --platform any \
  --implementation py -d "$root/.deps/wheels/pure" "sqlalchemy>=2"
"$python" - "$root/.deps" <<'UNPACK'
import pathlib, shutil, sys, zipfile

deps = pathlib.Path(sys.argv[1])
pure_sqlalchemy = sorted((deps / "wheels" / "pure").glob("sqlalchemy-*.whl"))[-1]
unpacked: set[str] = set()
for folder in sorted((deps / "wheels").glob("cp3*")):
    version = f"3.{folder.name[3:]}"
    shutil.rmtree(deps / f"python-{version}", ignore_errors=True)
    for wheel in sorted(folder.glob("*.whl")):
        project = wheel.name.split("-")[0].lower()
        if project == "sqlalchemy":
            wheel = pure_sqlalchemy
        pure = wheel.name.endswith("-none-any.whl")
        if pure and wheel.name in unpacked:
            continue
        target = deps / "python" if pure else deps / f"python-{version}"
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(target)
        unpacked.add(wheel.name)
UNPACK
echo "staged: $(du -sh "$root/.deps" | cut -f1) in .deps (include/, python/, python-3.*, wheels/, bwrap/)"
