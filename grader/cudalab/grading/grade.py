"""What `cudalab grade` does (the verb and its help are commands/grade.py): one grade,
in two halves a batch can run apart (begin: stage and build; finish: run, judge and time
against the reference on the grader's clock), and the result document it writes.
"""
from __future__ import annotations

import os
import platform
import statistics
import threading
import time
from contextlib import contextmanager, nullcontext
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

from .. import __version__, console
from ..building import build
from ..isolation import cpus, gpu, safe_files
from ..lab import images, labs
from ..outputs import report
from . import sanitizer
from ..config import Config
from ..errors import CompileError, CudalabError, GraderError, NoDeviceError, NotIsolatedError, SubmissionError
from ..exit_codes import Harness
from ..lab.labspec import LabSpec
from ..isolation.runner import RUN, Runner, failure_reason, fresh_dir, read_untrusted_json, scratch_dir, why_nothing_ran
from ..isolation.sandbox import ProcessResult, Sandbox, run_limits
from .audit import AuditServer, KeptDump
from .scoring import case_points, regrade_range, score as compute_score, zero as zero_score
from ..status import Status
from .timing import (REFERENCE_FLOOR_FRACTION, SCORED_QUANTILE, ChannelClosed, Pace, ProtocolError, RoundClock,
                     SessionRun, TooSlow, reference_is_plausible, score_clock, send_line)
from ..isolation.trees import remove_tree

SCHEMA = "cudalab.grade/1"
ATTACHMENTS = "attachments"  # the folder in a grade's scratch whose files go beside feedback.md


@contextmanager
def _seconds(into: dict, name: str):
    """Records how long the block took in into[name], in seconds."""
    started = time.perf_counter()
    try:
        yield
    finally:
        into[name] = round(into.get(name, 0.0) + time.perf_counter() - started, 2)


def _phase(result: dict, name: str):
    """Records how long a phase of the grade took (provenance.phases_s), in seconds."""
    return _seconds(result["provenance"]["phases_s"], name)


class _PerformanceZero(Exception):
    """Performance scores zero for a reason the student should read; `flagged` puts the
    hand-in on the class summary's list to look at (a time below the physical floor, a
    program that broke the timing protocol)."""

    def __init__(self, message: str, flagged: bool = False):
        super().__init__(message)
        self.flagged = flagged


