"""What `cudalab check` does (the verb and its help are commands/check.py): a hand-in's
checks in order, each finding reported, and the receipt they make.
"""
from __future__ import annotations

import hashlib
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import __version__, build, handin, labs, report, sanitizer
from .config import Config, cuda_device_present
from .errors import CompileError, ForbiddenError, SubmissionError, UsageError
from .exit_codes import Harness
from .handin import Finding, HandIn, manifest_of
from .labspec import LabSpec
from .names import near
from .runner import RUN, Runner, read_untrusted_json, scratch_dir, why_nothing_ran
from .trees import remove_tree

SCHEMA = "cudalab.receipt/1"
MANIFEST = handin.MANIFEST
CHECKS = ("archive", "files", "compile", "symbols", "forbidden", "smoke_run", "sanitizer")
# The checks whose errors mean the hand-in would not be accepted.
_REJECTING = ("archive", "files", "compile", "symbols", "forbidden")


@dataclass
class Check:
    name: str
    verdict: str = "passed"  # passed, failed, warning, skipped
    reason: str = ""         # why it was skipped, or a one-line summary
    findings: list[Finding] = field(default_factory=list)
    seconds: float = 0.0
    details: list[str] = field(default_factory=list)  # raw lines behind a finding (compiler output)

    def add(self, findings: list[Finding]) -> None:
        self.findings += findings
        if any(f.severity == "error" for f in self.findings):
            self.verdict = "failed"
        elif self.findings and self.verdict == "passed":
            self.verdict = "warning"

    def skip(self, reason: str) -> None:
        self.verdict, self.reason = "skipped", reason

    def to_json(self) -> dict:
        body = {"name": self.name, "verdict": self.verdict, "seconds": round(self.seconds, 2),
                "findings": [f.to_json() for f in self.findings]}
        if self.reason:
            body["reason"] = self.reason
        if self.details:
            body["details"] = self.details
        return body


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


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

