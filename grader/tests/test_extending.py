"""docs/extending.md's recipes, done as they are written (the lab recipe is done by
test_lab_tree.py): an executor added as the recipe says grades a batch exactly as the local
executor does, a scheduler added as one adapter grades it too and takes up its jobs again
after the head crashed, an output added as the recipe says is written by `batch --outputs`,
and a hand-in check added as the recipe says is run by `cudalab check` and by a submission's
build."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from cudalab.batching import batch, executors, remote
from cudalab.building import build
from cudalab import cli
from cudalab.grading import grade
from cudalab.intake import handin_checks
from cudalab.lab import labs
from cudalab.outputs import publish
from cudalab.config import Config
from cudalab.errors import CompileError, CudalabError
from cudalab.batching.executor import Executor
from cudalab.exit_codes import Cli
from cudalab.intake.handin import Finding
from cudalab.isolation.runner import scratch_dir
from cudalab.isolation.trees import remove_tree
from conftest import REPO_ROOT
from test_batch import outcome, records, run_batch, write_handin

sys.path.insert(0, str(Path(__file__).resolve().parent))
import batch_driver  # noqa: E402  (the toy lab's fake build, as the batch tests use it)


class SequentialExecutor(Executor):
    """One hand-in at a time on this machine: the recipe's steps, and nothing else."""

    name = "sequential"
    options = ("pause_s",)

    @classmethod
    def add_arguments(cls, group) -> None:
        group.add_argument("--pause-s", type=float, help="seconds to wait between two hand-ins")

    @classmethod
    def from_args(cls, config, args) -> "SequentialExecutor":
        return cls(config)

    def __init__(self, config) -> None:
        super().__init__()
        self.config = config

    def run(self, plan, reporter) -> None:
        scratch = scratch_dir(self.config, f"sequential-{plan.spec.name}")
        try:
            for job in plan.todo:
                try:
                    pending, folder = batch.begin_job(self.config, plan.spec, job, scratch, plan.allow_unisolated)
                    try:
                        result = grade.finish(pending, attachments_to=plan.store.student_dir(job))
                    finally:
                        remove_tree(folder)
                except Exception as err:  # the grader failed on this one: its error row, and on
                    result = batch.grader_failure_result(self.config, plan.spec, job, "grading", err)
                plan.store.commit(job, result)
                reporter.done(job, result)
        finally:
            remove_tree(scratch)


def three_hand_ins(folder: Path) -> Path:
    folder.mkdir()
    for student, form, behaviour in (("alice", "folder", {"sample_ms": 1.0}), ("bob", "tar.gz", {"wrong_cases": ["c_7"]}),
                                     ("carol", "zip", {"compile_error": True})):
        write_handin(folder, student, form, behaviour)
    return folder


def in_this_process(toy_config, monkeypatch) -> None:
    """`cudalab batch` on the toy lab run by cli.main here, as batch_driver.py runs it."""
    monkeypatch.setitem(executors.EXECUTORS, "sequential", SequentialExecutor)  # the executor recipe's step 3
    monkeypatch.setattr(build, "build_submission", batch_driver.fake_build)
    for name, value in dict(CUDALAB_ROOT=str(toy_config.root), CUDALAB_PRESET="ci",
                            CUDALAB_WORK_DIR=str(toy_config.work_dir), CUDALAB_TIMING_ROUNDS="2",
                            CUDALAB_TIMING_TARGET_S="0.1", CUDALAB_SAMPLES_MIN="10", CUDALAB_TIMING_WARMUP="1",
                            CUDALAB_PROCESS_TIMEOUT_S="20", CUDALAB_GPU_IDLE_WAIT_S="0").items():
        monkeypatch.setenv(name, value)


def test_an_executor_added_as_the_recipe_says_grades_a_batch(toy_config, tmp_path, monkeypatch, capsys):
    handins = three_hand_ins(tmp_path / "handins")
    local = tmp_path / "local"
    code, _, stderr = run_batch(toy_config, handins, local)
    assert code == 0, stderr

    in_this_process(toy_config, monkeypatch)
    out = tmp_path / "sequential"
    assert cli.main(["batch", "toy", str(handins), "--out", str(out), "--executor", "sequential"]) == 0
    assert outcome(out) == outcome(local) and set(records(out)) == {"alice", "bob", "carol"}
    assert (out / "summary.html").is_file() and (out / "canvas.csv").is_file()
    # Its options are its own: another executor's are refused in a sentence, and it refuses theirs.
    assert cli.main(["batch", "toy", str(handins), "--out", str(out), "--executor", "sequential",
                     "--jobs", "2"]) == 2
    assert "--jobs is an option of --executor local, not of --executor sequential" in capsys.readouterr().err
    assert cli.main(["batch", "toy", str(handins), "--out", str(out), "--pause-s", "1"]) == 2
    assert "--pause-s is an option of --executor sequential" in capsys.readouterr().err


