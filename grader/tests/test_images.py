"""cudalab.lab.images: reading the checker's PGM files, PNG through Pillow, the difference
image and its colours, one case folder's conversion, and a sentence instead of a
traceback where Pillow is missing."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from cudalab.lab import images, labspec
from conftest import REPO_ROOT, TOY_LAB_TOML

Image = pytest.importorskip("PIL.Image", reason="Pillow is not installed: pip install pillow (the grader depends on it)")


def pgm(path: Path, width: int, height: int, pixels, header: bytes | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes((header if header is not None else b"P5\n%d %d\n255\n" % (width, height)) + bytes(pixels))
    return path


def edges(width: int, height: int) -> bytes:
    """A 0/255 edge map: a vertical line every 5 columns."""
    return bytes(255 if (i % width) % 5 == 0 else 0 for i in range(width * height))


# --- read_pgm --------------------------------------------------------------------------

def test_read_pgm_gives_width_height_and_the_rows(tmp_path):
    pixels = bytes(range(6))
    assert images.read_pgm(pgm(tmp_path / "a.pgm", 3, 2, pixels)) == (3, 2, pixels)


def test_read_pgm_takes_comments_and_any_whitespace_in_the_header(tmp_path):
    pixels = bytes([10, 32, 9, 35])  # pixel bytes that look like whitespace and '#'
    path = pgm(tmp_path / "c.pgm", 2, 2, pixels, header=b"P5 # made by hand\n2\t2\r\n# maxval next\n255\n")
    assert images.read_pgm(path) == (2, 2, pixels)


@pytest.mark.parametrize("header, pixels, said", [
    (b"P2\n2 1\n255\n", b"0 0", "is not an ASCII PGM (P2); write it as binary (P5)"),
    (b"P6\n2 1\n255\n", b"abcdef", "is not a binary PGM (P5)"),
    (b"P5\n2 1\n65535\n", b"abcd", "has maxval 65535; only 8-bit images"),
    (b"P5\n2 x\n255\n", b"ab", "must be whole numbers, got 2 x 255"),
    (b"P5\n0 1\n255\n", b"", "an image needs 1 to 16777216 pixels"),
    (b"P5\n3 2\n255\n", b"abcde", "holds 5 bytes of pixels, but 3 x 2 needs 6: the file is cut short"),
    (b"P5\n3 2\n255\n", b"abcdefg", "the file is too long"),
    (b"P5\n3 2", b"", "its header ends before width, height and maxval"),
])
def test_read_pgm_says_what_is_wrong(tmp_path, header, pixels, said):
    with pytest.raises(images.ImageError, match=None) as caught:
        images.read_pgm(pgm(tmp_path / "bad.pgm", 0, 0, pixels, header=header))
    assert said in str(caught.value) and "bad.pgm" in str(caught.value)


def test_read_pgm_never_follows_a_link_nor_reads_a_folder(tmp_path):
    target = pgm(tmp_path / "real.pgm", 1, 1, b"\x00")
    (tmp_path / "link.pgm").symlink_to(target)
    with pytest.raises(images.ImageError, match="Cannot read the image"):
        images.read_pgm(tmp_path / "link.pgm")
    with pytest.raises(images.ImageError, match="not a regular file"):
        images.read_pgm(tmp_path)
    with pytest.raises(images.ImageError, match="No such file"):
        images.read_pgm(tmp_path / "missing.pgm")


def test_the_datasets_pictures_read_back(tmp_path):
    width, height, pixels = images.read_pgm(REPO_ROOT / "datasets" / "images" / "chelsea.pgm")
    assert (width, height, len(pixels)) == (451, 300, 451 * 300)


# --- PNG -------------------------------------------------------------------------------

def test_pgm_to_png_keeps_every_pixel(tmp_path):
    pixels = bytes((7 * i) % 256 for i in range(33 * 5))
    images.pgm_to_png(pgm(tmp_path / "in.pgm", 33, 5, pixels), tmp_path / "out" / "in.png")
    with Image.open(tmp_path / "out" / "in.png") as png:
        assert png.format == "PNG" and png.mode == "L" and png.size == (33, 5) and png.tobytes() == pixels


def test_write_png_takes_gray_or_rgb_and_nothing_else(tmp_path):
    images.write_png(tmp_path / "rgb.png", 2, 1, bytes([255, 0, 0, 0, 255, 255]))
    with Image.open(tmp_path / "rgb.png") as png:
        assert png.mode == "RGB" and png.getpixel((1, 0)) == (0, 255, 255)
    with pytest.raises(images.ImageError, match="neither a gray nor an RGB image of 2 x 1"):
        images.write_png(tmp_path / "odd.png", 2, 1, b"abcd")


def test_a_png_that_cannot_be_written_is_a_sentence(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(images.ImageError, match="Cannot write"):
        images.write_png(tmp_path / "file" / "a.png", 1, 1, b"\x00")


# --- the difference image ----------------------------------------------------------------

def test_difference_image_colours_and_count(tmp_path):
    expected = bytes([0, 255, 255, 0, 0, 255])
    got = bytes([0, 255, 0, 255, 0, 255])  # (2, 0): edge missing; (0, 1): edge where none belongs
    count = images.difference_png(pgm(tmp_path / "e.pgm", 3, 2, expected), pgm(tmp_path / "g.pgm", 3, 2, got),
                                  tmp_path / "diff.png")
    assert count == 2
    with Image.open(tmp_path / "diff.png") as png:
        assert png.mode == "RGB"
        colours = [png.getpixel((x, y)) for y in range(2) for x in range(3)]
    assert colours == [images.AGREE_BACKGROUND, images.AGREE_EDGE, images.MISSING,
                       images.EXTRA, images.AGREE_BACKGROUND, images.AGREE_EDGE]
    assert "red" in images.LEGEND and "cyan" in images.LEGEND


def test_equal_pictures_differ_nowhere(tmp_path):
    picture = pgm(tmp_path / "e.pgm", 40, 3, edges(40, 3))
    assert images.difference_png(picture, picture, tmp_path / "diff.png") == 0


def test_pictures_of_different_sizes_have_no_difference_image(tmp_path):
    with pytest.raises(images.ImageError, match="is 4 x 2 but .* is 2 x 4: no difference image"):
        images.difference_png(pgm(tmp_path / "e.pgm", 2, 4, bytes(8)), pgm(tmp_path / "g.pgm", 4, 2, bytes(8)),
                              tmp_path / "diff.png")


def test_edge_fraction():
    assert images.edge_fraction(bytes([0, 255, 0, 255])) == 0.5
    assert images.edge_fraction(bytes(10)) == 0.0
    assert images.edge_fraction(b"") == 0.0
    assert images.edge_fraction(edges(40, 3)) == pytest.approx(8 / 40)


# --- one case's folder -------------------------------------------------------------------

def case_folder(folder: Path, *, wrong: int = 0, with_output: bool = True) -> Path:
    """What the checker writes for one sobel case: in.pgm, expected_out.pgm and out.pgm."""
    expected = edges(40, 3)
    pgm(folder / "in.pgm", 40, 3, bytes(i % 256 for i in range(120)))
    pgm(folder / "expected_out.pgm", 40, 3, expected)
    if with_output:
        got = bytearray(expected)
        for i in range(wrong):
            got[i * 5] = 0  # an edge pixel lost
        pgm(folder / "out.pgm", 40, 3, got)
    return folder


def test_convert_case_images_writes_every_png_and_the_difference(tmp_path):
    done = images.convert_case_images(case_folder(tmp_path / "src", wrong=3), tmp_path / "dst")
    assert done == {"written": ["expected_out.png", "in.png", "out.png", "diff_out.png"],
                    "mismatches": {"out": 3}, "problems": {}}
    assert sorted(p.name for p in (tmp_path / "dst").iterdir()) == sorted(done["written"])


def test_convert_case_images_can_leave_out_a_difference_of_equal_pictures(tmp_path):
    dst = tmp_path / "dst"
    dst.mkdir()
    (dst / "diff_out.png").write_bytes(b"from an older run")
    done = images.convert_case_images(case_folder(tmp_path / "src"), dst, equal_diffs=False)
    assert done["mismatches"] == {"out": 0} and "diff_out.png" not in done["written"]
    assert not (dst / "diff_out.png").exists()  # a stale difference would mislead


def test_convert_case_images_says_why_a_difference_is_missing(tmp_path):
    done = images.convert_case_images(case_folder(tmp_path / "src", with_output=False), tmp_path / "dst")
    assert done["mismatches"] == {} and "dumped nothing usable" in done["problems"]["out"]
    src = case_folder(tmp_path / "other")
    pgm(src / "out.pgm", 3, 1, b"abc")
    done = images.convert_case_images(src, tmp_path / "dst2")
    assert "no difference image of pictures of different sizes" in done["problems"]["out"]


def test_convert_case_images_ignores_links_and_odd_names(tmp_path):
    src = case_folder(tmp_path / "src")
    (src / "evil.pgm").symlink_to(src / "in.pgm")
    pgm(src / "-x.pgm", 1, 1, b"\x00")
    (src / "notes.txt").write_text("x")
    done = images.convert_case_images(src, tmp_path / "dst")
    assert "evil.png" not in done["written"] and "-x.png" not in done["written"]
    (tmp_path / "linked").symlink_to(src)
    (tmp_path / ".hidden").mkdir()
    assert images.case_folders(tmp_path) == [tmp_path / "dst", tmp_path / "src"]
    assert images.case_folders(tmp_path / "none") == []


# --- Pillow missing ----------------------------------------------------------------------

@pytest.fixture
def no_pillow(monkeypatch):
    for name in [m for m in sys.modules if m == "PIL" or m.startswith("PIL.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "PIL", None)  # `import PIL...` now fails as if not installed


def test_without_pillow_every_png_is_one_sentence_naming_pip_install_pillow(tmp_path, no_pillow):
    picture = pgm(tmp_path / "a.pgm", 1, 1, b"\x00")
    assert not images.pillow_available()
    for attempt in (lambda: images.pgm_to_png(picture, tmp_path / "a.png"),
                    lambda: images.write_png(tmp_path / "a.png", 1, 1, b"\x00"),
                    lambda: images.difference_png(picture, picture, tmp_path / "d.png"),
                    images.require_pillow):
        with pytest.raises(images.ImageError, match=r"pip install pillow") as caught:
            attempt()
        assert isinstance(caught.value, images.GraderError) and "\n" not in str(caught.value)
    assert images.read_pgm(picture) == (1, 1, b"\x00")  # reading needs no Pillow


# --- which labs have pictures ------------------------------------------------------------

def test_only_a_lab_of_8_bit_pictures_has_images(tmp_path):
    (tmp_path / "toy").mkdir()
    (tmp_path / "toy" / "lab.toml").write_text(TOY_LAB_TOML)
    assert not images.lab_has_images(labspec.load(tmp_path / "toy" / "lab.toml"))
    for lab in ("vector_add", "sort", "transpose"):
        assert not images.lab_has_images(labspec.load(REPO_ROOT / "labs" / lab / "lab.toml"))
    from picture_lab import PIC_LAB_TOML
    (tmp_path / "pic").mkdir()
    (tmp_path / "pic" / "lab.toml").write_text(PIC_LAB_TOML)
    assert images.lab_has_images(labspec.load(tmp_path / "pic" / "lab.toml"))
