"""`cudalab VERB ...`: a thin dispatcher. Each verb is one module of cudalab/commands/ with
`add_arguments(parser)` and `main(args, config) -> exit code`, over the engine (the rest of
this package); adding a verb is adding its module and its name to VERBS.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import sys
import traceback

from . import __version__, console
from .building import bundle
from .config import Config
from .errors import CompileError, CudalabError
from .exit_codes import Cli

VERBS = ("new", "build", "run", "check", "pack", "grade", "batch", "starter", "ladder", "handout", "export", "calibrate",
         "doctor", "course", "serve")


def _verb_module(name: str):
    return importlib.import_module(f"{__package__}.commands.{name}")


def verb_summary(doc: str | None) -> str:
    """A verb's line in `cudalab --help`: the first sentence of its module docstring, after
    "`cudalab VERB`: ", whole even where it runs over the docstring's first line."""
    paragraph = " ".join((doc or "").strip().split("\n\n", 1)[0].split())
    text = paragraph.split(": ", 1)[-1]
    end = re.search(r"\.(\s|$)", text)
    return text[:end.start() + 1] if end else text


def make_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true",
                        help="print machine-readable JSON on stdout (logs stay on stderr)")
    common.add_argument("--preset", help="CMake preset of the official build (default: 'gpu' "
                        "when a CUDA device is present, else 'ci'; or CUDALAB_PRESET)")
    parser = argparse.ArgumentParser(prog="cudalab", description="Build, run and grade cudalab labs.")
    parser.add_argument("--version", action="version", version=f"cudalab {__version__}")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
    for name in bundle.offered_verbs(VERBS):
        module = _verb_module(name)
        sub = verbs.add_parser(name, parents=[common], help=verb_summary(module.__doc__), description=module.__doc__,
                               formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(sub)
    return parser


def _report_error(args: argparse.Namespace, err: CudalabError) -> None:
    if getattr(args, "json", False):
        body = {"schema": f"cudalab.{args.verb}/1", "status": err.status, "message": str(err)}
        if isinstance(err, CompileError):
            body["feedback"] = err.feedback
        print(json.dumps(body, indent=2))
    console.error(str(err))
    if isinstance(err, CompileError) and err.feedback:
        console.text("\n".join(err.feedback), stream=sys.stderr)  # quotes the student's source


def main(argv: list[str] | None = None) -> int:
    missing = bundle.missing_verb(sys.argv[1:] if argv is None else argv, VERBS)
    if missing:  # a verb of the course's own grader, asked for in a student bundle
        console.error(missing)
        return int(Cli.USAGE)
    parser = make_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:  # argparse: --help is 0, a usage error 2
        return int(stop.code or 0)
    try:
        config = Config.load(preset=args.preset)
        return int(_verb_module(args.verb).main(args, config))
    except CudalabError as err:
        _report_error(args, err)
        return int(err.exit_code)
    except KeyboardInterrupt:
        console.error("interrupted")
        return 130
    except BrokenPipeError:  # whoever read the output stopped (`cudalab ... | head`): nothing left to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # as a shell reports a program ended by SIGPIPE
    except Exception as err:  # a bug in the grader: say so, never a silent failure
        traceback.print_exc()
        _report_error(args, CudalabError(f"internal error in cudalab: {err!r}"))
        return int(Cli.INTERNAL)


if __name__ == "__main__":
    sys.exit(main())
