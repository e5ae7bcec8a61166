"""A stand-in for a lab binary or the trusted checker, following the contract of
docs/architecture.md (command lines, dumps, the paced-timing protocol, verdicts), so the
grade flow can be tested on a machine without a GPU.

conftest.write_fake copies this file into an executable for /usr/bin/python3 (the sandbox
shows /usr and nothing of the repository), after a line `BEHAVIOUR = {...}`. An output
"dump" holds the text "<seed>:<case>"; the fake checker expects exactly that. As the
auditor (--audit) it shares a memfd with the programs it times: it writes "<seed>:<case>"
as a sample's input and expects the program to write it back as the output.
"""
import argparse
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


def dump_path(folder, case):
    return Path(folder) / f"{case}.c.bin"


def write_json(path, body):
    if path:
        Path(path).write_text(json.dumps(body))


# The fake's shared arena: the auditor writes "<seed>:<case>" at INPUT, the program writes its
# output at OUTPUT; LAYOUT is how much of the arena the case takes.
INPUT, OUTPUT, REGION, LAYOUT, ARENA = 0, 256, 256, 512, 4096


def _line(fd, buffer, timeout_s=None):
    """The next line on `fd` (buffer: a one-item list carrying what was read past it), or
    None at the end of input; TimeoutError past timeout_s."""
    import select
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while b"\n" not in buffer[0]:
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        if not select.select([fd], [], [], left)[0]:
            raise TimeoutError
        chunk = os.read(fd, 4096)
        if not chunk:
            return None
        buffer[0] += chunk
    line, buffer[0] = buffer[0].split(b"\n", 1)
    return line.decode("ascii", "replace")


# The signal page (labkit/signal_page.hpp): the offsets of its words. The fakes poll it
# instead of sleeping on its futexes, and say nothing of sleeping.
GO_NUMBER, GO_TICKET, DONE_NUMBER, DONE_MS, DONE_TICKET = 0, 8, 128, 136, 144


def _page(fd):
    import mmap
    return mmap.mmap(fd, 4096, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)


def _word(page, offset, fmt="<I", value=None):
    import struct
    if value is None:
        return struct.unpack_from(fmt, page, offset)[0]
    struct.pack_into(fmt, page, offset, value)


def _say(fd, line):
    try:
        os.write(fd, (line + "\n").encode())
        return True
    except OSError:
        return False


