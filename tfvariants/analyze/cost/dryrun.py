"""The dry run of every task (``compare --dry-run``, ``serve --dry-run``): the planned
cells placed on node types, a time per cell, and the bill per node type. One
implementation: a task decides only which cells it plans, how long one takes and how its
bill reads (its room's dryrun.py: analyze/training/, analyze/serving/); placement and
billing are :mod:`tfvariants.analyze.cost.estimate`'s, the same rule as a run's. Writes
nothing; :mod:`tfvariants.render.dryrun` prints the result."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tfvariants.analyze.cost import estimate as est
from tfvariants.analyze.cost.catalog import Instance
from tfvariants.analyze.cost.pricing import Pricing
from tfvariants.errors import UserError

if TYPE_CHECKING:
    from tfvariants.plan.task import MatrixPlan

Placement = Mapping[tuple[str, int], tuple[Instance, str]]


@dataclass(frozen=True)
class Layout:
    """How a task's bill reads on the terminal (render/dryrun.py lays it out)."""

    title: str  # the bill's title, e.g. "planned cells per node type"
    rough_note: str  # said when any cell's time is rough
    # training: a table of each configuration's node, time and cost, and one node per
    # type booting and idling priced; serving: the configurations placed on a larger
    # node than their vCPUs named, the cells alone priced
    per_configuration: bool


@dataclass(frozen=True)
class DryRun:
    """What a dry run found: ``task`` is the task's name ("train", "serve");
    ``estimate_from`` the earlier run the times came from (None: rough or the study's)."""

    task: str
    layout: Layout
    pricing: Pricing
    cells: int
    placed: Placement
    estimates: list[est.CellEstimate]
    rows: list[est.NodeTypeBill]
    study: bool
    estimate_from: Path | None

    @property
    def rough(self) -> bool:
        return any(e.source == "rough" for e in self.estimates)


def devices(spec: MatrixPlan[Any, Any]) -> dict[str, str]:
    return {v: (spec.variant_info.get(v) or {}).get("device", "cpu") for v in spec.variants}


def placement(spec: MatrixPlan[Any, Any], pricing: Pricing) -> Placement:
    """(variant, threads) -> (instance, why): the one mapping rule of runs and reports."""
    return est.place_cells(spec.configurations(), devices(spec), pricing)


def priced(
    task: str,
    layout: Layout,
    spec: MatrixPlan[Any, Any],
    pricing: Pricing | None,
    count: int,
    estimate: Callable[[Placement], list[est.CellEstimate]],
    *,
    study: bool = False,
    estimate_from: Path | None = None,
) -> DryRun:
    """The part every task shares: place, estimate (the task's own times), bill."""
    if pricing is None:
        raise UserError("--dry-run needs --pricing: node types are catalog instances")
    placed = placement(spec, pricing)
    estimates = estimate(placed)
    rows = est.bill(estimates, {i.name: i for i, _ in placed.values()}, pricing)
    return DryRun(task, layout, pricing, count, placed, estimates, rows, study, estimate_from)
