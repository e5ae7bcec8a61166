"""`cudalab batch`: grade a whole class's hand-ins, crash-safe and resumable.

    cudalab batch LAB HAND-INS --out DIR [--gpus 0,1] [--jobs N] [--regrade ID ...]
    cudalab batch LAB HAND-INS --out DIR --executor slurm [--partition P] [--max-parallel N] ...

HAND-INS is a folder with one hand-in per student: a folder, a .tar.gz/.tgz/.tar or a .zip
(what `cudalab pack` makes). Who handed it in comes from how the hand-ins were collected,
never from what a hand-in says about itself: its name (`vector_add-s123.tar.gz` and `s123/`
are both s123) or, with `--roster FILE` (a CSV with columns id, name, lms_id), the roster's
student whose LMS id the name carries (Canvas names a download
`<name>_[LATE_]<LMS id>_<submission id>_<file name>`) or whose id the name is. A manifest
(cudalab-manifest.json) naming another student, two hand-ins of one student, and a hand-in
of nobody on the roster are graded and flagged for the instructor; roster students without
a hand-in are listed. An id is only ever data: the student's results folder is named by the
grader (a cleaned form of the id and a hash of it). Each hand-in is graded exactly as
`cudalab grade` grades one (staged, built and run in the sandbox, judged by the trusted checker, timed against the reference in the same
session): builds run side by side on the CPU cores, and each GPU runs one program at a
time, its timing rounds alone (gpu.exclusive), so that one grade's checks on the CPU go on
while the next uses the GPU.

Crash-safe: each grade is committed as DIR/records/<key>.json (written atomically, the
hand-in's sha256 in it) the moment it is done. A batch killed at any point (SIGKILL
included) and started again skips what was committed, grades again what was half done,
and loses and duplicates nothing; a hand-in whose hash changed since it was graded is
reported and keeps its grade until `--regrade ID` (or `--regrade-changed`) grades it
again. The class outputs (gradebook.csv, canvas.csv, summary.html) and each student's
feedback (students/<key>/) are written from the records at the end of every run, and
say so when the batch is not complete.

Only a grade is kept: a hand-in whose record holds none (not run for want of a GPU, refused
for want of a sandbox, a grader or scheduler failure: status.has_grade) is graded again by
the next run, whose first line says how many it grades and why. The last line says how many
hand-ins have a grade and, grouped, why the others have none; the batch then exits 0 only if
every hand-in has one, else with the code `cudalab grade` gives the commonest reason (23 no
GPU, 25 no sandbox, 24 a grader or scheduler failure; exit_code). A folder with no hand-in in
it is refused in a sentence that says what a batch looks for.

One hand-in never stops the others: where the grader itself fails on one (an exception while
staging, building, grading, cleaning up after or committing it), that hand-in gets a record
with status error, a zero and the reason (its result's "grader_failure"), the batch goes on,
its outputs show the hand-in as not graded, it exits 24, and the next run grades it again.

Where the work runs is an executor (executor.py): this machine's CPUs and GPUs, or a
cluster's Slurm (slurm.py), with the same records and outputs. A record that says the
scheduler stopped the grade (a Slurm task cancelled, failed or out of time: its result's
"scheduler_failure") is no grade: the outputs show it as not graded, and the next run
grades that hand-in again.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from .. import console
from ..batching import executors, progress
from ..lab import labs
from ..outputs import publish, report
from ..batching.batch import Store, make_plan, publish_outputs, read_roster
from ..config import Config
from ..batching.slurm import recorded_jobs


def _outputs_argument(text: str) -> list[str]:
    """argparse type of --outputs: names of publish's student and class outputs, separated by commas."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    known = [*publish.STUDENT_OUTPUTS, *publish.CLASS_OUTPUTS]
    unknown = [name for name in names if name not in known]
    if unknown:
        raise argparse.ArgumentTypeError(f"there is no output {', '.join(map(repr, unknown))}; "
                                         f"there are: {', '.join(known)}.")
    if not names:
        raise argparse.ArgumentTypeError(f"name at least one output; there are: {', '.join(known)}.")
    return names


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("lab", help="the lab the hand-ins are for")
    parser.add_argument("handins", type=Path, help="the folder with one hand-in per student")
    parser.add_argument("--out", type=Path, required=True,
                        help="the batch's results folder (made if missing; give the same one again to resume)")
    parser.add_argument("--executor", choices=tuple(executors.EXECUTORS), default="local",
                        help="where the grading runs: this machine (local, the default) or a Slurm "
                        "cluster's jobs (slurm)")
    parser.add_argument("--outputs", type=_outputs_argument, metavar="NAME,NAME,...",
                        help="the outputs to write, each student's and the class's (default: all of them): "
                        + ", ".join(f"{name} ({output.file})" for name, output in
                                    [*publish.STUDENT_OUTPUTS.items(), *publish.CLASS_OUTPUTS.items()]))
    parser.add_argument("--regrade", nargs="+", metavar="ID", default=[],
                        help="grade these students again even if they were graded")
    parser.add_argument("--regrade-changed", action="store_true",
                        help="grade again every hand-in whose hash changed since it was graded")
    parser.add_argument("--allow-unisolated", action="store_true",
                        help="grade even where student code cannot be sandboxed (not official grades)")
    parser.add_argument("--roster", type=Path, metavar="FILE",
                        help="the class roster, a CSV with columns id, name, lms_id (and section): hand-ins "
                        "are matched to students by the LMS id in their download names, or by id; canvas.csv "
                        "gets the names, and the summary lists who handed nothing in")
    executors.add_arguments(parser)


def _warn_of_slurm_jobs(store: Store) -> None:
    """Grading here while an earlier --executor slurm run's jobs may still be grading the
    same hand-ins would grade them twice: say so."""
    jobs = recorded_jobs(store.out)
    if jobs:
        console.warn(f"an earlier --executor slurm run of this batch submitted Slurm jobs {', '.join(jobs)}; if "
                     "they are still queued or running they grade the same hand-ins. Follow them with "
                     f"--executor slurm, or cancel them first (scancel {' '.join(jobs)}).")


def main(args: argparse.Namespace, config: Config) -> int:
    spec = labs.load_lab(config, args.lab)
    executor = executors.make(args.executor, config, args)
    store = Store(args.out.resolve())
    started_at = report.timestamp()
    with store.locked():
        store.open(spec.name, args.handins)
        if executor.name != "slurm":
            _warn_of_slurm_jobs(store)
        plan = make_plan(config, spec, store, args.handins, args.regrade, args.regrade_changed,
                         args.allow_unisolated, read_roster(args.roster) if args.roster else None)
        reporter = progress.make(json_lines=args.json)
        reporter.begin(total=len(plan.jobs), done=len(plan.jobs) - len(plan.todo), skipped=plan.skipped,
                       changed=[j.student for j in plan.jobs if j.key in plan.changed], why=plan.todo_reasons())
        interrupted = False
        console.set_quiet(True)
        try:
            executor.run(plan, reporter)
        except KeyboardInterrupt:
            interrupted = True
        finally:
            console.set_quiet(False)
        reporter.phase("writing the gradebook, feedback and summary")
        published = publish_outputs(plan, started_at, executor, args.outputs)
        reporter.end(published, interrupted)
    return 130 if interrupted else published["info"]["exit_code"]