class GradingSession:
    """One grading of one built submission: seeds, folders, the reference, the checker."""

    def __init__(self, config: Config, spec: LabSpec, submission: Path, seed: int, tmp: Path,
                 audit_server: AuditServer | None = None, own_server: AuditServer | None = None):
        self.config, self.spec, self.seed, self.tmp = config, spec, seed, tmp
        self.audit_server = audit_server  # a batch's, kept for every grade on this GPU
        self.own_server = own_server      # this grade's own, started early: ended after its last round
        self.runner = Runner(config, spec, tmp)
        self.reference = self.runner.official(labs.scoring_reference(spec))
        self.submission = submission
        self.device: dict = {}
        self.bench_clocks: list[float] = []
        self.gpu_waits: list[gpu.GpuWait] = []
        self.kept_check_s = 0.0

    def probe_device(self) -> None:
        """Run the reference on the first case: its exit 4 is the authority on 'no device'."""
        first = self.spec.cases[0].name
        result, folder = self.runner.run(self.reference, ["--case", first, "--seed", self.seed,
                                                          "--json", f"{RUN}/run.json", "--quiet"])
        if result.exit_code == Harness.NO_DEVICE:
            said = why_nothing_ran(read_untrusted_json(folder / "run.json"))  # the official reference's words
            why = (f"The reference solution cannot run on this machine: {said}" if said else
                   "There is no CUDA device on this machine (the reference solution exits with 'no device')")
            raise NoDeviceError(f"{why}. So the submission was built but not run. No grade was given; "
                                "grade it on a machine with a working GPU (`cudalab doctor` says what "
                                "this one can do).", why=why)
        if result.exit_code != Harness.PASSED:
            raise GraderError(f"The reference solution failed on case {first} on this machine "
                              f"({failure_reason(result)}). This is a problem with the lab or "
                              "the machine, not with the submission.")
        self.device = (read_untrusted_json(folder / "run.json") or {}).get("device", {})

    # -- correctness ------------------------------------------------------------------------
    def run_correctness(self) -> tuple[list[dict], dict]:
        return self.judge_correctness(*self.correctness_run())

    def correctness_run(self) -> tuple[ProcessResult, Path]:
        """The submission's run of every case, its outputs dumped for the checker."""
        console.info(f"Running the submission on {len(self.spec.cases)} cases (seed {self.seed})")
        return self.runner.run_cases(self.submission, ["--seed", self.seed, "--dump", f"{RUN}/dump",
                                                       "--json", f"{RUN}/run.json", "--quiet"])

    def judge_correctness(self, result: ProcessResult, folder: Path) -> tuple[list[dict], dict]:
        """The trusted checker's verdict on every case of that run, in the result's words."""
        console.info("Checking its outputs with the trusted checker")
        verdicts = self.runner.check(folder / "dump", self.seed)
        drawn = self.difference_images(folder, verdicts)
        abnormal = result.status not in ("passed", "failed")
        reason = failure_reason(result) if abnormal else ""
        cases = []
        for case in self.spec.cases:
            verdict = verdicts.get(case.name, {})
            checker_status = verdict.get("status", "missing")
            message = verdict.get("message") or ""
            status = "passed" if checker_status == "passed" else "failed"
            if status == "failed" and abnormal:
                message = reason if checker_status == "missing" or not message else f"{reason}; {message}"
            elif status == "failed" and not message:
                message = "the checker found no output for this case"
            cases.append({"name": case.name, "params": case.params, "status": status,
                          "checker_status": checker_status, "message": message})
            if case.name in drawn:
                cases[-1]["difference_images"] = drawn[case.name]
        run = {"status": result.status, "exit_code": result.exit_code,
               "wall_s": round(result.wall_s, 4), "description": result.describe(),
               "stderr_head": result.stderr_head(10)}
        self._discard(folder)
        return cases, run

    def difference_images(self, folder: Path, verdicts: dict[str, dict]) -> dict[str, dict[str, str]]:
        """For a lab on pictures, the difference image of every failing case's output, drawn
        under tmp/ATTACHMENTS/images/<case>/ (finish() copies them beside feedback.md): per
        case, {output: its path relative to feedback.md}. Nothing where no case failed, the
        lab has no pictures or Pillow is missing; a problem here is a warning, never a grade's."""
        failing = [c.name for c in self.spec.cases if verdicts.get(c.name, {}).get("status") != "passed"]
        if not failing or not images.lab_has_images(self.spec):
            return {}
        if not images.pillow_available():
            console.warn("No difference images in the feedback: writing PNG needs Pillow (pip install pillow).")
            return {}
        written = fresh_dir(self.tmp, "images")
        try:
            self.runner.check(folder / "dump", self.seed, cases=failing, images=written)
        except GraderError as err:
            console.warn(f"No difference images in the feedback: {err}")
            return {}
        drawn = images.draw_differences(written, failing, self.tmp / ATTACHMENTS / "images", console.warn)
        return {case: {output: f"images/{case}/{png.name}" for output, png in outputs.items()}
                for case, outputs in drawn.items()}

    # -- compute-sanitizer (where lab.toml takes points off for its errors) -----------------
    def run_sanitizer(self, sources: Path) -> dict:
        points = self.spec.handin.sanitizer_points
        tool = sanitizer.find_sanitizer()
        if tool is None:
            return {"status": "skipped", "points_off": 0.0,
                    "message": "compute-sanitizer is not on this machine, so no points were taken off for it."}
        files = {p.name: p.read_text(encoding="utf-8", errors="replace").splitlines()
                 for p in sorted(sources.glob("*")) if p.is_file()}
        console.info("Running compute-sanitizer on " + ", ".join(self.spec.handin.sanitizer_cases))
        outcome = sanitizer.run_tools(self.runner, tool, self.submission, self.spec.handin.sanitizer_cases,
                                      self.seed, files, self.config.sanitizer_timeout_s)
        body = outcome.to_json()
        if outcome.clean:
            body.update(status="clean", points_off=0.0, message="compute-sanitizer found no errors.")
        else:
            what = "; ".join([f.sentence for f in outcome.findings[:3]]
                             + [f"{tool_name} {problem}" for tool_name, problem in outcome.problems.items()])
            body.update(status="errors", points_off=points,
                        message=f"compute-sanitizer found errors, so {points:g} points were taken off: "
                                f"{what or 'see its report'}. `cudalab check` shows each at its line.")
        return body

    # -- performance ------------------------------------------------------------------------
    def _pace(self, samples: int | None, keep: int, stop_when=None) -> Pace:
        c = self.config
        return Pace(warmup=c.timing_warmup, samples=samples, target_s=self.spec.scoring.target_s(c.timing_target_s),
                    samples_min=self.spec.scoring.samples_min(c.samples_min), samples_max=c.samples_max, keep=keep,
                    sample_timeout_s=c.sample_timeout_s, student=True, stop_when=stop_when)

    def paced(self, server: AuditServer, pace: Pace, seconds: dict | None = None) -> SessionRun:
        """One timing round: a fresh process of the submission's program, laid out in the
        auditor's shared arena and timed by the auditor beside the reference (audit.py);
        raises _PerformanceZero when it fails or breaks the protocol. `seconds` gets how long
        its steps took (audit_start, program_start, session)."""
        seconds = {} if seconds is None else seconds
        case = self.spec.scoring.timing_case
        with _seconds(seconds, "audit_start"):
            start = server.program_start()  # (starts the auditor and the reference first where needed)
        outcome: dict = {}

        def talk() -> bool:
            try:
                with _seconds(seconds, "program_start"):
                    pipes = start.ready(self.config.sample_timeout_s)
                with _seconds(seconds, "session"):
                    outcome["run"] = server.round(pace, pipes)
                send_line(start.to_program, "end")  # it writes its run JSON and exits
                return True
            except ChannelClosed:  # the program ended by itself: its exit says why
                return True
            except ProtocolError as err:  # it broke the protocol: stop it now
                outcome["error"] = f"the program {err}"
                return False
            except GraderError as err:  # the auditor's failure: stop the program, then report it
                outcome["grader"] = err
                return False
            finally:
                start.close()

        with cpus.on_timing_cpus(self.config):  # beside the auditor, away from builds and checks
            result, folder = self.runner.run(self.submission, start.argv, pass_fds=start.pass_fds, during=talk)
        self._discard(folder)
        if "grader" in outcome:
            raise outcome["grader"]
        run: SessionRun | None = outcome.get("run")
        if "error" in outcome:
            raise _PerformanceZero(f"In the timed runs on {case}, {outcome['error']}. The timing protocol is part of "
                                   "the lab's harness: a program that changes how it talks to the grader earns no "
                                   "performance points.", flagged=True)
        if (run is None or result.exit_code != Harness.PASSED
                or not (run.student.wall_ms or run.student.wrong or run.student.stopped_early)):
            raise _PerformanceZero(f"In the timed runs on {case}, {failure_reason(result)}.")
        return run

    def measure_performance(self) -> dict:
        config, scoring = self.config, self.spec.scoring
        case = scoring.timing_case
        perf: dict = {"status": "scored", "timing_case": case, "message": "", "ratio": None, "samples": None,
                      "clock": None, "flagged": False, "rounds": []}
        rounds: list[RoundClock] = []
        samples = None
        kept = scoring.kept(config.kept_samples)
        # The auditor and the reference's program serve every round (audit.py): the batch's
        # for this GPU where it gives them, else this grade's own, ended after the last round.
        server = (self.audit_server or self.own_server
                  or AuditServer(self.runner, self.reference, case, config.sample_timeout_s, kept))
        # Each round's kept samples are checked while the next rounds run: the checker is on
        # the work CPUs (cpus.py), never on those left to timing, and reads only its own dump.
        timing_rounds = scoring.rounds(config.timing_rounds)
        scored_quantile = scoring.quantile(SCORED_QUANTILE)
        checks = ThreadPoolExecutor(max_workers=cpus.checks_at_once(config, timing_rounds * kept),
                                    thread_name_prefix="kept-check")
        pending: list = []
        dumps: list[tuple[KeptDump, object]] = []  # every kept sample taken, released once checked
        voided: list[dict] = []  # rounds whose reference time was not one the GPU could give
        try:
            number = 0
            while number < timing_rounds:
                number += 1
                with gpu.exclusive(config.gpu_device):  # a round's samples, the GPU alone
                    seconds: dict = {}
                    with _seconds(seconds, "audit_start"):
                        server.start()  # its floor bounds what the reference's time can be
                    too_slow = TooSlow(limit=1.25 * scoring.zero_marks_ratio, floor_ms=server.floor.floor_ms,
                                       quantile=scored_quantile)
                    with _seconds(seconds, "idle_check"):
                        self.gpu_waits.append(gpu.wait_until_idle(config.gpu_idle_wait_s,
                                                                  device=config.gpu_device, ignore=server.pids()))
                    console.info(f"Timing round {number} of {timing_rounds} on {case}")
                    keep = scoring.kept_in_round(number, timing_rounds, config.kept_samples,
                                                 self.spec.every_output_exact)
                    run = self.paced(server, self._pace(samples, keep=keep, stop_when=too_slow), seconds)
                    sub = run.student
                    kept_now = [] if sub.wrong else sub.kept
                    with _seconds(seconds, "dump") if kept_now else nullcontext():
                        taken = [(server.dump(k.slot), k) for k in kept_now]
                        dumps += taken
                if sub.wrong:
                    raise _PerformanceZero(
                        f"In the timed runs on {case}, {sub.wrong}. Code that is fast but wrong earns no performance "
                        "points: every call must do the whole computation, on the inputs it is given, before it "
                        "returns.")
                samples = samples or run.reference.timed
                perf["samples"] = samples
                pending += [checks.submit(self._check_kept_sample, dump, k) for dump, k in taken]
                times = run.per_call(scored_quantile)
                protocol_ms, reference_ms = times.protocol_ms, times.reference_ms
                if not reference_is_plausible(reference_ms, server.floor.floor_ms):
                    # The reference's own event times are below what the GPU can do: this round
                    # measured something other than its work and says nothing of the
                    # submission, which is timed again (its kept samples are still checked).
                    voided.append({"reference_ms": reference_ms, "protocol_ms": protocol_ms, "seconds": seconds})
                    perf["voided_rounds"] = voided
                    if len(voided) > timing_rounds:
                        raise GraderError(
                            f"The grader could not time the reference on {case} on this machine: in "
                            f"{len(voided)} rounds it measured the course's own code faster than this GPU "
                            f"can go ({', '.join(format(v['reference_ms'], '.4g') for v in voided)} ms per call, "
                            f"below {REFERENCE_FLOOR_FRACTION:g} of the floor, {server.floor.floor_ms:.4g} "
                            "ms). The GPU's clocks or timers misbehaved; this is not the submission's fault. "
                            "Grade it again on another machine.")
                    number -= 1
                    continue
                rounds.append(RoundClock(reference_ms=reference_ms, student_ms=times.student_ms,
                                         protocol_ms=protocol_ms, student_reported_ms=sub.reported_median_ms()))
                perf["rounds"].append({**asdict(rounds[-1]), "kept_samples": [k.number for k in sub.kept],
                                       "seconds": seconds})
                if sub.stopped_early:
                    perf["ratio"] = rounds[-1].student_ms / reference_ms
                    raise _PerformanceZero(f"Your code takes about {perf['ratio']:.3g} times as long as the "
                                           f"reference on {case} (on the grader's clock); performance points stop "
                                           f"at {scoring.zero_marks_ratio:g} times.")
            if server is not self.audit_server:
                self.bench_clocks += server.close()  # the GPU is free for the kept samples' checks
            self._wait_for_checks(pending)
        except _PerformanceZero as zero:
            perf.update(status="zero", message=str(zero), flagged=zero.flagged)
            return perf
        finally:
            checks.shutdown(wait=True, cancel_futures=True)
            for dump, _ in dumps:  # those whose check was cancelled (a check releases its own)
                dump.release()
            if server is not self.audit_server:
                server.close()
        scored = score_clock(rounds, server.floor, config.timing_floor_fraction)
        perf.update(ratio=scored.ratio, message=scored.message, clock=scored.to_json(),
                    spread={"reference_rounds": scored.reference_agreement, "protocol_ms": scored.protocol_ms})
        if scored.below_floor:
            perf.update(status="zero", flagged=True)
        return perf

    def _wait_for_checks(self, pending: list) -> None:
        """The kept samples' verdicts, in the order they were drawn; kept_check_s is how long
        the grade waited for them once timing was over."""
        console.info(f"Checking {len(pending)} timed samples drawn in secret")
        started = time.perf_counter()
        try:
            for check in pending:
                check.result()  # _PerformanceZero for the first wrong one
        finally:
            self.kept_check_s = time.perf_counter() - started

    def _check_kept_sample(self, dump: KeptDump, sample) -> None:
        """One kept timed sample, as the auditor sealed it, against its own inputs, judged
        where the auditor wrote it."""
        case = self.spec.scoring.timing_case
        try:
            verdict = self.runner.check(dump.path, sample.seed, bench_case=case).get(case, {})
        finally:
            dump.release()
        if verdict.get("status") != "passed":
            raise _PerformanceZero(
                f"Your program's output in timed sample {sample.number} was wrong ({case}: "
                f"{verdict.get('message') or verdict.get('status', 'no output')}). Code that "
                "is fast but wrong earns no performance points; make sure every call does the "
                "whole computation on the inputs it is given.")

    def _discard(self, folder: Path) -> None:
        if not self.config.keep_temp:
            remove_tree(folder)


