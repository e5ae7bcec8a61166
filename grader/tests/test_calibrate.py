"""`cudalab calibrate` and labs/<lab>/calibration.json: the reference timed as the ladder
times a rung, the file written with its provenance, one entry per GPU model (replaced when
calibrated again), malformed files told in a sentence; and `cudalab run --bench` showing a
student's time over the calibrated reference's, also where no solution binary exists.
Programs are the fakes of fake_program.py in the sandbox."""
from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from cudalab.building import build
from cudalab.grading import calibration
from cudalab import cli
from cudalab.lab import labspec
from cudalab.grading.calibration import Calibration, CalibrationError
from cudalab.exit_codes import Cli
from conftest import REPO_ROOT, seal, write_fake
from test_run import fake_builds

SCHEMA = REPO_ROOT / "grader" / "cudalab" / "schemas" / "calibration.schema.json"
H100, H200 = "NVIDIA H100 80GB HBM3", "NVIDIA H200"
FAST = ["--samples", "3", "--warmup", "1", "--seed", "7"]


def schema_validator():
    jsonschema = pytest.importorskip("jsonschema",
                                     reason="jsonschema is a test dependency (pip install -e grader[test])")
    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())


def solution(env, **behaviour):
    """The toy lab's reference, as a fake that reports the copy roof and the library."""
    behaviour.setdefault("sample_ms", 2.0)
    write_fake(env.bin_dir / "toy_solution", name="toy_solution", baselines=True, **behaviour)
    seal(env.root)


def calibration_file(env) -> Path:
    return env.root / "labs" / "toy" / "calibration.json"


def calibrate(capsys, *extra: str) -> dict:
    assert cli.main(["calibrate", "toy", *FAST, "--json", *extra]) == 0
    return json.loads(capsys.readouterr().out)


def test_calibrate_records_the_reference_with_its_provenance(toy_env, capsys):
    solution(toy_env, gpu_name=H100)
    said = calibrate(capsys)
    assert said["schema"] == "cudalab.calibrate/1"
    assert [(o["lab"], o["status"], o["gpu"], o["replaced"]) for o in said["labs"]] == [
        ("toy", "recorded", H100, False)]
    body = json.loads(calibration_file(toy_env).read_text())
    schema_validator().validate(body)
    assert body["schema"] == "cudalab.calibration/1" and body["lab"] == "toy"
    [entry] = body["entries"]
    assert entry["gpu"] == {"name": H100, "compute_capability": "9.0", "sm_count": 132, "memory_bytes": 85 * 2 ** 30}
    assert entry["driver"]["cuda"] == "13.0" and entry["cuda_runtime"] == "13.0"
    assert entry["sm_clock_mhz"] == {"at_start": 1980.0, "before": 1980.0, "after": 1965.0}
    assert datetime.fromisoformat(entry["calibrated_at"]).tzinfo is not None
    assert entry["cudalab_version"] and (entry["seed"], entry["samples"], entry["warmup"]) == (7, 3, 1)
    assert entry["reference"] == {"implementation": "solution", "source": "toy.cu", "rung": "the solution"}
    assert entry["gpu_sharing"]["known"] in (True, False) and entry["ladder"] is None
    [case] = entry["cases"]
    assert case["name"] == "b_1000" and case["status"] == "timed" and case["verdict"] == "passed"
    assert case["params"] == {"n": 1000} and case["bytes_moved"] == 12000
    assert (case["median_ms"], case["min_ms"], case["max_ms"], case["spread"]) == (2.0, 1.96, 2.1, 0.01)
    assert case["copy_gbps"] == 12.0 and case["library"]["name"] == "CUB" and case["library"]["median_ms"] == 1.6
    assert (case["sm_clock_mhz_before"], case["sm_clock_mhz_after"]) == (1980.0, 1965.0)
    # The file is read back by the module that owns it.
    known = calibration.load(toy_env, calibration_spec(toy_env))
    assert known.gpu_names == [H100] and known.entry_for(" nvidia h100  80GB HBM3") is not None
    assert known.entry_for(H200) is None


