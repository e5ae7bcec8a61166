"""`cudalab grade`: grade one submission folder against the official harness.

Build it; if this machine has no CUDA device, stop with status not_run (exit 23, no grade);
otherwise run it in the sandbox with a seed chosen now, let the trusted checker judge the
dumped outputs (the only source of correctness points), then time it against the reference
solution in alternating rounds with the wall-clock cross-check. A result JSON is written
whatever happens, and feedback.md beside it.
"""
from __future__ import annotations

import argparse
import json
import platform
import secrets
import shutil
import statistics
import tempfile
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path

from . import __version__, build, console, labs, report
from .config import Config, cuda_device_present
from .errors import CompileError, CudalabError, GraderError, NoDeviceError, SubmissionError
from .exit_codes import Cli, Harness
from .labspec import LabSpec
from .sandbox import ProcessResult, run_untrusted
from .scoring import case_points, score as compute_score, zero as zero_score
from .timing import BenchRun, Round, TimingSummary, cross_check, samples_for_target

SCHEMA = "cudalab.grade/1"
STATUS_EXIT = {"graded": Cli.DONE, "not_run": Cli.NO_DEVICE, "compile_error": Cli.COMPILE_ERROR,
               "submission_error": Cli.SUBMISSION_INVALID, "unknown_lab": Cli.UNKNOWN_LAB,
               "error": Cli.INTERNAL}


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _read_json(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def failure_reason(result: ProcessResult) -> str:
    """Why a run of the submission went wrong, in words, with the first lines of stderr."""
    head = result.stderr_head(4)
    if result.status == "no_device":
        reason = ("the program reported that there is no CUDA device (exit 4), although the "
                  "reference solution ran on this GPU")
    elif result.status == "usage":
        reason = "the program rejected the grader's command line (exit 2)"
    elif result.status == "internal":
        reason = "the harness could not do its job (exit 6), for instance writing its output"
    else:
        reason = result.describe()
    if result.status == "cuda_error" and head:
        return head if head.lower().startswith("cuda error") else f"CUDA error: {head}"
    return f"{reason}: {head}" if head and not result.timed_out else reason


class _PerformanceZero(Exception):
    """Performance scores zero for a reason the student should read."""


class GradingSession:
    """One grading of one built submission: seed, temp folder, binaries, isolation."""

    def __init__(self, config: Config, spec: LabSpec, submission: Path, seed: int, tmp: Path):
        self.config, self.spec, self.seed, self.tmp = config, spec, seed, tmp
        self.reference = labs.official_binary(config, spec.name, "solution")
        self.checker = labs.official_binary(config, spec.name, "checker")
        self.submission = submission
        self.network_isolation = config.network_isolation
        self.isolation = ""
        self.isolation_note = ""
        self.device: dict = {}
        self.bench_clocks: list[float] = []
        self._runs = 0

    # -- running ----------------------------------------------------------------------------
    def _run(self, argv: list) -> ProcessResult:
        result = run_untrusted(argv, self.config, network_isolation=self.network_isolation)
        self.isolation = result.isolation + self.isolation_note
        return result

    def _fresh(self, stem: str) -> Path:
        self._runs += 1
        return self.tmp / f"{self._runs:02d}-{stem}"

    def probe_device(self) -> None:
        """Run the reference on the first case: its exit 4 is the authority on 'no device'."""
        first = self.spec.cases[0].name
        out = self._fresh("probe")
        out.mkdir()
        argv = [self.reference, "--case", first, "--seed", self.seed, "--json", out / "run.json",
                "--quiet"]
        result = self._run(argv)
        if result.exit_code == Harness.NO_DEVICE and self.network_isolation and cuda_device_present():
            # Some drivers refuse a user namespace: then grade without it, and say so.
            retry = run_untrusted(argv, self.config, network_isolation=False)
            if retry.exit_code != Harness.NO_DEVICE:
                self.network_isolation = False
                self.isolation_note = " (network isolation dropped: CUDA failed inside the namespace)"
                result = self._run(argv)
        if result.exit_code == Harness.NO_DEVICE:
            raise NoDeviceError("There is no CUDA device on this machine (the reference solution "
                                "exits with 'no device'), so the submission was built but not "
                                "run. No grade was given; grade it on a machine with a GPU.")
        if result.exit_code != Harness.PASSED:
            raise GraderError(f"The reference solution failed on case {first} on this machine "
                              f"({failure_reason(result)}). This is a problem with the lab or "
                              "the machine, not with the submission.")
        self.device = (_read_json(out / "run.json") or {}).get("device", {})

    def check(self, dump: Path, bench_case: str | None = None) -> dict[str, dict]:
        """Run the trusted checker over a dump; return its verdict per case name. The verdict
        goes to a folder made now with an unpredictable name, so no file the student's process
        left behind can pass for it."""
        verdict_path = Path(tempfile.mkdtemp(prefix="verdict-", dir=self.tmp)) / "verdict.json"
        argv = [self.checker, "--seed", self.seed, "--dump", dump, "--verdict", verdict_path]
        if bench_case:
            argv += ["--bench-case", bench_case]
        result = self._run(argv)
        verdict = _read_json(verdict_path)
        if result.exit_code not in (Harness.PASSED, Harness.FAILED) or verdict is None:
            raise GraderError(f"The checker could not judge the outputs ({result.describe()}: "
                              f"{result.stderr_head(4) or 'no message'}).")
        return {c.get("name"): c for c in verdict.get("cases", []) if isinstance(c, dict)}

    # -- correctness ------------------------------------------------------------------------
    def run_correctness(self) -> tuple[list[dict], dict]:
        out = self._fresh("check")
        (out / "dump").mkdir(parents=True)
        console.info(f"Running the submission on {len(self.spec.cases)} cases (seed {self.seed})")
        result = self._run([self.submission, "--seed", self.seed, "--dump", out / "dump",
                            "--no-self-check", "--json", out / "run.json", "--quiet"])
        console.info("Checking its outputs with the trusted checker")
        verdicts = self.check(out / "dump")
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
        run = {"status": result.status, "exit_code": result.exit_code,
               "wall_s": round(result.wall_s, 4), "description": result.describe(),
               "stderr_head": result.stderr_head(10)}
        return cases, run

    # -- performance ------------------------------------------------------------------------
    def _bench(self, binary: Path, samples: int, who: str) -> tuple[ProcessResult, Path, dict | None]:
        out = self._fresh(f"bench-{who}-{samples}")
        (out / "dump").mkdir(parents=True)
        case = self.spec.scoring.timing_case
        result = self._run([binary, "--bench", "--bench-case", case, "--samples", samples,
                            "--seed", self.seed, "--dump", out / "dump", "--no-self-check",
                            "--json", out / "run.json"])
        run_json = _read_json(out / "run.json")
        entry = None
        if run_json:
            entry = next((b for b in run_json.get("bench", []) if isinstance(b, dict)
                          and b.get("name") == case), None)
        return result, out, entry

    @staticmethod
    def _bench_run(samples: int, result: ProcessResult, entry: dict | None) -> BenchRun:
        def number(key: str) -> float | None:
            value = (entry or {}).get(key)
            return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
        return BenchRun(samples, result.wall_s, number("median_ms"), number("spread"))

    def bench_reference(self, samples: int) -> BenchRun:
        result, out, entry = self._bench(self.reference, samples, "reference")
        if result.exit_code != Harness.PASSED or entry is None or entry.get("median_ms") is None:
            raise GraderError(f"The reference solution's timed run failed ({failure_reason(result)}).")
        for key in ("sm_clock_mhz_before", "sm_clock_mhz_after"):
            if isinstance(entry.get(key), (int, float)):
                self.bench_clocks.append(float(entry[key]))
        self._discard(out)
        return self._bench_run(samples, result, entry)

    def bench_submission(self, samples: int) -> BenchRun:
        case = self.spec.scoring.timing_case
        result, out, entry = self._bench(self.submission, samples, "submission")
        if result.status not in ("passed", "failed"):
            raise _PerformanceZero(f"In the timed runs on {case}, {failure_reason(result)}.")
        verdict = self.check(out / "dump", bench_case=case).get(case, {})
        if verdict.get("status") != "passed":
            raise _PerformanceZero(
                f"Your program's output in the timed runs was wrong ({case}: "
                f"{verdict.get('message') or verdict.get('status', 'no output')}). Code that is "
                "fast but wrong earns no performance points; make sure every call does the "
                "whole computation.")
        self._discard(out)
        return self._bench_run(samples, result, entry)

    def _discard(self, out: Path) -> None:
        if not self.config.keep_temp:
            shutil.rmtree(out / "dump", ignore_errors=True)

    def measure_performance(self) -> dict:
        config, scoring = self.config, self.spec.scoring
        perf: dict = {"status": "scored", "timing_case": scoring.timing_case, "message": "",
                      "ratio": None, "samples": None, "cross_check": None, "rounds": []}
        low, high = config.samples_low, None
        reference_rounds: list[Round] = []
        student_rounds: list[Round] = []
        try:
            for number in range(1, config.timing_rounds + 1):
                console.info(f"Timing round {number} of {config.timing_rounds} on {scoring.timing_case}")
                ref_low = self.bench_reference(low)
                if high is None:
                    high = samples_for_target(low, config.samples_high, config.samples_max,
                                              ref_low.event_median_ms, config.timing_target_s)
                    perf["samples"] = [low, high]
                sub_low = self.bench_submission(low)
                self._stop_if_surely_too_slow(sub_low, ref_low, perf)
                ref_high = self.bench_reference(high)
                sub_high = self.bench_submission(high)
                reference_rounds.append(Round(ref_low, ref_high))
                student_rounds.append(Round(sub_low, sub_high))
                perf["rounds"].append({"reference": [asdict(ref_low), asdict(ref_high)],
                                       "submission": [asdict(sub_low), asdict(sub_high)]})
        except _PerformanceZero as zero:
            perf.update(status="zero", message=str(zero))
            return perf
        reference, student = TimingSummary.of(reference_rounds), TimingSummary.of(student_rounds)
        checked = cross_check(reference, student, config.timing_disagreement_factor,
                              config.timing_noise_floor)
        perf.update(ratio=checked.ratio, message=checked.message, cross_check=checked.to_json(),
                    spread={"reference": reference.spread, "submission": student.spread,
                            "reference_wall_rounds": reference.wall_round_spread,
                            "submission_wall_rounds": student.wall_round_spread})
        return perf

    def _stop_if_surely_too_slow(self, student: BenchRun, reference: BenchRun, perf: dict) -> None:
        """A process can only lie its event time downwards, so an event time already past the
        zero-marks ratio settles performance without more runs."""
        zero_at = self.spec.scoring.zero_marks_ratio
        if student.event_median_ms and reference.event_median_ms:
            ratio = student.event_median_ms / reference.event_median_ms
            if ratio >= zero_at:
                perf["ratio"] = ratio
                raise _PerformanceZero(f"Your code takes {ratio:.3g} times as long as the "
                                       f"reference on {self.spec.scoring.timing_case}; performance "
                                       f"points stop at {zero_at:g} times.")


# --- assembling the result --------------------------------------------------------------------

def new_result(lab: str, folder: Path, seed: int, config: Config) -> dict:
    return {
        "schema": SCHEMA, "cudalab_version": __version__, "lab": lab, "lab_title": lab,
        "submission": {"name": Path(folder).resolve().name, "folder": str(Path(folder).resolve())},
        "status": "error", "exit_code": int(Cli.INTERNAL), "message": "", "score": None,
        "build": {"status": "not_built", "copied": [], "ignored": [], "feedback": []},
        "cases": [], "performance": None, "run": None, "warnings": [],
        "provenance": {"seed": seed, "started_at": _now(), "finished_at": None,
                       "cudalab_version": __version__, "preset": config.preset,
                       "official_build": str(config.build_dir), "host": platform.node(),
                       "python": platform.python_version(), "isolation": None, "gpu": None,
                       "compute_capability": None, "driver_version": None,
                       "runtime_version": None, "sm_clock_mhz": None, "spread": None},
    }


def _set_status(result: dict, status: str, message: str = "") -> None:
    result["status"] = status
    result["exit_code"] = int(STATUS_EXIT[status])
    result["message"] = message


def _record_session(result: dict, session: GradingSession) -> None:
    device = session.device
    clocks = session.bench_clocks
    result["provenance"].update(
        isolation=session.isolation or None, gpu=device.get("name"),
        compute_capability=device.get("compute_capability"),
        driver_version=device.get("driver_version"), runtime_version=device.get("runtime_version"),
        sm_clock_mhz=statistics.median(clocks) if clocks else device.get("sm_clock_mhz"))


def grade_built(result: dict, config: Config, spec: LabSpec, binary: Path, tmp: Path) -> None:
    """Run, check, time and score a built submission, filling `result` as it goes."""
    session = GradingSession(config, spec, binary, result["provenance"]["seed"], tmp)
    try:
        session.probe_device()
        cases, run = session.run_correctness()
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
        else:
            perf = session.measure_performance()
        ratio = perf.get("ratio") if perf.get("status") == "scored" else None
        points = compute_score(spec.scoring, passed, ratio)
        perf.update(points=points.performance, max_points=points.performance_max,
                    timing_case=spec.scoring.timing_case)
        result["performance"] = perf
        result["score"] = points.to_json()
        result["provenance"]["spread"] = perf.get("spread")
        _set_status(result, "graded", f"{sum(passed)} of {len(passed)} cases passed.")
    finally:
        _record_session(result, session)


def grade(config: Config, lab: str, folder: Path, seed: int | None = None) -> dict:
    """Grade `folder`; always return a complete result document (never raise for a failure)."""
    seed = secrets.randbits(63) if seed is None else seed
    result = new_result(lab, folder, seed, config)
    tmp = None
    try:
        spec = labs.load_lab(config, lab)
        result["lab_title"] = spec.title
        result["score"] = zero_score(spec.scoring).to_json()
        config.temp_dir.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f"grade-{spec.name}-", dir=config.temp_dir))
        try:
            build.ensure_official(config, spec)
            built = build.build_submission(config, spec, Path(folder), tmp / "submission")
        except (SubmissionError, CompileError) as err:
            result["build"]["status"] = err.status
            result["build"]["feedback"] = getattr(err, "feedback", [])
            raise
        result["build"].update(status="built", copied=built.staged.copied,
                               ignored=built.staged.ignored)
        result["warnings"] += [f"{name} was ignored: the {spec.name} lab only takes "
                               f"{', '.join(spec.files)}." for name in built.staged.ignored]
        grade_built(result, config, spec, built.binary, tmp)
    except NoDeviceError as err:
        result["score"] = None  # not a zero: nothing was graded
        _set_status(result, err.status, str(err))
    except CudalabError as err:
        _set_status(result, err.status if err.status in STATUS_EXIT else "error", str(err))
    except Exception as err:  # a grader bug still leaves a result behind
        _set_status(result, "error", f"The grader failed: {err!r}. This is not the student's fault.")
    finally:
        result["provenance"]["finished_at"] = _now()
        if tmp is not None and not config.keep_temp:
            shutil.rmtree(tmp, ignore_errors=True)
    if result["status"] not in ("graded", "not_run") and result["score"] is None:
        result["score"] = {"correctness": 0.0, "correctness_max": 0.0, "performance": 0.0,
                           "performance_max": 0.0, "total": 0.0, "total_max": 0.0}
    return result


# --- the verb ---------------------------------------------------------------------------

def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("lab", help="the lab to grade against")
    parser.add_argument("folder", type=Path, help="the submission folder")
    parser.add_argument("--seed", type=int, help="grading seed (default: chosen at random now)")
    parser.add_argument("--out", type=Path, help="where result.json and feedback.md go "
                        "(default <work dir>/<lab>/<submission name>/)")


def main(args: argparse.Namespace, config: Config) -> int:
    result = grade(config, args.lab, args.folder, seed=args.seed)
    out = args.out or config.work_dir / Path(args.lab).name / Path(args.folder).resolve().name
    paths = report.write_outputs(out, result)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        console.text(report.render_summary(result))
    console.info(f"Wrote {paths['result']} and {paths['feedback']}")
    return result["exit_code"]