# --- assembling the result --------------------------------------------------------------------

def new_result(lab: str, folder: Path, seed: int, config: Config) -> dict:
    return {
        "schema": SCHEMA, "cudalab_version": __version__, "lab": lab, "lab_title": lab,
        "submission": {"name": Path(folder).resolve().name, "folder": str(Path(folder).resolve())},
        "status": Status.ERROR.value, "exit_code": int(Status.ERROR.exit_code), "message": "", "score": None,
        "build": {"status": "not_built", "copied": [], "ignored": [], "feedback": []},
        "cases": [], "performance": None, "run": None, "warnings": [],
        "provenance": {"seed": seed, "started_at": report.timestamp(), "finished_at": None,
                       "cudalab_version": __version__, "preset": config.preset,
                       "official_build": str(config.build_dir), "host": platform.node(),
                       "python": platform.python_version(), "isolation": None, "gpu": None,
                       "compute_capability": None, "driver_version": None,
                       "runtime_version": None, "sm_clock_mhz": None, "spread": None,
                       "gpu_sharing": None, "phases_s": {}},
    }


def _set_status(result: dict, status: Status, message: str = "") -> None:
    result["status"] = status.value
    result["exit_code"] = int(status.exit_code)
    result["message"] = message


def _record_session(result: dict, session: GradingSession) -> None:
    device = session.device
    clocks = session.bench_clocks
    result["provenance"].update(
        gpu=device.get("name"), compute_capability=device.get("compute_capability"),
        driver_version=device.get("driver_version"), runtime_version=device.get("runtime_version"),
        sm_clock_mhz=statistics.median(clocks) if clocks else device.get("sm_clock_mhz"),
        gpu_sharing=[w.to_json() for w in session.gpu_waits] or None,
        processes=session.runner.times)
    sharing = gpu.describe(session.gpu_waits)
    if sharing:
        result["warnings"].append(sharing)


