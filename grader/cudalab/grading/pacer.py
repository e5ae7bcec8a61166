"""The grader's clock in a process of its own: one session of timing.AuditorChannel run by
`python -m cudalab.grading.pacer AUDITOR_FD`, which gets the channel's state and the pace as JSON
on stdin and answers with the session's samples, or the error that ended it, as JSON on
stdout.

Why a process: a sample's time on the grader's clock runs from asking the auditor for it
to reading its seal. In one Python process every thread must hold the interpreter lock to
run, so a grader thread waiting for a 0.3 ms answer could wait up to the interpreter's
switch interval (5 ms) for another thread (a batch's builds, hand-ins being unpacked, a
check's output being parsed) to let it go, and a correct submission could be timed many
times slower than it is. The pacer has nothing else to do.
"""
from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

from .timing import (AuditorChannel, AuditorError, ChannelClosed, KeptSample, Pace, PacedRun, ProtocolError,
                     SessionRun, TooSlow)

_ERRORS = {"closed": ChannelClosed, "protocol": ProtocolError, "auditor": AuditorError}


def _pace_json(pace: Pace) -> dict:
    fields = {f.name: getattr(pace, f.name) for f in dataclasses.fields(pace) if f.name != "stop_when"}
    stop = pace.stop_when
    return {**fields, "stop_when": dataclasses.asdict(stop) if stop is not None else None}


def _pace_from_json(data: dict) -> Pace:
    stop = data.pop("stop_when")
    return Pace(**data, stop_when=TooSlow(**stop) if stop is not None else None)


def _run_json(run: SessionRun) -> dict:
    return {"reference": dataclasses.asdict(run.reference), "second": dataclasses.asdict(run.second),
            "student": dataclasses.asdict(run.student) if run.student is not None else None}


def _paced_from_json(data: dict) -> PacedRun:
    kept = [KeptSample(**k) for k in data.pop("kept")]
    return PacedRun(**data, kept=kept)


def _run_from_json(data: dict) -> SessionRun:
    student = data["student"]
    return SessionRun(_paced_from_json(data["reference"]), _paced_from_json(data["second"]),
                      _paced_from_json(student) if student is not None else None)


def _kind(err: Exception) -> str:
    if isinstance(err, ChannelClosed):
        return "closed"
    return "protocol" if isinstance(err, ProtocolError) else "auditor"


def session_in_process(channel: AuditorChannel, pace: Pace) -> SessionRun:
    """channel.session(pace), run by a pacer process, so that the grader's clock never waits
    for this process's other threads (a batch's builds and checks) to hand it the
    interpreter; the channel's state (the sample numbers, what it had read past a line) goes
    there and comes back."""
    state = {"number": channel.number, "buffer": channel.reader.buffer.decode("latin-1"), "pace": _pace_json(pace)}
    done = subprocess.run([sys.executable, "-m", "cudalab.grading.pacer", str(channel.fd)], input=json.dumps(state),
                          capture_output=True, text=True, pass_fds=(channel.fd,), check=False)
    try:
        answer = json.loads(done.stdout)
    except ValueError:
        raise AuditorError(f"the pacer process failed (exit {done.returncode}): "
                           f"{done.stderr.strip()[-600:]}") from None
    channel.number = answer["number"]
    channel.reader.buffer = answer["buffer"].encode("latin-1")
    if "error" in answer:
        error = _ERRORS[answer["kind"]]
        raise error(answer["error"]) if error is AuditorError else error(answer["error"], answer["program"])
    return _run_from_json(answer["run"])


def main(argv: list[str]) -> int:
    state = json.loads(sys.stdin.read())
    channel = AuditorChannel(int(argv[0]), number=state["number"], buffer=state["buffer"].encode("latin-1"))
    answer: dict = {}
    try:
        answer["run"] = _run_json(channel.session(_pace_from_json(state["pace"])))
    except (ProtocolError, AuditorError) as err:
        answer.update(error=str(err), kind=_kind(err), program=getattr(err, "program", ""))
    answer.update(number=channel.number, buffer=channel.reader.buffer.decode("latin-1"))
    sys.stdout.write(json.dumps(answer))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
