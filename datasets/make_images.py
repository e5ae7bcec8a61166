#!/usr/bin/env python3
"""Make the photographs the sobel lab's cases name (`image = "camera"`): a few pictures that
scikit-image ships inside its wheel, as 8-bit grayscale binary PGM files in
datasets/images/<name>.pgm, and datasets/images.toml, the record of each one (size, sha256,
where it came from, its author and its licence, quoted from scikit-image's own docstring).

    python datasets/make_images.py            # write datasets/images/ and datasets/images.toml
    python datasets/make_images.py --check    # regenerate in memory, compare with the committed files
    python datasets/make_images.py --out DIR  # write DIR/images/ and DIR/images.toml instead

Grayscale: a picture scikit-image ships as gray is kept as it is; a colour one goes through
skimage.color.rgb2gray (Y = 0.2125 R + 0.7154 G + 0.0721 B, in [0, 1]) and then
numpy.round(Y * 255) (to the nearest level, ties to even) into uint8. The output depends on
nothing but the installed scikit-image, so the same version always writes the same bytes.

Exit status: 0 done (or --check found everything as committed), 1 --check found a
difference, 2 this script cannot run here (scikit-image missing, a bad argument).
Needs numpy and scikit-image only (pip install scikit-image).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
MANIFEST = "images.toml"
IMAGES = "images"


@dataclass(frozen=True)
class Source:
    """One picture: the skimage.data function that returns it, the file of the wheel it
    reads, and what scikit-image's docstring says about its author, origin and licence.
    `statement` is quoted word for word; `make` checks that the installed docstring still says it."""

    name: str
    function: str
    shipped_file: str
    author: str
    source_url: str
    licence: str
    statement: str
    why: str


# Each picture has a licence that lets anyone copy it (CC0 or public domain), ships inside
# the scikit-image wheel (no download), and together they cover widths that are and are
# not multiples of 32. coins (384 x 303) is left out: its docstring says only "No known
# copyright restrictions", which is not a licence.
SOURCES = (
    Source("camera", "camera", "camera.png", "Lav Varshney",
           "https://github.com/scikit-image/scikit-image/issues/3927", "CC0-1.0",
           "No copyright restrictions. CC0 by the photographer (Lav Varshney).",
           "512 x 512, the classic test picture: a whole number of 32-wide tiles each way"),
    Source("chelsea", "chelsea", "chelsea.png", "Stefan van der Walt",
           "https://github.com/scikit-image/scikit-image/blob/v0.26.0/skimage/data/chelsea.png", "CC0-1.0",
           "No copyright restrictions. CC0 by the photographer (Stefan van der Walt).",
           "451 x 300: an odd width, 3 columns past a multiple of 32, and fur with edges in every direction"),
    Source("coffee", "coffee", "coffee.png", "Rachel Michetti (courtesy of Pikolo Espresso Bar)",
           "https://github.com/scikit-image/scikit-image/blob/v0.26.0/skimage/data/coffee.png", "CC0-1.0",
           "No copyright restrictions. CC0 by the photographer (Rachel Michetti).",
           "600 x 400: a width 24 columns past a multiple of 32; smooth porcelain and coarse wood grain"),
    Source("astronaut", "astronaut", "astronaut.png", "NASA (photograph of Eileen Collins)",
           "https://flic.kr/p/r9qvLn", "public-domain",
           "No known copyright restrictions, released into the public domain.",
           "512 x 512 with large smooth areas and fine detail"),
)


class CannotRun(Exception):
    """This script cannot do its job here; the message says what to install or change."""


def _modules():
    try:
        import numpy
        import skimage
        import skimage.color
        import skimage.data
    except ImportError as err:
        raise CannotRun(f"make_images.py needs scikit-image and numpy ({err.name} is not installed): "
                        "pip install scikit-image") from None
    return numpy, skimage


def _normalised(text: str) -> str:
    return " ".join(text.split())


def pgm_bytes(width: int, height: int, pixels: bytes) -> bytes:
    """A binary PGM (P5, maxval 255): the header, then the rows top to bottom."""
    return b"P5\n%d %d\n255\n" % (width, height) + pixels


def render(source: Source, recorded_version: str | None = None) -> tuple[bytes, dict]:
    """The PGM of one picture and its record for images.toml (whose version of scikit-image
    is `recorded_version`, by default the installed one)."""
    numpy, skimage = _modules()
    function = getattr(skimage.data, source.function, None)
    if function is None:
        raise CannotRun(f"this scikit-image ({skimage.__version__}) has no skimage.data.{source.function}")
    doc = _normalised(function.__doc__ or "")
    if _normalised(source.statement) not in doc:
        raise CannotRun(f"the docstring of skimage.data.{source.function} (scikit-image {skimage.__version__}) "
                        f"no longer says {source.statement!r}: read its licence again and update SOURCES "
                        "in datasets/make_images.py before using the picture")
    shipped = Path(skimage.data.__file__).parent / source.shipped_file
    if not shipped.is_file():
        raise CannotRun(f"{shipped} is missing: this scikit-image does not ship {source.name} in its wheel "
                        "(it would be downloaded); use a scikit-image that does, e.g. 0.26")
    picture = function()
    if picture.ndim == 2 and picture.dtype == numpy.uint8:
        gray, conversion = picture, "none: scikit-image ships it as 8-bit grayscale"
    elif picture.ndim == 3 and picture.shape[2] in (3, 4):
        luminance = skimage.color.rgb2gray(picture[..., :3])
        gray = numpy.clip(numpy.round(luminance * 255.0), 0, 255).astype(numpy.uint8)
        conversion = "skimage.color.rgb2gray, then numpy.round(Y * 255) to uint8"
    else:
        raise CannotRun(f"skimage.data.{source.function}() returned a {picture.dtype} array of shape "
                        f"{picture.shape}, neither 8-bit gray nor RGB")
    height, width = gray.shape
    data = pgm_bytes(width, height, numpy.ascontiguousarray(gray).tobytes())
    record = {
        "name": source.name,
        "file": f"{IMAGES}/{source.name}.pgm",
        "width": int(width),
        "height": int(height),
        "sha256": hashlib.sha256(data).hexdigest(),
        "skimage_function": f"skimage.data.{source.function}",
        "shipped_file": f"skimage/data/{source.shipped_file}",
        "shipped_sha256": hashlib.sha256(shipped.read_bytes()).hexdigest(),
        "conversion": conversion,
        "author": source.author,
        "source_url": source.source_url,
        "licence": source.licence,
        "licence_statement": source.statement,
        "statement_from": f"the docstring of skimage.data.{source.function}, "
                          f"scikit-image {recorded_version or skimage.__version__}",
        "why": source.why,
    }
    return data, record


def _toml_value(value) -> str:
    if isinstance(value, int):
        return str(value)
    return json.dumps(value)  # a JSON string is a valid TOML basic string


def manifest_text(records: list[dict], skimage_version: str) -> str:
    lines = ["# Generated by datasets/make_images.py: do not edit. Regenerate with",
             "# `python datasets/make_images.py`; `--check` verifies these records and files.",
             f"scikit_image_version = {_toml_value(skimage_version)}",
             'grayscale = "colour pictures: skimage.color.rgb2gray (Y = 0.2125 R + 0.7154 G + 0.0721 B), '
             'then numpy.round(Y * 255) to uint8; gray ones as shipped"',
             'format = "binary PGM (P5), maxval 255, rows top to bottom"']
    for record in records:
        lines += ["", "[[images]]"] + [f"{key} = {_toml_value(value)}" for key, value in record.items()]
    return "\n".join(lines) + "\n"


def generate(recorded_version: str | None = None) -> tuple[dict[str, bytes], str]:
    """Every picture's PGM (by file name under images/) and the text of images.toml, which
    names `recorded_version` of scikit-image (by default the installed one)."""
    _, skimage = _modules()
    files, records = {}, []
    for source in SOURCES:
        data, record = render(source, recorded_version)
        files[f"{source.name}.pgm"] = data
        records.append(record)
    return files, manifest_text(records, recorded_version or skimage.__version__)


def installed_version() -> str:
    return _modules()[1].__version__


def write(out: Path) -> None:
    files, manifest = generate()
    (out / IMAGES).mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (out / IMAGES / name).write_bytes(data)
    (out / MANIFEST).write_text(manifest, encoding="utf-8")
    total = sum(len(d) for d in files.values())
    print(f"wrote {len(files)} pictures ({total / 1e6:.2f} MB) to {out / IMAGES} and their records to {out / MANIFEST}")


def check(folder: Path) -> list[str]:
    """What differs between a fresh generation and the files in `folder`, in sentences.
    Another scikit-image version than the one images.toml records passes when it makes the
    same bytes; where something differs, the problems say which versions are involved."""
    path = folder / MANIFEST
    committed = _records(path.read_text(encoding="utf-8"), path) if path.is_file() else {}
    recorded = committed.get("scikit_image_version")
    files, manifest = generate(recorded if isinstance(recorded, str) else None)
    problems = []
    for name, data in files.items():
        picture = folder / IMAGES / name
        if not picture.is_file():
            problems.append(f"{picture} is missing")
        elif picture.read_bytes() != data:
            problems.append(f"{picture} differs from what scikit-image gives now (sha256 "
                            f"{hashlib.sha256(picture.read_bytes()).hexdigest()[:12]}..., expected "
                            f"{hashlib.sha256(data).hexdigest()[:12]}...)")
    strays = sorted(p.name for p in (folder / IMAGES).glob("*") if p.name not in files) \
        if (folder / IMAGES).is_dir() else []
    problems += [f"{folder / IMAGES / name} is not one of the pictures make_images.py makes" for name in strays]
    if not path.is_file():
        problems.append(f"{path} is missing")
    elif path.read_text(encoding="utf-8") != manifest:
        problems += _record_differences(committed, _records(manifest, path), path) or [
            f"{path} differs from the text make_images.py writes now (its layout or comments)"]
    if problems and recorded != installed_version():
        problems.append(f"{path} records scikit-image {recorded}, and this is {installed_version()}: "
                        f"pip install scikit-image=={recorded} to check against the same pictures")
    return problems


def _record_differences(committed: dict, fresh: dict, path: Path) -> list[str]:
    said = []
    for key in sorted((set(committed) | set(fresh)) - {"images"}):
        if committed.get(key) != fresh.get(key):
            said.append(f"{path}: {key} is {committed.get(key)!r}, expected {fresh.get(key)!r}")
    old = {r.get("name"): r for r in committed.get("images", []) if isinstance(r, dict)}
    new = {r["name"]: r for r in fresh.get("images", [])}
    for name in sorted(set(old) - set(new), key=str):
        said.append(f"{path}: the record of {name!r} names no picture make_images.py makes")
    for name, record in new.items():
        if name not in old:
            said.append(f"{path}: no record of {name}")
            continue
        for key in record.keys() | old[name].keys():
            if old[name].get(key) != record.get(key):
                said.append(f"{path}: {name}'s {key} is {old[name].get(key)!r}, expected {record.get(key)!r}")
    if [r.get("name") for r in committed.get("images", []) if isinstance(r, dict)] != list(new) and not said:
        said.append(f"{path}: the records are not in the order make_images.py writes them")
    return said


def _records(text: str, path: Path) -> dict:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise CannotRun(f"{path} is not valid TOML ({err}): regenerate it") from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true",
                        help="write nothing: exit 1 when the committed pictures or records differ from a fresh run")
    parser.add_argument("--out", type=Path, default=HERE, metavar="DIR",
                        help="the folder to write (or, with --check, to compare): default datasets/")
    args = parser.parse_args(argv)
    try:
        if not args.check:
            write(args.out)
            return 0
        problems = check(args.out)
    except CannotRun as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except OSError as err:
        print(f"error: {err.filename or args.out}: {err.strerror}", file=sys.stderr)
        return 2
    if problems:
        for problem in problems:
            print(f"error: {problem}", file=sys.stderr)
        print("Run `python datasets/make_images.py` to regenerate them.", file=sys.stderr)
        return 1
    print(f"{args.out / IMAGES} and {args.out / MANIFEST} are as make_images.py makes them "
          f"(scikit-image {installed_version()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