def calibration_spec(env):
    from cudalab.lab import labs
    return labs.load_lab(env, "toy")


def test_calibrating_a_gpu_model_again_replaces_its_entry_and_keeps_the_others(toy_env, capsys):
    solution(toy_env, gpu_name=H200, sample_ms=1.5)
    calibrate(capsys)
    solution(toy_env, gpu_name=H100, sample_ms=2.0)
    calibrate(capsys)
    solution(toy_env, gpu_name=H100, sample_ms=3.0)
    said = calibrate(capsys)
    assert said["labs"][0]["replaced"] is True
    body = json.loads(calibration_file(toy_env).read_text())
    schema_validator().validate(body)
    assert [(e["gpu"]["name"], e["cases"][0]["median_ms"]) for e in body["entries"]] == [(H100, 3.0), (H200, 1.5)]


def test_calibrate_ladder_records_every_rungs_medians(toy_env, capsys):
    solution(toy_env, gpu_name=H100)
    write_fake(toy_env.bin_dir / "toy_ladder_simple", name="toy_ladder_simple", sample_ms=5.0)
    seal(toy_env.root)
    calibrate(capsys, "--ladder")
    body = json.loads(calibration_file(toy_env).read_text())
    schema_validator().validate(body)
    ladder = body["entries"][0]["ladder"]
    assert (ladder["seed"], ladder["samples"], ladder["warmup"]) == (7, 3, 1)
    [case] = ladder["cases"]
    assert case["name"] == "b_1000" and case["library"]["name"] == "CUB"
    assert [(r["name"], r["source"], r["median_ms"], r["verdict"]) for r in case["rungs"]] == [
        ("simple", "ladder/simple.cu", 5.0, "passed"), ("the solution", "toy.cu", 2.0, "passed")]
    assert case["rungs"][1]["speedup_over_previous"] == 2.5


def test_the_table_says_what_was_recorded(toy_env, capsys):
    solution(toy_env, gpu_name=H100)
    assert cli.main(["calibrate", "toy", *FAST]) == 0
    said = capsys.readouterr()
    assert f"toy: the reference solution on {H100}" in said.out
    assert said.out.splitlines()[2].split()[:2] == ["b_1000", "2.0000"]
    assert "compute capability 9.0" in said.out and "3 samples per case" in said.out
    assert f"recorded in {calibration_file(toy_env)} for {H100}" in said.err


def test_a_reference_the_checker_rejects_is_never_recorded(toy_env, capsys):
    solution(toy_env, bench_wrong=True)
    assert cli.main(["calibrate", "toy", *FAST]) == Cli.INTERNAL
    err = capsys.readouterr().err
    assert "did not pass the checker" in err and "nothing was recorded" in err and "Traceback" not in err
    assert not calibration_file(toy_env).exists()


def test_no_device_records_nothing(toy_env, capsys):
    solution(toy_env, no_device=True)
    assert cli.main(["calibrate", "toy", *FAST]) == Cli.NO_DEVICE
    assert "No CUDA device" in capsys.readouterr().err
    assert not calibration_file(toy_env).exists()


def test_a_malformed_file_stops_calibrate_before_anything_is_timed(toy_env, capsys):
    solution(toy_env, gpu_name=H100)
    calibration_file(toy_env).write_text('{"schema": "cudalab.calibration/1", "lab": "toy", "entries": [')
    assert cli.main(["calibrate", "toy", *FAST]) == Cli.INTERNAL
    err = capsys.readouterr().err
    assert f"{calibration_file(toy_env)} is not valid JSON" in err and "cudalab calibrate toy" in err
    assert calibration_file(toy_env).read_text().endswith("[")  # left as it was


