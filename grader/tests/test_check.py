"""`cudalab check` and `cudalab pack`: every fixture hand-in in handins/ gets its expected
verdicts and messages; hostile archives (traversal, links, device files, oversize files,
bombs) become findings and never files; a folder, its .tar.gz and its .zip get the same
receipt; pack -> check round-trips; the receipt's JSON follows its schema."""
from __future__ import annotations

import dataclasses
import io
import json
import os
import shutil
import stat
import tarfile
import tomllib
import types
import zipfile
from pathlib import Path

import pytest

from cudalab.intake import check, handin, handin_checks
from cudalab import cli
from cudalab.lab import labs
from cudalab.grading import sanitizer
from cudalab.config import Config
from cudalab.errors import UsageError
from cudalab.exit_codes import Cli, Harness
from conftest import REPO_ROOT

HANDINS = Path(__file__).resolve().parent / "handins"
FIXTURES = sorted(p for p in HANDINS.glob("*/*") if (p / "expect.toml").is_file())
GOOD = HANDINS / "vector_add" / "good"
SCHEMA = REPO_ROOT / "grader" / "cudalab" / "schemas" / "receipt.schema.json"


def repo_config(tmp_path: Path, **overrides) -> Config:
    return Config.load(root=REPO_ROOT, work_dir=tmp_path / "work", **overrides)


def copy_hand_in(fixture: Path, dest: Path) -> Path:
    """The fixture's hand-in without its expect.toml; `files_from` names a hostile-suite
    entry whose files it shares."""
    expect_file = fixture / "expect.toml"
    source = fixture
    if expect_file.is_file():
        shared = tomllib.loads(expect_file.read_text()).get("files_from")
        source = HANDINS.parent / shared if shared else fixture
    shutil.copytree(source, dest, ignore=shutil.ignore_patterns("expect.toml"))
    return dest


def by_name(receipt: dict) -> dict[str, dict]:
    return {c["name"]: c for c in receipt["checks"]}


def messages(receipt: dict, name: str) -> str:
    return "\n".join(f["message"] for f in by_name(receipt)[name]["findings"])


# --- the fixtures ---------------------------------------------------------------------------

def test_the_fixtures_cover_the_hand_in_mistakes():
    names = {f"{p.parent.name}/{p.name}" for p in FIXTURES}
    assert {"vector_add/good", "vector_add/missing_file", "vector_add/extra_file", "vector_add/near_miss_name",
            "vector_add/compile_error", "vector_add/wrong_signature", "vector_add/missing_function",
            "vector_add/defines_main", "vector_add/thrust_in_source", "vector_add/thrust_hidden_by_macros",
            "vector_add/cublas_in_source", "vector_add/cublas_hidden_dlopen", "vector_add/readme_not_taken",
            "reduction/cub_in_source", "reduction/cub_hidden_by_macros"} <= names


@pytest.mark.parametrize("fixture", FIXTURES, ids=[f"{p.parent.name}/{p.name}" for p in FIXTURES])
def test_fixture_expectations_are_well_formed(fixture):
    expect = tomllib.loads((fixture / "expect.toml").read_text())
    assert set(expect) <= {"accepted", "why", "verdicts", "messages", "absent", "lines", "gpu", "files_from"}
    assert isinstance(expect["accepted"], bool) and len(expect["why"]) > 30
    for table in ("verdicts", "messages", "absent", "lines"):
        assert set(expect.get(table, {})) <= set(handin_checks.names())


