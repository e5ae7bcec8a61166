"""Where a batch's grading runs: one small interface, this machine's implementation, and
the Executor every executor is (the registry, `cudalab batch --executor NAME`, is
executors.py).

An executor is given a batch's plan (batch.Plan: the jobs to grade, the results store, the
configuration) and a progress reporter. It grades every job in plan.todo exactly as
`cudalab grade` grades one, commits each result with plan.store.commit(job, result) the
moment it is done (the records are what makes a batch resumable, whichever executor wrote
them), and tells the reporter as it goes. A cluster's executor (remote.RemoteExecutor,
driving a scheduler adapter such as slurm.Slurm) implements the same `run` with two job
arrays and leaves the same records; nothing else in the batch changes. Each executor adds its own options to the batch command, and an option of one
executor given with another is refused (it would do nothing).
"""
from __future__ import annotations

import dataclasses
import os
import queue
import subprocess
import threading
from abc import ABC, abstractmethod

from ..building import build
from ..isolation import cpus
from ..grading import grade
from .batch import begin_job, grader_failure_result
from ..config import Config
from ..errors import CudalabError, NoDeviceError, UsageError
from ..grading.audit import AuditServer
from ..isolation.runner import fresh_dir, scratch_dir
from ..isolation.trees import remove_tree


class Executor(ABC):
    name = ""
    options: tuple[str, ...] = ()  # the batch options (argparse dests) that only this executor takes

    def __init__(self) -> None:
        self.gpus: list[str] = []
        self.device: dict | None = None  # what the (first) GPU is, once known: for the summary

    @classmethod
    @abstractmethod
    def add_arguments(cls, group) -> None:
        """Add this executor's options (self.options) to the batch command's argument group."""

    @classmethod
    @abstractmethod
    def from_args(cls, config: Config, args) -> "Executor":
        """The executor the batch command's options ask for; UsageError for a bad value."""

    @abstractmethod
    def run(self, plan, reporter) -> None:
        """Grade every job of plan.todo, committing each result to plan.store as it is done."""