def probe_device(config: Config, spec: LabSpec) -> dict:
    """Whether the lab's reference solution runs on this machine's GPU (config.gpu_device),
    and what that GPU is: once per GPU for a batch, instead of once per grade. Raises
    NoDeviceError or GraderError as a grade's own probe would."""
    tmp = scratch_dir(config, f"probe-{spec.name}")
    try:
        session = GradingSession(config, spec, Path(), labs.choose_seed(None), tmp)
        session.probe_device()
        return session.device
    finally:
        remove_tree(tmp)


def _timed(result: dict, session: GradingSession) -> dict:
    with _phase(result, "timing"):
        perf = session.measure_performance()
    result["provenance"]["phases_s"]["kept_sample_checks"] = round(session.kept_check_s, 2)
    return perf


def grade_built(result: dict, config: Config, spec: LabSpec, binary: Path, tmp: Path,
                device: dict | None = None, audit: AuditServer | None = None,
                early_timing: bool = False, own_audit: AuditServer | None = None) -> None:
    """Run, check, time and score a built submission, filling `result` as it goes. `device`
    is probe_device()'s answer when the caller probed the GPU already; `audit`, the auditor
    and reference program kept for every grade on this GPU (a batch's), when there is one;
    `own_audit`, this grade's own, started while it built, which the grade ends.
    `early_timing` (a grade with the GPU to itself) times the submission while the checker
    judges its run, instead of after: the GPU time is lost when a case fails."""
    session = GradingSession(config, spec, binary, result["provenance"]["seed"], tmp, audit, own_audit)
    try:
        if device is not None:
            session.device = device
        else:
            with _phase(result, "device_probe"):
                session.probe_device()
        with _phase(result, "correctness"):
            ran = session.correctness_run()
        perf = None
        if early_timing and spec.scoring.performance_points > 0 and ran[0].status == "passed":
            # Timed while the checker judges the run (on the work CPUs: cpus.py); the timing
            # counts only if every case passes.
            with ThreadPoolExecutor(max_workers=1, thread_name_prefix="correctness-check") as pool:
                judging = pool.submit(session.judge_correctness, *ran)
                perf = _timed(result, session)
                with _phase(result, "correctness_check"):  # the wait for it after timing
                    cases, run = judging.result()
        else:
            with _phase(result, "correctness_check"):
                cases, run = session.judge_correctness(*ran)
        result["cases"], result["run"] = cases, run
        passed = [c["status"] == "passed" for c in cases]
        share = case_points(spec.scoring, len(cases))
        for case, ok in zip(cases, passed):
            case["points"], case["max_points"] = (share if ok else 0.0), share
        if spec.scoring.performance_points <= 0:
            perf = {"status": "none", "message": "This lab gives no performance points."}
        elif not all(passed):
            perf = {"status": "skipped", "message": "Performance is measured only when every "
                    "case passes; fix the failing cases first."}
        elif perf is None:
            perf = _timed(result, session)
        ratio = perf.get("ratio") if perf.get("status") == "scored" else None
        penalty = 0.0
        if spec.handin.sanitizer_points > 0:
            with _phase(result, "sanitizer"):
                result["sanitizer"] = session.run_sanitizer(tmp / "submission" / "src")
            penalty = result["sanitizer"].get("points_off", 0.0)
        points = compute_score(spec.scoring, passed, ratio, penalty)
        perf.update(points=points.performance, max_points=points.performance_max,
                    timing_case=spec.scoring.timing_case)
        clock = perf.get("clock") if ratio is not None else None
        ranged = clock and regrade_range(spec.scoring, clock["student_rounds_ms"], clock["reference_rounds_ms"])
        if ranged:  # how far a regrade of the same code could move the points
            perf["regrade_range"] = ranged
        result["performance"] = perf
        result["score"] = points.to_json()
        result["provenance"]["spread"] = perf.get("spread")
        _set_status(result, Status.GRADED, f"{sum(passed)} of {len(passed)} cases passed.")
    finally:
        _record_session(result, session)