@pytest.mark.needs_build
@pytest.mark.parametrize("fixture", FIXTURES, ids=[f"{p.parent.name}/{p.name}" for p in FIXTURES])
def test_fixture_gets_its_verdicts_and_messages(fixture, tmp_path):
    expect = tomllib.loads((fixture / "expect.toml").read_text())
    hand_in = copy_hand_in(fixture, tmp_path / "hand-in")
    receipt = check.check_hand_in(repo_config(tmp_path), hand_in, fixture.parent.name, run=False)
    checks = by_name(receipt)
    assert receipt["accepted"] is expect["accepted"], check.render_receipt(receipt)
    for name, verdict in expect.get("verdicts", {}).items():
        assert checks[name]["verdict"] == verdict, check.render_receipt(receipt)
    for name, wanted in expect.get("messages", {}).items():
        for text in wanted:
            assert text in messages(receipt, name), check.render_receipt(receipt)
    for name, unwanted in expect.get("absent", {}).items():
        for text in unwanted:
            assert text not in messages(receipt, name), check.render_receipt(receipt)
    for name, line in expect.get("lines", {}).items():
        assert any(f.get("line") == line for f in checks[name]["findings"]), check.render_receipt(receipt)
    # Every message is a sentence the student can act on.
    for item in receipt["checks"]:
        for finding in item["findings"]:
            assert finding["message"][0].isalnum() and len(finding["message"].split()) >= 5, finding
            assert finding["message"].rstrip().endswith((".", ")", "?")), finding


# --- hostile archives -----------------------------------------------------------------------

def tar_with(path: Path, members: list[tarfile.TarInfo | tuple[str, bytes]], mode: str = "w:gz") -> Path:
    with tarfile.open(path, mode) as archive:
        for member in members:
            if isinstance(member, tuple):
                info = tarfile.TarInfo(member[0])
                info.size = len(member[1])
                archive.addfile(info, io.BytesIO(member[1]))
            else:
                archive.addfile(member)
    return path


def good_source() -> bytes:
    return (GOOD / "vector_add.cu").read_bytes()


def intake(path: Path, tmp_path: Path, lab: str = "vector_add", **limits) -> handin.HandIn:
    config = repo_config(tmp_path, **limits)
    return handin.read_hand_in(path, labs.load_lab(config, lab), config)


def intake_messages(hand_in: handin.HandIn) -> str:
    return "\n".join(f.message for f in hand_in.findings)


