"""Pictures for the labs whose arrays are images (sobel): reading the PGM files the trusted
checker writes with `--images DIR`, and turning them into PNG files a student can open,
with a difference image that shows at a glance where an edge map went wrong.

The checker writes, per case, DIR/<case>/<input>.pgm (sobel: in.pgm), expected_<output>.pgm
(the reference's answer) and <output>.pgm (what the program under test dumped), for 2-D
uint8 arrays of at most MAX_PIXELS pixels. PNG is written by Pillow; without Pillow every
function that writes one raises ImageError naming `pip install pillow`.

The difference image (difference_png), one RGB pixel per pixel:
    black       both say background (0)
    dim gray    both say edge (the same non-zero value)
    red         expected an edge (or a brighter value) and got less: an edge missing
    cyan        expected background (or a darker value) and got more: an edge where none belongs
"""
from __future__ import annotations

import importlib
import os
import re
import stat
from pathlib import Path

from ..errors import GraderError

MAX_PIXELS = 16_777_216  # the checker writes no image larger than this (4096 x 4096)
_HEADER_LIMIT = 1024

AGREE_BACKGROUND = (0, 0, 0)
AGREE_EDGE = (80, 80, 80)
MISSING = (255, 40, 40)   # expected more than it got: red
EXTRA = (0, 230, 230)     # got more than expected: cyan
LEGEND = ("black: both background; dim gray: both edge; red: an expected edge is missing; "
          "cyan: an edge where none is expected")

_PILLOW_MISSING = ("Writing PNG images needs Pillow, which is not installed in this Python: "
                   "pip install pillow (or install the grader with `pip install -e grader`).")
_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


class ImageError(GraderError):
    """A picture could not be read or written; the message says which and why."""


def pillow_available() -> bool:
    try:
        importlib.import_module("PIL.Image")
    except ImportError:
        return False
    return True


def require_pillow() -> None:
    """Fail early, in a sentence, where Pillow is missing (before a long run, not after)."""
    if not pillow_available():
        raise ImageError(_PILLOW_MISSING)


def _pillow():
    try:
        from PIL import Image, ImageChops
    except ImportError:
        raise ImageError(_PILLOW_MISSING) from None
    return Image, ImageChops


# --- PGM -------------------------------------------------------------------------------

def _header_fields(data: bytes, path: Path) -> tuple[list[bytes], int]:
    """The four header fields (magic, width, height, maxval) and where the pixels start:
    fields are separated by whitespace, a '#' starts a comment to the end of its line, and
    exactly one whitespace byte follows maxval."""
    fields: list[bytes] = []
    at = 0
    while len(fields) < 4:
        while at < len(data) and (data[at:at + 1].isspace() or data[at:at + 1] == b"#"):
            if data[at:at + 1] == b"#":
                end = data.find(b"\n", at)
                at = len(data) if end < 0 else end
            at += 1
        start = at
        while at < len(data) and not data[at:at + 1].isspace() and data[at:at + 1] != b"#":
            at += 1
        if start == at:
            raise ImageError(f"{path} is not a binary PGM: its header ends before width, height and maxval")
        fields.append(data[start:at])
    if at >= len(data) or not data[at:at + 1].isspace():
        raise ImageError(f"{path} is not a binary PGM: no whitespace after its maxval")
    return fields, at + 1


