"""What a student bundle is, for the pieces that behave differently in one.

`cudalab export` writes a student bundle: the course's repository without its solutions,
ladders, tests or stored outputs (grader/cudalab/commands/export.py says what it holds). Its root
carries MARKER, `cudalab-bundle.json` (schema cudalab.bundle/1: the labs, the cudalab
version, when it was made). Three things read it:

* CMake (`cudalab_read_bundle_marker`): CUDALAB_STUDENT_BUNDLE defaults to ON and the
  labs built are the bundle's labs (the course's tree finds its own under labs/), so each
  lab builds its harness, checker, starter and SDK, and no solution, ladder rung or test.
* The CLI (cli.py): a grader package that lives in a bundle offers STUDENT_VERBS only, and
  says in a sentence why another verb is not there.
* The official build (build.ensure_official): a bundle's tree needs the checker and the SDK
  only; asking it for the course solution or a ladder rung is told plainly.

The whole grader package travels in the bundle (its modules share code, and none of it
is secret: the export's leak scan reads it too); what a student can reach is what the CLI
offers.
"""
from __future__ import annotations

from pathlib import Path

MARKER = "cudalab-bundle.json"
SCHEMA = "cudalab.bundle/1"
STUDENT_VERBS = ("new", "build", "run", "check", "pack", "submit", "handout", "doctor")
# The official binaries a bundle's build makes for each lab.
BUNDLE_IMPLEMENTATIONS = ("starter", "checker")

# Why a course-only verb is missing from a bundle, in the words a student reads.
_WHY_NOT = {
    "grade": "a grade times your code against the course's reference solution, which only the "
             "course's own install has. `cudalab run LAB FOLDER` judges every case here, "
             "`cudalab run LAB FOLDER --bench` times it, and `cudalab check` says whether a "
             "hand-in would be accepted",
    "ladder": "the ladder times the course's own variants of each lab, which a bundle does not hold",
    "starter": "the starter is generated from the course's solution, which a bundle does not hold; "
               "`cudalab new LAB` copies the starter that is here",
    "batch": "batch grading times every hand-in against the course's reference solution, in the course's "
             "own install",
    "calibrate": "calibration times the course's reference solution, which a bundle does not hold",
}


def _package_root() -> Path:
    """The folder that holds grader/ when this package is used where it lies (a checkout,
    a bundle, or an editable install of either)."""
    return Path(__file__).resolve().parents[3]


def is_student_bundle(root: Path) -> bool:
    return (Path(root) / MARKER).is_file()


def package_in_bundle() -> bool:
    """Whether this grader package is a student bundle's copy."""
    return is_student_bundle(_package_root())


def offered_verbs(verbs: tuple[str, ...]) -> tuple[str, ...]:
    """The verbs the CLI offers: all of them, or in a bundle the student verbs among them."""
    if not package_in_bundle():
        return verbs
    return tuple(verb for verb in verbs if verb in STUDENT_VERBS)


def missing_verb(argv: list[str], verbs: tuple[str, ...]) -> str | None:
    """When this package is a bundle's and `argv` asks for one of `verbs` it does not offer
    (a verb of the course's own grader), the sentence that says why; else None."""
    verb = next((word for word in argv if not word.startswith("-")), None)
    if verb is None or verb not in verbs or verb in offered_verbs(verbs):
        return None
    why = _WHY_NOT.get(verb, "it is one of the course's own tools")
    return (f"`cudalab {verb}` is not part of this student bundle: {why}. "
            f"The commands here: {', '.join(STUDENT_VERBS)}.")


def marker(labs: list[str], version: str, created_at: str) -> dict:
    """The content of MARKER."""
    return {"schema": SCHEMA, "labs": list(labs), "cudalab_version": version, "created_at": created_at,
            "student_verbs": list(STUDENT_VERBS)}