def _isolation_record(sandbox: Sandbox, config: Config, allow_unisolated: bool) -> dict:
    isolation = sandbox.isolation_for(run_limits(config))  # with the numbers of a run's limits
    return {**isolation.to_json(), "description": isolation.describe(),
            "summary": isolation.describe().split(";", 1)[0], "allowed_without": allow_unisolated}


@dataclass
class Pending:
    """A grade between its build (CPU work, which can run beside other builds) and its runs
    (GPU work, one grade at a time)."""
    result: dict
    config: Config
    spec: LabSpec | None = None
    binary: Path | None = None
    tmp: Path | None = None
    error: CudalabError | Exception | None = None


@dataclass
class Handoff:
    """What a grade's build step hands its GPU step when the two run in different processes
    (on a cluster, on different nodes): the result so far, where the build left the binary
    and its scratch folder, and when it was built. Plain data, so that any executor can
    ship it as JSON; the GPU step makes a Pending of it with its own configuration."""
    SCHEMA = "cudalab.pending-grade/1"

    key: str           # the hand-in's key in the batch's store
    result: dict
    binary: Path
    tmp: Path
    built_at: float

    @classmethod
    def of(cls, pending: Pending, key: str) -> "Handoff":
        return cls(key, pending.result, pending.binary, pending.tmp, time.time())

    def to_json(self) -> dict:
        return {"schema": self.SCHEMA, "key": self.key, "result": self.result, "binary": str(self.binary),
                "tmp": str(self.tmp), "built_at": self.built_at}

    @classmethod
    def from_json(cls, data) -> "Handoff":
        """ValueError, saying what is wrong, for anything but what to_json writes."""
        if not isinstance(data, dict) or data.get("schema") != cls.SCHEMA:
            schema = data.get("schema") if isinstance(data, dict) else None
            raise ValueError(f"it is not a pending grade (its schema is {schema!r}, not {cls.SCHEMA})")
        try:
            handoff = cls(str(data["key"]), data["result"], Path(data["binary"]), Path(data["tmp"]),
                          float(data["built_at"]))
        except KeyError as err:
            raise ValueError(f"its field {err} is missing") from None
        except (TypeError, ValueError) as err:
            raise ValueError(f"a field is not what a pending grade holds ({err})") from None
        if not isinstance(handoff.result, dict):
            raise ValueError("its result is not an object")
        return handoff

    def pending(self, config: Config, spec: LabSpec, binary: Path, tmp: Path) -> Pending:
        """The grade to finish, with the binary and scratch folder where the GPU step put them."""
        return Pending(self.result, config, spec, binary=binary, tmp=tmp)


