"""handin: what reading a hand-in as data refuses beyond test_check's hostile archives (an
entry named twice), and the hand-in's hash, read within the intake's caps whatever a folder
holds (millions of files, deep trees, huge files, links)."""
from __future__ import annotations

import hashlib
import os
import tarfile
import zipfile
from pathlib import Path

import pytest

from cudalab.batching import batch
from cudalab.intake import handin
from cudalab.lab import labs
from cudalab.errors import SubmissionError
from test_check import good_source, intake, intake_messages, repo_config, special, tar_with


@pytest.mark.parametrize("second", ["vector_add.cu", "./vector_add.cu", "vector_add.cu/"])
def test_a_tar_with_an_entry_named_twice_is_refused(tmp_path, second):
    """Which copy `tar x` leaves is the last; which one a reader keeps is its own choice: what
    was checked need not be what is built. The hand-in is refused in a sentence."""
    archive = tar_with(tmp_path / "h.tar.gz", [("vector_add.cu", good_source()),
                                                (second, b"__global__ void evil() {}\n")])
    hand_in = intake(archive, tmp_path)
    errors = [f for f in hand_in.findings if f.severity == "error"]
    assert [f.message for f in errors] == [
        "The archive holds two entries named vector_add.cu. Which one counts would depend on the tool that "
        "unpacks it, so the hand-in cannot be taken; make the archive again with one copy of each file "
        "(`cudalab pack` does)."]
    assert errors[0].file == "vector_add.cu"


def test_a_zip_with_an_entry_named_twice_is_refused(tmp_path):
    path = tmp_path / "h.zip"
    with pytest.warns(UserWarning, match="Duplicate name"), zipfile.ZipFile(path, "w") as archive:
        archive.writestr("vector_add.cu", good_source())
        archive.writestr("vector_add.cu", b"__global__ void evil() {}\n")
    assert "two entries named vector_add.cu" in intake_messages(intake(path, tmp_path))


def test_a_folder_named_twice_is_no_finding(tmp_path):
    archive = tar_with(tmp_path / "h.tar", [special("src", tarfile.DIRTYPE), special("src", tarfile.DIRTYPE),
                                             ("vector_add.cu", good_source())], mode="w")
    assert "two entries" not in intake_messages(intake(archive, tmp_path))


def _walk_digest(folder: Path) -> str:
    """How a folder hand-in was hashed before the caps (os.walk, every file), for folders within them."""
    digest = hashlib.sha256()
    for top, dirs, files in os.walk(folder, followlinks=False):
        dirs.sort()
        for name in sorted(files):
            path = Path(top) / name
            content = hashlib.sha256(path.read_bytes()).hexdigest()
            digest.update(f"{path.relative_to(folder).as_posix()}\0{content}\n".encode())
    return digest.hexdigest()


def test_a_folder_within_the_caps_keeps_its_hash(tmp_path):
    folder = tmp_path / "s1"
    (folder / "b" / "c").mkdir(parents=True)
    (folder / "vector_add.cu").write_bytes(good_source())
    (folder / "b" / "notes.txt").write_text("notes\n")
    (folder / "b" / "c" / "deep.txt").write_text("deep\n")
    (folder / "a.txt").write_text("a\n")
    hashed = handin.digest(folder, repo_config(tmp_path))
    assert hashed == handin.Digest(_walk_digest(folder)), "a batch graded before sees no change"


def _deep(folder: Path, levels: int) -> None:
    path = folder
    for _ in range(levels):
        path = path / "d"
    path.mkdir(parents=True)
    (path / "bottom.txt").write_text("x")


