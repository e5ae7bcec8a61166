"""`cudalab course`: set up a course for the course service: its course.toml, its students'
tokens, and a Gradescope autograder that forwards to it.

    cudalab course init DIR [--labs vector_add,scan] [--roster FILE] [--name NAME]
    cudalab course tokens DIR [--reissue ID ...] [--reissue-instructor] [--reissue-course-key] [--print]
    cudalab course gradescope LAB --course DIR --server URL --out FILE.zip

`init` writes DIR/course.toml, commented, with each lab open from now and due in 14 days
(10 % off a started day late, a 3-day cut-off, the last hand-in counts, 10 tries refilled 2
an hour: edit them), and copies the roster (a CSV with the columns id, name, lms_id, email)
to DIR/roster.csv. It never overwrites a course.toml.

`tokens` gives each roster student without a token one (`--reissue ID` replaces one), and
the instructor's token and the course key the first time. The course's database keeps only
their argon2 hashes; the tokens are written to DIR/tokens-<UTC time>.csv (readable by you
only) for you to send, and the course key to DIR/course-key. Tokens are printed only with
--print.

`gradescope` writes a Gradescope autograder zip for LAB: each Gradescope submission is sent
to the course service at URL with the course key, graded on the course's GPU, and its
results.json written back. The zip holds the course key: upload it to Gradescope only.
"""
from __future__ import annotations

import argparse
import json
import shutil
from datetime import datetime, timezone
from pathlib import Path

from .. import console
from ..batching.batch import read_roster
from ..config import Config
from ..course import spec as course_spec
from ..errors import UsageError
from ..lab import labs


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    init = actions.add_parser("init", help="write a course.toml (and the roster) in a course folder")
    init.add_argument("folder", type=Path, metavar="DIR", help="the course's folder (made if missing)")
    init.add_argument("--labs", help="the labs offered, separated by commas (default: every lab here)")
    init.add_argument("--roster", type=Path, metavar="FILE",
                      help="the roster CSV the LMS exports (columns id, name, lms_id, email), copied in")
    init.add_argument("--name", help="the course's name (default: the folder's name)")
    issue = actions.add_parser("tokens", help="issue the students' tokens, the instructor's and the course key")
    issue.add_argument("folder", type=Path, metavar="DIR", help="the course's folder")
    issue.add_argument("--database", metavar="URL", help="the course's database (default: sqlite in DIR)")
    issue.add_argument("--reissue", nargs="+", metavar="ID", default=[],
                       help="replace these students' tokens (their old ones stop working)")
    issue.add_argument("--reissue-instructor", action="store_true", help="replace the instructor's token")
    issue.add_argument("--reissue-course-key", action="store_true",
                       help="replace the course key (Gradescope bundles made before stop working)")
    issue.add_argument("--print", action="store_true", help="also print the new tokens here")
    bundle = actions.add_parser("gradescope", help="write a Gradescope autograder zip that forwards to the service")
    bundle.add_argument("lab", help="the lab the Gradescope assignment is for")
    bundle.add_argument("--course", type=Path, required=True, metavar="DIR", help="the course's folder")
    bundle.add_argument("--server", required=True, metavar="URL",
                        help="the course service's address as Gradescope reaches it (https://...)")
    bundle.add_argument("--out", type=Path, required=True, metavar="FILE.zip", help="the zip to write")