def begin(config: Config, lab: str, folder: Path, seed: int | None = None,
          allow_unisolated: bool = False, bring_official_up_to_date: bool = True,
          spec: LabSpec | None = None) -> Pending:
    """Everything before the GPU: the lab, the isolation, the official tree (brought up to
    date unless the caller already did), the staging and the build. `spec`: the lab's
    lab.toml where the caller has read it already (it is read once per grade)."""
    seed = labs.choose_seed(seed)
    pending = Pending(new_result(lab, folder, seed, config), config)
    result = pending.result
    try:
        spec = pending.spec = spec if spec is not None else labs.load_lab(config, lab)
        result["lab_title"] = spec.title
        result["score"] = zero_score(spec.scoring).to_json()
        sandbox = Sandbox.detect(config)
        result["provenance"]["isolation"] = _isolation_record(sandbox, config, allow_unisolated)
        if not sandbox.isolation.official:
            if not allow_unisolated:
                raise NotIsolatedError("No grade was given: this machine cannot sandbox the student's code ("
                                   + sandbox.isolation.why_not_official() + "). Fix that (`cudalab doctor` "
                                   "says how) and grade again, or pass --allow-unisolated to grade anyway "
                                   "(the result then says it is not an official grade).")
            result["warnings"].append("This grade was given WITHOUT the sandbox (--allow-unisolated): the "
                                      "student's code ran with the grader's own powers, so it is not an "
                                      "official grade. Missing: " + "; ".join(sandbox.isolation.missing))
        with _phase(result, "official_build"):
            if bring_official_up_to_date:
                build.ensure_official(config, spec)
        pending.tmp = scratch_dir(config, f"grade-{spec.name}")
        try:
            with _phase(result, "build"):
                built = build.build_submission(config, spec, Path(folder), pending.tmp / "submission")
        except (SubmissionError, CompileError) as err:
            result["build"]["status"] = err.status
            result["build"]["feedback"] = getattr(err, "feedback", [])
            raise
        result["build"].update(status="built", copied=built.staged.copied, ignored=built.staged.ignored)
        result["warnings"] += [f"{name} was ignored: the {spec.name} lab only takes "
                               f"{', '.join(spec.files)}." for name in built.staged.ignored_files(spec)]
        pending.binary = built.binary
    except Exception as err:  # recorded now, reported by finish()
        pending.error = err
    return pending