def visible_gpus(requested: str | None, environ=os.environ) -> list[str]:
    """The GPUs to grade on, as CUDA_VISIBLE_DEVICES names them: --gpus, else
    CUDA_VISIBLE_DEVICES, else every GPU nvidia-smi lists; [''] (the default device) when
    none can be listed, so that each grade says for itself that there is no GPU."""
    text = requested if requested is not None else environ.get("CUDA_VISIBLE_DEVICES")
    if text is not None:
        names = [part.strip() for part in text.split(",") if part.strip()]
        if requested is not None and not names:
            raise UsageError("--gpus needs at least one GPU, such as --gpus 0 or --gpus 0,1.")
        return names or [""]
    try:
        done = subprocess.run(["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return [""]
    found = [line.strip() for line in done.stdout.splitlines() if line.strip().isdigit()]
    return found if done.returncode == 0 and found else [""]


class LocalExecutor(Executor):
    """This machine: builds side by side on the CPU cores; on each GPU, `slots` (config.gpu_slots) grades at a
    time, which take turns on the GPU (gpu.exclusive holds it for each program and each
    timing round) so that one grade's CPU work (the checker, the kept samples' checks)
    overlaps another's GPU work."""

    name = "local"
    options = ("gpus", "jobs")

    @classmethod
    def add_arguments(cls, group) -> None:
        group.add_argument("--gpus", help="the GPUs to grade on, as CUDA_VISIBLE_DEVICES names them "
                           "(default: every GPU nvidia-smi lists, or CUDA_VISIBLE_DEVICES where it is set)")
        group.add_argument("--jobs", type=int, help="builds at once (default: the CPU cores)")

    @classmethod
    def from_args(cls, config: Config, args) -> "LocalExecutor":
        if args.jobs is not None and args.jobs < 1:
            raise UsageError("--jobs must be 1 or more.")
        return cls(config, gpus=args.gpus, jobs=args.jobs)

    def __init__(self, config: Config, gpus: str | None = None, jobs: int | None = None, slots: int | None = None):
        super().__init__()
        self.config = config
        self.gpus = visible_gpus(gpus)
        self.build_workers = jobs or max(1, (os.cpu_count() or 2) - 2)
        self.slots = max(1, slots or config.gpu_slots)

    def _probe(self, plan, reporter) -> dict[str, dict | None]:
        """Each GPU once: what it is, and that the reference runs on it. A GPU whose probe
        fails is still used: each grade then probes it itself and says what is wrong."""
        devices: dict[str, dict | None] = {}
        why_not: list[str] = []
        for gpu in self.gpus:
            reporter.phase(f"checking that the reference solution runs on GPU {gpu or '(default)'}")
            try:
                devices[gpu] = grade.probe_device(dataclasses.replace(self.config, gpu_device=gpu), plan.spec)
            except CudalabError as err:
                devices[gpu] = None
                why_not.append(err.why if isinstance(err, NoDeviceError) else str(err))
        self.device = next((d for d in devices.values() if d), None)
        if self.device is None and why_not:  # said before the first hand-in, not after the last
            reporter.phase(f"nothing can be graded here ({why_not[0]}): every hand-in is built and its form "
                           "checked, and none gets a grade; the same command, run where the reference runs, "
                           "grades them")
        return devices

    def run(self, plan, reporter) -> None:
        if not plan.todo:
            return
        config, spec = self.config, plan.spec
        cpus.keep_to_work_cpus(config)  # the batch's threads, and what they start, off the CPUs left to timing
        reporter.phase("bringing the official build up to date")
        try:
            build.ensure_official(config, spec)
        except CudalabError:
            pass  # each grade reports it in its own result
        devices = self._probe(plan, reporter)
        scratch = scratch_dir(config, f"batch-{spec.name}")
        # One auditor and one reference program per GPU serve the timing rounds of every grade there.
        servers = {gpu: AuditServer.for_lab(dataclasses.replace(config, gpu_device=gpu), spec,
                                            fresh_dir(scratch, "timing"))
                   for gpu in self.gpus}
        to_build: queue.Queue = queue.Queue()
        built: queue.Queue = queue.Queue()
        for job in plan.todo:
            to_build.put(job)
        remaining = threading.Semaphore(0)
        failures: list[BaseException] = []

        def complete(job, pending, folder, gpu: str | None) -> None:
            try:
                if gpu is not None:
                    pending.config = dataclasses.replace(pending.config, gpu_device=gpu)
                result = grade.finish(pending, attachments_to=plan.store.student_dir(job),
                                      device=devices.get(gpu) if gpu is not None else None,
                                      audit=servers.get(gpu) if gpu is not None else None)
                plan.store.commit(job, result)
                reporter.done(job, result)
            finally:
                remove_tree(folder)

        def failed(job, stage: str, err: Exception) -> None:
            """The grader failed on this hand-in: its error row, and on to the next. Only when
            even that row cannot be written does the batch stop, and say why."""
            try:
                result = grader_failure_result(config, spec, job, stage, err)
                plan.store.commit(job, result)
                reporter.done(job, result)
            except Exception as worse:
                failures.append(worse)

        def builder() -> None:
            while True:
                try:
                    job = to_build.get_nowait()
                except queue.Empty:
                    return
                try:
                    reporter.started(job, "building")
                    pending, folder = begin_job(config, spec, job, scratch, plan.allow_unisolated)
                    if pending.error is not None or pending.binary is None:
                        complete(job, pending, folder, None)  # nothing to run: no GPU needed
                        remaining.release()
                    else:
                        built.put((job, pending, folder))
                except Exception as err:  # a grader bug on this hand-in: its error row, then the next
                    failed(job, "staging and building", err)
                    remaining.release()
                except BaseException as err:  # the batch itself is stopping
                    failures.append(err)
                    remaining.release()

        def gpu_worker(gpu: str) -> None:
            while True:
                item = built.get()
                if item is None:
                    return
                job, pending, folder = item
                try:
                    reporter.started(job, f"grading on GPU {gpu}" if gpu else "grading")
                    complete(job, pending, folder, gpu)
                except Exception as err:  # a grader bug on this hand-in: its error row, then the next
                    failed(job, "grading", err)
                except BaseException as err:
                    failures.append(err)
                finally:
                    remaining.release()

        threads = [threading.Thread(target=builder, daemon=True, name=f"build-{i}")
                   for i in range(min(self.build_workers, len(plan.todo)))]
        threads += [threading.Thread(target=gpu_worker, args=(gpu,), daemon=True, name=f"gpu-{gpu}-{slot}")
                    for gpu in self.gpus for slot in range(self.slots)]
        for thread in threads:
            thread.start()
        reporter.phase("grading")
        try:
            for _ in plan.todo:
                while not remaining.acquire(timeout=0.5):  # wakes for Ctrl-C
                    pass
                if failures:
                    raise failures[0]
        finally:
            for _ in range(len(self.gpus) * self.slots):
                built.put(None)
            for server in servers.values():
                if server is not None:
                    server.close()  # after the round it may be serving, if interrupted
            remove_tree(scratch)