class HandInCheck:
    """One run of every check on one hand-in."""

    def __init__(self, config: Config, spec: LabSpec, path: Path, *, run: bool = True, seed: int | None = None,
                 not_run_because: str = "--no-run was given"):
        self.config, self.spec, self.path = config, spec, Path(path)
        self.run_programs = run
        self.not_run_because = not_run_because  # why, when `run` is False
        self.seed = labs.choose_seed(seed)
        self.checks = {name: Check(name) for name in CHECKS}
        self.hand_in: HandIn | None = None
        self.manifest: dict | None = None
        self.binary: Path | None = None
        self.sources: dict[str, str] = {}
        self.isolation: dict | None = None

    def _timed(self, name: str, work) -> None:
        started = time.perf_counter()
        try:
            work(self.checks[name])
        finally:
            self.checks[name].seconds += time.perf_counter() - started

    def run(self, tmp: Path) -> None:
        self._timed("archive", self._archive)
        self._timed("files", self._files)
        staged = tmp / "hand-in"
        written = self.hand_in.write_accepted(self.spec, staged) if self.hand_in else []
        if not set(self.spec.files) <= set(written):
            for name in ("compile", "symbols", "forbidden"):
                self.checks[name].skip("the lab's files are not all in the hand-in")
            self._skip_runs("it was not built")
            return
        builder = None
        try:
            started = time.perf_counter()
            build.ensure_official(self.config, self.spec)
            builder = build.SubmissionBuilder(self.config, self.spec, staged, tmp / "submission")
            self.isolation = builder.sandbox.isolation.to_json()
            self.sources = builder.sources()
            self.checks["compile"].seconds += time.perf_counter() - started
        except SubmissionError as err:
            self.checks["compile"].add([Finding("compile", "error", str(err))])
        if builder is None:
            for name in ("symbols", "forbidden"):
                self.checks[name].skip("the hand-in could not be staged for a build")
            self._skip_runs("it was not built")
            return
        self._timed("forbidden", lambda c: c.add(builder.forbidden_in_source()))
        self._build(builder)
        if self.binary is None:
            self._skip_runs("it did not build")
            return
        if not self.run_programs:
            self._skip_runs(self.not_run_because)
            return
        if not cuda_device_present():
            self._skip_runs("there is no CUDA device on this machine")
            return
        runner = Runner(self.config, self.spec, tmp / "runs")
        self._timed("smoke_run", lambda c: self._smoke(c, runner))
        self._timed("sanitizer", lambda c: self._sanitize(c, runner))

    def _skip_runs(self, why: str) -> None:
        self.checks["smoke_run"].skip(f"not run: {why}")
        self.checks["sanitizer"].skip(f"not run: {why}")

    def _archive(self, check: Check) -> None:
        self.hand_in = handin.read_hand_in(self.path, self.spec, self.config)
        self.manifest = manifest_of(self.hand_in)
        check.add(self.hand_in.findings)
        if self.hand_in.top_folder:
            check.reason = f"everything was in the folder {self.hand_in.top_folder}/, which was looked inside"

    def _files(self, check: Check) -> None:
        entries = self.hand_in.entries
        if self.manifest is not None:  # pack's manifest is part of the hand-in, not an extra file
            self.hand_in.entries = [e for e in entries if e.name != MANIFEST]
        try:
            check.add(handin.file_findings(self.hand_in, self.spec))
        finally:
            self.hand_in.entries = entries
        check.add(self._manifest_findings())

    def _manifest_findings(self) -> list[Finding]:
        if self.manifest is None:
            return []
        other_lab = handin.other_lab_finding(self.hand_in, self.spec)
        found = [other_lab] if other_lab else []
        files = self.hand_in.files()
        for item in self.manifest.get("files") or []:
            if not isinstance(item, dict):
                continue
            name, digest = item.get("name"), item.get("sha256")
            entry = files.get(name) if isinstance(name, str) else None
            if entry is not None and entry.data is not None and digest != _sha256(entry.data):
                found.append(Finding("files", "warning", f"{name} is not the file `cudalab pack` packed "
                                     "(its sha256 differs from the manifest): the archive was changed "
                                     "after packing. Pack it again.", name))
        return found

    def _build(self, builder: build.SubmissionBuilder) -> None:
        compile_check = self.checks["compile"]
        try:
            self._timed("compile", lambda c: builder.compile())
        except ForbiddenError as err:
            # The compile reached a header of a library the lab does not allow (hidden from it):
            # the library is the finding; the source check has named its lines where it could.
            forbidden_check = self.checks["forbidden"]
            if not forbidden_check.findings:
                forbidden_check.add([Finding("forbidden", "error", f"{err} {err.feedback[0]}", builder.source)])
            forbidden_check.reason = "the file did not compile: it includes a library the lab does not allow"
            compile_check.skip("not compiled: it includes a library the lab does not allow (see forbidden)")
            self.checks["symbols"].skip("the file did not compile")
            return
        except CompileError as err:
            compile_check.add([Finding("compile", "error", _first_error(err), builder.source,
                                       _line_of(err, builder.source))])
            compile_check.details = list(err.feedback)
            self.checks["symbols"].skip("the file did not compile")
            self.checks["forbidden"].reason = "only the source was checked: the file did not compile"
            return
        try:
            self._timed("symbols", lambda c: builder.check_symbols())
        except CompileError as err:
            self.checks["symbols"].add([Finding("symbols", "error", line, builder.source) for line in err.feedback])
        self._timed("forbidden", lambda c: c.add(builder.forbidden_in_object()))
        if self.checks["symbols"].verdict == "failed" or self.checks["forbidden"].verdict == "failed":
            compile_check.reason = "compiled; not linked, because of the findings below"
            return
        try:
            started = time.perf_counter()
            self.binary = builder.link()
        except CompileError as err:
            compile_check.add([Finding("compile", "error", line, builder.source) for line in err.feedback]
                              or [Finding("compile", "error", str(err), builder.source)])
        finally:
            compile_check.seconds += time.perf_counter() - started

    def _smoke(self, check: Check, runner: Runner) -> None:
        cases = list(self.spec.handin.smoke_cases)
        args: list = ["--seed", self.seed, "--dump", f"{RUN}/dump", "--json", f"{RUN}/run.json", "--quiet"]
        for case in cases:
            args += ["--case", case]
        result, folder = runner.run_cases(self.binary, args)
        if result.exit_code == Harness.NO_DEVICE:
            said = why_nothing_ran(read_untrusted_json(folder / "run.json"))
            check.skip("not run: " + (said or "the program found no CUDA device"))
            return
        verdicts = runner.check(folder / "dump", self.seed, cases=cases)
        abnormal = result.status not in ("passed", "failed")
        for case in cases:
            verdict = verdicts.get(case, {})
            if verdict.get("status") == "passed":
                continue
            why = verdict.get("message") or "no output was written for it"
            if abnormal:
                why = f"{result.describe()}: {result.stderr_head(3)}".strip(": ") if verdict.get("status") in (None, "missing") else why
            check.add([Finding("smoke_run", "warning", f"Case {case} fails: {why}. The hand-in is accepted, "
                               "but this case will score no points; `cudalab run` shows every case.")])
        check.reason = f"{len(cases)} smallest cases, seed {self.seed}"

    def _sanitize(self, check: Check, runner: Runner) -> None:
        tool = sanitizer.find_sanitizer()
        if tool is None:
            check.skip("compute-sanitizer was not found on this machine (it comes with the CUDA toolkit)")
            return
        lines = {name: text.splitlines() for name, text in self.sources.items()}
        outcome = sanitizer.run_tools(runner, tool, self.binary, self.spec.handin.sanitizer_cases,
                                      self.seed, lines, self.config.sanitizer_timeout_s)
        for tool_name, problem in outcome.problems.items():
            check.add([Finding("sanitizer", "warning", f"compute-sanitizer's {tool_name} {problem}")])
        check.add([Finding("sanitizer", "warning", f.sentence[:1].upper() + f.sentence[1:] + ".",
                           f.file, f.line) for f in outcome.findings])
        check.reason = (f"{', '.join(outcome.tools_run)} on {', '.join(self.spec.handin.sanitizer_cases)}"
                        + (f"; {self.spec.handin.sanitizer_points:g} points off in a grade"
                           if self.spec.handin.sanitizer_points and outcome.findings else ""))

    def accepted(self) -> bool:
        return not any(f.severity == "error" for name in _REJECTING for f in self.checks[name].findings)

    def receipt(self) -> dict:
        files = []
        if self.hand_in is not None:
            for name, entry in sorted(self.hand_in.files().items()):
                if entry.data is not None and name in handin.accepted_names(self.spec):
                    files.append({"name": name, "bytes": len(entry.data), "sha256": _sha256(entry.data)})
        content = hashlib.sha256("".join(f"{f['name']}\0{f['sha256']}\n" for f in files).encode()).hexdigest()
        student = (self.manifest or {}).get("student")
        return {
            "schema": SCHEMA,
            "lab": self.spec.name,
            "accepted": self.accepted(),
            "checked_at": report.timestamp(),
            "cudalab_version": __version__,
            "hand_in": {"path": str(self.path), "form": self.hand_in.form if self.hand_in else "missing",
                        "sha256": self.hand_in.sha256 if self.hand_in else None,
                        "content_sha256": content, "files": files,
                        "student": student if isinstance(student, str) else None,
                        "packed_at": (self.manifest or {}).get("created_at")},
            "seed": self.seed,
            "isolation": self.isolation,
            "checks": [self.checks[name].to_json() for name in CHECKS],
        }


def _first_error(err: CompileError) -> str:
    first = next((line for line in err.feedback if "error" in line.lower()), err.feedback[0] if err.feedback else "")
    first = first.strip().rstrip(".")
    return f"{err} The first error: {first}." if first else str(err)


def _line_of(err: CompileError, source: str) -> int | None:
    for line in err.feedback:
        match = re.search(rf"{re.escape(source)}[:(](\d+)", line)
        if match:
            return int(match[1])
    return None


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
    checking = HandInCheck(config, spec, Path(path), run=run, seed=seed, not_run_because=not_run_because)
    tmp = scratch_dir(config, f"check-{spec.name}")
    try:
        checking.run(tmp)
    finally:
        if not config.keep_temp:
            remove_tree(tmp)
    return checking.receipt()
