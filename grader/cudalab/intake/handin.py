"""Reading a hand-in as data: a folder, a .tar.gz/.tgz/.tar or a .zip, whatever it holds.

Nothing in a hand-in is trusted. An archive is never unpacked with a library's extract
call: each entry is looked at as data (its name, its kind, its size) and only the lab's
own files are ever read, with a cap, into memory; the grader writes them out itself under
their lab names. So an absolute path, a `..`, a link, a device file, too many entries or
a zip bomb can only ever become a finding, never a file outside the staging folder.

`read_hand_in` returns the entries and the intake findings; `file_findings` compares the
entries with what the lab takes (required files, nothing else, near misses named);
`digest` is the hand-in's sha256 (a batch's way to see that it changed), read within the
same caps.
"""
from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import re
import stat
import tarfile
import unicodedata
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from ..config import Config
from ..errors import SubmissionError
from ..lab.labspec import LabSpec
from ..names import near
from ..building.sdk import sha256_file

README = "README.md"
MANIFEST = "cudalab-manifest.json"  # what `cudalab pack` adds: read, checked, never built
MANIFEST_SCHEMA = "cudalab.handin-manifest/1"
# A student id `pack --student` takes. It names the archive (<lab>-<id>.tar.gz: the name `batch`
# takes the id from) and is recorded in the manifest, where `batch` only compares it with that id.
STUDENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")
# Files an operating system adds on its own when a folder is zipped: reported, never fatal.
_OS_LITTER = ("__MACOSX", ".DS_Store", "Thumbs.db", "desktop.ini")
_READ_CHUNK = 64 * 1024
_MAX_NAME_BYTES = 255
_MAX_DEPTH = 8


@dataclass(frozen=True)
class Finding:
    """One thing a check found, as a sentence that says what is wrong and what to do.
    `severity` is 'error' (the hand-in would be rejected) or 'warning' (reported only)."""

    check: str
    severity: str
    message: str
    file: str | None = None
    line: int | None = None

    def to_json(self) -> dict:
        body = {"check": self.check, "severity": self.severity, "message": self.message}
        if self.file is not None:
            body["file"] = self.file
        if self.line is not None:
            body["line"] = self.line
        return body


@dataclass
class Entry:
    """One entry of a hand-in: its name inside it ('/'-separated), kind and size. `data` is
    filled only for the lab's own files."""

    name: str
    kind: str  # file, dir, symlink, hardlink, device, fifo, other
    size: int
    data: bytes | None = None


@dataclass
class HandIn:
    path: Path
    form: str  # folder, tar.gz, tar, zip
    sha256: str | None  # of the archive file; None for a folder
    entries: list[Entry] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    top_folder: str | None = None  # the single folder everything was in, stripped

    def files(self) -> dict[str, Entry]:
        return {e.name: e for e in self.entries if e.kind == "file"}

    def write_accepted(self, spec: LabSpec, dest: Path) -> list[str]:
        """Write the lab's files that were read (and README.md where the lab takes one) into
        `dest`, under their lab names; return the names written."""
        found = self.files()
        return write_staged(dest, {name: found[name].data for name in accepted_names(spec)
                                   if name in found and found[name].data is not None})


def write_staged(dest: Path, files: dict[str, bytes]) -> list[str]:
    """Write a hand-in's files, read as data, into the grader's staging folder `dest` under
    their lab names, readable by the sandbox's user; return the names written. Every staged
    hand-in (an archive's or folder's accepted files, a student's folder of lab files) is
    written here, so what the build sees never depends on how it was handed in."""
    dest.mkdir(parents=True, exist_ok=True)
    dest.chmod(0o755)  # the sandbox user reads it
    for name, data in files.items():
        (dest / name).write_bytes(data)
        (dest / name).chmod(0o644)
    return list(files)


def read_plain_file(path: Path, limit: int) -> bytes:
    """Read one file of a student's folder without following a symlink (and without hanging
    on a FIFO), refusing anything that is not a plain file or is over `limit` bytes."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as err:
        if path.is_symlink():
            raise SubmissionError(f"{path} is a symbolic link. Hand in the file itself, "
                                  "not a link to it.") from None
        raise SubmissionError(f"{path} cannot be read ({err.strerror}).") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise SubmissionError(f"{path} is not a plain file. Hand in the source file itself.")
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise SubmissionError(f"{path} is larger than the lab's limit of {limit} bytes. "
                              "Hand in the source only (no data, no generated code).")
    return data


class IntakeLimit(Exception):
    """A limit on the hand-in's size was reached; reading stops there."""