def finish(pending: Pending, attachments_to: Path | None = None, device: dict | None = None,
           audit: AuditServer | None = None, early_timing: bool = False,
           own_audit: AuditServer | None = None) -> dict:
    """Run, check, time and score what begin() built (or report why it could not), clean up,
    and return the complete result document. Pictures the feedback links (difference images)
    are copied into `attachments_to` (the folder feedback.md goes to) when it is given;
    `device` is probe_device()'s answer when the caller probed the GPU already, `audit` the
    auditor and reference program a batch keeps for every grade on this GPU; `early_timing`
    and `own_audit`, see grade_built."""
    result, config = pending.result, pending.config
    try:
        if pending.error is not None:
            raise pending.error
        grade_built(result, config, pending.spec, pending.binary, pending.tmp, device, audit, early_timing, own_audit)
    except NoDeviceError as err:
        result["score"] = None  # not a zero: nothing was graded
        _set_status(result, Status.NOT_RUN, str(err))
    except CudalabError as err:
        _set_status(result, Status.reported(err.status), str(err))
    except Exception as err:  # a grader bug still leaves a result behind
        _set_status(result, Status.ERROR, f"The grader failed: {err!r}. This is not the student's fault.")
    finally:
        result["provenance"]["finished_at"] = report.timestamp()
        if attachments_to is not None:
            _copy_attachments(pending.tmp, attachments_to)
        if pending.tmp is not None and not config.keep_temp:
            remove_tree(pending.tmp)
    status = Status(result["status"])
    if status.scoreless:
        result["score"] = None  # nothing was graded (no device) or it was refused (no sandbox): not a zero
    elif status is not Status.GRADED and result["score"] is None:
        result["score"] = {"correctness": 0.0, "correctness_max": 0.0, "performance": 0.0,
                           "performance_max": 0.0, "total": 0.0, "total_max": 0.0}
    return result