def test_calibrate_all_and_unknown_labs(toy_env, capsys):
    solution(toy_env, gpu_name=H100)
    assert cli.main(["calibrate", "all", *FAST, "--json"]) == 0
    assert [o["lab"] for o in json.loads(capsys.readouterr().out)["labs"]] == ["toy"]
    assert cli.main(["calibrate", "nolab"]) == Cli.UNKNOWN_LAB
    assert "There is no lab called 'nolab'" in capsys.readouterr().err


# --- the file's format -------------------------------------------------------------------------

def entry(gpu: str = H100, median_ms: float = 2.0, **changes) -> dict:
    """A calibration entry as `cudalab calibrate` writes one, for the toy lab."""
    made = {
        "gpu": {"name": gpu, "compute_capability": "9.0", "sm_count": 132, "memory_bytes": 85899345920},
        "driver": {"version": "580.95.05", "cuda": "13.0"}, "cuda_runtime": "13.0", "toolkit": "13.0.88",
        "sm_clock_mhz": {"at_start": 1980.0, "before": 1980.0, "after": 1755.0},
        "calibrated_at": "2026-11-23T10:00:00+00:00", "cudalab_version": "0.1.0",
        "reference": {"implementation": "solution", "source": "toy.cu", "rung": "the solution"},
        "seed": 7, "samples": 30, "warmup": 5, "gpu_sharing": {"known": True, "waited_s": 0.0, "busy_with": []},
        "cases": [{"name": "b_1000", "params": {"n": 1000}, "bytes_moved": 12000.0, "status": "timed",
                   "median_ms": median_ms, "min_ms": 0.9 * median_ms, "max_ms": 1.2 * median_ms, "spread": 0.01,
                   "gbps": 6.0, "tflops": None, "copy_gbps": 12.0, "fraction_of_copy": 0.5,
                   "library": {"name": "CUB", "median_ms": 1.6, "spread": 0.02, "gbps": 7.5},
                   "fraction_of_library": 0.8, "items_name": None, "items_per_s": None, "library_items_per_s": None,
                   "sm_clock_mhz_before": 1980.0, "sm_clock_mhz_after": 1755.0, "verdict": "passed"}],
        "ladder": None,
    }
    made.update(changes)
    return made


def write_calibration(env, *entries: dict) -> Path:
    spec = calibration_spec(env)
    known = calibration.empty(env, spec)
    for one in entries:
        known = known.with_entry(one)
    calibration.write(known)
    return known.path


def test_a_case_is_recorded_with_the_photograph_it_tiles():
    spec = labspec.load(REPO_ROOT / "labs" / "sobel" / "lab.toml")
    bench = spec.case("v2_16384")
    assert calibration.case_inputs(bench) == {"version": 2, "width": 16384, "height": 16384, "pattern": 2,
                                              "threshold": 10000, "tiles": "chelsea"}


def test_written_entries_follow_the_schema_sorted_by_gpu_name(toy_env):
    path = write_calibration(toy_env, entry(H200), entry(H100))
    body = json.loads(path.read_text())
    schema_validator().validate(body)
    assert [e["gpu"]["name"] for e in body["entries"]] == [H100, H200]


def test_ratio_is_the_students_time_over_the_calibrated_one():
    made = entry(median_ms=2.0)
    assert calibration.ratio(made, "b_1000", 3.0) == 1.5
    with pytest.raises(CalibrationError, match="has no time of the reference for the bench case b_9"):
        calibration.ratio(made, "b_9", 3.0)
    with pytest.raises(CalibrationError, match="positive number of milliseconds"):
        calibration.ratio(made, "b_1000", 0.0)
    skipped = entry(cases=[{"name": "b_1000", "params": {}, "bytes_moved": 1.0, "status": "skipped",
                            "reason": "needs about 3.0 GiB of GPU memory"}])
    with pytest.raises(CalibrationError):
        calibration.ratio(skipped, "b_1000", 3.0)


