"""The hand-in checks: one ordered registry that `cudalab check` runs whole (each check's
verdict on the receipt, in the registry's order) and that every build of a submission
(`grade`, `run`, `build`) runs the grade-time part of, the first failure stopping the build.

A check says what it is (`HandInCheck`: its name, whether its errors reject a hand-in, the
checks it requires, whether it runs at grade time) and fills its `Check` record. The
registry, not the checks, skips a check whose requirement did not give what it needs, with
the reason the requirement gives (`why_unmet`). The receipt's names are `CheckName` and
schemas/receipt.schema.json, which `schema_disagreements` keeps equal to the registry.
docs/extending.md's "Add a hand-in check" is the recipe.

This module must not import build.py (build.py runs the grade-time checks from here): a
check reaches the build through the context's `builder`, made by the caller.
"""
from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from .. import console
from . import handin
from ..lab import labs
from ..grading import sanitizer
from ..config import Config, cuda_device_present
from ..errors import CompileError, ForbiddenError, SubmissionError
from ..exit_codes import Harness
from .handin import Finding, HandIn, manifest_of
from ..lab.labspec import LabSpec
from ..isolation.runner import RUN, Runner, read_untrusted_json, why_nothing_ran

SCHEMA_FILE = Path(__file__).resolve().parents[1] / "schemas" / "receipt.schema.json"


class CheckName(str, Enum):
    """The checks a receipt reports, in its order: the registry's names, which the receipt's
    readers (and its schema) may rely on. Compare and store `.value`: a str Enum member hashes
    by its member name, not its string."""

    ARCHIVE = "archive"
    FILES = "files"
    COMPILE = "compile"
    SYMBOLS = "symbols"
    FORBIDDEN = "forbidden"
    SMOKE_RUN = "smoke_run"
    SANITIZER = "sanitizer"


@dataclass
class Check:
    """One check's record on one hand-in: what the receipt says of it."""

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

    @property
    def ran_without_errors(self) -> bool:
        """It ran and found no error (warnings are only reported)."""
        return self.verdict in ("passed", "warning")

    def to_json(self) -> dict:
        body = {"name": self.name, "verdict": self.verdict, "seconds": round(self.seconds, 2),
                "findings": [f.to_json() for f in self.findings]}
        if self.reason:
            body["reason"] = self.reason
        if self.details:
            body["details"] = self.details
        return body


@dataclass
class CheckContext:
    """What the checks of one hand-in share. `cudalab check` fills it as its checks run, from
    the hand-in as given; a build gives only `builder` (a build.SubmissionBuilder, not
    imported here: build.py imports this module), whose staged copy holds the lab's files."""

    config: Config
    spec: LabSpec
    path: Path | None = None                    # the hand-in as given (`cudalab check` only)
    tmp: Path | None = None                     # the check's own scratch folder
    run_programs: bool = True
    not_run_because: str = "--no-run was given"  # why, when `run_programs` is False
    seed: int = field(default_factory=lambda: labs.choose_seed(None))
    start_build: Callable[[Path], object] | None = None  # staged folder -> builder (`cudalab check`)
    builder: object | None = None                # a build.SubmissionBuilder, from `compile` on
    records: dict[str, Check] = field(default_factory=dict)
    hand_in: HandIn | None = None
    manifest: dict | None = None
    staged: Path | None = None                  # the lab's accepted files, under their lab names
    staged_names: list[str] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)
    isolation: dict | None = None
    compiled: bool = False
    compile_refusal: ForbiddenError | None = None  # the compile reached a library the lab forbids
    binary: Path | None = None
    runner: Runner | None = None
    program_started: bool = False

    def lab_files(self) -> dict[str, bytes]:
        """The lab's files of this hand-in, as the grader staged them (never the hand-in's own
        paths)."""
        folder = self.builder.staged.copy_dir if self.builder is not None else self.staged
        if folder is None:
            return {}
        return {name: (folder / name).read_bytes() for name in self.spec.files if (folder / name).is_file()}


