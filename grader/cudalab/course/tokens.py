"""The course service's secrets: a student's token, the instructor's and the course key.

A token reads `cl1_<lookup>_<secret>`. The lookup (12 URL-safe characters) is kept in clear
and unique, so that the service finds the one row to check without trying every hash; the
secret (32 URL-safe random characters, 192 bits) is kept only as an argon2id hash
(argon2-cffi's PasswordHasher, its recommended parameters), so that a copy of the database
gives nobody a working token. Verifying costs one argon2 hash whatever the token; the
service may remember tokens it already verified (by their sha256) to keep a rush fast.
"""
from __future__ import annotations

import re
import secrets

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

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