@pytest.mark.parametrize("shape, words", [
    ("many", "The hand-in holds more than 50 entries"),
    ("crowded", "The folder crowded holds more than 50 entries"),
    ("deep", "The hand-in has folders nested more than 8 deep"),
    ("big", "The hand-in's files hold more than 65536 bytes"),
])
def test_a_folder_over_the_caps_is_hashed_within_them(tmp_path, monkeypatch, shape, words):
    """A folder hand-in of many files, one folder of many names, a deep tree or a big file:
    the hash reads no more than the caps allow and says so in a sentence, which the batch
    shows as a flag; a link to a huge tree outside is never followed."""
    config = repo_config(tmp_path, handin_max_entries=50, handin_max_total_bytes=64 * 1024)
    folder = tmp_path / "handins" / "s1"
    folder.mkdir(parents=True)
    (folder / "vector_add.cu").write_bytes(good_source())
    outside = tmp_path / "outside"
    for number in range(200):
        (outside / f"f{number:03}").mkdir(parents=True)
    (folder / "elsewhere").symlink_to(outside)
    if shape == "many":
        for number in range(30):
            (folder / f"sub{number:02}").mkdir()
            (folder / f"sub{number:02}" / "x.txt").write_text("x")
    elif shape == "crowded":
        (folder / "crowded").mkdir()
        for number in range(80):
            (folder / "crowded" / f"{number:03}.txt").write_text("x")
    elif shape == "deep":
        _deep(folder, 20)
    else:
        with open(folder / "data.bin", "wb") as handle:
            handle.truncate(1 << 30)  # a gigabyte (sparse): read no further than the cap
    opened: list[str] = []
    real_open = os.open
    monkeypatch.setattr(os, "open", lambda path, *args, **kwargs: (opened.append(str(path)),
                                                                   real_open(path, *args, **kwargs))[1])
    hashed = handin.digest(folder, config)
    assert hashed.over is not None and hashed.over.startswith(words), hashed.over
    assert "links were not followed" in hashed.over
    assert len(opened) <= 50 and not any(str(outside) in path for path in opened)
    assert handin.digest(folder, config) == hashed, "the same hand-in, the same hash"
    jobs, skipped = batch.discover(config, labs.load_lab(config, "vector_add"), folder.parent)
    assert skipped == [] and jobs[0].flags == {"over_caps": hashed.over} and jobs[0].sha256 == hashed.sha256


def test_an_archive_over_the_limit_is_hashed_in_part(tmp_path):
    config = repo_config(tmp_path, handin_max_archive_bytes=1024)
    archive = tmp_path / "s1.tar.gz"
    with open(archive, "wb") as handle:
        handle.truncate(1 << 30)
    hashed = handin.digest(archive, config)
    assert hashed.over == (f"s1.tar.gz is {1 << 30} bytes, over the limit of 1024 for a hand-in; its hash covers "
                           "the first 1024 bytes and its size.")


# --- a grade's words for a hand-in without the lab's files ------------------------------------

def _staged(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {path.name: (path.read_bytes(), path.stat().st_mode & 0o777) for path in folder.iterdir()}


def test_a_folder_and_an_archive_of_the_same_files_stage_alike(tmp_path):
    """Every staged hand-in is written by one function: a student's folder staged for a build
    and an archive's accepted files staged for a grade or a check give the same folder
    (names, bytes, modes the sandbox's user can read), and nothing else of the hand-in."""
    from cudalab.building import build
    config = repo_config(tmp_path)
    spec = labs.load_lab(config, "vector_add")
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "vector_add.cu").write_bytes(good_source())
    (folder / "notes.txt").write_text("not part of the lab")
    archive = tar_with(tmp_path / "mine.tar.gz", [("vector_add.cu", good_source()), ("notes.txt", b"x")])
    build.stage_submission(spec, folder, tmp_path / "from-folder")
    written = handin.read_hand_in(archive, spec, config).write_accepted(spec, tmp_path / "from-archive")
    assert written == ["vector_add.cu"]
    assert _staged(tmp_path / "from-folder") == _staged(tmp_path / "from-archive") == {
        "vector_add.cu": (good_source(), 0o644)}
    assert (tmp_path / "from-folder").stat().st_mode & 0o777 == 0o755
    assert (tmp_path / "from-archive").stat().st_mode & 0o777 == 0o755
    (folder / "link.cu").symlink_to(folder / "vector_add.cu")
    with pytest.raises(SubmissionError, match="symbolic link"):
        handin.read_plain_file(folder / "link.cu", spec.max_file_bytes)


def _graded_in_batch(tmp_path, archive: Path) -> dict:
    """The result a batch gives `archive` as a vector_add hand-in (no build is reached)."""
    from cudalab.grading import grade
    config = repo_config(tmp_path)
    spec = labs.load_lab(config, "vector_add")
    job = batch.Job(key="s1", student="s1", handin=archive, sha256="0" * 64, id_from="name")
    pending, staged = batch.begin_job(config, spec, job, tmp_path / "scratch", allow_unisolated=True)
    result = grade.finish(pending)
    assert str(tmp_path / "scratch") not in result["message"] and str(staged) not in result["message"]
    return result