class HandInCheck:
    """One check of a hand-in. Subclass it, set the class attributes, write `run`, and
    `register()` an instance; docs/extending.md says what else names it."""

    name: str = ""
    rejects: bool = False              # an error finding means the hand-in is not accepted
    requires: tuple[str, ...] = ()     # checks that must have given what this one needs
    at_grade_time: bool = False        # also run by every build of a submission (grade, run, build)
    runs_program: bool = False         # runs the linked program: placed after every grade-time check

    def run(self, context: CheckContext, check: Check) -> None:
        """Check the hand-in and fill `check` (findings, a reason, or a skip of its own)."""
        raise NotImplementedError

    def met(self, context: CheckContext, check: Check) -> bool:
        """Whether the checks that require this one may run after it."""
        return check.ran_without_errors

    def why_unmet(self, context: CheckContext, check: Check) -> str:
        """The reason a check that requires this one is skipped with, when `met` is False."""
        if check.verdict == "skipped":
            return check.reason  # what kept this one from running keeps its dependents too
        return f"it needs the {self.name} check to pass, and that check failed"

    def skip_reason(self, context: CheckContext, requirement: HandInCheck, record: Check) -> str:
        """The reason this check is skipped with when `requirement` was not met."""
        return requirement.why_unmet(context, record)

    def after_grade_time_checks(self, context: CheckContext, check: Check) -> None:
        """Called on each grade-time check once every grade-time check has run (compile links
        the program here: only a hand-in that passed them all is linked)."""

    def enforce(self, context: CheckContext) -> None:
        """At a build: run the check; its warnings are said, and where it rejects, its errors
        stop the build (the CompileError a grade reports)."""
        check = Check(self.name)
        self.run(context, check)
        errors = [f.message for f in check.findings if f.severity == "error"]
        for finding in check.findings:
            if finding.severity == "warning" or not self.rejects:
                console.warn(finding.message)
        if errors and self.rejects:
            files = " and ".join(context.spec.files)
            raise CompileError(f"{files} did not pass the hand-in check '{self.name}', so it was not linked. "
                               "Fix each line below, then build again.", errors)


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --- the registry ---------------------------------------------------------------------------

_REGISTRY: list[HandInCheck] = []


def registered() -> tuple[HandInCheck, ...]:
    """Every check, in the receipt's order."""
    return tuple(_REGISTRY)


def names() -> tuple[str, ...]:
    return tuple(c.name for c in _REGISTRY)


def rejecting_names() -> tuple[str, ...]:
    """The checks whose errors mean the hand-in would not be accepted."""
    return tuple(c.name for c in _REGISTRY if c.rejects)


def at_grade_time() -> tuple[HandInCheck, ...]:
    return tuple(c for c in _REGISTRY if c.at_grade_time)


def register(check: HandInCheck, before: str | None = None) -> HandInCheck:
    """Add `check` to the registry: before the check named `before`, else (a grade-time check)
    before the first check that runs the program, else last. Refuses, in a sentence, a check
    whose name is taken, whose requirements come after it, or that would run at grade time
    after the program was linked."""
    known = names()
    if not re.fullmatch(r"[a-z][a-z0-9_]{0,19}", check.name or ""):
        raise ValueError(f"A hand-in check's name must be a short lower-case word (letters, digits, '_'), "
                         f"not {check.name!r}.")
    if check.name in known:
        raise ValueError(f"A hand-in check named '{check.name}' is registered already: unregister it first.")
    if before is not None and before not in known:
        raise ValueError(f"There is no hand-in check named '{before}' to register '{check.name}' before "
                         f"(checks: {', '.join(known)}).")
    if before is None and check.at_grade_time:
        before = next((c.name for c in _REGISTRY if c.runs_program), None)
    position = known.index(before) if before is not None else len(known)
    earlier = known[:position]
    missing = [name for name in check.requires if name not in earlier]
    if missing:
        raise ValueError(f"The hand-in check '{check.name}' requires {', '.join(missing)}, which must be "
                         "registered before it.")
    if check.at_grade_time and any(c.runs_program for c in _REGISTRY[:position]):
        raise ValueError(f"The hand-in check '{check.name}' runs at grade time, so it must come before the "
                         "checks that run the program (the program is linked only after every grade-time "
                         "check).")
    if check.runs_program and any(c.at_grade_time for c in _REGISTRY[position:]):
        raise ValueError(f"The hand-in check '{check.name}' runs the program, so it must come after every "
                         "grade-time check.")
    _REGISTRY.insert(position, check)
    return check


