"""The matrix definition: what to run, and the cells in run order.

Every round runs each (variant, threads, workload) once, so slow drift of the machine
(thermal state, a neighbour's load) spreads over all configurations instead of landing
on one; and each round runs them in its own random order (seeded by the run's
``order_seed``), so no configuration always runs first or always after another:
randomised multiple interleaved trials (Abedi & Brecht, 2017).
"""

from __future__ import annotations

import os
import random
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any, TypeVar

from tfvariants.options import limits
from tfvariants.options.cell import CellOptions
from tfvariants.options.training import TrainingOptions
from tfvariants.plan.cell import Cell, cell_id_of, legacy_cell_id
from tfvariants.plan.tasks import Task, WorkerOrder
from workloads.protocol import RESULT_KIND, WorkerRequest

TRAINING_MODULE = "workloads.worker"

MAX_REPEATS = limits.MAX_REPEATS

CellT = TypeVar("CellT")  # a training Cell or a ServeCell: one shuffle for both


@dataclass(frozen=True)
class MatrixSpec:
    """What to run. ``options``: the run's options, frozen (the plan reads the identity,
    the order seed and the later variants)."""

    variants: tuple[str, ...]
    threads: tuple[int, ...]
    workloads: tuple[str, ...]
    repeats: int
    options: TrainingOptions = field(default_factory=TrainingOptions)
    variant_info: dict[str, dict[str, Any]] = field(default_factory=dict)  # name -> kind/device
    # Variants that run at ONE thread count instead of the --threads axis: a GPU variant
    # (its vCPUs are its instance's) and an explicit ``VARIANT@N``.
    fixed_threads: dict[str, int] = field(default_factory=dict)

    def configurations(self) -> list[tuple[str, int]]:
        """Every (variant, threads) of the matrix, in run order within a round."""
        return [
            (v, t)
            for v in self.variants
            for t in ((self.fixed_threads[v],) if v in self.fixed_threads else self.threads)
        ]

    def identity(self) -> dict[str, Any]:
        ident: dict[str, Any] = {
            "variants": list(self.variants),
            "threads": list(self.threads),
            "workloads": list(self.workloads),
            "repeats": self.repeats,
            # The options a resume must not change, as declared (tfvariants.options.cell).
            "options": self.options.identity(),
        }
        if self.fixed_threads:  # absent from runs made before it existed: same identity
            ident["fixed_threads"] = dict(self.fixed_threads)
        return ident

    def cells(self) -> list[Cell]:
        """The cells in run order (:func:`plan_cells`)."""
        return plan_cells(self)

    def to_json(self, started_at: str) -> dict[str, Any]:
        """The matrix part of run.json (the run store adds kind, version and hosts)."""
        return {
            **self.identity(),
            # The identity's set values first: run.json's key order as it always was.
            "options": {
                **{k: v for k, v in self.options.identity().items() if v is not None},
                **self.options.record(),
            },
            "variant_info": self.variant_info,
            "started_at": started_at,
            "logical_cpus": logical_cpus(),
        }


def logical_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def plan_cells(spec: MatrixSpec) -> list[Cell]:
    """All cells in run order: round by round (repeat), every configuration once per
    round, in the round's own seeded order (the declared order without a seed). The
    ``later`` variants (options) are not planned: the adaptive rounds start them once the
    other comparisons are settled (rounds/training.py)."""
    seed = spec.options.order_seed
    later = set(spec.options.later or ())
    cells = []
    for r in range(spec.repeats):
        round_cells = [
            Cell(variant=v, threads=t, workload=w, repeat=r)
            for w in spec.workloads
            for v, t in spec.configurations()
            if v not in later
        ]
        cells += round_order(round_cells, seed, r)
    return cells


def round_order(cells: list[CellT], seed: int | None, repeat: int) -> list[CellT]:
    """One round's cells shuffled by (seed, repeat): the same run replays the same order
    (a resume, an adaptive round), and each round's order is its own."""
    if seed is None:
        return list(cells)
    out = list(cells)
    random.Random(f"{seed}:{repeat}").shuffle(out)
    return out


def new_order_seed() -> int:
    """A fresh seed for a new run's order (stored in run.json, so a resume keeps it)."""
    return random.SystemRandom().randrange(2**31)


def _training_ids(c: Mapping[str, Any]) -> tuple[str, str]:
    key = (c["variant"], c["threads"], c["workload"], c.get("repeat", 0))
    return cell_id_of(dict(c)), legacy_cell_id(*key)


def training_order(
    cell: Cell, options: CellOptions, keras: Mapping[str, Any], backend: str
) -> WorkerOrder:
    """A training cell's worker order: every option the envelope declares under the same
    name goes to the worker as is, with the variant's compile options and backend."""
    wanted = {f.name for f in fields(WorkerRequest)}
    given = {k: v for k, v in asdict(options).items() if k in wanted}
    return WorkerOrder(
        TRAINING_MODULE,
        cell.workload,
        {**asdict(options), "keras_options": dict(keras)},
        options.timeout_s,
        fields={**given, "keras_options": dict(keras), "backend": backend},
    )


# Training's record among the tasks (plan/tasks.py finds it): first, so it leads a report
# and is the task of a record that names none.
TASK = Task("train", "training", 0, TrainingOptions, RESULT_KIND, _training_ids, training_order)