def manifest_of(hand_in: HandIn) -> dict | None:
    """The manifest `cudalab pack` put in the hand-in, or None when there is none that reads.
    What it says is only ever data: checked against the files, compared with who handed it in."""
    entry = hand_in.files().get(MANIFEST)
    if entry is None or entry.data is None:
        return None
    try:
        data = json.loads(entry.data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("schema") == MANIFEST_SCHEMA else None


def other_lab_finding(hand_in: HandIn, spec: LabSpec) -> Finding | None:
    """When the hand-in's manifest says it was packed for another lab: the sentence that says
    so (what the student most needs to hear when the lab's files are not there)."""
    said = (manifest_of(hand_in) or {}).get("lab")
    if said is None or said == spec.name:
        return None
    return Finding("files", "error", f"{MANIFEST} says this hand-in is for the lab '{_shown(str(said))}', but it "
                   f"is being checked as {spec.name}. Pack it again for the right lab.", MANIFEST)


def accepted_names(spec: LabSpec) -> tuple[str, ...]:
    return spec.files + ((README,) if spec.accepts_readme else ())


def _limit_for(spec: LabSpec, config: Config, name: str) -> int:
    return spec.max_file_bytes if name in spec.files else config.handin_max_file_bytes


# --- names, as data -------------------------------------------------------------------------

def _shown(name: str) -> str:
    """A name as it may be printed: control characters and odd bytes escaped."""
    return ascii(name)[1:-1] if any(unicodedata.category(c)[0] == "C" for c in name) else name


def name_problem(raw: str) -> str | None:
    """Why an entry name cannot be taken as a plain relative path, or None when it can."""
    if not raw:
        return "has an empty name"
    if "\x00" in raw or any(unicodedata.category(c) in ("Cc", "Cf") for c in raw):
        return "has a control character in its name"
    if any("\udc80" <= c <= "\udcff" for c in raw):
        return "has a name that is not valid UTF-8"
    if "\\" in raw:
        return "has a backslash in its name (a Windows path?)"
    if raw.startswith("/") or (len(raw) > 1 and raw[1] == ":"):
        return "is an absolute path"
    parts = [p for p in raw.split("/") if p not in ("", ".")]
    if ".." in parts:
        return "has '..' in its path (it would land outside the hand-in)"
    if not parts:
        return "has an empty name"
    if any(len(p.encode("utf-8", "surrogateescape")) > _MAX_NAME_BYTES for p in parts):
        return f"has a name part longer than {_MAX_NAME_BYTES} bytes"
    if len(parts) > _MAX_DEPTH:
        return f"is nested more than {_MAX_DEPTH} folders deep"
    return None


def _normal(raw: str) -> str:
    return "/".join(p for p in raw.split("/") if p not in ("", "."))


# --- reading each form ------------------------------------------------------------------

class _Reader:
    """Collects entries under the limits: how many, how big each, how big in all."""

    def __init__(self, spec: LabSpec, config: Config, hand_in: HandIn):
        self.spec, self.config, self.hand_in = spec, config, hand_in
        self.total = self.offered = 0
        self.wanted = set(accepted_names(spec)) | {MANIFEST}
        self.kinds: dict[str, str] = {}  # name -> kind of every entry taken, to see a name come twice

    def finding(self, message: str, name: str | None = None, severity: str = "error") -> None:
        self.hand_in.findings.append(Finding("intake", severity, message, file=name))

    def add(self, raw: str, kind: str, size: int, read=None) -> None:
        """Take one entry; `read(limit)` returns up to limit+1 bytes of a file's contents."""
        self.offered += 1  # refused entries count too, or a million bad names would be a million findings
        if self.offered > self.config.handin_max_entries:
            raise IntakeLimit(f"The hand-in has more than {self.config.handin_max_entries} entries; "
                              "reading stopped there. Hand in only the lab's files.")
        problem = name_problem(raw)
        if problem is not None:
            self.finding(f"An entry {problem}: '{_shown(raw)}'. It was not unpacked; hand in plain "
                         "files with plain relative names.", _shown(raw))
            return
        name = _normal(raw)
        earlier = self.kinds.get(name)
        if earlier is not None and not (kind == earlier == "dir"):
            # Which copy a tool unpacks (the first, the last) is its own choice: what one tool
            # checked need not be what another builds. The hand-in is refused.
            self.finding(f"The archive holds two entries named {name}. Which one counts would depend on "
                         "the tool that unpacks it, so the hand-in cannot be taken; make the archive again "
                         "with one copy of each file (`cudalab pack` does).", name)
            return
        self.kinds[name] = kind
        if kind == "symlink":
            self.finding(f"{name} is a symbolic link. Links are not accepted: hand in the file itself.", name)
        elif kind == "hardlink":
            self.finding(f"{name} is a hard link inside the archive. Links are not accepted: hand in "
                         "the file itself.", name)
        elif kind in ("device", "fifo", "other"):
            self.finding(f"{name} is a {'device file' if kind == 'device' else 'special file'}, not a "
                         "plain file. Hand in source files only.", name)
        entry = Entry(name, kind, size)
        if kind == "file" and read is not None:
            base = PurePosixPath(name).name
            limit = _limit_for(self.spec, self.config, base)
            if size > limit:
                self.finding(f"{name} is {size} bytes, over the limit of {limit} bytes for "
                             f"{'a lab file' if base in self.spec.files else 'any file'}. Hand in "
                             "the source only (no data, no build outputs).", name)
            else:
                if base in self.wanted or self._may_be_wanted(name):
                    data = read(min(limit, self.config.handin_max_total_bytes - self.total))
                    self.total += len(data)
                    if len(data) > limit:
                        self.finding(f"{name} unpacks to more than {limit} bytes, over the limit "
                                     "for a lab file. Hand in the source only.", name)
                    else:
                        entry.data = data
                        entry.size = len(data)
                else:
                    self.total += size
        if self.total > self.config.handin_max_total_bytes:
            raise IntakeLimit(f"The hand-in unpacks to more than {self.config.handin_max_total_bytes} "
                              "bytes; reading stopped there (an archive bomb, or data that does not "
                              "belong in a hand-in).")
        self.hand_in.entries.append(entry)

    def _may_be_wanted(self, name: str) -> bool:
        """A file one folder down whose base name the lab takes (the folder may be stripped)."""
        return name.count("/") == 1 and PurePosixPath(name).name in self.wanted


def _capped(handle, limit: int) -> bytes:
    """Up to limit+1 bytes from `handle`, read in chunks (a size a header claims is not trusted)."""
    out = bytearray()
    while len(out) <= limit:
        chunk = handle.read(min(_READ_CHUNK, limit + 1 - len(out)))
        if not chunk:
            break
        out += chunk
    return bytes(out)


def _listing(path: Path, limit: int) -> list[str]:
    """The names in a folder, sorted; IntakeLimit past `limit` (a folder of millions of names
    is never read whole)."""
    names = []
    with os.scandir(path) as entries:
        for entry in entries:
            if len(names) >= limit:
                raise IntakeLimit(f"The folder {path.name} holds more than {limit} entries; reading "
                                  "stopped there. Hand in only the lab's files.")
            names.append(entry.name)
    return sorted(names)


TOP_LEVEL_LISTED = 1000  # names of a student's folder looked at for near misses and what pack leaves out


def top_level(folder: Path, limit: int = TOP_LEVEL_LISTED) -> HandIn:
    """The entries at the top of a folder, by name and kind, with no contents read and
    nothing below followed: what `pack` and a build need to name what is there (a .git/ of
    thousands of files costs one entry). Past `limit` names the rest are not listed."""
    hand_in = HandIn(Path(folder), "folder", None)
    with os.scandir(folder) as entries:
        for entry in entries:
            if len(hand_in.entries) >= limit:
                break
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            hand_in.entries.append(Entry(entry.name + ("/" if stat.S_ISDIR(st.st_mode) else ""),
                                         _kind(st.st_mode), st.st_size))
    hand_in.entries.sort(key=lambda e: e.name)
    return hand_in


def _kind(mode: int) -> str:
    return ("dir" if stat.S_ISDIR(mode) else "file" if stat.S_ISREG(mode) else "symlink" if stat.S_ISLNK(mode)
            else "device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "fifo" if stat.S_ISFIFO(mode)
            else "other")


def _read_folder(folder: Path, reader: _Reader) -> None:
    def walk(path: Path, prefix: str, depth: int) -> None:
        try:
            names = _listing(path, reader.config.handin_max_entries)
        except OSError as err:
            reader.finding(f"The folder {prefix or path} cannot be read ({err.strerror}).")
            return
        for name in names:
            full = path / name
            rel = f"{prefix}{name}"
            try:
                st = os.lstat(full)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                reader.add(rel + "/", "dir", 0)
                if depth < _MAX_DEPTH:
                    walk(full, rel + "/", depth + 1)
                continue
            kind = _kind(st.st_mode)

            def read(limit: int, full=full) -> bytes:
                fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
                with os.fdopen(fd, "rb") as handle:
                    if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                        return b""
                    return _capped(handle, limit)
            reader.add(rel, kind, st.st_size, read if kind == "file" else None)
    walk(folder, "", 0)


class _CountingStream(io.RawIOBase):
    """A decompressed stream that stops once more than `limit` bytes have come out of it."""

    def __init__(self, inner, limit: int):
        self.inner, self.limit, self.count = inner, limit, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        data = self.inner.read(len(buffer))
        self.count += len(data)
        if self.count > self.limit:
            raise IntakeLimit(f"The archive unpacks to more than {self.limit} bytes; reading stopped "
                              "there (an archive bomb, or data that does not belong in a hand-in).")
        buffer[:len(data)] = data
        return len(data)


def _read_tar(path: Path, compressed: bool, reader: _Reader) -> None:
    # Headers and padding count too: twice the content limit bounds the whole stream.
    with open(path, "rb") as raw:
        inner = gzip.GzipFile(fileobj=raw) if compressed else raw
        stream = io.BufferedReader(_CountingStream(inner, 2 * reader.config.handin_max_total_bytes + (1 << 20)))
        with tarfile.open(fileobj=stream, mode="r|") as archive:
            for member in archive:
                kind = ("file" if member.isreg() else "dir" if member.isdir() else "symlink" if member.issym()
                        else "hardlink" if member.islnk() else "device" if member.ischr() or member.isblk()
                        else "fifo" if member.isfifo() else "other")

                def read(limit: int, member=member) -> bytes:
                    handle = archive.extractfile(member)
                    return _capped(handle, limit) if handle is not None else b""
                reader.add(member.name + ("/" if kind == "dir" else ""), kind, max(0, member.size),
                           read if kind == "file" else None)


def _zip_kind(info: zipfile.ZipInfo) -> str:
    mode = info.external_attr >> 16
    if info.is_dir():
        return "dir"
    if info.create_system == 3 and mode:  # made on Unix: the mode says what it is
        if stat.S_ISLNK(mode):
            return "symlink"
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
            return "device"
        if stat.S_ISFIFO(mode):
            return "fifo"
        if not stat.S_ISREG(mode) and stat.S_IFMT(mode):
            return "other"
    return "file"


def _read_zip(path: Path, reader: _Reader) -> None:
    with zipfile.ZipFile(path) as archive:
        for info in archive.infolist():
            kind = _zip_kind(info)
            if kind == "file" and info.flag_bits & 0x1:
                reader.finding(f"{_normal(info.filename)} is encrypted. Hand in an archive without a "
                               "password.", _normal(info.filename))
                continue

            def read(limit: int, info=info) -> bytes:
                with archive.open(info) as handle:
                    return _capped(handle, limit)
            reader.add(info.filename, kind, max(0, info.file_size), read if kind == "file" else None)


def _form(path: Path) -> str | None:
    name = path.name.lower()
    if name.endswith((".tar.gz", ".tgz")):
        return "tar.gz"
    if name.endswith(".tar"):
        return "tar"
    if name.endswith(".zip"):
        return "zip"
    try:
        with open(path, "rb") as handle:
            head = handle.read(262)
    except OSError:
        return None
    if head.startswith(b"\x1f\x8b"):
        return "tar.gz"
    if head.startswith(b"PK\x03\x04") or head.startswith(b"PK\x05\x06"):
        return "zip"
    if head[257:262] == b"ustar":
        return "tar"
    return None


def _strip_top_folder(hand_in: HandIn, spec: LabSpec) -> None:
    """Students often pack the folder rather than its files: when everything sits in one
    folder and the top level holds no file, look inside that folder instead."""
    real = [e for e in hand_in.entries if not _is_litter(e.name)]
    tops = {e.name.split("/", 1)[0] for e in real}
    if len(tops) != 1 or any("/" not in e.name.rstrip("/") and e.kind != "dir" for e in real):
        return
    top = tops.pop()
    if top in accepted_names(spec):
        return
    hand_in.top_folder = top
    kept = []
    for entry in hand_in.entries:
        if entry.name.rstrip("/") == top:
            continue
        if entry.name.startswith(top + "/"):
            entry.name = entry.name[len(top) + 1:]
        kept.append(entry)
    hand_in.entries = kept


def _is_litter(name: str) -> bool:
    parts = name.rstrip("/").split("/")
    return parts[0] in _OS_LITTER or parts[-1] in _OS_LITTER or parts[-1].startswith("._")


def read_hand_in(path: Path, spec: LabSpec, config: Config) -> HandIn:
    """Read a hand-in (folder or archive) as data; never raises for anything in it."""
    path = Path(path)
    if path.is_dir() and not path.is_symlink():
        hand_in = HandIn(path, "folder", None)
    elif not path.exists():
        hand_in = HandIn(path, "missing", None)
        hand_in.findings.append(Finding("intake", "error", f"{path} does not exist. Give the folder or "
                                        "archive (.tar.gz, .tgz or .zip) that holds your hand-in."))
        return hand_in
    else:
        form = _form(path) if path.is_file() else None
        hand_in = HandIn(path, form or "unknown", sha256_file(path) if path.is_file() else None)
        if form is None:
            hand_in.findings.append(Finding("intake", "error", f"{path.name} is neither a folder nor a "
                                            ".tar.gz, .tgz or .zip archive. Hand in one of those "
                                            "(`cudalab pack` makes the .tar.gz)."))
            return hand_in
        if path.stat().st_size > config.handin_max_archive_bytes:
            hand_in.findings.append(Finding("intake", "error", f"{path.name} is {path.stat().st_size} "
                                            f"bytes, over the limit of {config.handin_max_archive_bytes} "
                                            "for a hand-in. Hand in the source files only."))
            return hand_in
    reader = _Reader(spec, config, hand_in)
    try:
        if hand_in.form == "folder":
            _read_folder(path, reader)
        elif hand_in.form == "zip":
            _read_zip(path, reader)
        else:
            _read_tar(path, hand_in.form == "tar.gz", reader)
    except IntakeLimit as stop:
        reader.finding(str(stop))
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, gzip.BadGzipFile, zlib.error,
            NotImplementedError, RuntimeError, ValueError, OSError) as err:
        reader.finding(f"{path.name} is not a readable {hand_in.form} archive ({_one_line(err)}). "
                       "Make it again, for instance with `cudalab pack`.")
    _strip_top_folder(hand_in, spec)
    return hand_in


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split())[:200] or type(err).__name__


