"""A stand-in for a lab binary or the trusted checker, following the contract of
docs/architecture.md (command lines, dumps, the paced-timing protocol, verdicts), so the
grade flow can be tested on a machine without a GPU.

conftest.write_fake copies this file into an executable for /usr/bin/python3 (the sandbox
shows /usr and nothing of the repository), after a line `BEHAVIOUR = {...}`. An output
"dump" holds the text "<seed>:<case>"; the fake checker expects exactly that, and the
"hash" of a dump under a key is the first 32 hex digits of sha256(key + text).
"""
import argparse
import hashlib
import json
import os
import signal
import sys
import time
from pathlib import Path

B = globals().get("BEHAVIOUR", {})
CASES = B.get("cases", [])
BENCH = B.get("bench_cases", [])


def expected(seed, case):
    return f"{seed}:{case}\n"


def fake_hash(key, text):
    return hashlib.sha256((key + text).encode()).hexdigest()[:32]


def dump_path(folder, case):
    return Path(folder) / f"{case}.c.bin"


def write_json(path, body):
    if path:
        Path(path).write_text(json.dumps(body))


def paced(a, run):
    """The grader's protocol on --control-in/--control-out (one bench case)."""
    case = a.bench_case[0]
    control_in = os.fdopen(a.control_in, "r")
    control_out = os.fdopen(a.control_out, "w")

    def say(line):
        control_out.write(line + "\n")
        control_out.flush()

    say(f"ready {case} c")
    timed = []
    while True:
        line = control_in.readline().split()
        if line == ["end"]:
            break
        number, seed, key, kind = line[1], int(line[2]), line[3], line[4]
        if B.get("paced_crash_at") == int(number):  # dies in the middle of a paced run
            os.kill(os.getpid(), signal.SIGSEGV)
        # The harness's own work stands at 0.3 ms; a blank sample skips the code under test.
        time.sleep((0.3 + (0 if kind == "blank" else B.get("sample_ms", 1.0))) / 1000.0)
        text = "poison\n" if B.get("bench_wrong") else expected(seed, case)
        if kind == "timed":
            timed.append(B.get("report_ms", B.get("sample_ms", 1.0)))
        if B.get("bad_reply"):  # a program that does not follow the protocol
            say(B["bad_reply"])
            continue
        say(f"done {number} {B.get('report_ms', B.get('sample_ms', 1.0))} {fake_hash(key, text)}")
        if control_in.readline().strip() == "keep":
            folder = Path(a.dump) / f"sample-{number}"
            folder.mkdir(parents=True, exist_ok=True)
            dump_path(folder, case).write_text("forged\n" if B.get("dump_other_than_reported") else text)
            say(f"kept {number}")
    run["bench"] = [{"name": case, "status": "unchecked", "paced": True, "samples_ms": timed,
                     "median_ms": sorted(timed)[len(timed) // 2] if timed else None,
                     "sm_clock_mhz_before": 1980.0, "sm_clock_mhz_after": 1970.0}]


def implementation(argv):
    p = argparse.ArgumentParser()
    p.add_argument("--case", action="append", default=[])
    p.add_argument("--bench-case", action="append", default=[])
    p.add_argument("--bench", action="store_true")
    p.add_argument("--paced", action="store_true")
    p.add_argument("--control-in", type=int)
    p.add_argument("--control-out", type=int)
    p.add_argument("--samples", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--dump")
    p.add_argument("--json")
    p.add_argument("--quiet", action="store_true")
    p.add_argument("--no-baselines", action="store_true")
    p.add_argument("--list-cases", action="store_true")
    a = p.parse_args(argv)
    run = {"schema": "cudalab.run/1", "lab": "toy", "implementation": B.get("name", "fake"),
           "seed": a.seed, "mode": "paced" if a.paced else "bench" if a.bench else "check", "status": "unchecked",
           "device": {"name": B.get("gpu_name", "Fake GPU"), "compute_capability": "9.0", "sm_count": 132,
                      "global_memory_bytes": 85 * 2 ** 30, "driver_version": 13000, "runtime_version": 13000,
                      "sm_clock_mhz": 1980.0},
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
        time.sleep(300)
    if a.dump:
        Path(a.dump).mkdir(parents=True, exist_ok=True)
    if a.paced:
        paced(a, run)
    elif a.bench:
        for name in a.bench_case or BENCH:
            time.sleep((a.warmup + a.samples) * B.get("sample_ms", 1.0) / 1000.0)
            if a.dump:
                dump_path(a.dump, name).write_text("poison\n" if B.get("bench_wrong") else expected(a.seed + 1, name))
            median = B.get("report_ms", B.get("sample_ms", 1.0))
            row = {"name": name, "status": "unchecked", "median_ms": median, "min_ms": 0.98 * median,
                   "max_ms": 1.05 * median, "spread": 0.01, "samples_ms": [median] * a.samples,
                   "checked_sample_seed": a.seed + 1, "sm_clock_mhz_before": 1980.0, "sm_clock_mhz_after": 1965.0}
            if B.get("baselines") and not a.no_baselines:  # the copy roof and the library, as the harness times them
                row.update(gbps=12.0 / median, fraction_of_baseline=0.5, fraction_of_library=0.8,
                           baseline={"name": "device-to-device copy", "median_ms": median / 2, "gbps": 24.0 / median},
                           library={"name": "CUB", "median_ms": 0.8 * median, "spread": 0.02, "gbps": 15.0 / median})
            run["bench"].append(row)
    else:
        for index, name in enumerate(a.case or CASES):
            if B.get("crash_after") == index:
                sys.stdout.flush()
                os.kill(os.getpid(), signal.SIGSEGV)
            if a.dump:
                wrong = name in B.get("wrong_cases", [])
                dump_path(a.dump, name).write_text("wrong" if wrong else expected(a.seed, name))
            run["cases"].append({"name": name, "status": "unchecked"})
    write_json(a.json, run)
    return 0


def checker(argv):
    p = argparse.ArgumentParser()
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--dump", required=True)
    p.add_argument("--verdict", required=True)
    p.add_argument("--case", action="append", default=[])
    p.add_argument("--bench-case", action="append", default=[])
    p.add_argument("--hash-key")
    p.add_argument("--expect-hash", action="append", default=[])
    a = p.parse_args(argv)
    # As the real checker: without --case, every correctness case is checked, unless bench
    # cases are named. The grader must look only at the cases it wants.
    verdict = {"schema": "cudalab.verdict/1", "lab": "toy", "seed": a.seed, "cases": []}
    hashes = dict(h.split("=", 1) for h in a.expect_hash)
    for name in (a.case or ([] if a.bench_case else CASES)) + a.bench_case:
        path = dump_path(a.dump, name)
        if not path.is_file():
            status, message = "missing", f"no output file {path.name}"
        elif a.hash_key and fake_hash(a.hash_key, path.read_text()) != hashes.get("c"):
            status, message = "inconsistent", "the c dumped for this timed sample is not the c the program reported"
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
