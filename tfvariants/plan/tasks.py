"""The tasks a run can be (training, serving), looked up by the name a stored run or cell
records: run.json's and a cell's ``task`` ("serve"; absent on training's, which came
first). The store reads a stored run and its cells through this table instead of
branching on a task's name: the options class the run's stored options are checked
against (store/runfile.py), a stored cell's file name (store/rundir.py) and the kind of
result the host writes for a cell whose worker wrote none (store/result.py), and what a
cell's worker is asked (``worker``: pure data the runner, execute/runner.py, sends).

A task registers itself: its plan module (the one holding its spec and cells) defines
``TASK``, a :class:`Task`, and is found here by discovery over ``tfvariants.plan``; no
shared file names it. The other stages find a task's parts by its ``stem``
(docs/ARCHITECTURE.md "A new task type").
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import tfvariants.plan
from tfvariants.options.declare import RunOptionsBase
from tfvariants.plan.pinning import PinPlan


@dataclass(frozen=True)
class WorkerOrder:
    """What one cell's worker is asked and what is kept of it: pure data its task builds
    from the planned cell, the options it runs with and its variant's compile options and
    Keras backend. The runner (execute/runner.py ``run_cell``) adds the host's part: the
    result's path, the CPUs and pools, the envelope (workloads/protocol.py)."""

    module: str  # the worker: python -m <module>
    workload: str  # the envelope's workload (a model file's path a launcher may rewrite)
    config: Mapping[str, Any]  # what its result records as the cell's settings
    timeout_s: float
    fields: Mapping[str, Any] = field(default_factory=dict)  # envelope fields the task sets
    payload: Mapping[str, Any] | None = None  # the task's own request (its worker reads it)
    keep: tuple[str, ...] = ()  # files its worker leaves beside its result, kept with its artifacts


# (planned cell, the options it runs with, its variant's compile options, its backend)
Order = Callable[[Any, Any, Mapping[str, Any], str], WorkerOrder]


def as_planned(plan: PinPlan) -> PinPlan:
    return plan


@dataclass(frozen=True)
class Task:
    """What the ground stages need to know of one task, by its stored name."""

    name: str  # as run.json and a cell record it ("train", "serve")
    stem: str  # its modules' name in every stage ("training": tfvariants.analyze.training)
    order: int  # its place in a report and a listing (the first leads a report)
    options: type[RunOptionsBase]  # the class a stored run's options are checked against
    result_kind: str  # the "kind" of its cells' result files
    # a stored cell dict's id (its file stem) and the legacy id older folders used
    stored_ids: Callable[[Mapping[str, Any]], tuple[str, str]]
    worker: Order  # what a cell's worker is asked (a WorkerOrder)
    pinning: Callable[[PinPlan], PinPlan] = as_planned  # its pools on a cell's planned CPUs


@cache
def tasks() -> dict[str, Task]:
    """Every task, by name, in order: the ``TASK`` of each module of tfvariants.plan."""
    found = []
    for info in pkgutil.iter_modules(tfvariants.plan.__path__):
        module = importlib.import_module(f"tfvariants.plan.{info.name}")
        task = getattr(module, "TASK", None)
        if isinstance(task, Task):
            found.append(task)
    return {t.name: t for t in sorted(found, key=lambda t: t.order)}


def task_of(record: Mapping[str, Any]) -> Task:
    """The task of a stored run.json or cell dict: its ``task``, the first task
    (training) when it names none (training's records predate the field) or one this
    version does not know."""
    known = tasks()
    return known.get(str(record.get("task")), next(iter(known.values())))