def unregister(name: str) -> HandInCheck:
    """Take the check named `name` out of the registry (and return it)."""
    for index, check in enumerate(_REGISTRY):
        if check.name == name:
            dependents = [c.name for c in _REGISTRY if name in c.requires]
            if dependents:
                raise ValueError(f"The hand-in check '{name}' is required by {', '.join(dependents)}: "
                                 "unregister those first.")
            return _REGISTRY.pop(index)
    raise ValueError(f"There is no hand-in check named '{name}' (checks: {', '.join(names())}).")


def run_all(context: CheckContext) -> None:
    """Run every registered check on one hand-in, in order, into `context.records`: a check
    whose requirement was not met is skipped with the reason it gives."""
    order = registered()
    by_name = {c.name: c for c in order}
    context.records = {c.name: Check(c.name) for c in order}
    last_grade_time = max((i for i, c in enumerate(order) if c.at_grade_time), default=-1)
    for index, hand_in_check in enumerate(order):
        record = context.records[hand_in_check.name]
        unmet = next((name for name in hand_in_check.requires
                      if not by_name[name].met(context, context.records[name])), None)
        if unmet is not None:
            record.skip(hand_in_check.skip_reason(context, by_name[unmet], context.records[unmet]))
        else:
            _timed(record, lambda: hand_in_check.run(context, record))
        if index == last_grade_time:
            for done in order[:index + 1]:
                if done.at_grade_time:
                    _timed(context.records[done.name],
                           lambda: done.after_grade_time_checks(context, context.records[done.name]))


def enforce_at_build(context: CheckContext) -> None:
    """A build's checks: every grade-time check in the registry's order, the first that fails
    raising (CompileError, ForbiddenError). Their requirements need no test here: the build's
    staging has refused a hand-in without the lab's files, and a failed check stops the rest."""
    for hand_in_check in at_grade_time():
        hand_in_check.enforce(context)


def accepted(records: dict[str, Check]) -> bool:
    return not any(f.severity == "error" for name in rejecting_names() for f in records[name].findings)


def _timed(record: Check, work: Callable[[], None]) -> None:
    started = time.perf_counter()
    try:
        work()
    finally:
        record.seconds += time.perf_counter() - started


# --- the receipt's names, the schema and the registry agree ------------------------------------

def schema_disagreements(schema: dict | None = None) -> list[str]:
    """Where the registry, CheckName and receipt.schema.json differ about the receipt's checks,
    each as a sentence (none when they agree)."""
    if schema is None:
        schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    checks = schema["properties"]["checks"]
    listed = {"the registry": list(names()), "CheckName": [member.value for member in CheckName],
              "the schema's enum of names": list(checks["items"]["properties"]["name"].get("enum", [])),
              "the schema's prefixItems": [item["properties"]["name"]["const"]
                                           for item in checks.get("prefixItems", [])]}
    said = []
    registry = listed["the registry"]
    for where, listing in listed.items():
        if listing != registry:
            said.append(f"{where} lists {', '.join(listing) or 'no checks'}, but the registry has "
                        f"{', '.join(registry)}: name every registered check, in the registry's order.")
    for bound in ("minItems", "maxItems"):
        if checks.get(bound) != len(registry):
            said.append(f"The schema's {bound} for checks is {checks.get(bound)}, but the registry has "
                        f"{len(registry)} checks.")
    return said


# --- the checks of every hand-in ------------------------------------------------------------------

# Why the build's checks were skipped when the grader could not stage the hand-in for a build.
_NOT_STAGED = "the hand-in could not be staged for a build"


class ArchiveCheck(HandInCheck):
    """The hand-in can be read: a folder or an archive, with nothing hostile kept as a file."""

    name = CheckName.ARCHIVE.value
    rejects = True

    def run(self, context: CheckContext, check: Check) -> None:
        context.hand_in = handin.read_hand_in(context.path, context.spec, context.config)
        context.manifest = manifest_of(context.hand_in)
        check.add(context.hand_in.findings)
        if context.hand_in.top_folder:
            check.reason = f"everything was in the folder {context.hand_in.top_folder}/, which was looked inside"

    def met(self, context: CheckContext, check: Check) -> bool:
        return context.hand_in is not None  # what was read is checked, whatever else was refused