def test_a_misnamed_file_in_a_batch_grade_is_named_as_check_names_it(tmp_path):
    """Proves: a hand-in whose file is misnamed gets check's did-you-mean in its grade, never
    the grader's staging folder."""
    archive = tar_with(tmp_path / "s1.tar.gz", [("vectoradd.cu", good_source())])
    result = _graded_in_batch(tmp_path, archive)
    assert result["status"] == "submission_error"
    assert ("vectoradd.cu: did you mean vector_add.cu? The vector_add lab needs a file called exactly "
            "vector_add.cu; rename it.") in result["message"]


def test_another_labs_archive_in_a_batch_grade_names_that_lab(tmp_path):
    """Proves: an archive `cudalab pack` made for another lab is graded with check's sentence
    naming the manifest's lab, then what is missing."""
    manifest = b'{"schema": "cudalab.handin-manifest/1", "lab": "reduction", "files": []}'
    archive = tar_with(tmp_path / "s1.tar.gz", [("reduction.cu", b"// reduction\n"),
                                                 (handin.MANIFEST, manifest)])
    result = _graded_in_batch(tmp_path, archive)
    assert result["status"] == "submission_error"
    assert result["message"].startswith(
        "cudalab-manifest.json says this hand-in is for the lab 'reduction', but it is being checked as "
        "vector_add. Pack it again for the right lab. vector_add.cu is missing.")


# --- written answers ------------------------------------------------------------------------

@pytest.mark.parametrize("readme, said", [(None, "README.md is missing: the sobel lab asks 2 written questions"),
                                          (b"  \n", "README.md is empty"), (b"I tried 32x8 and 16x16.\n", None)])
def test_a_lab_with_written_questions_warns_when_its_readme_is_missing_or_empty(tmp_path, readme, said):
    config = repo_config(tmp_path)
    spec = labs.load_lab(config, "sobel")
    folder = tmp_path / "handin"
    folder.mkdir()
    (folder / "sobel.cu").write_text("// my kernels\n")
    if readme is not None:
        (folder / "README.md").write_bytes(readme)
    findings = handin.file_findings(handin.read_hand_in(folder, spec, config), spec)
    warned = [f.message for f in findings if f.severity == "warning" and "README.md" in f.message]
    assert not [f for f in findings if f.severity == "error"]
    assert (warned == []) if said is None else (len(warned) == 1 and warned[0].startswith(said))


def test_a_grade_keeps_the_written_answers_as_text_and_within_a_cap(tmp_path):
    config = repo_config(tmp_path)
    sobel, vector_add = labs.load_lab(config, "sobel"), labs.load_lab(config, "vector_add")
    folder = tmp_path / "handin"
    folder.mkdir()
    (folder / "sobel.cu").write_text("// my kernels\n")
    (folder / "README.md").write_bytes(b"32x8 was fastest.\n" + b"x" * handin.WRITTEN_ANSWERS_MAX_BYTES)
    kept = handin.written_answers(handin.read_hand_in(folder, sobel, config), sobel)
    assert [q["id"] for q in kept["questions"]] == [q.id for q in sobel.questions]
    assert kept["readme"].startswith("32x8 was fastest.\n") and kept["readme"].endswith("[cut at 64 KiB]")
    assert len(kept["readme"]) < handin.WRITTEN_ANSWERS_MAX_BYTES + 100
    (folder / "README.md").unlink()
    assert handin.written_answers(handin.read_hand_in(folder, sobel, config), sobel)["readme"] is None
    assert handin.written_answers(handin.read_hand_in(folder, vector_add, config), vector_add) is None


def test_a_labs_written_answers_are_not_called_an_ignored_file_by_its_builds(tmp_path):
    """README.md is part of a sobel hand-in (its written answers), so `run` and `grade` never
    warn that it was ignored; beside vector_add.cu, which asks for none, it is worth a word."""
    from cudalab.building import build
    config = repo_config(tmp_path)
    for lab, warned in (("sobel", []), ("vector_add", ["README.md"])):
        spec = labs.load_lab(config, lab)
        folder = tmp_path / lab
        folder.mkdir()
        (folder / spec.files[0]).write_text("// my kernels\n")
        (folder / "README.md").write_text("32x8 was fastest.\n")
        staged = build.stage_submission(spec, folder, tmp_path / f"{lab}-work" / "src")
        assert staged.ignored_files(spec) == warned, lab
