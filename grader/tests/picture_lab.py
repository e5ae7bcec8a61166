"""A toy lab whose arrays are pictures (like sobel): an 8-bit output, cases sized by width
and height, a block shape its API takes. Its fake binaries are fake_program.py with a
few more options, as the C++ side has them:

- the lab binary takes `--block WxH` (recorded as the run JSON's "block", as the harness
  does) and, in --bench, adds `items_name`, `items_per_s` (per block shape, from
  BEHAVIOUR["items_per_s"]: {shape or "default": rate}), `library_items_per_s` and a
  library entry to each row;
- the checker takes `--images DIR` and writes DIR/<case>/in.pgm, expected_out.pgm and
  out.pgm for every case it judged: out.pgm equals expected_out.pgm when the case passed,
  and misses the edges of the first row when it failed (width / 5 pixels differ).
"""
from __future__ import annotations

from pathlib import Path

from conftest import TESTS, seal

PIC_LAB_TOML = """
[lab]
name = "pic"
title = "Picture lab"
files = ["pic.cu"]
api_header = "pic.hpp"
max_file_bytes = 1000
takes_block = true

[[outputs]]
name = "out"
dtype = "u8"
abs = 0.0
rel = 0.0
why = "an edge map: every pixel exactly"

[[cases]]
name = "small"
width = 40
height = 3

[[cases]]
name = "wide"
width = 70
height = 2

[bench]
byte_model = "2 * width * height"

[[bench.cases]]
name = "big"
width = 64
height = 8

[[bench.cases]]
name = "bigger"
width = 96
height = 8

[[ladder]]
name = "global"
source = "ladder/global.cu"

[[ladder]]
name = "shared tile"
source = "pic.cu"

[scoring]
correctness_points = 60
performance_points = 40
timing_case = "big"
full_marks_ratio = 1.10
zero_marks_ratio = 3.00
"""

PIC_CASES = ["small", "wide"]
PIC_BENCH = ["big", "bigger"]
SIZES = {"small": [40, 3], "wide": [70, 2], "big": [64, 8], "bigger": [96, 8]}

HOOK = r'''
# --- picture_lab.py: the options the image lab's binaries add -------------------------
_plain_implementation, _plain_checker, _plain_write_json = implementation, checker, write_json
_BLOCK = [None]


def _take(argv, option):
    argv = list(argv)
    if option not in argv:
        return argv, None
    at = argv.index(option)
    value = argv[at + 1]
    del argv[at:at + 2]
    return argv, value


def write_json(path, body):
    if _BLOCK[0]:
        body["block"] = _BLOCK[0]
    for entry in body.get("bench", []):
        rates = B.get("items_per_s")
        if rates and entry.get("status") != "skipped":
            entry.update(items_name="pixels", items_per_s=rates.get(_BLOCK[0], rates.get("default", 1e9)),
                         library_items_per_s=B.get("library_items_per_s", 2e9),
                         library={"name": "nppiFilterSobel", "median_ms": 0.25, "gbps": 123.0},
                         fraction_of_library=0.5, gbps=50.0, fraction_of_baseline=0.25)
    _plain_write_json(path, body)


def implementation(argv):
    argv, block = _take(argv, "--block")
    if block is not None and block in B.get("refuse_blocks", []):
        print(f"--block {block}: this implementation needs 32 threads across", file=sys.stderr)
        return 2
    _BLOCK[0] = block
    return _plain_implementation(argv)


def _pgm(path, width, height, pixels):
    path.write_bytes(b"P5\n%d %d\n255\n" % (width, height) + bytes(pixels))


def checker(argv):
    argv, images = _take(argv, "--images")
    code = _plain_checker(argv)
    if images:
        verdict = json.loads(Path(argv[argv.index("--verdict") + 1]).read_text())
        for case in verdict["cases"]:
            width, height = B["sizes"][case["name"]]
            folder = Path(images) / case["name"]
            folder.mkdir(parents=True, exist_ok=True)
            expected = bytes(255 if (i % width) % 5 == 0 else 0 for i in range(width * height))
            _pgm(folder / "in.pgm", width, height, bytes(i % 256 for i in range(width * height)))
            _pgm(folder / "expected_out.pgm", width, height, expected)
            if case["status"] == "missing":
                continue
            got = expected if case["status"] == "passed" else bytes(width) + expected[width:]
            _pgm(folder / "out.pgm", width, height, got)
    return code

'''


def write_picture_fake(path: Path, **behaviour) -> Path:
    """An executable fake of the picture lab's binary or checker (role='checker')."""
    behaviour.setdefault("cases", PIC_CASES)
    behaviour.setdefault("bench_cases", PIC_BENCH)
    behaviour.setdefault("sizes", SIZES)
    source = (TESTS / "fake_program.py").read_text()
    main = 'if __name__ == "__main__":'
    assert source.count(main) == 1
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/usr/bin/python3\nBEHAVIOUR = {behaviour!r}\n" + source.replace(main, HOOK + main))
    path.chmod(0o755)
    return path


def make_picture_repo(root: Path, **solution) -> Path:
    """A repository with the picture lab and a sealed official 'build' of fakes."""
    (root / "labs" / "pic").mkdir(parents=True)
    (root / "labs" / "pic" / "lab.toml").write_text(PIC_LAB_TOML)
    (root / "CMakeLists.txt").write_text("# picture lab\n")
    bin_dir = root / "build" / "ci" / "bin"
    write_picture_fake(bin_dir / "pic_solution", name="pic_solution", sample_ms=1.0, **solution)
    write_picture_fake(bin_dir / "pic_checker", role="checker")
    seal(root)
    return root