class FilesCheck(HandInCheck):
    """The lab's files, nothing else, and pack's manifest where there is one; the accepted
    files are staged for the build under their lab names."""

    name = CheckName.FILES.value
    rejects = True
    requires = (CheckName.ARCHIVE.value,)

    def run(self, context: CheckContext, check: Check) -> None:
        hand_in = context.hand_in
        entries = hand_in.entries
        if context.manifest is not None:  # pack's manifest is part of the hand-in, not an extra file
            hand_in.entries = [e for e in entries if e.name != handin.MANIFEST]
        try:
            check.add(handin.file_findings(hand_in, context.spec))
        finally:
            hand_in.entries = entries
        check.add(self._manifest_findings(context))
        context.staged = context.tmp / "hand-in"
        context.staged_names = hand_in.write_accepted(context.spec, context.staged)

    def met(self, context: CheckContext, check: Check) -> bool:
        # An extra file is an error of its own; the build needs only the lab's files.
        return set(context.spec.files) <= set(context.staged_names)

    def why_unmet(self, context: CheckContext, check: Check) -> str:
        return "the lab's files are not all in the hand-in"

    @staticmethod
    def _manifest_findings(context: CheckContext) -> list[Finding]:
        if context.manifest is None:
            return []
        other_lab = handin.other_lab_finding(context.hand_in, context.spec)
        found = [other_lab] if other_lab else []
        files = context.hand_in.files()
        for item in context.manifest.get("files") or []:
            if not isinstance(item, dict):
                continue
            name, digest = item.get("name"), item.get("sha256")
            entry = files.get(name) if isinstance(name, str) else None
            if entry is not None and entry.data is not None and digest != sha256_of(entry.data):
                found.append(Finding("files", "warning", f"{name} is not the file `cudalab pack` packed "
                                     "(its sha256 differs from the manifest): the archive was changed "
                                     "after packing. Pack it again.", name))
        return found


class CompileCheck(HandInCheck):
    """The student's file compiles against the official harness, in the sandbox; once every
    grade-time check has passed, it is linked into the program the later checks run."""

    name = CheckName.COMPILE.value
    rejects = True
    requires = (CheckName.FILES.value,)
    at_grade_time = True

    def run(self, context: CheckContext, check: Check) -> None:
        try:
            context.builder = context.start_build(context.staged)
        except SubmissionError as err:
            check.add([Finding("compile", "error", str(err))])
            return
        context.isolation = context.builder.sandbox.isolation.to_json()
        context.sources = context.builder.sources()
        builder = context.builder
        try:
            builder.compile()
        except ForbiddenError as err:
            # The compile reached a header of a library the lab does not allow (hidden from
            # it): the forbidden check reports the library; this one says why it stopped.
            context.compile_refusal = err
            check.skip("not compiled: it includes a library the lab does not allow (see forbidden)")
            return
        except CompileError as err:
            check.add([Finding("compile", "error", _first_error(err), builder.source,
                               _line_of(err, builder.source))])
            check.details = list(err.feedback)
            return
        context.compiled = True

    def why_unmet(self, context: CheckContext, check: Check) -> str:
        if context.builder is None:
            return check.reason if check.verdict == "skipped" else _NOT_STAGED
        return "the file did not compile"

    def after_grade_time_checks(self, context: CheckContext, check: Check) -> None:
        if not context.compiled:
            return
        if any(context.records[c.name].verdict == "failed" for c in at_grade_time() if c is not self):
            check.reason = "compiled; not linked, because of the findings below"
            return
        builder = context.builder
        try:
            context.binary = builder.link()
        except CompileError as err:
            check.add([Finding("compile", "error", line, builder.source) for line in err.feedback]
                      or [Finding("compile", "error", str(err), builder.source)])

    def enforce(self, context: CheckContext) -> None:
        context.builder.compile()


class SymbolsCheck(HandInCheck):
    """Only the lab's API crosses the link: the object defines nothing of the harness's."""

    name = CheckName.SYMBOLS.value
    rejects = True
    requires = (CheckName.COMPILE.value,)
    at_grade_time = True

    def run(self, context: CheckContext, check: Check) -> None:
        try:
            context.builder.check_symbols()
        except CompileError as err:
            check.add([Finding("symbols", "error", line, context.builder.source) for line in err.feedback])

    def enforce(self, context: CheckContext) -> None:
        context.builder.check_symbols()