def _init(args: argparse.Namespace, config: Config) -> int:
    folder = args.folder
    target = folder / course_spec.COURSE_FILE
    if target.exists():
        raise UsageError(f"{target} exists already; `course init` never overwrites one. Edit it, or give "
                         "another folder.")
    offered = [lab.strip() for lab in args.labs.split(",") if lab.strip()] if args.labs else \
        labs.available_labs(config.root)
    if not offered:
        raise UsageError("There is no lab to offer: give them with --labs vector_add,scan.")
    for lab in offered:
        labs.load_lab(config, lab)  # an unknown lab is refused in its own sentence
    if args.roster is not None:
        read_roster(args.roster)    # refused now, not when the service starts
    folder.mkdir(parents=True, exist_ok=True)
    roster = folder / course_spec.DEFAULT_ROSTER
    if args.roster is not None:
        if not roster.exists() or not roster.samefile(args.roster):
            shutil.copyfile(args.roster, roster)
        roster_said = f"copied the roster to {roster}"
    elif roster.is_file():
        read_roster(roster)
        roster_said = f"kept the roster already in {roster}"
    else:
        roster.write_text("id,name,lms_id,email\n", encoding="utf-8")
        roster_said = (f"wrote {roster} with its header only: fill it with the LMS's export (columns id, name, "
                       "lms_id, email) before `cudalab course tokens`")
    name = args.name or folder.resolve().name
    text = course_spec.course_toml_text(name, offered, roster.name, datetime.now(timezone.utc))
    try:
        with open(target, "x", encoding="utf-8") as out:  # 'x': another init that got there first wins
            out.write(text)
    except FileExistsError:
        raise UsageError(f"{target} appeared while this ran; `course init` never overwrites one.") from None
    course_spec.load_course(folder, config)  # what it wrote must read back
    console.info(f"wrote {target} offering {', '.join(offered)} (open now, due in 14 days: edit the dates); "
                 f"{roster_said}")
    if args.json:
        print(json.dumps({"schema": "cudalab.course/1", "course_file": str(target), "labs": offered,
                          "roster": str(roster)}, indent=2))
    return 0


def _tokens(args: argparse.Namespace, config: Config) -> int:
    from ..course import store, tokens  # the database's packages, needed here only
    course = course_spec.load_course(args.folder, config)
    sessions = store.open_database(store.database_url(course, args.database))
    issued = tokens.issue_course_tokens(course, sessions, args.reissue, args.reissue_instructor,
                                        args.reissue_course_key)
    students = sum(1 for row in issued.rows if row[0])
    if issued.tokens_file is not None:
        console.info(f"wrote {students} student token(s){' and the instructor token' if students < len(issued.rows) else ''} "
                     f"to {issued.tokens_file} (readable by you only): send each student their own, and keep "
                     "the instructor's")
    else:
        console.info(f"every one of the {issued.students} students on the roster has a token already; "
                     "--reissue ID gives one a new one")
    if issued.course_key_file is not None:
        console.info(f"wrote the course key to {issued.course_key_file} (readable by you only): "
                     "`cudalab course gradescope` puts it in the Gradescope bundle")
    if args.print:
        console.table("tokens", ("id", "name", "email", "token"), issued.rows)
    if args.json:
        print(json.dumps({"schema": "cudalab.course/1", "issued": students,
                          "tokens_file": str(issued.tokens_file) if issued.tokens_file else None,
                          "course_key_file": str(issued.course_key_file) if issued.course_key_file else None},
                         indent=2))
    return 0


def _gradescope(args: argparse.Namespace, config: Config) -> int:
    from ..course import gradescope
    course = course_spec.load_course(args.course, config)
    lab = labs.load_lab(config, course.offer(args.lab).lab)
    out = gradescope.write_bundle(config, lab, course.folder, args.server, args.out)
    console.info(f"wrote {out}: upload it as the autograder of the Gradescope assignment for {lab.name}. It holds "
                 "the course key (the file is readable by you only): give it to nobody else; "
                 f"`cudalab course tokens {course.folder} --reissue-course-key` replaces a leaked one.")
    if not args.server.startswith("https://"):
        console.warn(f"{args.server} is not https: the course key and the students' code cross the network "
                     "in clear. Put the service behind TLS (README: Running the course service).")
    if args.json:
        print(json.dumps({"schema": "cudalab.course/1", "bundle": str(out), "lab": lab.name}, indent=2))
    return 0


def main(args: argparse.Namespace, config: Config) -> int:
    return {"init": _init, "tokens": _tokens, "gradescope": _gradescope}[args.action](args, config)