class HeadKilled(BaseException):
    """The head's process dies here (as SIGKILL would end it: no handler runs)."""


class InProcessScheduler(remote.Scheduler):
    """A cluster that is this process: each time the head asks how its tasks are, it runs
    the next task that may run (remote.run_task, what a real task's process runs), as a
    one-node cluster with one slot would. Task i of an array with `after` waits for task i
    of that array to complete, and is cancelled when that one ended otherwise."""

    name = "Toyq"
    key = "toyq"
    index_variable, job_variable, node_variable = "TOYQ_INDEX", "TOYQ_JOB", "TOYQ_NODE"
    status_command, list_command = "toyq status", "toyq list"

    def __init__(self) -> None:
        self.arrays: dict[str, remote.Array] = {}
        self.states: dict[str, list[str]] = {}
        self.held: set[str] = set()
        self.die_after_tasks: int | None = None  # the head dies once this many tasks ran

    def submit(self, array: remote.Array) -> str:
        job = str(500 + len(self.arrays))
        self.arrays[job], self.states[job] = array, ["PENDING"] * array.count
        self.held.add(job)
        return job

    def release(self, job: str) -> None:
        self.held.discard(job)

    def _run_one(self) -> bool:
        for job, array in self.arrays.items():
            for index, state in enumerate(self.states[job]):
                if state != "PENDING" or job in self.held:
                    continue
                if array.after is not None:
                    before = self.states[array.after][index]
                    if before in ("PENDING", "RUNNING"):
                        continue
                    if before != "DONE":
                        self.states[job][index] = "CANCELLED"
                        return True
                self.states[job][index] = "RUNNING"
                try:
                    code = remote.run_task(self, array.step, array.folder, index, remote.Where(self, job, "toy-node"))
                except CudalabError:
                    code = 1
                self.states[job][index] = "DONE" if code == 0 else "FAILED"
                return True
        return False

    def tasks(self, jobs: list[str]) -> dict[tuple[str, int], remote.Task]:
        if self._run_one() and self.die_after_tasks is not None:
            self.die_after_tasks -= 1
            if self.die_after_tasks <= 0:
                self.die_after_tasks = None
                raise HeadKilled()
        return {(job, index): self._task(state) for job in jobs
                for index, state in enumerate(self.states.get(job, []))}

    @staticmethod
    def _task(state: str) -> remote.Task:
        phase = {"PENDING": remote.QUEUED, "RUNNING": remote.RUNNING, "DONE": remote.COMPLETED}.get(state, remote.ENDED)
        return remote.Task(state, phase)

    def details(self, job: str, index: int) -> remote.Task | None:
        return self._task(self.states[job][index]) if job in self.states else None

    def cancel(self, jobs: list[str], index: int | None = None) -> None:
        for job in jobs:
            for i, state in enumerate(self.states.get(job, [])):
                if (index is None or i == index) and state == "PENDING":
                    self.states[job][i] = "CANCELLED"

    def find(self, name: str) -> str | None:
        return next((job for job, array in self.arrays.items() if array.name == name), None)


class ToyqExecutor(remote.RemoteExecutor):
    """The executor of the in-process cluster: its name, its options, and its adapter."""

    name = "toyq"
    options = ("toyq_poll_s",)
    cluster = InProcessScheduler()  # the cluster outlives a head, as a real one does

    @classmethod
    def add_arguments(cls, group) -> None:
        group.add_argument("--toyq-poll-s", type=float, help="how often the head asks toyq about its tasks")

    @classmethod
    def from_args(cls, config, args) -> "ToyqExecutor":
        return cls(config, cls.cluster, poll_s=args.toyq_poll_s or 0.01)