def read_pgm(path: Path | str) -> tuple[int, int, bytes]:
    """(width, height, pixels) of a binary PGM (P5, maxval 255), rows top to bottom; an
    ImageError that says what is wrong for anything else."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as err:
        raise ImageError(f"Cannot read the image {path}: {err.strerror}.") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ImageError(f"{path} is not a regular file.")
        if info.st_size > MAX_PIXELS + _HEADER_LIMIT:
            raise ImageError(f"{path} is {info.st_size} bytes, more than an image of {MAX_PIXELS} pixels.")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(MAX_PIXELS + _HEADER_LIMIT + 1)
    finally:
        os.close(fd)
    if not data.startswith(b"P5"):
        kind = "an ASCII PGM (P2); write it as binary (P5)" if data.startswith(b"P2") else "a binary PGM (P5)"
        raise ImageError(f"{path} is not {kind}.")
    fields, start = _header_fields(data[:_HEADER_LIMIT], path)
    try:
        width, height, maxval = (int(f) for f in fields[1:])
    except ValueError:
        raise ImageError(f"{path}: width, height and maxval must be whole numbers, "
                         f"got {b' '.join(fields[1:]).decode(errors='replace')}.") from None
    if fields[0] != b"P5":
        raise ImageError(f"{path} is not a binary PGM (P5).")
    if maxval != 255:
        raise ImageError(f"{path} has maxval {maxval}; only 8-bit images (maxval 255) are read.")
    if width < 1 or height < 1 or width * height > MAX_PIXELS:
        raise ImageError(f"{path} is {width} x {height}: an image needs 1 to {MAX_PIXELS} pixels.")
    pixels = data[start:]
    if len(pixels) != width * height:
        raise ImageError(f"{path} holds {len(pixels)} bytes of pixels, but {width} x {height} needs "
                         f"{width * height}: the file is {'cut short' if len(pixels) < width * height else 'too long'}.")
    return width, height, pixels


# --- PNG -------------------------------------------------------------------------------

def write_png(dst: Path | str, width: int, height: int, pixels: bytes) -> None:
    """A PNG of `pixels`: width x height bytes (8-bit gray) or 3 x width x height (RGB)."""
    Image, _ = _pillow()
    if len(pixels) == width * height:
        mode = "L"
    elif len(pixels) == 3 * width * height:
        mode = "RGB"
    else:
        raise ImageError(f"{len(pixels)} bytes are neither a gray nor an RGB image of {width} x {height}.")
    _save(Image.frombytes(mode, (width, height), bytes(pixels)), dst)


def _save(image, dst: Path | str) -> None:
    dst = Path(dst)
    try:
        dst.parent.mkdir(parents=True, exist_ok=True)
        image.save(dst, format="PNG")
    except OSError as err:
        raise ImageError(f"Cannot write {dst}: {err.strerror or err}.") from None


def pgm_to_png(src: Path | str, dst: Path | str) -> None:
    write_png(dst, *read_pgm(src))


def difference_png(expected_pgm: Path | str, got_pgm: Path | str, dst: Path | str) -> int:
    """Write the difference image of two same-sized pictures (colours: LEGEND) and return
    how many pixels differ."""
    Image, ImageChops = _pillow()
    width, height, expected = read_pgm(expected_pgm)
    got_width, got_height, got = read_pgm(got_pgm)
    if (width, height) != (got_width, got_height):
        raise ImageError(f"{got_pgm} is {got_width} x {got_height} but {expected_pgm} is {width} x {height}: "
                         "no difference image of pictures of different sizes.")
    want = Image.frombytes("L", (width, height), expected)
    have = Image.frombytes("L", (width, height), got)

    def mask(image):  # 255 where the pixel is non-zero
        return image.point(lambda v: 255 if v else 0)

    missing = mask(ImageChops.subtract(want, have))   # expected > got (subtract clips at 0)
    extra = mask(ImageChops.subtract(have, want))     # got > expected
    wrong = ImageChops.lighter(missing, extra)
    agreeing_edge = ImageChops.subtract(mask(want), wrong)
    channels = []
    for channel in range(3):
        dim = agreeing_edge.point(lambda v, c=channel: AGREE_EDGE[c] if v else AGREE_BACKGROUND[c])
        bright_missing = missing.point(lambda v, c=channel: MISSING[c] if v else 0)
        bright_extra = extra.point(lambda v, c=channel: EXTRA[c] if v else 0)
        channels.append(ImageChops.lighter(dim, ImageChops.lighter(bright_missing, bright_extra)))
    _save(Image.merge("RGB", channels), dst)
    return wrong.histogram()[255]


def edge_fraction(pixels: bytes) -> float:
    """The share of non-zero pixels (edges, in a 0/255 edge map); 0 for no pixels."""
    return 1.0 - bytes(pixels).count(0) / len(pixels) if pixels else 0.0


# --- one case's folder -----------------------------------------------------------------

def convert_case_images(src_case_dir: Path | str, dst_case_dir: Path | str, *,
                        equal_diffs: bool = True) -> dict:
    """Convert every .pgm of one case folder (as the checker wrote it) into a .png of the
    same name in `dst_case_dir`, and for each pair expected_<out>.pgm / <out>.pgm write
    diff_<out>.png (with equal_diffs=False, only where the two differ). Returns
    {"written": [png names], "mismatches": {out: pixels that differ},
     "problems": {out: why no difference image}}."""
    src, dst = Path(src_case_dir), Path(dst_case_dir)
    pgms = sorted(p for p in src.iterdir() if p.suffix == ".pgm" and _SAFE_NAME.fullmatch(p.name)
                  and p.is_file() and not p.is_symlink()) if src.is_dir() else []
    written, mismatches, problems = [], {}, {}
    for pgm in pgms:
        pgm_to_png(pgm, dst / f"{pgm.stem}.png")
        written.append(f"{pgm.stem}.png")
    names = {p.name for p in pgms}
    for expected in (p for p in pgms if p.name.startswith("expected_")):
        output = expected.name[len("expected_"):-len(".pgm")]
        if f"{output}.pgm" not in names:
            problems[output] = f"the program's {output} has no image (it dumped nothing usable)"
            continue
        diff = dst / f"diff_{output}.png"
        try:
            count = difference_png(expected, src / f"{output}.pgm", diff)
        except ImageError as err:
            if "different sizes" not in str(err):
                raise
            problems[output] = str(err)
            continue
        mismatches[output] = count
        if count or equal_diffs:
            written.append(diff.name)
        else:
            diff.unlink()
    return {"written": written, "mismatches": mismatches, "problems": problems}


def case_folders(images_dir: Path | str) -> list[Path]:
    """The case folders the checker wrote under `images_dir`, by name."""
    top = Path(images_dir)
    if not top.is_dir():
        return []
    return sorted(p for p in top.iterdir() if _SAFE_NAME.fullmatch(p.name) and p.is_dir() and not p.is_symlink())


def lab_has_images(spec) -> bool:
    """Whether the lab's arrays are pictures: an 8-bit output (u8) and cases sized by width
    and height or naming a photograph (`image = "camera"`), as the sobel lab's are."""
    if not any(output.dtype == "u8" for output in spec.outputs):
        return False
    return any({"width", "height"} <= set(case.params) or "image" in (getattr(case, "texts", None) or case.params)
               for case in tuple(spec.cases) + tuple(spec.bench_cases))


def draw_differences(written: Path | str, cases: list[str], dest: Path | str,
                     warn=lambda text: None) -> dict[str, dict[str, Path]]:
    """The difference image of each output of `cases` that the checker wrote pictures of
    under `written` (expected_<output>.pgm beside <output>.pgm), as dest/<case>/diff_<output>.png,
    where the two differ. Returns {case: {output: png}}; a picture that cannot be drawn is
    passed to `warn` and left out."""
    drawn: dict[str, dict[str, Path]] = {}
    for case in case_folders(written):
        if case.name not in cases:
            continue
        for expected in sorted(case.glob("expected_*.pgm")):
            got = case / expected.name[len("expected_"):]
            if not got.is_file():
                continue
            diff = Path(dest) / case.name / f"diff_{got.stem}.png"
            try:
                if difference_png(expected, got, diff):
                    drawn.setdefault(case.name, {})[got.stem] = diff
                else:
                    diff.unlink()
            except ImageError as err:
                warn(f"{case.name}: no difference image of {got.stem}: {err}")
    return drawn
