"""The tasks a run can be (training, serving), looked up by the name a stored run or cell
records: run.json's and a cell's ``task`` ("serve"; absent on training's, which came
first). The store reads a stored run and its cells through this table instead of
branching on a task's name: the options class the run's stored options are checked
against (store/runfile.py), a stored cell's file name (store/rundir.py) and the kind of
result the host writes for a cell whose worker wrote none (store/result.py).

A new task is one record here; its other parts live one module per stage (its options
class, spec and cells, result type, analysis, next-round hook and command: the list is
docs/ARCHITECTURE.md's "A new task type").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from tfvariants.options.declare import RunOptionsBase
from tfvariants.options.serving import ServingOptions
from tfvariants.options.training import TrainingOptions
from tfvariants.plan.cell import cell_id_of, legacy_cell_id
from tfvariants.plan.serve import serve_cell
from workloads.protocol import RESULT_KIND
from workloads.serving.request import SERVE_RESULT_KIND


@dataclass(frozen=True)
class Task:
    """What the ground stages need to know of one task, by its stored name."""

    name: str
    options: type[RunOptionsBase]  # the class a stored run's options are checked against
    result_kind: str  # the "kind" of its cells' result files
    # a stored cell dict's id (its file stem) and the legacy id older folders used
    stored_ids: Callable[[Mapping[str, Any]], tuple[str, str]]


def _training_ids(c: Mapping[str, Any]) -> tuple[str, str]:
    key = (c["variant"], c["threads"], c["workload"], c.get("repeat", 0))
    return cell_id_of(dict(c)), legacy_cell_id(*key)


def _serving_ids(c: Mapping[str, Any]) -> tuple[str, str]:
    cell = serve_cell(dict(c))
    return cell.cell_id, cell.legacy_cell_id


TRAIN = Task("train", TrainingOptions, RESULT_KIND, _training_ids)
TASKS = {t.name: t for t in (TRAIN, Task("serve", ServingOptions, SERVE_RESULT_KIND, _serving_ids))}


def task_of(record: Mapping[str, Any]) -> Task:
    """The task of a stored run.json or cell dict: its ``task``, training when it names
    none (training's records predate the field) or one this version does not know."""
    return TASKS.get(str(record.get("task")), TRAIN)