# (the file, what the reader says, whether the schema alone can tell: it cannot know the
# folder a file lies in, nor compare GPU names across entries)
MALFORMED = [
    ("[]", "the file must be an object", True),
    ('{"schema": "cudalab.calibration/2", "lab": "toy", "entries": []}', "written by another version of cudalab",
     True),
    ('{"schema": "cudalab.calibration/1", "lab": "sort", "entries": []}', "'lab' is 'sort'", False),
    ('{"schema": "cudalab.calibration/1", "lab": "toy", "entries": {}}', "'entries' must be a list", True),
    (json.dumps({"schema": "cudalab.calibration/1", "lab": "toy", "entries": [entry(), entry()]}),
     "entries[1].gpu.name 'NVIDIA H100 80GB HBM3' is the GPU model of entries[0] too", False),
    (json.dumps({"schema": "cudalab.calibration/1", "lab": "toy", "entries": [entry(median_ms=-1.0)]}),
     "entries[0].cases[0].median_ms must be a positive number, not -1.0", True),
    (json.dumps({"schema": "cudalab.calibration/1", "lab": "toy", "entries": [entry(gpu="")]}),
     "entries[0].gpu.name must be non-empty text", True),
    (json.dumps({"schema": "cudalab.calibration/1", "lab": "toy",
                 "entries": [entry(ladder={"samples": 30,
                                           "cases": [{"name": "b_1000", "rungs": [{"name": "x"}]}]})]}),
     "entries[0].ladder.cases[0].rungs[0].verdict must be non-empty text (it is missing)", True),
    ("{", "is not valid JSON", False),
    (json.dumps({"schema": "cudalab.calibration/1", "lab": "toy", "entries": [entry(driver="580.95.05")]}),
     "entries[0].driver must be an object, not str", True),
    (json.dumps({"schema": "cudalab.calibration/1", "lab": "toy", "entries": [entry(samples=0)]}),
     "entries[0].samples must be a whole number from 1, not 0", True),
    (json.dumps({"schema": "cudalab.calibration/1", "lab": "toy", "entries": [entry(cases=[
        {**entry()["cases"][0], "library": {"name": "CUB"}}])]}),
     "entries[0].cases[0].library.median_ms must be a positive number (it is missing)", True),
]


@pytest.mark.parametrize("text, said, schema_tells", MALFORMED, ids=[said for _, said, _ in MALFORMED])
def test_a_malformed_file_is_one_sentence_where_it_is_wrong(tmp_path, text, said, schema_tells):
    path = tmp_path / "calibration.json"
    path.write_text(text)
    with pytest.raises(CalibrationError) as caught:
        calibration.read(path, "toy")
    assert said in str(caught.value) and str(path) in str(caught.value)
    assert "cudalab calibrate toy" in str(caught.value)
    if schema_tells:  # what the reader refuses, the schema refuses too
        assert list(schema_validator().iter_errors(json.loads(text))), "the schema accepts what the reader refuses"


def test_no_file_is_no_calibration(tmp_path):
    assert calibration.read(tmp_path / "calibration.json", "toy") is None


# --- cudalab run --bench --------------------------------------------------------------------------

def student(monkeypatch, tmp_path, **behaviour) -> None:
    """Builds of the student's folder give a fake program on the toy's own fake GPU."""
    fake_builds(monkeypatch, write_fake(tmp_path / "built" / "toy_submission", **behaviour))


