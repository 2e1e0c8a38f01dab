"""serve's dry run: its planned cells and a time per cell (an earlier run's serving
cells, else a rough lower bound); placement, billing and the printout are every task's
(analyze/cost/dryrun.py, render/dryrun.py)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from tfvariants.analyze.cost import estimate as est
from tfvariants.analyze.cost.dryrun import DryRun, Layout, Placement, priced
from tfvariants.analyze.cost.pricing import Pricing
from tfvariants.errors import UserError
from tfvariants.options.serving import ServingOptions

if TYPE_CHECKING:
    from tfvariants.plan.serve import ServeCell, ServeSpec

# A serving cell's own time beyond its load run: TensorFlow import, the model's build and
# trace, the warm-up requests (measured on this project's 2-core machine: 10-15 s for
# MobileNetV2, more for NASNetLarge). Rough.
SERVE_CELL_OVERHEAD_S = 15.0

LAYOUT = Layout(
    "planned serving cells per node type",
    f"times are ROUGH lower bounds: each load run's minimum duration plus "
    f"{SERVE_CELL_OVERHEAD_S:g} s per cell; measure once, then use --estimate-from RUN",
    per_configuration=False,
)


def rough_serve_seconds(cell: ServeCell, options: ServingOptions) -> float:
    """At least the minimum duration per load run (the QPS search: one per step), plus
    the per-cell overhead: a lower bound when the minimum query count takes longer."""
    runs = options.search_steps if cell.scenario == "server_search" else 1
    return SERVE_CELL_OVERHEAD_S + runs * options.min_duration_s


def serve_times_from_run(run_dir: Path) -> dict[tuple[str, str, int] | tuple[str], list[float]]:
    """Wall times of an earlier run's successful serving cells, keyed (workload label,
    variant, threads) and (workload label,) for fallbacks."""
    from tfvariants.store.rundir import load_run_dir
    from tfvariants.store.serving import serving

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

    return priced("serve", LAYOUT, spec, pricing, len(cells), estimate, estimate_from=estimate_from)
