"""The tasks a run can be (training, serving), looked up by the name a stored run or cell
records: run.json's and a cell's ``task`` ("serve"; absent on training's, which came
first). The store reads a stored run and its cells through this table instead of
branching on a task's name: the options class the run's stored options are checked
against (store/runfile.py), a stored cell's file name (store/rundir.py) and the kind of
result the host writes for a cell whose worker wrote none (store/result.py).

A task registers itself: its plan module (the one holding its spec and cells) defines
``TASK``, a :class:`Task`, and is found here by discovery over ``tfvariants.plan``; no
shared file names it. The other stages find a task's parts by its ``stem``
(docs/ARCHITECTURE.md "A new task type").
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

import tfvariants.plan
from tfvariants.options.declare import RunOptionsBase


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