def paced(a, run):
    """The program's side of the grader's timing: 'go N' in, 'done N MS' out, or both through
    its signal page (BEHAVIOUR "signal"); its inputs and outputs in the auditor's arena."""
    import select
    case = a.bench_case[0]
    buffer = [b""]
    page = _page(a.signal) if B.get("signal") and a.signal is not None else None
    _say(a.control_out, B.get("ready", f"ready {case} {B.get('layout', LAYOUT)}" + (" signal" if page else "")))
    timed, gos, seen, ticket = [], 0, [], 0
    if page is not None and B.get("page_early"):  # an answer before it was asked for anything
        _word(page, DONE_TICKET, value=1)
    while True:
        if page is None:
            line = _line(a.control_in, buffer)
        else:  # the page, and its pipe for the grader's "end"
            line = None
            while _word(page, GO_TICKET) == ticket:
                if select.select([a.control_in], [], [], 0.0002)[0]:
                    line = _line(a.control_in, buffer) or "end"
                    break
            if line is None:
                ticket = _word(page, GO_TICKET)
                line = f"go {_word(page, GO_NUMBER, '<Q')}"
        seen.append(line)
        if line is None or line == "end":
            break
        words = line.split()
        number = int(words[1])
        gos += 1
        if B.get("paced_crash_at") == gos:  # dies in the middle of its timed runs
            os.kill(os.getpid(), signal.SIGSEGV)
        time.sleep(B.get("sample_ms", 1.0) / 1000.0)
        given = os.pread(a.arena, REGION, INPUT).split(b"\n", 1)[0].decode()
        skip = B.get("skip_after") is not None and len(timed) >= B["skip_after"]
        if not skip:
            text = "poison" if B.get("bench_wrong") else given
            os.pwrite(a.arena, (text + "\n").encode().ljust(REGION, b"\0"), OUTPUT)
        if B.get("change_inputs"):
            os.pwrite(a.arena, b"0:changed\n", INPUT)
        timed.append(B.get("report_ms", B.get("sample_ms", 1.0)))
        if B.get("bad_reply"):  # a program that does not follow the protocol
            _say(a.control_out, B["bad_reply"])
            continue
        if page is not None:
            _word(page, DONE_NUMBER, "<Q", number + B.get("page_number_off", 0))
            _word(page, DONE_MS, "<d", float(B.get("report_ms", B.get("sample_ms", 1.0))))
            _word(page, DONE_TICKET, value=ticket)
        else:
            _say(a.control_out, f"done {number} {B.get('report_ms', B.get('sample_ms', 1.0))}")
        if B.get("speak_unasked_at") == gos:  # a line nobody asked for, after its answer
            _say(a.control_out, "done 0 0.1")
    run["seen"] = seen  # every line the grader's side sent it, for the tests of what a program can tell
    run["page"] = page is not None
    run["bench"] = [{"name": case, "status": "unchecked", "paced": True, "samples_ms": timed,
                     "median_ms": sorted(timed)[len(timed) // 2] if timed else None,
                     "sm_clock_mhz_before": 1980.0, "sm_clock_mhz_after": 1970.0}]


def audit(a, run):
    """The auditor's side (labkit/audit.hpp), with a memfd for the shared arena: it stages,
    prepares, seals and verifies every sample of the programs attached to it, keeps the
    ones it is told to, and dumps them."""
    import re
    import select
    import socket
    case = a.bench_case[0]
    grader = socket.socket(fileno=a.control)
    arena = os.memfd_create("arena")
    os.ftruncate(arena, ARENA)
    socket.send_fds(grader, [f"ready {case} {LAYOUT} {ARENA} {B.get('floor_ms', 0.01)} 3000 60\n".encode()], [arena])
    slots = [b""] * (a.slots + 1)
    programs, received, pending, staged, attached = {}, [], [b""], None, []

    def next_command():
        while b"\n" not in pending[0]:
            data, fds, _, _ = socket.recv_fds(grader, 4096, 4)
            if not data:
                return None
            pending[0] += data
            received.extend(fds)
        line, pending[0] = pending[0].split(b"\n", 1)
        return line.decode()

    def answer(line):
        grader.sendall((line + "\n").encode())

    def drop(name):
        program = programs.pop(name, None)
        if program:
            os.close(program["to"])
            os.close(program["from"])

    while True:
        command = next_command()
        if command is None or command == "end":
            break
        words = command.split()
        if words[0] == "attach":
            programs[words[1]] = {"to": received[0], "from": received[1], "buffer": [b""],
                                  "timeout_s": int(words[2]) / 1000.0, "official": words[3] == "official",
                                  "page": _page(received[2]) if len(received) == 3 else None, "answered": 0,
                                  "ticket": 0}
            attached.append((words[1], len(received) == 3))
            received.clear()
            answer(f"attached {words[1]}")
        elif words[0] == "detach":
            drop(words[1])
            answer(f"detached {words[1]}")
        elif words[0] == "stage":
            staged = int(words[1])
            answer("staged")
        elif words[0] == "dump":
            folder = Path(a.dump) / words[1]
            folder.mkdir(parents=True, exist_ok=True)
            dump_path(folder, case).write_bytes(slots[int(words[2])].rstrip(b"\0"))
            answer(f"dumped {words[1]}")
        elif words[0] == "sample":
            n, name, slot = words[1], words[2], int(words[3])
            program, seed = programs[name], staged
            buffer = program["buffer"]
            readable = bool(select.select([program["from"]], [], [], 0)[0])
            if readable or buffer[0]:
                said = buffer[0] + (os.read(program["from"], 80) if readable else b"")
                answer(f"breach {n} {name} wrote '{said.decode(errors='replace').strip()}' before it was asked for "
                       f"anything" if said else f"closed {n} {name}")
                drop(name)
                continue
            prepare_from = time.perf_counter_ns()  # the auditor's own clock splits the sample
            os.pwrite(arena, expected(seed, case).encode().ljust(REGION, b"\0"), INPUT)
            os.pwrite(arena, b"\xff" * REGION, OUTPUT)
            time.sleep(B.get("protocol_ms", 0.3) / 1000.0)
            go_at = time.perf_counter_ns()
            page = program["page"]
            if page is not None:
                if _word(page, DONE_TICKET) != program["answered"]:
                    answer(f"breach {n} {name} wrote an answer on its signal page before it was asked for anything")
                    drop(name)
                    continue
                program["ticket"] += 1
                _word(page, GO_NUMBER, "<Q", int(n))
                _word(page, GO_TICKET, value=program["ticket"])
                deadline, got = time.monotonic() + program["timeout_s"], None
                while _word(page, DONE_TICKET) == program["answered"]:
                    if select.select([program["from"]], [], [], 0.0002)[0] or time.monotonic() > deadline:
                        break
                else:
                    program["answered"] = _word(page, DONE_TICKET)
                    number, ms = _word(page, DONE_NUMBER, "<Q"), _word(page, DONE_MS, "<d")
                    got = f"done {number} {ms}" if program["answered"] == program["ticket"] else f"ticket {program['answered']}"
                if got is None:
                    said = os.read(program["from"], 80) if select.select([program["from"]], [], [], 0)[0] else None
                    answer(f"closed {n} {name}" if said == b"" else f"breach {n} {name} gave no answer to 'go {n}'"
                           if said is None else f"breach {n} {name} wrote {said!r} on its control pipe")
                    drop(name)
                    continue
            elif not _say(program["to"], f"go {n}"):
                answer(f"closed {n} {name}")
                drop(name)
                continue
            else:
                try:
                    got = _line(program["from"], buffer, program["timeout_s"])
                except TimeoutError:
                    answer(f"breach {n} {name} gave no answer to 'go {n}' within {program['timeout_s']:g} s")
                    drop(name)
                    continue
                if got is None:
                    answer(f"closed {n} {name}")
                    drop(name)
                    continue
            answered_at = time.perf_counter_ns()
            done = re.fullmatch(r"done (\d+) (\d+(?:\.\d+)?)", got)
            if page is not None and done and done.group(1) != n:
                got = f"sample {done.group(1)} on its signal page"
            if not done or done.group(1) != n:
                answer(f"breach {n} {name} answered 'go {n}' with '{got[:80]}' instead of 'done {n} MS'")
                drop(name)
                continue
            slots[slot] = os.pread(arena, REGION, OUTPUT)
            sealed_at = time.perf_counter_ns()
            answer(f"sealed {n} {done.group(2)} {go_at - prepare_from} {answered_at - go_at} {sealed_at - answered_at}")
            if program["official"]:
                answer(f"verified {n}")
                continue
            given = os.pread(arena, REGION, INPUT).rstrip(b"\0").decode(errors="replace")
            sealed = slots[slot].rstrip(b"\0").decode(errors="replace")
            if given != expected(seed, case):
                answer(f"differs {n} its input in was changed: 1 of 1 elements differ from what the grader wrote")
            elif sealed != expected(seed, case):
                answer(f"differs {n} c[0] is {ascii(sealed.strip()[:20])} where the course's reference computes "
                       f"{expected(seed, case).strip()!r} from the same inputs")
            else:
                answer(f"verified {n}")
    run["bench"] = [{"name": case, "floor_ms": B.get("floor_ms", 0.01)}]
    run["attached"] = attached  # each program attached, and whether with a signal page


def implementation(argv):
    p = argparse.ArgumentParser()
    p.add_argument("--case", action="append", default=[])
    p.add_argument("--bench-case", action="append", default=[])
    p.add_argument("--bench", action="store_true")
    p.add_argument("--paced", action="store_true")
    p.add_argument("--control-in", type=int)
    p.add_argument("--control-out", type=int)
    p.add_argument("--audit", action="store_true")
    p.add_argument("--control", type=int)
    p.add_argument("--slots", type=int, default=2)
    p.add_argument("--arena", type=int)
    p.add_argument("--arena-bytes", type=int)
    p.add_argument("--signal", type=int)
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
           "seed": a.seed, "mode": "audit" if a.audit else "paced" if a.paced else "bench" if a.bench else "check", "status": "unchecked",
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
    if a.dump and B.get("dump_link"):  # hostile: its dump is a link to a folder of the host
        os.symlink(B["dump_link"], a.dump)
        write_json(a.json, run)
        return 0
    if B.get("deep_tree"):  # leaves its folder hard to remove: a tree deeper than Python's recursion limit
        top = os.open(".", os.O_RDONLY)
        for _ in range(B["deep_tree"]):
            os.mkdir("d")
            os.chdir("d")
        os.fchdir(top)
    if a.dump:
        Path(a.dump).mkdir(parents=True, exist_ok=True)
        if B.get("dump_inner_link"):  # hostile: a link one level down in its dump
            os.symlink(B["dump_inner_link"], Path(a.dump) / "nested")
    if a.audit:
        audit(a, run)
    elif a.paced:
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
    a = p.parse_args(argv)
    # As the real checker: without --case, every correctness case is checked, unless bench
    # cases are named. The grader must look only at the cases it wants.
    verdict = {"schema": "cudalab.verdict/1", "lab": "toy", "seed": a.seed, "cases": []}
    for name in (a.case or ([] if a.bench_case else CASES)) + a.bench_case:
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