def test_a_scheduler_added_as_one_adapter_grades_a_batch_and_takes_up_its_jobs_after_a_crash(
        toy_config, tmp_path, monkeypatch, capsys):
    handins = three_hand_ins(tmp_path / "handins")
    local = tmp_path / "local"
    code, _, stderr = run_batch(toy_config, handins, local)
    assert code == 0, stderr

    in_this_process(toy_config, monkeypatch)
    cluster = InProcessScheduler()
    monkeypatch.setattr(ToyqExecutor, "cluster", cluster)
    monkeypatch.setitem(executors.EXECUTORS, "toyq", ToyqExecutor)  # the scheduler recipe's step 3
    monkeypatch.setattr(remote, "RECORD_LAG_S", 0.0)
    out = tmp_path / "toyq"
    command = ["batch", "toy", str(handins), "--out", str(out), "--executor", "toyq"]
    cluster.die_after_tasks = 2  # the head dies after the first two tasks ran
    with pytest.raises(HeadKilled):
        cli.main(command)
    assert len(cluster.arrays) == 2 and len(records(out)) < 3  # submitted, part graded, the rest still queued
    capsys.readouterr()

    assert cli.main(command) == 0  # the next run follows the jobs on the cluster rather than submitting again
    assert "already queued or running on Toyq (jobs 500, 501)" in capsys.readouterr().err
    assert len(cluster.arrays) == 2
    assert outcome(out) == outcome(local) and set(records(out)) == {"alice", "bob", "carol"}
    graded = records(out)["alice"]["result"]["provenance"]["toyq"]
    assert set(graded) == {"submission", "build", "gpu"} and graded["gpu"]["node"] == "toy-node"
    assert set(records(out)["carol"]["result"]["provenance"]["toyq"]) == {"submission", "build"}  # no GPU step
    assert remote.recorded_jobs(out, InProcessScheduler) == []  # followed to their end, and forgotten


def test_a_task_its_scheduler_cancelled_is_recorded_as_such_and_graded_by_the_next_run(
        toy_config, tmp_path, monkeypatch, capsys):
    handins = three_hand_ins(tmp_path / "handins")
    in_this_process(toy_config, monkeypatch)
    cluster = InProcessScheduler()
    monkeypatch.setattr(ToyqExecutor, "cluster", cluster)
    monkeypatch.setitem(executors.EXECUTORS, "toyq", ToyqExecutor)
    monkeypatch.setattr(remote, "RECORD_LAG_S", 0.0)
    out = tmp_path / "out"
    command = ["batch", "toy", str(handins), "--out", str(out), "--executor", "toyq"]
    cluster.die_after_tasks = 1
    with pytest.raises(HeadKilled):
        cli.main(command)
    [submission] = remote.Ledger(out, InProcessScheduler).submissions
    bob = next(i for i, key in enumerate(submission.keys) if key.startswith("bob"))
    cluster.cancel([submission.gpu_job], bob)  # by an administrator, while no head follows

    assert cli.main(command) == int(Cli.INTERNAL)
    result = records(out)["bob"]["result"]
    assert batch.is_scheduler_failure(result) and result["score"]["total"] == 0
    assert result["message"].startswith(f"The Toyq GPU task {submission.gpu_job}_{bob} ended as CANCELLED before")
    assert result[batch.SCHEDULER_FAILURE]["executor"] == "toyq"
    capsys.readouterr()
    assert cli.main(command) == 0  # graded again, in a submission of its own
    assert "1 to grade now" in capsys.readouterr().err and len(cluster.arrays) == 4
    assert records(out)["bob"]["result"]["status"] == "graded"


def moodle_csv(context: publish.ClassContext) -> str:
    """Moodle's grade import: one row per student with a grade (its id number and points)."""
    rows = [["ID number", "Grade"]] + [[entry.student, f"{entry.score.total:g}"]
                                       for entry in context.entries if entry.counts and entry.score]
    return "".join(",".join(row) + "\n" for row in rows)