# --- the hand-in's hash -------------------------------------------------------------------

@dataclass(frozen=True)
class Digest:
    """A hand-in's sha256 and, where the hand-in is over the intake's caps and the hash covers
    only the part read before them, the sentence that says so."""
    sha256: str
    over: str | None = None


def digest(path: Path, config: Config) -> Digest:
    """The sha256 of an archive's bytes, or of a folder's names and contents (a link is hashed
    as its target's text, never followed), read within the intake's caps: at most
    handin_max_archive_bytes of an archive; at most handin_max_entries entries,
    handin_max_total_bytes of contents and _MAX_DEPTH folders of a folder. Past a cap it stops,
    so a hand-in of millions of files or gigabytes costs no more than one within them."""
    path = Path(path)
    if path.is_dir() and not path.is_symlink():
        return _folder_digest(path, config)
    cap = config.handin_max_archive_bytes
    hashed = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        hashed.update(_capped(handle, cap)[:cap])
    if size <= cap:
        return Digest(hashed.hexdigest())
    hashed.update(f"\0over\0{size}".encode())
    return Digest(hashed.hexdigest(), f"{path.name} is {size} bytes, over the limit of {cap} for a hand-in; its "
                                      f"hash covers the first {cap} bytes and its size.")


def _folder_digest(folder: Path, config: Config) -> Digest:
    hashed = hashlib.sha256()
    entries = total = 0
    pending = [(folder, "", 0)]  # folders still to read, the next one last
    over = None
    while pending and over is None:
        path, prefix, depth = pending.pop()
        try:
            names = _listing(path, config.handin_max_entries)
        except IntakeLimit:
            over = f"The folder {prefix.rstrip('/') or path.name} holds more than {config.handin_max_entries} entries"
            break
        except OSError:
            continue  # gone or unreadable: the intake says so when it reads the hand-in
        folders = []
        for name in names:
            entries += 1
            if entries > config.handin_max_entries:
                over = f"The hand-in holds more than {config.handin_max_entries} entries"
                break
            full, relative = path / name, f"{prefix}{name}"
            try:
                mode = os.lstat(full).st_mode
            except OSError:
                continue
            if stat.S_ISDIR(mode):
                folders.append((full, relative + "/", depth + 1))
                continue
            if stat.S_ISLNK(mode):
                content = f"link:{os.readlink(full)}"
            elif stat.S_ISREG(mode):
                content, size = _file_sha256(full, config.handin_max_total_bytes - total)
                total += size
                if content is None:
                    over = f"The hand-in's files hold more than {config.handin_max_total_bytes} bytes"
                    break
            else:
                content = "other"
            hashed.update(f"{relative}\0{content}\n".encode("utf-8", "surrogateescape"))
        if over is None and folders and depth >= _MAX_DEPTH:
            over = f"The hand-in has folders nested more than {_MAX_DEPTH} deep"
        pending.extend(reversed(folders))
    if over is None:
        return Digest(hashed.hexdigest())
    sentence = f"{over}; its hash covers what was read before that, and links were not followed."
    hashed.update(f"\0over\0{sentence}".encode())
    return Digest(hashed.hexdigest(), sentence)


