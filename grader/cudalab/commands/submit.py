"""`cudalab submit`: send a lab to the course service: a try runs on a course GPU, a hand-in is kept with a receipt.

A try (the default) packs FOLDER as `cudalab pack` does, sends it, shows its place in the
queue while it waits, then prints what `cudalab run LAB FOLDER` (with --bench, `run --bench`)
prints there, and exits with the code that run gives (0 every case passed, 1 some failed,
...). A try spends one of your tries for the lab; one that fails through no fault of your
code (the grader or the GPU failed, the service restarted) is refunded, and says so.

--hand-in hands the archive in instead: the service checks it as `cudalab check` does,
stamps it with its own clock and answers with a receipt (content hash, time, lateness and
which hand-in counts), a copy of which is kept in FOLDER/.cudalab/receipts/. --list lists
your hand-ins of the lab and their receipts.

The token comes from CUDALAB_TOKEN, else from --token-file (default
~/.config/cudalab/token), which must be readable by you only (`chmod 600`). Exit codes: 28
when the service cannot be reached, 29 when it refuses (token, deadline, tries spent), 21
for an archive over the course's size limit, 27 for a hand-in its checks reject.
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

from .. import console
from ..config import Config
from ..course import client
from ..course.client import CourseClient, ServiceError, StreamState
from ..errors import UsageError
from ..exit_codes import Cli
from ..intake import check
from ..intake.pack import left_out_line, pack_folder
from ..lab import labs


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("lab", help="the lab to submit")
    parser.add_argument("folder", nargs="?", type=Path, default=Path("."),
                        help="the folder holding your files (default: the current folder)")
    parser.add_argument("--server", required=True, help="the course service's address, e.g. https://gpu.example.edu")
    parser.add_argument("--bench", action="store_true", help="also time the try against the reference (as run --bench)")
    parser.add_argument("--hand-in", action="store_true", help="hand the lab in (a receipt comes back) instead of a try")
    parser.add_argument("--list", action="store_true", help="list your hand-ins of the lab and their receipts")
    parser.add_argument("--token-file", type=Path,
                        help=f"the file holding your token, mode 0600 (default {client.DEFAULT_TOKEN_FILE}; "
                             f"{client.TOKEN_ENV} takes precedence)")


def main(args: argparse.Namespace, config: Config) -> int:
    if sum((args.hand_in, args.list)) > 1:
        raise UsageError("--hand-in and --list do different things: give one of them.")
    if args.bench and (args.hand_in or args.list):
        raise UsageError("--bench is for a try: a hand-in is timed when it is graded. Leave --bench out.")
    server = client.check_server_url(args.server)
    token, _ = client.read_token(dict(os.environ), args.token_file)
    folder = Path(args.folder)
    with CourseClient(server, token) as service:
        if args.list:
            return _list(service, args.lab, folder, args.json)
        archive = _pack(config, args.lab, folder)
        if archive is None:
            return int(Cli.REJECTED)
        if args.hand_in:
            return _hand_in(service, args.lab, folder, archive, args.json)
        return _try(service, args.lab, archive, args.bench, args.json)


def _pack(config: Config, lab: str, folder: Path) -> bytes | None:
    """The archive `cudalab pack` would make of `folder` (None, having said why, when pack
    would refuse it)."""
    spec = labs.load_lab(config, lab)
    if not folder.is_dir():
        raise UsageError(f"{folder} is not a folder. Give the folder that holds {', '.join(spec.files)}.")
    with tempfile.TemporaryDirectory(prefix="cudalab-submit-") as temp:
        packed = pack_folder(config, spec, folder, Path(temp) / f"{spec.name}.tar.gz", None)
        if packed.receipt is None:
            console.error(f"Nothing was sent from {folder}: " + " ".join(packed.taken.problems))
            return None
        if not packed.receipt["accepted"]:
            console.text(check.render_receipt(packed.receipt))
            console.error(f"Nothing was sent: the hand-in in {folder} would not be accepted (see FAILED above).")
            return None
        if packed.taken.left_out:
            console.info(left_out_line(spec, packed.taken.left_out))
        return packed.archive.read_bytes()


def _try(service: CourseClient, lab: str, archive: bytes, bench: bool, as_json: bool) -> int:
    started = service.start_try(lab, archive, bench)
    job = started["job"]
    console.info(f"Try {job} of {lab}{' with --bench' if bench else ''} is queued at position "
                 f"{started.get('position', '?')}; tries left for {lab}: {started.get('tries_left', '?')}.")
    state = StreamState(position=started.get("position"))
    end: dict = {}
    for event in service.events(job, state):
        kind = event.get("type")
        if kind == "position" and event.get("position") != state.position:
            state.position = event.get("position")
            console.info(f"Waiting: position {state.position} in the queue.")
        elif kind == "line":
            console.text(str(event.get("text", "")))
        elif kind == "end":
            end = event
    if end.get("charged") is False:
        console.info("This try was refunded: it failed through no fault of your code, so it cost none of your tries.")
    if end.get("summary"):
        console.info(str(end["summary"]))
    code = client.try_exit_code(end)
    if as_json:
        print(json.dumps({"schema": "cudalab.submit/1", "action": "try", "job": service.job(job),
                          "charged": end.get("charged"), "exit_code": code}, indent=2))
    return code


def _hand_in(service: CourseClient, lab: str, folder: Path, archive: bytes, as_json: bool) -> int:
    try:
        receipt, repeated = service.hand_in(lab, archive)
    except ServiceError as err:
        for failed in err.checks:
            console.text(f"FAILED {failed.get('name', '') if isinstance(failed, dict) else ''}: "
                         f"{failed.get('message', failed) if isinstance(failed, dict) else failed}")
        raise
    kept = client.keep_receipt(folder, receipt)
    if as_json:
        print(json.dumps({"schema": "cudalab.submit/1", "action": "hand-in", "receipt": receipt,
                          "repeated": repeated, "kept_at": str(kept)}, indent=2))
    console.text("\n".join(client.receipt_lines(receipt)))
    if repeated:
        console.info("The service already had this exact hand-in: this is the receipt it gave then.")
    console.info(f"Handed in. A copy of the receipt is in {kept}.")
    return int(Cli.DONE)


def _list(service: CourseClient, lab: str, folder: Path, as_json: bool) -> int:
    receipts = service.handins(lab)
    kept = client.kept_receipts(folder)
    if as_json:
        print(json.dumps({"schema": "cudalab.submit/1", "action": "list", "handins": receipts,
                          "kept": {key: str(path) for key, path in kept.items()}}, indent=2))
        return int(Cli.DONE)
    if not receipts:
        console.info(f"You have no hand-ins of {lab} yet: `cudalab submit {lab} --hand-in` hands it in.")
        return int(Cli.DONE)
    rows = []
    for receipt in receipts:
        lateness = receipt.get("lateness") if isinstance(receipt.get("lateness"), dict) else {}
        copy = kept.get(str(receipt.get("receipt_id") or receipt.get("sha256")))
        rows.append([receipt.get("received_at", "?"), str(receipt.get("sha256", "?"))[:12],
                     lateness.get("sentence") or lateness.get("status") or "?", receipt.get("receipt_id", "?"),
                     str(copy) if copy else "not kept here"])
    console.table(f"Your hand-ins of {lab}", ["received", "sha256", "lateness", "receipt", "copy"], rows)
    return int(Cli.DONE)