def special(name: str, kind: bytes, linkname: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, linkname
    if kind in (tarfile.CHRTYPE, tarfile.BLKTYPE):
        info.devmajor, info.devminor = 1, 3
    return info


def test_path_traversal_and_absolute_paths_are_findings_never_files(tmp_path):
    archive = tar_with(tmp_path / "h.tar.gz", [("vector_add.cu", good_source()), ("../evil.cu", b"x"),
                                                ("/etc/cudalab-evil", b"x"), ("a/../../b.cu", b"x")])
    hand_in = intake(archive, tmp_path)
    text = intake_messages(hand_in)
    assert "'../evil.cu'" in text and "'..' in its path" in text
    assert "is an absolute path: '/etc/cudalab-evil'" in text
    assert "'a/../../b.cu'" in text
    assert [e.name for e in hand_in.entries] == ["vector_add.cu"]
    written = hand_in.write_accepted(labs.load_lab(repo_config(tmp_path), "vector_add"), tmp_path / "out")
    assert written == ["vector_add.cu"] and not (tmp_path / "evil.cu").exists()
    assert sorted(os.listdir(tmp_path / "out")) == ["vector_add.cu"]


def test_links_and_device_files_in_a_tar_are_findings(tmp_path):
    archive = tar_with(tmp_path / "h.tgz", [("vector_add.cu", good_source()),
                                            special("notes.cu", tarfile.SYMTYPE, "/etc/shadow"),
                                            special("copy.cu", tarfile.LNKTYPE, "vector_add.cu"),
                                            special("null", tarfile.CHRTYPE), special("pipe", tarfile.FIFOTYPE)])
    text = intake_messages(intake(archive, tmp_path))
    assert "notes.cu is a symbolic link" in text
    assert "copy.cu is a hard link" in text
    assert "null is a device file" in text
    assert "pipe is a special file" in text


def test_a_symlink_named_like_the_lab_file_is_not_followed(tmp_path):
    folder = tmp_path / "hand-in"
    folder.mkdir()
    (tmp_path / "secret.cu").write_bytes(good_source())
    (folder / "vector_add.cu").symlink_to(tmp_path / "secret.cu")
    os.mkfifo(folder / "fifo")
    hand_in = intake(folder, tmp_path)
    text = intake_messages(hand_in)
    assert "vector_add.cu is a symbolic link" in text and "fifo is a special file" in text
    assert hand_in.files() == {}


def test_a_symlink_in_a_zip_is_a_finding(tmp_path):
    path = tmp_path / "h.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("vector_add.cu", good_source())
        link = zipfile.ZipInfo("other.cu")
        link.create_system = 3
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        archive.writestr(link, "/etc/passwd")
    text = intake_messages(intake(path, tmp_path))
    assert "other.cu is a symbolic link" in text


def test_an_oversize_file_is_refused_by_its_own_limit(tmp_path):
    folder = tmp_path / "hand-in"
    folder.mkdir()
    (folder / "vector_add.cu").write_bytes(b"// " + b"x" * 70000 + b"\n")
    hand_in = intake(folder, tmp_path)
    assert "vector_add.cu is 70004 bytes, over the limit of 65536 bytes for a lab file" in intake_messages(hand_in)
    assert hand_in.files()["vector_add.cu"].data is None


def test_a_zip_bomb_stops_at_the_limit(tmp_path):
    """A lab file that claims to be small but inflates without end, and an extra file of a
    gigabyte of zeros: neither is inflated past the limits."""
    path = tmp_path / "bomb.zip"
    zeros = b"\0" * (1 << 20)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        with archive.open("vector_add.cu", "w", force_zip64=True) as handle:
            for _ in range(64):
                handle.write(zeros)
        with archive.open("data.bin", "w", force_zip64=True) as handle:
            for _ in range(1024):
                handle.write(zeros)
    assert path.stat().st_size < 3 << 20
    hand_in = intake(path, tmp_path)
    text = intake_messages(hand_in)
    assert "vector_add.cu is 67108864 bytes, over the limit of 65536" in text
    assert "more than 8388608 bytes; reading stopped there" in text or "data.bin is 1073741824 bytes" in text


def test_a_zip_whose_header_lies_about_size_is_read_only_up_to_the_limit(tmp_path):
    path = tmp_path / "liar.zip"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("vector_add.cu", b"/" * (1 << 20))
    raw = bytearray(path.read_bytes())
    # Make both headers claim 10 bytes: the reader must count what actually comes out.
    for signature, offset in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
        at = raw.find(signature)
        raw[at + offset:at + offset + 4] = (10).to_bytes(4, "little")
    path.write_bytes(bytes(raw))
    hand_in = intake(path, tmp_path)
    entry = hand_in.files().get("vector_add.cu")
    assert entry is None or entry.data is None or len(entry.data) <= 65536
    assert hand_in.findings, "a file that inflates past what its header says is a finding"


def test_a_gzip_bomb_stops_at_the_limit(tmp_path):
    path = tmp_path / "bomb.tar.gz"
    info = tarfile.TarInfo("data.bin")
    info.size = 256 << 20

    class Zeros(io.RawIOBase):
        left = info.size

        def readable(self):
            return True

        def readinto(self, buffer):
            n = min(len(buffer), self.left)
            buffer[:n] = b"\0" * n
            self.left -= n
            return n
    with tarfile.open(path, "w:gz", compresslevel=1) as archive:
        archive.addfile(info, io.BufferedReader(Zeros()))
        source = tarfile.TarInfo("vector_add.cu")
        source.size = len(good_source())
        archive.addfile(source, io.BytesIO(good_source()))
    text = intake_messages(intake(path, tmp_path))
    assert "reading stopped there" in text


def test_too_many_entries_stop_reading(tmp_path):
    archive = tar_with(tmp_path / "many.tar.gz", [(f"f{i}.txt", b"x") for i in range(300)])
    text = intake_messages(intake(archive, tmp_path))
    assert "more than 200 entries; reading stopped there" in text


def test_names_are_data(tmp_path):
    archive = tar_with(tmp_path / "odd.tar.gz", [("vector_add.cu", good_source()), ("bad\x1b[31mname.cu", b"x"),
                                                 ("win\\path.cu", b"x"), ("-rf", b"x")])
    hand_in = intake(archive, tmp_path)
    text = intake_messages(hand_in)
    assert "control character in its name: 'bad\\x1b[31mname.cu'" in text
    assert "backslash in its name" in text
    assert "\x1b" not in text
    spec = labs.load_lab(repo_config(tmp_path), "vector_add")
    assert "-rf is not part of the vector_add hand-in" in "\n".join(f.message for f in handin.file_findings(hand_in, spec))


def test_not_an_archive_says_what_to_hand_in(tmp_path):
    path = tmp_path / "vector_add.rar"
    path.write_bytes(b"Rar!\x1a\x07\x00" + b"x" * 100)
    assert "neither a folder nor a .tar.gz, .tgz or .zip archive" in intake_messages(intake(path, tmp_path))
    broken = tmp_path / "broken.tar.gz"
    broken.write_bytes(b"\x1f\x8b\x08\x00garbage")
    assert "is not a readable tar.gz archive" in intake_messages(intake(broken, tmp_path))


def test_a_packed_folder_is_looked_inside(tmp_path):
    archive = tar_with(tmp_path / "h.tar.gz", [("my_lab/vector_add.cu", good_source())])
    hand_in = intake(archive, tmp_path)
    assert hand_in.top_folder == "my_lab" and "vector_add.cu" in hand_in.files()


def test_os_litter_is_a_warning_only(tmp_path):
    path = tmp_path / "mac.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("vector_add.cu", good_source())
        archive.writestr("__MACOSX/._vector_add.cu", b"x")
        archive.writestr(".DS_Store", b"x")
    spec = labs.load_lab(repo_config(tmp_path), "vector_add")
    findings = handin.file_findings(intake(path, tmp_path), spec)
    assert findings and all(f.severity == "warning" for f in findings)


def test_a_readme_is_taken_where_the_lab_says_so(tmp_path):
    spec = labs.load_lab(repo_config(tmp_path), "vector_add")
    reading = dataclasses.replace(spec, handin=dataclasses.replace(spec.handin, accepts_readme=True))
    folder = tmp_path / "hand-in"
    folder.mkdir()
    (folder / "vector_add.cu").write_bytes(good_source())
    (folder / "README.md").write_text("# Block shapes\n")
    config = repo_config(tmp_path)
    assert handin.file_findings(handin.read_hand_in(folder, reading, config), reading) == []
    refused = handin.file_findings(handin.read_hand_in(folder, spec, config), spec)
    assert [f.severity for f in refused] == ["error"] and "takes no written answers" in refused[0].message
    (folder / "README.md").rename(folder / "readme.txt")
    near = handin.file_findings(handin.read_hand_in(folder, reading, config), reading)
    assert "readme.txt: did you mean README.md?" in near[0].message


# --- one hand-in, three forms ---------------------------------------------------------------------

@pytest.mark.needs_build
def test_a_folder_its_tar_gz_and_its_zip_get_the_same_receipt(tmp_path):
    folder = copy_hand_in(GOOD, tmp_path / "hand-in")
    tar_path = tar_with(tmp_path / "hand-in.tar.gz", [("vector_add.cu", good_source())])
    zip_path = tmp_path / "hand-in.zip"
    with zipfile.ZipFile(zip_path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("vector_add.cu", good_source())
    config = repo_config(tmp_path)
    receipts = [check.check_hand_in(config, p, run=False) for p in (folder, tar_path, zip_path)]
    assert [r["hand_in"]["form"] for r in receipts] == ["folder", "tar.gz", "zip"]
    assert all(r["accepted"] and r["lab"] == "vector_add" for r in receipts)
    assert len({r["hand_in"]["content_sha256"] for r in receipts}) == 1
    assert receipts[0]["hand_in"]["sha256"] is None
    assert receipts[1]["hand_in"]["sha256"] == handin.sha256_file(tar_path)
    assert [[c["verdict"] for c in r["checks"]] for r in receipts] == [[c["verdict"] for c in receipts[0]["checks"]]] * 3


# --- pack ------------------------------------------------------------------------------------------

@pytest.mark.needs_build
def test_pack_then_check_round_trips(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CUDALAB_WORK_DIR", str(tmp_path / "work"))
    folder = copy_hand_in(GOOD, tmp_path / "hand-in")
    (folder / ".DS_Store").write_bytes(b"x")
    out = tmp_path / "handed" / "vector_add-s123.tar.gz"
    assert cli.main(["pack", "vector_add", str(folder), "--student", "s123", "--out", str(out)]) == 0
    with tarfile.open(out) as archive:
        assert sorted(archive.getnames()) == [check.MANIFEST, "vector_add.cu"]
        manifest = json.loads(archive.extractfile(check.MANIFEST).read())
    assert manifest["lab"] == "vector_add" and manifest["student"] == "s123"
    assert manifest["files"] == [{"name": "vector_add.cu", "bytes": len(good_source()),
                                  "sha256": check._sha256(good_source())}]
    assert manifest["cudalab_version"] and manifest["created_at"] and "nvcc" in manifest["toolchain"]
    receipt_file = tmp_path / "receipt.json"
    capsys.readouterr()
    assert cli.main(["check", str(out), "--no-run", "--receipt", str(receipt_file)]) == 0
    receipt = json.loads(receipt_file.read_text())
    assert receipt["accepted"] and receipt["lab"] == "vector_add" and receipt["hand_in"]["student"] == "s123"
    assert receipt["hand_in"]["sha256"] == handin.sha256_file(out)
    assert "ACCEPTED" in (tmp_path / "receipt.txt").read_text()
    assert "ACCEPTED: this hand-in is well formed" in capsys.readouterr().out


@pytest.mark.needs_build
def test_pack_refuses_what_check_would_reject(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CUDALAB_WORK_DIR", str(tmp_path / "work"))
    folder = copy_hand_in(HANDINS / "vector_add" / "near_miss_name", tmp_path / "hand-in")
    out = tmp_path / "vector_add.tar.gz"
    assert cli.main(["pack", "vector_add", str(folder), "--out", str(out)]) == Cli.REJECTED
    assert not out.exists()
    captured = capsys.readouterr()
    assert "Nothing was packed" in captured.err and "vectoradd.cu: did you mean vector_add.cu?" in captured.err


def test_pack_refuses_a_student_id_that_is_not_plain(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CUDALAB_WORK_DIR", str(tmp_path / "work"))
    assert cli.main(["pack", "vector_add", str(GOOD), "--student", "../x"]) == Cli.USAGE
    assert "is not a plain id" in capsys.readouterr().err


@pytest.mark.needs_build
def test_a_changed_archive_is_told_from_its_manifest(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDALAB_WORK_DIR", str(tmp_path / "work"))
    out = tmp_path / "v.tar.gz"
    assert cli.main(["pack", "vector_add", str(copy_hand_in(GOOD, tmp_path / "h")), "--out", str(out)]) == 0
    with tarfile.open(out) as archive:
        manifest = archive.extractfile(check.MANIFEST).read()
    changed = tar_with(tmp_path / "changed.tar.gz", [("vector_add.cu", good_source() + b"// edited\n"),
                                                     (check.MANIFEST, manifest)])
    receipt = check.check_hand_in(repo_config(tmp_path), changed, run=False)
    assert receipt["accepted"]
    assert "is not the file `cudalab pack` packed" in messages(receipt, "files")


# --- the receipt ---------------------------------------------------------------------------------

@pytest.mark.needs_build
def test_the_receipt_follows_its_schema(tmp_path):
    jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is a test dependency (pip install -e grader[test])")
    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
    config = repo_config(tmp_path)
    for fixture in (GOOD, HANDINS / "vector_add" / "compile_error", HANDINS / "vector_add" / "missing_file",
                    HANDINS / "reduction" / "cub_in_source"):
        hand_in = copy_hand_in(fixture, tmp_path / fixture.name)
        receipt = check.check_hand_in(config, hand_in, fixture.parent.name, run=False)
        validator.validate(receipt)
        json.dumps(receipt)
    broken = dict(receipt, accepted="yes")
    assert not validator.is_valid(broken)


# --- the registry of checks ----------------------------------------------------------------------

class ToyCheck(handin_checks.HandInCheck):
    """A check that finds what it is told to: enough to drive the registry."""

    def __init__(self, name: str, finds: str | None = None, requires: tuple[str, ...] = (),
                 at_grade_time: bool = False, runs_program: bool = False):
        self.name, self.finds, self.requires = name, finds, requires
        self.at_grade_time, self.runs_program = at_grade_time, runs_program
        self.ran: list[str] = []

    def run(self, context, check_record) -> None:
        self.ran.append("run")
        if self.finds:
            check_record.add([handin.Finding(self.name, self.finds, f"The toy check {self.name} found an {self.finds}.")])

    def after_grade_time_checks(self, context, check_record) -> None:
        self.ran.append("after the grade-time checks")


def test_the_registry_the_receipt_names_and_the_schema_agree():
    """The receipt's checks are the registry's, in its order: CheckName and the schema's enum,
    prefixItems and item counts say the same names, and nothing else."""
    assert handin_checks.schema_disagreements() == []
    assert handin_checks.names() == ("archive", "files", "compile", "symbols", "forbidden", "smoke_run", "sanitizer")
    assert handin_checks.rejecting_names() == ("archive", "files", "compile", "symbols", "forbidden")
    assert [c.name for c in handin_checks.at_grade_time()] == ["compile", "symbols", "forbidden"]


def test_a_check_registered_without_the_schema_or_the_enum_knowing_it_is_a_disagreement():
    handin_checks.register(ToyCheck("crlf", requires=("files",)))
    try:
        said = " ".join(handin_checks.schema_disagreements())
    finally:
        handin_checks.unregister("crlf")
    assert "CheckName lists archive" in said and "the schema's enum of names lists" in said
    assert "sanitizer, crlf" in said and "minItems for checks is 7, but the registry has 8" in said
    assert handin_checks.schema_disagreements() == []
    # ... and a schema that names a check the registry does not have.
    schema = json.loads(SCHEMA.read_text())
    schema["properties"]["checks"]["items"]["properties"]["name"]["enum"].append("crlf")
    assert handin_checks.schema_disagreements(schema) == [
        "the schema's enum of names lists archive, files, compile, symbols, forbidden, smoke_run, sanitizer, crlf, "
        "but the registry has archive, files, compile, symbols, forbidden, smoke_run, sanitizer: name every "
        "registered check, in the registry's order."]


def test_registering_a_check_keeps_the_registry_runnable():
    """A grade-time check goes before the checks that run the program (which is linked only
    after every grade-time check); a name taken, a requirement not yet registered or a
    grade-time check after the program are refused in a sentence."""
    handin_checks.register(ToyCheck("late", at_grade_time=True))
    try:
        assert handin_checks.names().index("late") == handin_checks.names().index("smoke_run") - 1
        with pytest.raises(ValueError, match="named 'late' is registered already"):
            handin_checks.register(ToyCheck("late"))
    finally:
        handin_checks.unregister("late")
    with pytest.raises(ValueError, match="requires smoke_run, which must be registered before it"):
        handin_checks.register(ToyCheck("early", requires=("smoke_run",)), before="smoke_run")
    with pytest.raises(ValueError, match="must come before the checks that run the program"):
        handin_checks.register(ToyCheck("late", at_grade_time=True), before="sanitizer")
    with pytest.raises(ValueError, match="is required by symbols"):
        handin_checks.unregister("compile")
    assert "late" not in handin_checks.names() and "early" not in handin_checks.names()


def test_a_check_whose_requirement_was_not_met_is_skipped_with_a_reason_naming_it(monkeypatch):
    """The registry, not each check, skips: a check after a failed requirement names it; one
    after a skipped requirement passes its reason on; a warning meets a requirement; the
    grade-time checks' hook runs once, after the last of them; a rejecting check's error
    decides acceptance, another's does not."""
    monkeypatch.setattr(handin_checks, "_REGISTRY", [])
    toys = [ToyCheck("first", finds="error"), ToyCheck("second", requires=("first",)),
            ToyCheck("third", requires=("second",), at_grade_time=True), ToyCheck("noted", finds="warning"),
            ToyCheck("after", requires=("noted",), at_grade_time=True)]
    toys[0].rejects = True
    for toy in toys:
        handin_checks.register(toy)
    context = handin_checks.CheckContext(config=None, spec=None)
    handin_checks.run_all(context)
    verdicts = {name: (r.verdict, r.reason) for name, r in context.records.items()}
    assert verdicts == {"first": ("failed", ""),
                        "second": ("skipped", "it needs the first check to pass, and that check failed"),
                        "third": ("skipped", "it needs the first check to pass, and that check failed"),
                        "noted": ("warning", ""), "after": ("passed", "")}
    assert [t.ran for t in toys] == [["run"], [], ["after the grade-time checks"], ["run"],
                                     ["run", "after the grade-time checks"]]
    assert not handin_checks.accepted(context.records)
    toys[0].rejects = False
    assert handin_checks.accepted(context.records)


def test_check_exit_codes_and_usage(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CUDALAB_WORK_DIR", str(tmp_path / "work"))
    assert cli.main(["check", str(tmp_path / "nothing-here"), "--lab", "vector_add", "--no-run"]) == Cli.REJECTED
    assert "does not exist" in capsys.readouterr().out
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli.main(["check", str(empty), "--no-run"]) == Cli.USAGE
    assert "Say which with --lab" in capsys.readouterr().err


# --- the smoke run and compute-sanitizer, on a GPU the test makes up ------------------------------

class MadeUpRunner:
    """The runner of a machine with a GPU: its program ran; the smallest case passed and the
    largest failed, or (`no_device`) the harness found no CUDA device after all."""

    no_device = False

    def __init__(self, config, spec, folder):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)

    def run_cases(self, binary, args):
        assert Path(binary).is_file(), "the smoke run runs the linked program"
        (self.folder / "run.json").write_text("{}")
        ran = (Harness.NO_DEVICE, "no_device") if self.no_device else (Harness.PASSED, "passed")
        return dataclasses.make_dataclass("Ran", ["exit_code", "status"])(*ran), self.folder

    def check(self, dump, seed, cases):
        return {cases[0]: {"status": "passed"}, cases[-1]: {"status": "failed", "message": "index 3: expected 1, got 2"}}


@pytest.mark.needs_build
@pytest.mark.parametrize("no_device", [False, True])
def test_the_smoke_run_and_the_sanitizer_run_the_linked_program(no_device, tmp_path, monkeypatch):
    """With a GPU (made up here), the smoke run's failing case and compute-sanitizer's finding
    are warnings on an accepted hand-in; where the harness finds no device after all, the smoke
    run says so and the sanitizer still runs the program."""
    monkeypatch.setattr(handin_checks, "cuda_device_present", lambda: True)
    monkeypatch.setattr(handin_checks, "Runner", MadeUpRunner)
    monkeypatch.setattr(MadeUpRunner, "no_device", no_device)
    monkeypatch.setattr(sanitizer, "find_sanitizer", lambda: "compute-sanitizer")
    monkeypatch.setattr(sanitizer, "run_tools", lambda runner, tool, binary, cases, seed, lines, timeout_s:
                        types.SimpleNamespace(problems={}, tools_run=["memcheck"], findings=[types.SimpleNamespace(
                            sentence="invalid read of 4 bytes at line 7", file="vector_add.cu", line=7)]))
    receipt = check.check_hand_in(repo_config(tmp_path), copy_hand_in(GOOD, tmp_path / "hand-in"), "vector_add", seed=7)
    checks = by_name(receipt)
    assert receipt["accepted"], check.render_receipt(receipt)
    if no_device:
        said = (checks["smoke_run"]["verdict"], checks["smoke_run"]["reason"])
        assert said == ("skipped", "not run: the program found no CUDA device")
    else:
        assert checks["smoke_run"]["verdict"] == "warning" and checks["smoke_run"]["reason"] == "3 smallest cases, seed 7"
        assert "fails: index 3: expected 1, got 2. The hand-in is accepted" in messages(receipt, "smoke_run")
    assert checks["sanitizer"]["verdict"] == "warning" and checks["sanitizer"]["findings"][0]["line"] == 7
    assert messages(receipt, "sanitizer") == "Invalid read of 4 bytes at line 7."


# --- on a GPU: the smoke run and compute-sanitizer -----------------------------------------------

GPU_FIXTURES = [p for p in FIXTURES if "gpu" in tomllib.loads((p / "expect.toml").read_text())]


@pytest.mark.gpu
@pytest.mark.needs_build
@pytest.mark.parametrize("fixture", GPU_FIXTURES, ids=[f"{p.parent.name}/{p.name}" for p in GPU_FIXTURES])
def test_sanitizer_findings_name_the_line_on_a_gpu(fixture, tmp_path):
    """Each sanitizer fixture's receipt says what went wrong at the line of the student's
    file. With CUDALAB_RECEIPTS_DIR set, the receipts are kept there."""
    expect = tomllib.loads((fixture / "expect.toml").read_text())["gpu"]
    hand_in = copy_hand_in(fixture, tmp_path / fixture.name)
    receipt = check.check_hand_in(repo_config(tmp_path), hand_in, fixture.parent.name)
    text = check.render_receipt(receipt)
    if os.environ.get("CUDALAB_RECEIPTS_DIR"):
        keep = Path(os.environ["CUDALAB_RECEIPTS_DIR"])
        keep.mkdir(parents=True, exist_ok=True)
        (keep / f"{fixture.parent.name}_{fixture.name}.txt").write_text(text)
        (keep / f"{fixture.parent.name}_{fixture.name}.json").write_text(json.dumps(receipt, indent=2))
    sanitizer_check = by_name(receipt)["sanitizer"]
    assert sanitizer_check["verdict"] == expect["sanitizer"], text
    said = messages(receipt, "sanitizer")
    for words in expect["messages"]:
        assert words in said, text
    for line in expect["lines"]:
        assert any(f.get("line") == line for f in sanitizer_check["findings"]), text
    assert receipt["accepted"], "sanitizer findings are reported, they do not reject a hand-in"


@pytest.mark.gpu
@pytest.mark.needs_build
@pytest.mark.parametrize("lab", labs.available_labs(REPO_ROOT))
def test_the_solution_passes_every_check_on_a_gpu(lab, tmp_path):
    """The course solution, handed in alone: the smoke run passes and compute-sanitizer is
    silent (the harness's own code included). Its code is all it hands in, so a lab that
    asks written questions warns that README.md, where they are answered, is missing."""
    config = repo_config(tmp_path)
    spec = labs.load_lab(config, lab)
    hand_in = tmp_path / "hand-in"
    hand_in.mkdir()
    for name in spec.files:
        shutil.copy(REPO_ROOT / "solutions" / lab / name, hand_in / name)
    receipt = check.check_hand_in(config, hand_in, lab)
    text = check.render_receipt(receipt)
    assert receipt["accepted"], text
    verdicts = {c["name"]: c["verdict"] for c in receipt["checks"]}
    expected = {name: "passed" for name in handin_checks.names()}
    if spec.questions:
        expected["files"] = "warning"
        assert "README.md is missing" in messages(receipt, "files"), text
    assert verdicts == expected, text


def test_a_misnamed_file_checked_without_lab_gets_the_near_miss(tmp_path):
    """`cudalab check .` on a folder with vectoradd.cu: no lab can be told, and the sentence
    says which file was probably meant, and for which lab, before asking for --lab."""
    folder = tmp_path / "work_folder"
    folder.mkdir()
    (folder / "vectoradd.cu").write_bytes(good_source())
    with pytest.raises(UsageError) as raised:
        check.check_hand_in(repo_config(tmp_path), folder)
    said = str(raised.value)
    assert "vectoradd.cu: did you mean vector_add.cu (the vector_add lab)?" in said
    assert said.index("did you mean") < said.index("Say which with --lab")
