"""The dry run of both tasks (``compare --dry-run``, ``serve --dry-run``): the planned
cells placed on node types, a time per cell, and the bill per node type. One
implementation: the task decides only which cells it plans and how long one takes;
placement and billing are :mod:`tfvariants.analyze.cost.estimate`'s, the same rule as a
run's. Writes nothing; :mod:`tfvariants.render.dryrun` prints the result."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tfvariants.analyze.cost import estimate as est
from tfvariants.analyze.cost.catalog import Instance
from tfvariants.analyze.cost.pricing import Pricing
from tfvariants.errors import UserError
from tfvariants.options.serving import ServingOptions

if TYPE_CHECKING:
    from tfvariants.plan.serve import ServeCell, ServeSpec
    from tfvariants.plan.spec import MatrixSpec

# A serving cell's own time beyond its load run: TensorFlow import, the model's build and
# trace, the warm-up requests (measured on this project's 2-core machine: 10-15 s for
# MobileNetV2, more for NASNetLarge). Rough.
SERVE_CELL_OVERHEAD_S = 15.0
STUDY = "study-2017"  # --estimate-from study-2017: the 2017 study's own training times

Placement = Mapping[tuple[str, int], tuple[Instance, str]]


@dataclass(frozen=True)
class DryRun:
    """What a dry run found: ``task`` is "train" or "serve"; ``estimate_from`` the earlier
    run the times came from (None: rough or the study's)."""

    task: str
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


def _devices(spec: MatrixSpec | ServeSpec) -> dict[str, str]:
    return {v: (spec.variant_info.get(v) or {}).get("device", "cpu") for v in spec.variants}


def placement(spec: MatrixSpec | ServeSpec, pricing: Pricing) -> Placement:
    """(variant, threads) -> (instance, why): the one mapping rule of runs and reports."""
    return est.place_cells(spec.configurations(), _devices(spec), pricing)


def _priced(
    task: str,
    spec: MatrixSpec | ServeSpec,
    pricing: Pricing | None,
    count: int,
    estimate: Callable[[Placement], list[est.CellEstimate]],
    *,
    study: bool = False,
    estimate_from: Path | None = None,
) -> DryRun:
    """The part both tasks share: place, estimate (the task's own times), bill."""
    if pricing is None:
        raise UserError("--dry-run needs --pricing: node types are catalog instances")
    placed = placement(spec, pricing)
    estimates = estimate(placed)
    rows = est.bill(estimates, {i.name: i for i, _ in placed.values()}, pricing)
    return DryRun(task, pricing, count, placed, estimates, rows, study, estimate_from)


def training_dry_run(
    spec: MatrixSpec,
    pricing: Pricing | None,
    estimate_from: Path | None,
    shape_for: Callable[[str], est.CellShape],
) -> DryRun:
    """compare's cells: times from an earlier run, the 2017 study's (``study-2017``, when
    no folder of that name exists) or rough ones from ``shape_for(workload)``."""
    from tfvariants.plan.spec import plan_cells

    cells = plan_cells(spec)
    study = estimate_from == Path(STUDY) and not Path(STUDY).exists()
    from_run = estimate_from if estimate_from and not study else None

    def estimate(placed: Placement) -> list[est.CellEstimate]:
        # Read after the placement (as before): a placement refusal comes first.
        run_times = est.times_from_run(from_run) if from_run is not None else None
        devices = _devices(spec)
        return est.estimate_cells(
            cells, dict(placed), devices, run_times=run_times, shape_for=shape_for, study=study
        )

    return _priced(
        "train", spec, pricing, len(cells), estimate, study=study, estimate_from=from_run
    )


def rough_serve_seconds(cell: ServeCell, options: ServingOptions) -> float:
    """At least the minimum duration per load run (the QPS search: one per step), plus
    the per-cell overhead: a lower bound when the minimum query count takes longer."""
    runs = options.search_steps if cell.scenario == "server_search" else 1
    return SERVE_CELL_OVERHEAD_S + runs * options.min_duration_s


def serve_times_from_run(run_dir: Path) -> dict[tuple[str, str, int] | tuple[str], list[float]]:
    """Wall times of an earlier run's successful serving cells, keyed (workload label,
    variant, threads) and (workload label,) for fallbacks."""
    from tfvariants.store.cellresult import serving
    from tfvariants.store.rundir import load_run_dir

    if not Path(run_dir, "cells").is_dir():
        raise UserError(f"--estimate-from {run_dir}: not a results folder (no cells/)")
    out: dict[tuple[str, str, int] | tuple[str], list[float]] = {}
    for r in serving(load_run_dir(Path(run_dir), allow_mixed_hosts=True).parsed.values()):
        wall = r.wall_s
        if r.ok and wall is not None and wall > 0:
            out.setdefault((r.workload, r.variant, r.threads), []).append(wall)
            out.setdefault((r.workload,), []).append(wall)
    if not out:
        raise UserError(f"--estimate-from {run_dir}: no successful serving cells with timings")
    return out


def serving_dry_run(spec: ServeSpec, pricing: Pricing | None, estimate_from: Path | None) -> DryRun:
    """serve's cells: times from an earlier run, else rough lower bounds."""
    from tfvariants.plan.serve import plan_serve_cells

    if pricing is None:  # before reading the earlier run: the cheaper refusal first
        raise UserError("--dry-run needs --pricing: node types are catalog instances")
    cells = plan_serve_cells(spec)

    def estimate(placed: Placement) -> list[est.CellEstimate]:
        run_times = serve_times_from_run(estimate_from) if estimate_from is not None else None
        out = []
        for c in cells:
            node = placed[(c.variant, c.threads)][0].name
            times: Sequence[float] | None = None
            if run_times is not None:
                times = run_times.get((c.workload, c.variant, c.threads))
                times = times or run_times.get((c.workload,))
            if times:
                seconds, source = statistics.median(times), "run"
            else:
                seconds, source = rough_serve_seconds(c, spec.options), "rough"
            out.append(est.CellEstimate(c.workload, c.variant, c.threads, node, seconds, source))
        return out

    return _priced("serve", spec, pricing, len(cells), estimate, estimate_from=estimate_from)
