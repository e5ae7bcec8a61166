"""A stand-in for `cmake` that follows just enough of the real one's command line to test
how cudalab.building.build configures and builds the official tree, without compiling anything.
Every call is appended to $FAKE_CMAKE_LOG. (Submission builds run the real toolchain in the
sandbox: test_build.py's needs_build tests.)"""
import json
import os
import sys
from pathlib import Path

args = sys.argv[1:]
with open(os.environ["FAKE_CMAKE_LOG"], "a") as log:
    log.write(json.dumps(args) + "\n")


def value(flag):
    return args[args.index(flag) + 1] if flag in args else None


def defines():
    return dict(a[2:].split("=", 1) for a in args if a.startswith("-D"))


if args[0] == "--build":
    build = Path(value("--build") if args[1] != "--preset" else f"build/{args[2]}")
    (build / "bin").mkdir(exist_ok=True)
    for name in ("toy_solution", "toy_checker", "toy_starter", "toy_ladder_simple"):
        (build / "bin" / name).write_text("#!/bin/sh\nexit 0\n")
        (build / "bin" / name).chmod(0o755)
else:
    build = Path(value("-B") or f"build/{value('--preset')}")
    build.mkdir(parents=True, exist_ok=True)
    (build / "CMakeCache.txt").write_text(json.dumps(defines()))