def _file_sha256(path: Path, limit: int) -> tuple[str | None, int]:
    """(sha256, size) of a regular file that is not a link, or (None, size) when it holds more
    than `limit` bytes ('other' for what is no longer a regular file)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return "other", 0
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return "other", 0
        data = _capped(handle, max(limit, 0))
    if len(data) > limit:
        return None, len(data)
    return hashlib.sha256(data).hexdigest(), len(data)


# --- what the lab takes -------------------------------------------------------------------

def _takes(spec: LabSpec) -> str:
    return ", ".join(accepted_names(spec)) if spec.accepts_readme else ", ".join(spec.files)


def required_file_findings(hand_in: HandIn, spec: LabSpec) -> tuple[list[Finding], set[str]]:
    """Why each of the lab's files that is not at the top of the hand-in is missing, as
    `check` says it: the file one folder down, or the near miss it was meant to be (did you
    mean vector_add.cu?), or missing; and the names those sentences explain."""
    findings: list[Finding] = []
    entries = [e for e in hand_in.entries if e.kind != "dir"]
    top_files = {e.name: e for e in entries if "/" not in e.name}
    takes = _takes(spec)
    explained: set[str] = set()
    for required in spec.files:
        entry = top_files.get(required)
        if entry is not None and entry.kind == "file":
            continue
        if entry is not None:
            continue  # a link or special file under that name: the intake already said so
        nested = [e.name for e in entries if PurePosixPath(e.name).name == required]
        if nested:
            findings.append(Finding("files", "error", f"{required} is missing at the top of the hand-in; "
                                    f"it is at {nested[0]}. Put {required} itself at the top "
                                    "(no folders).", nested[0]))
            explained.add(nested[0])
            continue
        others = [e.name for e in entries if e.name not in spec.files and not _is_litter(e.name)]
        guess = near(required, [PurePosixPath(o).name for o in others])
        if guess is not None:
            where = next(o for o in others if PurePosixPath(o).name == guess)
            findings.append(Finding("files", "error", f"{where}: did you mean {required}? The {spec.name} "
                                    f"lab needs a file called exactly {required}; rename it.", where))
            explained.add(where)
        else:
            findings.append(Finding("files", "error", f"{required} is missing. The {spec.name} lab's "
                                    f"hand-in is exactly: {takes}."))
    return findings, explained


def missing_file_problems(hand_in: HandIn, spec: LabSpec) -> list[str]:
    """What keeps the lab's files from being built, in `check`'s words: the intake's errors,
    and for each missing file why (led by the manifest's other lab, when it names one). The
    manifest only explains; which lab a hand-in is graded as is never its own say."""
    problems = [f.message for f in hand_in.findings if f.severity == "error"]
    missing, _ = required_file_findings(hand_in, spec)
    if missing:
        other_lab = other_lab_finding(hand_in, spec)
        problems += ([other_lab.message] if other_lab else []) + [f.message for f in missing]
    return problems


def file_findings(hand_in: HandIn, spec: LabSpec) -> list[Finding]:
    """Required files present, nothing else; near misses named."""
    findings, explained = required_file_findings(hand_in, spec)
    entries = [e for e in hand_in.entries if e.kind != "dir"]
    takes = _takes(spec)
    for entry in entries:
        if entry.name in explained or (entry.name in spec.files and "/" not in entry.name):
            continue
        if _is_litter(entry.name):
            findings.append(Finding("files", "warning", f"{entry.name} was added by the operating system "
                                    "when the archive was made; it is ignored (`cudalab pack` leaves it "
                                    "out).", entry.name))
            continue
        base = PurePosixPath(entry.name).name
        if entry.name == README:
            if not spec.accepts_readme:
                findings.append(Finding("files", "error", f"{README}: the {spec.name} lab takes no written "
                                        f"answers, so no {README}; remove it (the hand-in is exactly: "
                                        f"{takes}).", README))
            continue
        if spec.accepts_readme and near(base, [README]) is not None and "/" not in entry.name:
            findings.append(Finding("files", "error", f"{entry.name}: did you mean {README}? Written "
                                    f"answers go in a file called exactly {README}.", entry.name))
            continue
        findings.append(Finding("files", "error", f"{entry.name} is not part of the {spec.name} hand-in; "
                                f"remove it (the hand-in is exactly: {takes}).", entry.name))
    return findings + written_answer_findings(hand_in, spec)


WRITTEN_ANSWERS_MAX_BYTES = 64 * 1024  # what a grade keeps of README.md: pages of prose, not a dump


def written_answers(hand_in: HandIn, spec: LabSpec) -> dict | None:
    """What a grade keeps for the instructor where the lab asks written questions: the
    questions, and README.md's text as the student wrote it (None when there is none), cut
    at WRITTEN_ANSWERS_MAX_BYTES. Only ever shown as text, never rendered."""
    if not spec.questions:
        return None
    entry = hand_in.files().get(README)
    text = None
    if entry is not None and entry.data is not None:
        text = entry.data[:WRITTEN_ANSWERS_MAX_BYTES].decode("utf-8", errors="replace")
        if len(entry.data) > WRITTEN_ANSWERS_MAX_BYTES:
            text += f"\n[cut at {WRITTEN_ANSWERS_MAX_BYTES // 1024} KiB]"
    return {"readme": text,
            "questions": [{"id": q.id, "text": q.text, "points": q.points} for q in spec.questions]}


def written_answer_findings(hand_in: HandIn, spec: LabSpec) -> list[Finding]:
    """A warning (never a rejection) when the lab asks written questions and README.md, where
    they are answered, is missing or empty: without it they earn no points."""
    if not spec.questions:
        return []
    entry = hand_in.files().get(README)
    asked = (f"the {spec.name} lab asks {len(spec.questions)} written question"
             f"{'s' if len(spec.questions) > 1 else ''} (the handout's 'Written answers'), answered in {README}")
    if entry is None:
        return [Finding("files", "warning", f"{README} is missing: {asked}; without it they earn no points.")]
    if entry.data is not None and not entry.data.strip():
        return [Finding("files", "warning", f"{README} is empty: {asked}.", README)]
    return []