def test_an_output_added_as_the_recipe_says_is_written_by_batch_outputs(toy_config, tmp_path, monkeypatch):
    handins = three_hand_ins(tmp_path / "handins")
    in_this_process(toy_config, monkeypatch)
    monkeypatch.setitem(publish.CLASS_OUTPUTS, "moodle",  # the output recipe's step 2
                        publish.ClassOutput("moodle", "moodle.csv", "Moodle's grade import", moodle_csv))
    out = tmp_path / "out"
    assert cli.main(["batch", "toy", str(handins), "--out", str(out), "--executor", "sequential",
                     "--outputs", "moodle,feedback"]) == 0
    moodle = (out / "moodle.csv").read_text().splitlines()
    assert moodle[0] == "ID number,Grade" and "alice,100" in moodle and any(r.startswith("carol,") for r in moodle)
    assert not (out / "gradebook.csv").exists() and not (out / "summary.html").exists()
    written = {p.name for p in publish.student_dir(out, "alice").iterdir()}
    assert written == {"feedback.md"}


class LineEndingsCheck(handin_checks.HandInCheck):
    """Windows line endings in a lab file: the hand-in check recipe's step 1."""

    name = "line_endings"
    requires = ("files",)
    at_grade_time = True
    severity = "warning"

    def run(self, context, check) -> None:
        for name, data in context.lab_files().items():
            if b"\r\n" in data:
                check.add([Finding(self.name, self.severity, f"{name} has Windows (CRLF) line endings; save it "
                                   "with Unix (LF) line endings.", name)])


class StrictLineEndingsCheck(LineEndingsCheck):
    """The same check, made to reject."""

    rejects = True
    severity = "error"


@pytest.mark.needs_build
def test_a_hand_in_check_added_as_the_recipe_says_is_run_by_check_and_by_the_build(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CUDALAB_WORK_DIR", str(tmp_path / "work"))
    config = Config.load(root=REPO_ROOT, work_dir=tmp_path / "work")
    spec = labs.load_lab(config, "vector_add")
    folder = tmp_path / "hand-in"
    folder.mkdir()
    good = REPO_ROOT / "grader" / "tests" / "handins" / "vector_add" / "good" / "vector_add.cu"
    (folder / "vector_add.cu").write_bytes(good.read_bytes().replace(b"\r\n", b"\n").replace(b"\n", b"\r\n"))
    receipt_file = tmp_path / "receipt.json"

    def checked() -> tuple[int, dict]:
        capsys.readouterr()
        code = cli.main(["check", str(folder), "--lab", "vector_add", "--no-run", "--receipt", str(receipt_file)])
        return code, json.loads(receipt_file.read_text())

    handin_checks.register(LineEndingsCheck())  # step 2
    try:
        # Step 3 is the receipt's names: until CheckName and the schema list it, they disagree.
        assert any("line_endings" in said for said in handin_checks.schema_disagreements())
        code, receipt = checked()
        names = [c["name"] for c in receipt["checks"]]
        assert names == ["archive", "files", "compile", "symbols", "forbidden", "line_endings", "smoke_run", "sanitizer"]
        reported = receipt["checks"][names.index("line_endings")]
        assert reported["verdict"] == "warning" and "CRLF" in reported["findings"][0]["message"]
        assert code == Cli.DONE and receipt["accepted"]
        assert "line_endings warning" in capsys.readouterr().out
        # A grade-time check is run by every build of a submission (grade, run, build).
        built = build.build_submission(config, spec, folder, tmp_path / "work" / "warned")
        assert built.binary.is_file() and "vector_add.cu has Windows (CRLF) line endings" in capsys.readouterr().err
    finally:
        handin_checks.unregister("line_endings")

    handin_checks.register(StrictLineEndingsCheck())
    try:
        code, receipt = checked()
        assert code == Cli.REJECTED and not receipt["accepted"]
        assert {c["name"]: c["verdict"] for c in receipt["checks"]}["line_endings"] == "failed"
        with pytest.raises(CompileError, match="did not pass the hand-in check 'line_endings'") as refused:
            build.build_submission(config, spec, folder, tmp_path / "work" / "refused")
        assert refused.value.feedback == ["vector_add.cu has Windows (CRLF) line endings; save it with Unix (LF) "
                                          "line endings."]
        linked = built.binary.relative_to(tmp_path / "work" / "warned")
        assert (tmp_path / "work" / "refused" / "src" / "vector_add.cu").is_file()  # staged, compiled ...
        assert not (tmp_path / "work" / "refused" / linked).exists()               # ... and not linked
    finally:
        handin_checks.unregister("line_endings")
    assert handin_checks.schema_disagreements() == []
    code, receipt = checked()
    assert code == Cli.DONE and "line_endings" not in [c["name"] for c in receipt["checks"]]