def test_run_bench_shows_the_time_over_the_calibrated_reference(toy_env, toy_submission, monkeypatch, tmp_path,
                                                                capsys):
    solution(toy_env, sample_ms=2.0)  # the toy's fake GPU is "Fake GPU"
    calibrate(capsys)
    student(monkeypatch, tmp_path, sample_ms=3.0)
    assert cli.main(["run", "toy", str(toy_submission), "--bench"]) == 0
    out = capsys.readouterr().out
    header, row = out.splitlines()[1:3]
    assert header.split()[-2:] == ["vs", "reference"] and row.split()[0] == "b_1000" and row.split()[-1] == "1.50x"
    today = calibration.date(json.loads(calibration_file(toy_env).read_text())["entries"][0])
    assert (f"vs reference: your time / the calibrated time of the reference solution on Fake GPU "
            f"(calibrated {today}, ") in out and "CUDA 13.0)." in out
    assert "it scores `b_1000`: every speed point at or below 1.1, none at or above 3" in out
    assert cli.main(["run", "toy", str(toy_submission), "--bench", "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["calibration"]["ratios"] == {"b_1000": 1.5} and body["calibration"]["calibrated_gpu"] == "Fake GPU"


def test_run_bench_says_plainly_when_this_gpu_model_has_no_calibration(toy_env, toy_submission, monkeypatch,
                                                                       tmp_path, capsys):
    student(monkeypatch, tmp_path, sample_ms=3.0)
    assert cli.main(["run", "toy", str(toy_submission), "--bench"]) == 0
    out = capsys.readouterr().out
    assert ("The toy lab's reference is not calibrated yet on any GPU, so there is no reference time to compare "
            "with here") in out and "vs reference" not in out
    write_calibration(toy_env, entry(H200), entry(H100))
    assert cli.main(["run", "toy", str(toy_submission), "--bench"]) == 0
    out = capsys.readouterr().out
    assert ("No calibration of the toy lab's reference exists for Fake GPU, so there is no reference time to "
            f"compare with here; it is calibrated on {H100} and {H200}.") in out
    assert out.splitlines()[1].split()[-1] == "spread"  # no ratio column
    assert cli.main(["run", "toy", str(toy_submission)]) == 0  # without --bench, nothing is said about it
    assert "calibrat" not in capsys.readouterr().out


def test_run_bench_works_without_the_solution_binary(toy_env, toy_submission, monkeypatch, tmp_path, capsys):
    """A copy of the course without solutions (a student bundle): only the checker and the
    SDK are there, nothing is built, and the ratio comes from the calibration alone."""
    (toy_env.bin_dir / "toy_solution").unlink()
    seal(toy_env.root)
    monkeypatch.setattr(build, "build_official", lambda config, targets=(): pytest.fail("built the official tree"))
    write_calibration(toy_env, entry("Fake GPU", median_ms=4.0))
    student(monkeypatch, tmp_path, sample_ms=3.0)
    assert cli.main(["run", "toy", str(toy_submission), "--bench", "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["verdicts"]["b_1000"]["status"] == "passed"
    assert body["calibration"]["ratios"] == {"b_1000": 0.75}
    assert "calibrated 2026-11-23, driver 580.95.05, CUDA 13.0" in body["calibration"]["sentence"]


def test_a_malformed_calibration_is_a_warning_in_run(toy_env, toy_submission, monkeypatch, tmp_path, capsys):
    calibration_file(toy_env).write_text('{"schema": "something else"}')
    student(monkeypatch, tmp_path)
    assert cli.main(["run", "toy", str(toy_submission), "--bench"]) == 0
    err = capsys.readouterr().err
    assert "warning: No comparison with the reference's time" in err and "has schema 'something else'" in err
    assert "Traceback" not in err


def test_compare_bench_leaves_out_what_cannot_be_compared(toy_env):
    spec = calibration_spec(toy_env)
    known = Calibration(calibration.path(toy_env, spec), "toy", (entry("Fake GPU", median_ms=2.0),))
    run = {"device": {"name": "Fake GPU"},
           "bench": [{"name": "b_1000", "status": "skipped", "reason": "too large"},
                     {"name": "b_other", "status": "unchecked", "median_ms": 1.0}]}
    assert calibration.compare_bench(known, spec, run, "your")["ratios"] == {"b_1000": None, "b_other": None}
    assert calibration.compare_bench(known, spec, {"status": "no_device"}, "your") == {}
