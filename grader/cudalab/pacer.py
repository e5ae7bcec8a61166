"""The grader's clock in a process of its own: one paced session (timing.PacedChannel.session)
run by `python -m cudalab.pacer READ_FD WRITE_FD`, which gets the channel's state and the
pace as JSON on stdin and answers the session's samples, or the protocol error that ended
it, as JSON on stdout.

Why a process: a sample's time on the grader's clock is the time from the grader sending
'sample ...' to reading 'done ...'. In one Python process, every thread must hold the
interpreter lock to run, so a grader thread waiting for a 0.3 ms answer could wait up to
the interpreter's switch interval (5 ms) for another thread (a batch's builds, hand-ins
being unpacked, a check's output being parsed) to let it go, and a correct submission
could be timed many times slower than it is. The pacer has nothing else to do.
"""
from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

from .timing import ChannelClosed, KeptSample, Pace, PacedChannel, PacedRun, ProtocolError, TooSlow, drive


def _pace_json(pace: Pace) -> dict:
    stop = pace.stop_when
    if stop is not None and not isinstance(stop, TooSlow):
        raise TypeError("a pacer process applies only a TooSlow stop rule")
    fields = {f.name: getattr(pace, f.name) for f in dataclasses.fields(pace) if f.name != "stop_when"}
    return {**fields, "stop_when": dataclasses.asdict(stop) if stop is not None else None}


def _pace_from_json(data: dict) -> Pace:
    stop = data.pop("stop_when")
    return Pace(**data, stop_when=TooSlow(**stop) if stop is not None else None)


def _run_json(run: PacedRun) -> dict:
    return {**dataclasses.asdict(run), "kept": [dataclasses.asdict(k) for k in run.kept]}


def _run_from_json(data: dict) -> PacedRun:
    kept = [KeptSample(**k) for k in data.pop("kept")]
    return PacedRun(**data, kept=kept)


def _in_process(fds: tuple[int, int], state: dict) -> dict:
    done = subprocess.run([sys.executable, "-m", "cudalab.pacer", *map(str, fds)], input=json.dumps(state),
                          capture_output=True, text=True, pass_fds=fds, check=False)
    try:
        return json.loads(done.stdout)
    except ValueError:
        raise RuntimeError(f"the pacer process failed (exit {done.returncode}): {done.stderr.strip()[-600:]}") from None


def _outcome(answer: dict) -> PacedRun:
    if "error" in answer:
        raise (ChannelClosed if answer["closed"] else ProtocolError)(answer["error"])
    return _run_from_json(answer["run"])


def session_in_process(channel: PacedChannel, pace: Pace) -> PacedRun:
    """One session of `channel` run by a pacer process; the channel's state (the sample
    numbers, what it had read past a line) goes there and comes back."""
    answer = _in_process((channel.read_fd, channel.write_fd),
                         {"case": channel.case, "outputs": channel.outputs, "number": channel.number,
                          "buffer": channel.reader.buffer.decode("latin-1"), "pace": _pace_json(pace)})
    if "number" in answer:
        channel.number = answer["number"]
        channel.reader.buffer = answer["buffer"].encode("latin-1")
    return _outcome(answer)


def drive_in_process(read_fd: int, write_fd: int, pace: Pace, case: str) -> PacedRun:
    """timing.drive (the program's 'ready' line, one session, 'end') run by a pacer process,
    which starts while the program does."""
    return _outcome(_in_process((read_fd, write_fd), {"case": case, "pace": _pace_json(pace)}))


def _answer(read_fd: int, write_fd: int, state: dict) -> dict:
    """A whole drive when `state` has no channel in it, else one session of that channel."""
    pace = _pace_from_json(state["pace"])
    if "outputs" not in state:
        return {"run": _run_json(drive(read_fd, write_fd, pace, state["case"]))}
    channel = PacedChannel(read_fd, write_fd, state["case"], pace.sample_timeout_s, outputs=state["outputs"],
                           number=state["number"], buffer=state["buffer"].encode("latin-1"))
    answer: dict = {}
    try:
        answer["run"] = _run_json(channel.session(pace))
    except ProtocolError as err:
        answer.update(error=str(err), closed=isinstance(err, ChannelClosed))
    return {**answer, "number": channel.number, "buffer": channel.reader.buffer.decode("latin-1")}


def main(argv: list[str]) -> int:
    state = json.loads(sys.stdin.read())
    try:
        answer = _answer(int(argv[0]), int(argv[1]), state)
    except ProtocolError as err:
        answer = {"error": str(err), "closed": isinstance(err, ChannelClosed)}
    sys.stdout.write(json.dumps(answer))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