def _copy_attachments(tmp: Path | None, out: Path) -> None:
    """The grade's pictures into out/images/, replacing those of an earlier grade there;
    copied without following a link at any component (safe_files.copy_tree)."""
    remove_tree(out / "images")
    drawn = None if tmp is None else tmp / ATTACHMENTS / "images"
    if drawn is not None and drawn.is_dir() and not drawn.is_symlink():
        out.mkdir(parents=True, exist_ok=True)
        safe_files.copy_tree(drawn, out / "images")
        os.chmod(out / "images", 0o755)  # beside feedback.md, as readable as it


def grade(config: Config, lab: str, folder: Path, seed: int | None = None,
          allow_unisolated: bool = False, attachments_to: Path | None = None) -> dict:
    """Grade `folder`; always return a complete result document (never raise for a failure).
    With `attachments_to`, the pictures its feedback links are written there. While the
    submission builds, the GPU is probed and the timing's auditor and reference program are
    started (official code only, on the CPUs left to timing)."""
    cpus.keep_to_work_cpus(config)
    started = time.perf_counter()
    spec = None
    try:
        spec = labs.load_lab(config, lab)
        build.ensure_official(config, spec)
    except CudalabError:  # begin() says what is wrong, in the result
        return finish(begin(config, lab, folder, seed, allow_unisolated, spec=spec), attachments_to)
    official_s = time.perf_counter() - started
    probe: dict = {}
    timing_scratch = scratch_dir(config, f"timing-{spec.name}")

    def probe_beside() -> None:
        began = time.perf_counter()
        try:
            probe["device"] = probe_device(config, spec)
        except CudalabError:
            return  # finish() probes again and reports it as a grade's own probe does
        finally:
            probe["seconds"] = time.perf_counter() - began
        if spec.scoring.performance_points > 0:
            began = time.perf_counter()
            probe["audit"] = _started_audit(config, spec, timing_scratch)
            probe["audit_seconds"] = time.perf_counter() - began

    thread = threading.Thread(target=probe_beside, name="device-probe", daemon=True)
    thread.start()
    try:
        pending = begin(config, lab, folder, seed, allow_unisolated, bring_official_up_to_date=False, spec=spec)
    finally:
        thread.join()
    phases = pending.result["provenance"]["phases_s"]
    phases["official_build"] = round(official_s, 2)
    if "device" in probe:
        phases["device_probe"] = round(probe["seconds"], 2)
    server = probe.get("audit")
    if server is not None:
        phases["audit_start"] = round(probe["audit_seconds"], 2)
    try:
        result = finish(pending, attachments_to, device=probe.get("device"), early_timing=True, own_audit=server)
    finally:
        if server is not None:
            server.close()  # (ended already once its last round was timed)
        remove_tree(timing_scratch)
    if server is not None:  # its programs are the grade's too
        result["provenance"]["processes"] = (result["provenance"].get("processes") or []) + server.runner.times
    return result


def _started_audit(config: Config, spec: LabSpec, scratch: Path) -> AuditServer | None:
    """The lab's auditor and reference program, started; None when they cannot start now
    (the grade then starts its own when it times, and reports what fails there)."""
    server = AuditServer.for_lab(config, spec, scratch)
    if server is None:
        return None
    try:
        server.start()
    except GraderError:
        server.close()
        return None
    return server
