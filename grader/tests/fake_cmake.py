"""A stand-in for `cmake` that follows just enough of the real one's command line to test
cudalab.build without compiling anything. Every call is appended to $FAKE_CMAKE_LOG.
$FAKE_CMAKE_MODE=compile_error makes a submission build fail like nvcc does."""
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
    cache = json.loads((build / "CMakeCache.txt").read_text())
    if cache.get("CUDALAB_LAB"):  # a submission build
        src = cache["CUDALAB_SUBMISSION_DIR"]
        if os.environ.get("FAKE_CMAKE_MODE") == "compile_error":
            print(f"[1/3] Building CUDA object CMakeFiles/x.dir{src}/toy.cu.o")
            print(f"FAILED: CMakeFiles/x.dir{src}/toy.cu.o")
            print(f"/usr/local/cuda/bin/nvcc -O3 -x cu -c {src}/toy.cu -o CMakeFiles/x.dir/toy.cu.o")
            print(f'{src}/toy.cu(3): error: identifier "blocks" is undefined')
            print("    add<<<blocks, 256>>>(a, b, c, n);")
            print("          ^")
            print("")
            print(f'1 error detected in the compilation of "{src}/toy.cu".')
            print("ninja: build stopped: subcommand failed.")
            sys.exit(1)
        binary = build / f"{cache['CUDALAB_LAB']}_submission"
        binary.write_text("#!/bin/sh\nexit 0\n")
        binary.chmod(0o755)
    else:
        (build / "bin").mkdir(exist_ok=True)
        for name in ("toy_solution", "toy_checker", "toy_starter", "toy_ladder_simple"):
            (build / "bin" / name).write_text("#!/bin/sh\nexit 0\n")
            (build / "bin" / name).chmod(0o755)
        (build / "cudalab-exports.cmake").write_text("# fake\n")
else:
    build = Path(value("-B") or f"build/{value('--preset')}")
    build.mkdir(parents=True, exist_ok=True)
    (build / "CMakeCache.txt").write_text(json.dumps(defines()))