class ForbiddenCheck(HandInCheck):
    """No library the lab forbids: in the source always, in the object where it compiled."""

    name = CheckName.FORBIDDEN.value
    rejects = True
    requires = (CheckName.FILES.value,)  # not compile: the source is searched even when it did not compile
    at_grade_time = True

    def run(self, context: CheckContext, check: Check) -> None:
        builder = context.builder
        if builder is None:
            check.skip(_NOT_STAGED)
            return
        check.add(builder.forbidden_in_source())
        refusal = context.compile_refusal
        if refusal is not None:
            if not check.findings:
                check.add([Finding("forbidden", "error", f"{refusal} {refusal.feedback[0]}", builder.source)])
            check.reason = "the file did not compile: it includes a library the lab does not allow"
        elif not context.compiled:
            check.reason = "only the source was checked: the file did not compile"
        else:
            check.add(builder.forbidden_in_object())

    def enforce(self, context: CheckContext) -> None:
        context.builder.check_forbidden()


class SmokeRunCheck(HandInCheck):
    """The smallest cases run and the trusted checker judges them (a failing case is a
    warning: the hand-in is accepted, the case scores nothing)."""

    name = CheckName.SMOKE_RUN.value
    requires = (CheckName.COMPILE.value,)
    runs_program = True

    def skip_reason(self, context: CheckContext, requirement: HandInCheck, record: Check) -> str:
        return "not run: it was not built" if context.builder is None else "not run: it did not build"

    def run(self, context: CheckContext, check: Check) -> None:
        if context.binary is None:
            check.skip("not run: it did not build")
            return
        if not context.run_programs:
            check.skip(f"not run: {context.not_run_because}")
            return
        if not cuda_device_present():
            check.skip("not run: there is no CUDA device on this machine")
            return
        context.runner = Runner(context.config, context.spec, context.tmp / "runs")
        context.program_started = True
        cases = list(context.spec.handin.smoke_cases)
        args: list = ["--seed", context.seed, "--dump", f"{RUN}/dump", "--json", f"{RUN}/run.json", "--quiet"]
        for case in cases:
            args += ["--case", case]
        result, folder = context.runner.run_cases(context.binary, args)
        if result.exit_code == Harness.NO_DEVICE:
            said = why_nothing_ran(read_untrusted_json(folder / "run.json"))
            check.skip("not run: " + (said or "the program found no CUDA device"))
            return
        verdicts = context.runner.check(folder / "dump", context.seed, cases=cases)
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
        check.reason = f"{len(cases)} smallest cases, seed {context.seed}"

    def met(self, context: CheckContext, check: Check) -> bool:
        # The sanitizer runs the program where the smoke run could start it, whatever it found.
        return context.program_started


class SanitizerCheck(HandInCheck):
    """compute-sanitizer's tools on the lab's sanitizer cases, each finding at its line."""

    name = CheckName.SANITIZER.value
    requires = (CheckName.SMOKE_RUN.value,)
    runs_program = True

    def run(self, context: CheckContext, check: Check) -> None:
        tool = sanitizer.find_sanitizer()
        if tool is None:
            check.skip("compute-sanitizer was not found on this machine (it comes with the CUDA toolkit)")
            return
        spec = context.spec
        lines = {name: text.splitlines() for name, text in context.sources.items()}
        outcome = sanitizer.run_tools(context.runner, tool, context.binary, spec.handin.sanitizer_cases,
                                      context.seed, lines, context.config.sanitizer_timeout_s)
        for tool_name, problem in outcome.problems.items():
            check.add([Finding("sanitizer", "warning", f"compute-sanitizer's {tool_name} {problem}")])
        check.add([Finding("sanitizer", "warning", f.sentence[:1].upper() + f.sentence[1:] + ".",
                           f.file, f.line) for f in outcome.findings])
        check.reason = (f"{', '.join(outcome.tools_run)} on {', '.join(spec.handin.sanitizer_cases)}"
                        + (f"; {spec.handin.sanitizer_points:g} points off in a grade"
                           if spec.handin.sanitizer_points and outcome.findings else ""))


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


for _check in (ArchiveCheck(), FilesCheck(), CompileCheck(), SymbolsCheck(), ForbiddenCheck(),
               SmokeRunCheck(), SanitizerCheck()):
    register(_check)
