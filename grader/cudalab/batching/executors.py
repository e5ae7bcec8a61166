"""The executors a batch can grade with (`cudalab batch --executor NAME`): this machine's
(executor.LocalExecutor) and a Slurm cluster's (slurm.SlurmExecutor: remote.RemoteExecutor
through the Slurm adapter), their options, and making the one a batch asks for. It sits
above them all, so that remote.py and slurm.py can build on executor.py without
executor.py having to know them.
"""
from __future__ import annotations

from ..config import Config
from ..errors import UsageError
from .executor import Executor, LocalExecutor
from .slurm import SlurmExecutor

EXECUTORS: dict[str, type[Executor]] = {"local": LocalExecutor, "slurm": SlurmExecutor}


def add_arguments(parser) -> None:
    """Every executor's options, one argument group each."""
    for name, executor in EXECUTORS.items():
        executor.add_arguments(parser.add_argument_group(f"with --executor {name}"))


def make(name: str, config: Config, args) -> Executor:
    """The executor `name`, from the batch command's options (argparse's namespace)."""
    if name not in EXECUTORS:
        raise UsageError(f"There is no executor {name!r}; there are: {', '.join(EXECUTORS)}.")
    refuse_others_options(name, args)
    return EXECUTORS[name].from_args(config, args)


def refuse_others_options(name: str, args) -> None:
    """UsageError when args give an option of an executor other than `name` (the course
    service's executors, which are not a batch's, are checked here too)."""
    for other, executor in EXECUTORS.items():
        given = [dest for dest in executor.options if other != name and getattr(args, dest, None) not in (None, [])]
        if given:
            option = "--" + given[0].replace("_", "-")
            raise UsageError(f"{option} is an option of --executor {other}, not of --executor {name}: "
                             f"leave it out, or use --executor {other}.")
