"""A stand-in for a lab binary or the trusted checker, following the CLI contract of
docs/architecture.md, so the grade flow can be tested on a machine without a GPU.

Each fake binary is a two-line wrapper that runs this file with a BEHAVIOUR dict (see
fakes.write_fake). An output "dump" holds the text "<seed>:<case>"; the fake checker
expects exactly that.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

B = globals().get("BEHAVIOUR", {})
CASES = B.get("cases", [])
BENCH = B.get("bench_cases", [])


def expected(seed, case):
    return f"{seed}:{case}\n"


def dump_path(folder, case):
    return Path(folder) / f"{case}.c.bin"


def write_json(path, body):
    if path:
        Path(path).write_text(json.dumps(body))


def implementation(argv):
    if B.get("argv_log"):
        with open(B["argv_log"], "a") as log:
            log.write(json.dumps(argv) + "\n")
    p = argparse.ArgumentParser()
    p.add_argument("--case", action="append", default=[])
    p.add_argument("--bench-case", action="append", default=[])
    p.add_argument("--bench", action="store_true")
    p.add_argument("--samples", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--dump")
    p.add_argument("--json")
    p.add_argument("--quiet", action="store_true")
    p.add_argument("--no-self-check", action="store_true")
    p.add_argument("--list-cases", action="store_true")
    a = p.parse_args(argv)
    if a.no_self_check and not a.dump:
        p.error("--no-self-check needs --dump DIR")
    # As the real harness: without its self-check a run reports 'unchecked' and exits 0.
    judged = "unchecked" if a.no_self_check else None
    run = {"schema": "cudalab.run/1", "lab": "toy", "implementation": B.get("name", "fake"),
           "seed": a.seed, "mode": "bench" if a.bench else "check", "status": "passed",
           "device": {"name": "Fake GPU", "compute_capability": "9.0", "driver_version": 13000,
                      "runtime_version": 13000, "sm_clock_mhz": 1980.0},
           "cases": [], "bench": []}
    if a.list_cases:
        print("\n".join(CASES + BENCH))
        return 0
    if B.get("no_device"):
        run["status"] = "no_device"
        write_json(a.json, run)
        print("no CUDA device is available", file=sys.stderr)
        return 4
    if B.get("cuda_error"):
        print("CUDA error: an illegal memory access was encountered at toy.cu:12", file=sys.stderr)
        return 3
    if B.get("hang"):
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
        if B.get("pid_file"):
            Path(B["pid_file"]).write_text(str(child.pid))
        time.sleep(300)
    if a.dump:
        Path(a.dump).mkdir(parents=True, exist_ok=True)
    failed = False
    if a.bench:
        for name in a.bench_case or BENCH:
            time.sleep((a.warmup + a.samples) * B.get("sample_ms", 1.0) / 1000.0)
            if a.dump:
                dump_path(a.dump, name).write_text("poison" if B.get("bench_wrong") else expected(a.seed, name))
            median = B.get("report_ms", B.get("sample_ms", 1.0))
            run["bench"].append({"name": name, "status": judged or "passed", "median_ms": median,
                                 "spread": 0.01, "samples_ms": [median] * a.samples,
                                 "sm_clock_mhz_before": 1980.0, "sm_clock_mhz_after": 1970.0})
    else:
        for index, name in enumerate(a.case or CASES):
            if B.get("crash_after") == index:
                sys.stdout.flush()
                os.kill(os.getpid(), signal.SIGSEGV)
            wrong = name in B.get("wrong_cases", [])
            failed = failed or (wrong and not judged)
            if a.dump:
                dump_path(a.dump, name).write_text("wrong" if wrong else expected(a.seed, name))
            run["cases"].append({"name": name, "status": judged or ("failed" if wrong else "passed")})
    run["status"] = "failed" if failed else judged or "passed"
    write_json(a.json, run)
    return 1 if failed else 0


def checker(argv):
    p = argparse.ArgumentParser()
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--dump", required=True)
    p.add_argument("--verdict", required=True)
    p.add_argument("--case", action="append", default=[])
    p.add_argument("--bench-case", action="append", default=[])
    a = p.parse_args(argv)
    # The literal reading of the contract: without --case, every correctness case is checked,
    # even when bench cases are named. The grader must look only at the cases it wants.
    verdict = {"schema": "cudalab.verdict/1", "lab": "toy", "seed": a.seed, "cases": []}
    for name in (a.case or CASES) + a.bench_case:
        path = dump_path(a.dump, name)
        if not path.is_file():
            status, message = "missing", f"no output file {path.name}"
        elif path.read_text() != expected(a.seed, name):
            status, message = "failed", ("c[0] is wrong: expected 1.25, got 0 (allowed "
                                         "difference 0); 1 of 1 elements differ")
        else:
            status, message = "passed", ""
        verdict["cases"].append({"name": name, "params": {}, "status": status, "message": message})
    verdict["all_passed"] = all(c["status"] == "passed" for c in verdict["cases"])
    write_json(a.verdict, verdict)
    return 0 if verdict["all_passed"] else 1


if __name__ == "__main__":
    sys.exit(checker(sys.argv[1:]) if B.get("role") == "checker" else implementation(sys.argv[1:]))
