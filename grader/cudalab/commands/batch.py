"""`cudalab batch`: grade a whole class's hand-ins, crash-safe and resumable.

    cudalab batch LAB HAND-INS --out DIR [--gpus 0,1] [--jobs N] [--regrade ID ...]
    cudalab batch LAB HAND-INS --out DIR --executor slurm [--partition P] [--max-parallel N] ...
    cudalab batch LAB --from-course COURSE [--out DIR] [--before-deadline] ...

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

With --from-course, the hand-ins are the course service's: for each student the hand-in
that counts under the course's policy (course.toml: the last, or the best graded), copied
from the course's uploads into DIR/handins (one archive per student, named by id) and graded
as above, the roster being the course's. Each grade carries the late policy's assessment of
its hand-in (by the service's clock when it was received), and the class outputs take its
penalty off the total (gradebook.csv says how late and how much; canvas.csv has the total
after it); roster students with no hand-in that counts are listed. A hand-in that counts
now but not at an earlier run (a later one came) is graded again. It refuses to run before
the deadline (and its grace) has passed, unless --before-deadline, whose grades are
provisional. DIR defaults to COURSE/grades/LAB.

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
from ..errors import UsageError


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
    parser.add_argument("handins", type=Path, nargs="?",
                        help="the folder with one hand-in per student (not with --from-course)")
    parser.add_argument("--out", type=Path,
                        help="the batch's results folder (made if missing; give the same one again to resume); "
                        "with --from-course, default COURSE/grades/LAB")
    parser.add_argument("--from-course", type=Path, metavar="COURSE",
                        help="grade the course service's hand-ins that count, with its late policy")
    parser.add_argument("--database", metavar="URL",
                        help="with --from-course: the course's database (default: sqlite in COURSE)")
    parser.add_argument("--before-deadline", action="store_true",
                        help="with --from-course: grade before the deadline has passed (provisional grades)")
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


def _check_source(args: argparse.Namespace) -> None:
    """One source of hand-ins: a folder, or the course's."""
    if args.from_course is None:
        if args.handins is None or args.out is None:
            raise UsageError("Give the hand-ins folder and --out DIR (cudalab batch LAB HAND-INS --out DIR), or "
                             "--from-course COURSE to grade a course service's hand-ins.")
        for option in ("database", "before_deadline"):
            if getattr(args, option):
                raise UsageError(f"--{option.replace('_', '-')} goes with --from-course only.")
        return
    if args.handins is not None or args.roster is not None:
        raise UsageError("--from-course takes the hand-ins and the roster from the course: give no hand-ins "
                         "folder and no --roster with it.")


def _from_course(args: argparse.Namespace, config: Config, lab: str, store: Store):
    """The course's counted hand-ins laid out under the results folder: (folder, roster, late)."""
    # Imported here: the course's packages (SQLAlchemy) are needed by --from-course only.
    from ..course import collect, spec as course_spec, store as course_store
    course = course_spec.load_course(args.from_course, config)
    offer = course.offer(lab)
    not_final = collect.before_deadline_sentence(offer, course_store.now())
    if not_final and course_store.now() <= offer.on_time_until and not args.before_deadline:
        raise UsageError(f"Not grading yet: {not_final}. Run it after the deadline, or with --before-deadline for "
                         "provisional grades.")
    if not_final:
        console.warn(f"these grades are provisional: {not_final}. Run the batch again after "
                     f"{offer.closes.isoformat()}; it grades again only what changed.")
    sessions = course_store.open_database(course_store.database_url(course, args.database))
    collected = collect.collect(course, sessions, lab, store.out / "handins")
    for sentence in collected.skipped:
        console.warn(f"not graded: {sentence}")
    return collected.folder, collected.roster, collected.late


def main(args: argparse.Namespace, config: Config) -> int:
    _check_source(args)
    spec = labs.load_lab(config, args.lab)
    executor = executors.make(args.executor, config, args)
    out = args.out or (args.from_course / "grades" / spec.name if args.from_course else None)
    store = Store(out.resolve())
    started_at = report.timestamp()
    with store.locked():
        if args.from_course is not None:
            store.open(spec.name, store.out / "handins")
            handins, roster, late = _from_course(args, config, spec.name, store)
            regrade_changed = True  # the hand-in that counts is the course's decision, not a change to review
        else:
            store.open(spec.name, args.handins)
            handins, late, regrade_changed = args.handins, None, args.regrade_changed
            roster = read_roster(args.roster) if args.roster else None
        if executor.name != "slurm":
            _warn_of_slurm_jobs(store)
        plan = make_plan(config, spec, store, handins, args.regrade, regrade_changed,
                         args.allow_unisolated, roster, late)
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
