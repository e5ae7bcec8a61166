"""Near misses of a name a user typed: the one candidate they most likely meant."""
from __future__ import annotations

import difflib
from pathlib import PurePosixPath


def near(name: str, candidates: list[str]) -> str | None:
    """The candidate `name` most likely stands for: the same but for case, a close spelling,
    or the same stem but for '_' and '-' ('vectoradd.cu' for 'vector_add.cu'); None if none is."""
    lowered = {c.lower(): c for c in candidates}
    if name.lower() in lowered:
        return lowered[name.lower()]
    close = difflib.get_close_matches(name, candidates, n=1, cutoff=0.75)
    if close:
        return close[0]
    stem = PurePosixPath(name).stem.replace("_", "").replace("-", "").lower()
    for candidate in candidates:
        if PurePosixPath(candidate).stem.replace("_", "").replace("-", "").lower() == stem:
            return candidate
    return None
