"""What `cudalab check` does (the verb and its help are commands/check.py): a hand-in's
checks in order (the registry of handin_checks.py), each finding reported, and the receipt
they make.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

from .. import __version__
from ..building import build
from . import handin, handin_checks
from ..lab import labs
from ..outputs import report
from ..config import Config
from ..errors import UsageError
from .handin import manifest_of
from .handin_checks import sha256_of as _sha256
from ..lab.labspec import LabSpec
from ..names import near
from ..isolation.runner import scratch_dir
from ..isolation.trees import remove_tree

SCHEMA = "cudalab.receipt/1"
MANIFEST = handin.MANIFEST


# --- which lab ------------------------------------------------------------------------------

def guess_lab(config: Config, path: Path) -> str | None:
    """The lab a hand-in is for when --lab is not given: its manifest's lab, else the one
    lab whose files it holds."""
    names: set[str] = set()
    known = labs.available_labs(config.root)
    for lab in known:
        spec = labs.load_lab(config, lab)
        hand_in = handin.read_hand_in(path, spec, config)
        manifest = manifest_of(hand_in)
        if manifest and manifest.get("lab") in known:
            return str(manifest["lab"])
        if set(spec.files) <= set(hand_in.files()):
            names.add(lab)
    return names.pop() if len(names) == 1 else None


def lab_file_near_misses(config: Config, path: Path) -> list[str]:
    """For a hand-in no lab could be told for: each of its files whose name is near a lab's
    file ("vectoradd.cu: did you mean vector_add.cu (the vector_add lab)?")."""
    said = []
    for lab in labs.available_labs(config.root):
        spec = labs.load_lab(config, lab)
        present = [name for name in handin.read_hand_in(path, spec, config).files() if "/" not in name]
        for required in spec.files:
            guess = near(required, [name for name in present if name != required])
            if guess is not None and required not in present:
                said.append(f"{guess}: did you mean {required} (the {lab} lab)?")
    return said


# --- the checks -----------------------------------------------------------------------------

class HandInChecking:
    """One run of every registered check (handin_checks.py) on one hand-in, and its receipt."""

    def __init__(self, config: Config, spec: LabSpec, path: Path, *, run: bool = True, seed: int | None = None,
                 not_run_because: str = "--no-run was given"):
        self.config, self.spec, self.path = config, spec, Path(path)
        self.context = handin_checks.CheckContext(config, spec, path=self.path, run_programs=run,
                                                  not_run_because=not_run_because, seed=labs.choose_seed(seed))

    def run(self, tmp: Path) -> None:
        def start_build(staged: Path) -> build.SubmissionBuilder:
            build.ensure_official(self.config, self.spec)
            return build.SubmissionBuilder(self.config, self.spec, staged, tmp / "submission")

        self.context.tmp, self.context.start_build = tmp, start_build
        handin_checks.run_all(self.context)

    def accepted(self) -> bool:
        return handin_checks.accepted(self.context.records)

    def receipt(self) -> dict:
        hand_in, manifest = self.context.hand_in, self.context.manifest
        files = []
        if hand_in is not None:
            for name, entry in sorted(hand_in.files().items()):
                if entry.data is not None and name in handin.accepted_names(self.spec):
                    files.append({"name": name, "bytes": len(entry.data), "sha256": _sha256(entry.data)})
        content = hashlib.sha256("".join(f"{f['name']}\0{f['sha256']}\n" for f in files).encode()).hexdigest()
        student = (manifest or {}).get("student")
        return {
            "schema": SCHEMA,
            "lab": self.spec.name,
            "accepted": self.accepted(),
            "checked_at": report.timestamp(),
            "cudalab_version": __version__,
            "hand_in": {"path": str(self.path), "form": hand_in.form if hand_in else "missing",
                        "sha256": hand_in.sha256 if hand_in else None,
                        "content_sha256": content, "files": files,
                        "student": student if isinstance(student, str) else None,
                        "packed_at": (manifest or {}).get("created_at")},
            "seed": self.context.seed,
            "isolation": self.context.isolation,
            "checks": [self.context.records[name].to_json() for name in handin_checks.names()],
        }


# --- the receipt as text ----------------------------------------------------------------------

_MARK = {"passed": "ok", "failed": "FAILED", "warning": "warning", "skipped": "skipped"}


def render_receipt(receipt: dict) -> str:
    hand_in = receipt["hand_in"]
    lines = [f"cudalab {receipt['cudalab_version']} hand-in receipt",
             f"  lab:        {receipt['lab']}",
             f"  hand-in:    {hand_in['path']} ({hand_in['form']})"]
    if hand_in.get("sha256"):
        lines.append(f"  sha256:     {hand_in['sha256']}")
    lines.append(f"  contents:   {hand_in['content_sha256']} (" +
                 (", ".join(f"{f['name']} {f['bytes']} B" for f in hand_in["files"]) or "no lab files") + ")")
    if hand_in.get("student"):
        lines.append(f"  student:    {hand_in['student']}")
    lines.append(f"  checked at: {receipt['checked_at']}")
    lines.append("")
    for check in receipt["checks"]:
        detail = f" ({check['reason']})" if check.get("reason") else ""
        lines.append(f"  {check['name']:<10} {_MARK[check['verdict']]}{detail}")
        for finding in check["findings"]:
            lines.append(f"      - {finding['message']}")
        lines += [f"        | {line}" for line in check.get("details", [])]
    lines.append("")
    if receipt["accepted"]:
        lines.append("ACCEPTED: this hand-in is well formed and will be graded.")
    else:
        lines.append("NOT ACCEPTED: fix what is marked FAILED above, then check again.")
    return "\n".join(lines) + "\n"


# --- one hand-in ---------------------------------------------------------------------------

def check_hand_in(config: Config, path: Path, lab: str | None = None, *, run: bool = True,
                  seed: int | None = None, not_run_because: str = "--no-run was given") -> dict:
    """Check one hand-in; return its receipt (never raises for anything in the hand-in).
    `not_run_because` says why the smoke run and the sanitizer were skipped when `run` is
    False (the option a caller was given, in its own words)."""
    lab = lab or guess_lab(config, Path(path))
    if lab is None:
        misses = lab_file_near_misses(config, Path(path))
        raise UsageError(f"Could not tell which lab {path} is for (it has no {MANIFEST} and does not "
                         f"hold exactly one lab's files). " + "".join(m + " " for m in misses)
                         + f"Say which with --lab (labs: {', '.join(labs.available_labs(config.root))}).")
    spec = labs.load_lab(config, lab)
    checking = HandInChecking(config, spec, Path(path), run=run, seed=seed, not_run_because=not_run_because)
    tmp = scratch_dir(config, f"check-{spec.name}")
    try:
        checking.run(tmp)
    finally:
        if not config.keep_temp:
            remove_tree(tmp)
    return checking.receipt()
