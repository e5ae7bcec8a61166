"""course/tokens.py: a token's form, its secret kept only as an argon2 hash, and what a
wrong, damaged or malformed one gets."""
from __future__ import annotations

import re

import pytest

from cudalab.course import tokens


def test_issue_makes_a_token_whose_secret_only_the_hash_checks():
    token, lookup, hashed = tokens.issue()
    assert re.fullmatch(r"cl1_[A-Za-z0-9-]{12}_[A-Za-z0-9-]{32}", token)
    found = tokens.split(token)
    assert found is not None and found[0] == lookup
    secret = found[1]
    assert secret not in hashed and hashed.startswith("$argon2id$")
    assert tokens.verify(hashed, secret)
    assert not tokens.verify(hashed, secret[:-1] + ("A" if secret[-1] != "A" else "B"))


def test_tokens_are_unique():
    issued = [tokens.issue() for _ in range(5)]
    assert len({t for t, _, _ in issued}) == 5 and len({lookup for _, lookup, _ in issued}) == 5


@pytest.mark.parametrize("text", [
    "", "cl1", "cl1__", "cl2_AAAAAAAAAAAA_" + "B" * 32, "cl1_AAAAAAAAAAAA_" + "B" * 31,
    "cl1_AAAAAAAAAAA_" + "B" * 33, " cl1_AAAAAAAAAAAA_" + "B" * 32, "cl1_AAAAAAAAAAAA_" + "B" * 32 + "\n",
    "cl1_AAAAAAAAAAAA_" + "B" * 31 + "/", None, 42, "cl1_AAAAAAAAAAAA_" + "é" * 32,
])
def test_split_refuses_anything_but_a_token(text):
    assert tokens.split(text) is None


def test_verify_says_no_to_a_damaged_hash_rather_than_raising():
    assert not tokens.verify("not a hash", "x" * 32)
    assert not tokens.verify("$argon2id$v=19$m=1,t=1,p=1$AAAA$BBBB", "x" * 32)
