"""Finding a lab by name and the binaries the official build makes for it."""
from __future__ import annotations

import argparse
import secrets
from pathlib import Path, PurePosixPath

from . import labspec
from ..config import Config
from ..errors import UnknownLabError, UsageError
from ..names import near


def available_labs(root: Path) -> list[str]:
    labs = root / "labs"
    return sorted(p.parent.name for p in labs.glob("*/lab.toml")) if labs.is_dir() else []


def load_lab(config: Config, name: str) -> labspec.LabSpec:
    path = config.root / "labs" / name / "lab.toml"
    if not path.is_file():
        available = available_labs(config.root)
        meant = near(name, available)
        raise UnknownLabError(f"There is no lab called '{name}' (no {path}). "
                              + (f"Did you mean {meant}? " if meant else "")
                              + f"Labs in this repository: {', '.join(available) or 'none'}.")
    try:
        return labspec.load(path)
    except labspec.LabSpecError as err:
        raise UsageError(f"The lab '{name}' is misconfigured: {err}") from None


def official_binary(config: Config, lab: str, implementation: str) -> Path:
    """`implementation` is 'solution', 'starter', 'checker' or 'ladder_<stem>'."""
    return config.bin_dir / f"{lab}_{implementation}"


def ladder_stems(spec: labspec.LabSpec) -> dict[str, str]:
    """Ladder stem -> implementation name. The rung built from the solution file is the solution."""
    stems = {}
    for rung in spec.ladder:
        stem = PurePosixPath(rung.source).stem
        stems[stem] = "solution" if rung.source in spec.files else f"ladder_{stem}"
    return stems


def scoring_reference(spec: labspec.LabSpec) -> str:
    """The implementation students are timed against: the solution, or the rung that
    [scoring] reference names (a course target slower than the best rung)."""
    if not spec.scoring.reference:
        return "solution"
    return ladder_stems(spec)[PurePosixPath(spec.scoring.reference).stem]


def add_generated_file_arguments(parser, what: str, every: str | None = None) -> None:
    """The arguments of a verb that writes a file generated from a lab (`starter`, `handout`);
    `every`: the word that names every lab at once, where the verb takes one."""
    parser.add_argument("lab", help=f"the lab whose {what} to generate"
                        + (f", or '{every}' for every lab" if every else ""))
    parser.add_argument("--check", action="store_true",
                        help=f"do not write: exit 1 and print a diff when the {what} is out of date")


MAX_SEED = 2 ** 63 - 1
# A student's own `cudalab run` repeats the same inputs until told otherwise (--seed), so a
# failure they are fixing stays the same failure.
STUDENT_RUN_SEED = 1


def choose_seed(given: int | None) -> int:
    """The seed of a grade, a hand-in check's runs, a ladder or a calibration: the one given
    (--seed), else one drawn now, in secret, from 0 to MAX_SEED, so that no submission can
    be written for the inputs it will meet. (Each timed sample's inputs get a seed of their
    own, drawn by timing.Auditor.session when the sample is taken.)"""
    return secrets.randbits(63) if given is None else given


def seed_argument(text: str) -> int:
    """argparse type of --seed: a whole number from 0 to 2^63-1, told as such when it is not."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number; a seed is a number from 0 "
                                         f"to {MAX_SEED}") from None
    if not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"{value} is out of range; a seed is a number from 0 to {MAX_SEED}")
    return value


def positive_int(text: str) -> int:
    """argparse type of a count (samples, warm-ups): a whole number from 1 up."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is too small: give 1 or more")
    return value
