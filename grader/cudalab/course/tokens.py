"""The course service's secrets: a student's token, the instructor's and the course key.

A token reads `cl1_<lookup>_<secret>`. The lookup (12 URL-safe characters) is kept in clear
and unique, so that the service finds the one row to check without trying every hash; the
secret (32 URL-safe random characters, 192 bits) is kept only as an argon2id hash
(argon2-cffi's PasswordHasher, its recommended parameters), so that a copy of the database
gives nobody a working token. Verifying costs one argon2 hash whatever the token; the
service may remember tokens it already verified (by their sha256) to keep a rush fast.
"""
from __future__ import annotations

import csv
import io
import os
import re
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError
from sqlalchemy import select

from ..errors import UsageError
from . import store
from .spec import CourseSpec

PREFIX = "cl1"
LOOKUP_LENGTH = 12
SECRET_LENGTH = 32
_URL_SAFE = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-"  # no '_': it separates the parts
_TOKEN = re.compile(rf"{PREFIX}_([A-Za-z0-9-]{{{LOOKUP_LENGTH}}})_([A-Za-z0-9-]{{{SECRET_LENGTH}}})")
_HASHER = PasswordHasher()


def _random_text(length: int) -> str:
    return "".join(secrets.choice(_URL_SAFE) for _ in range(length))


def issue() -> tuple[str, str, str]:
    """A new token: (the token, its lookup, the argon2 hash of its secret)."""
    lookup, secret = _random_text(LOOKUP_LENGTH), _random_text(SECRET_LENGTH)
    return f"{PREFIX}_{lookup}_{secret}", lookup, _HASHER.hash(secret)


def split(token: str) -> tuple[str, str] | None:
    """(lookup, secret) of a token, or None when it is not one (any other text, whitespace
    around it included: a token is compared as it was issued)."""
    if not isinstance(token, str):
        return None
    match = _TOKEN.fullmatch(token)
    return (match[1], match[2]) if match else None


def verify(hash: str, secret: str) -> bool:
    """Whether `secret` is the one `hash` was made from; False for a damaged hash too."""
    try:
        return _HASHER.verify(hash, secret)
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return False


# --- a course's tokens (`cudalab course tokens`) ------------------------------------------------

COURSE_KEY_FILE = "course-key"   # in the course folder, mode 0600: what a Gradescope bundle carries
INSTRUCTOR_ROW = "(instructor)"  # the tokens list's name for the instructor's own token


def _write_private(path: Path, text: str) -> Path:
    """`text` in a file beside `path`, readable by its owner only from its first byte and
    fsynced; returns that file, which the caller renames to `path` once it is sure."""
    temp = path.with_name(f".{path.name}.partial")
    temp.unlink(missing_ok=True)
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    return temp


@dataclass
class Issued:
    """What `cudalab course tokens` did: the tokens it made and where it wrote them."""
    rows: list[tuple[str, str, str, str]]   # (student id, name, email, token); the instructor's id is ""
    tokens_file: Path | None                # None: nobody needed a token
    course_key_file: Path | None            # None: the course key was kept
    students: int                           # on the roster (each now in the database)


def _tokens_file(folder: Path, at) -> Path:
    stem = f"tokens-{at.strftime('%Y%m%dT%H%M%SZ')}"
    path, number = folder / f"{stem}.csv", 1
    while path.exists():
        number += 1
        path = folder / f"{stem}-{number}.csv"
    return path


def issue_course_tokens(spec: CourseSpec, sessions, reissue: list[str] | tuple[str, ...] = (),
                        reissue_instructor: bool = False, reissue_course_key: bool = False) -> Issued:
    """A token for each roster student who has none (and for those in `reissue`, replacing
    theirs), the instructor's token and the course key the first time (or when asked). The
    database keeps only hashes; the tokens go to DIR/tokens-<UTC time>.csv and the course key
    to DIR/course-key, both mode 0600, written before the database commits and put in place
    after, so that no token the database accepts is one nobody was given."""
    roster = spec.roster()
    on_roster = {person.id for person in roster}
    unknown = [student for student in reissue if student not in on_roster]
    if unknown:
        raise UsageError(f"--reissue names {', '.join(map(repr, unknown))}, nobody on the roster "
                         f"{spec.roster_file}; give roster ids.")
    rows: list[tuple[str, str, str, str]] = []
    course_key = None
    at = store.now()
    placed: list[tuple[Path, Path]] = []
    try:
        with sessions() as session, session.begin():
            known = {row.id: row for row in session.scalars(select(store.Student))}
            for person in roster:
                row = known.get(person.id)
                if row is None:
                    row = store.Student(id=person.id)
                    session.add(row)
                row.name, row.lms_id, row.email = person.name, person.lms_id, person.email  # the roster decides
                if row.token_hash is None or person.id in reissue:
                    token, lookup, hashed = issue()
                    row.token_hash, row.token_lookup = hashed, lookup
                    rows.append((person.id, person.name, person.email, token))
            for kind, asked in ((store.SecretKind.INSTRUCTOR, reissue_instructor),
                                (store.SecretKind.COURSE_KEY, reissue_course_key)):
                secret = session.get(store.Secret, kind)
                if secret is not None and not asked:
                    continue
                token, lookup, hashed = issue()
                if secret is None:
                    session.add(store.Secret(kind=kind, lookup=lookup, hash=hashed))
                else:
                    secret.lookup, secret.hash, secret.created_at = lookup, hashed, at
                if kind is store.SecretKind.INSTRUCTOR:
                    rows.append(("", INSTRUCTOR_ROW, "", token))
                else:
                    course_key = token
            if rows:
                text = io.StringIO()
                writer = csv.writer(text)
                writer.writerow(["id", "name", "email", "token"])
                writer.writerows(rows)
                final = _tokens_file(spec.folder, at)
                placed.append((_write_private(final, text.getvalue()), final))
            if course_key is not None:
                final = spec.folder / COURSE_KEY_FILE
                placed.append((_write_private(final, course_key + "\n"), final))
        # committed: the tokens are live, so their files take their places
        for temp, final in placed:
            temp.replace(final)
    finally:
        for temp, _ in placed:
            temp.unlink(missing_ok=True)
    files = {final.name: final for _, final in placed}
    return Issued(rows, next((f for n, f in files.items() if n != COURSE_KEY_FILE), None),
                  files.get(COURSE_KEY_FILE), len(roster))


def read_course_key(course_folder: Path) -> str:
    """The course key `cudalab course tokens` kept in the course folder."""
    path = Path(course_folder) / COURSE_KEY_FILE
    try:
        key = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        raise UsageError(f"There is no course key in {course_folder} ({path}): run `cudalab course tokens "
                         f"{course_folder}` first, which makes it.") from None
    except OSError as err:
        raise UsageError(f"The course key {path} cannot be read ({err}).") from None
    if os.stat(path).st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise UsageError(f"The course key {path} can be read by others than its owner: run `chmod 600 {path}`, "
                         f"and reissue it (`cudalab course tokens {course_folder} --reissue-course-key`) if "
                         "someone may have read it.")
    return key


