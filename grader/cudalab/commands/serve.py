"""`cudalab serve`: run a course's service: students' tries on this machine's GPUs, their
hand-ins with receipts, and the course's pages.

--course DIR is the course's folder (its course.toml, made by `cudalab course init`). The
service keeps its database there (SQLite, course.db) unless --database names another
(postgresql://user:password@host/db), and every upload under DIR/uploads. It listens on
127.0.0.1:8470 by default: put it behind a TLS proxy (the README says how) before students
connect from elsewhere.

--executor says what runs the jobs: local (default) runs `cudalab run` and `cudalab grade`
here, one job per GPU at a time, sandboxed as always; slurm sends each of them to a Slurm
cluster as a job of its own, with the options `cudalab batch --executor slurm` takes
(--partition, --gpus-per-task, --sbatch-arg, --poll-s; --max-parallel: jobs in Slurm at
once, default 16), its files under DIR/.slurm (DIR must be on storage the nodes share; see
course/cluster.py); standin runs no code and answers from the archive's content (for tests
and rehearsals: see course/work.py). A job or hand-in that was in flight when the service
stopped is run again at the next start.
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
import tempfile
from pathlib import Path

from .. import console
from ..config import Config
from ..course import spec as course_spec
from ..batching import executors as batch_executors
from ..batching import slurm
from ..errors import UsageError
from ..intake.object_analysis import staged_deps

EXECUTORS = ("local", "slurm", "standin")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--course", type=Path, required=True, metavar="DIR", help="the course's folder (with course.toml)")
    parser.add_argument("--database", metavar="URL",
                        help="the database (default: sqlite:///DIR/course.db; or postgresql://...)")
    parser.add_argument("--executor", choices=EXECUTORS, default="local", help="what runs the jobs (default: local)")
    parser.add_argument("--standin-delay", type=float, default=0.2, metavar="SECONDS",
                        help="with --executor standin: how long each job takes (default: 0.2)")
    slurm.SlurmExecutor.add_arguments(parser.add_argument_group("with --executor slurm"))
    parser.add_argument("--host", default="127.0.0.1", help="the address to listen on (default: this machine only, 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8470, help="the port to listen on (default: 8470)")


def main(args: argparse.Namespace, config: Config) -> int:
    folder = args.course.resolve()
    if not (folder / course_spec.COURSE_FILE).is_file():
        raise UsageError(f"{folder} is not a course folder: it has no {course_spec.COURSE_FILE}. Make one with "
                         f"`cudalab course init {args.course}`, or give the course's folder with --course.")
    batch_executors.refuse_others_options(args.executor, args)
    if not 0 < args.port < 65536:
        raise UsageError(f"--port {args.port} is not a port: give one from 1 to 65535.")
    spec = course_spec.load_course(folder, config)
    # Imported here, not above: every verb's module is loaded for `cudalab --help`, and a
    # machine that only grades need not have the service's packages (Starlette, SQLAlchemy, ...).
    _use_staged_packages(config.root)
    try:
        from ..course import queue, service as course_service, store
    except ImportError as err:
        raise UsageError(f"The course service needs the Python package {err.name or err}, which is not installed "
                         "here: run tools/setup.sh (or `pip install -e 'grader[service]'`), or on a machine without "
                         "a package registry, tools/stage-deps.sh where it has one.") from None
    url = store.database_url(spec, args.database)
    sessions = store.open_database(url)
    executor = make_executor(args, folder, config)
    if args.executor == "local" and executor.gpus == 0:
        console.warn("No CUDA device here: every try will end with 'no device' (refunded). Run the service on "
                     "the course's GPU machine, or check it with `cudalab doctor`.")
    scratch = Path(tempfile.mkdtemp(prefix="cudalab-serve-"))
    service = course_service.CourseService(spec, sessions, executor, scratch)
    requeued, given_up = service.start()
    if requeued or given_up:
        console.info(f"{requeued} job(s) that were running when the service stopped are queued again"
                     + (f"; {given_up} that stopped it {queue.MAX_ATTEMPTS} times were given up" if given_up else "")
                     + ".")
    app = course_service.make_app(service, pages_for(service))
    base = f"http://{args.host}:{args.port}"
    console.info(f"The course {spec.name!r} is served at {base} ({', '.join(sorted(spec.labs))}; "
                 f"database {store.without_password(url)}; executor {executor.name}).")
    console.info(f"Next: send each student their token (`cudalab course tokens {args.course}`) and tell them to run "
                 f"`cudalab submit LAB --server {base}`; stop the service with Ctrl-C.")
    import uvicorn
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning", timeout_graceful_shutdown=5)
    service.runner.stop()
    return 0


def make_executor(args: argparse.Namespace, folder: Path, config: Config):
    """The executor --executor names (imported only when serving, like the rest of the service)."""
    from ..course import work
    if args.executor == "standin":
        return work.StandInExecutor(delay_s=max(0.0, args.standin_delay), slots=work.standin_slots())
    if args.executor == "slurm":
        from ..course import cluster
        return cluster.from_args(args, folder)
    return work.LocalExecutor(config)


def _use_staged_packages(root: Path) -> None:
    """Let this process import what tools/stage-deps.sh staged for a machine without a
    package registry (the packages installed here come first)."""
    for folder in staged_deps(root):
        if folder.is_dir() and str(folder) not in sys.path:
            sys.path.append(str(folder))


def pages_for(service) -> list:
    """The course's web pages, where this install has them (course/pages.py)."""
    if importlib.util.find_spec(f"{course_spec.__package__}.pages") is None:
        return []
    return importlib.import_module(f"{course_spec.__package__}.pages").routes(service)
