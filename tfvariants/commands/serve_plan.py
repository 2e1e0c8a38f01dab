"""`serve --dry-run`: the planned serving cells per node type and the estimated bill,
with the same placement and billing as ``compare --dry-run``
(:mod:`tfvariants.analyze.cost.estimate`). Writes nothing."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tfvariants.errors import UserError
from tfvariants.options.serving import ServingOptions

# A serving cell's own time beyond its load run: TensorFlow import, the model's build and
# trace, the warm-up requests (measured on this project's 2-core machine: 10-15 s for
# MobileNetV2, more for NASNetLarge). Rough.
SERVE_CELL_OVERHEAD_S = 15.0


def rough_serve_seconds(cell: Any, options: Mapping[str, Any]) -> float:
    """At least the minimum duration per load run (the QPS search: one per step), plus
    the per-cell overhead: a lower bound when the minimum query count takes longer."""
    o = ServingOptions.of(options)
    runs = o.search_steps if cell.scenario == "server_search" else 1
    return SERVE_CELL_OVERHEAD_S + runs * o.min_duration_s


def serve_times_from_run(run_dir: Path) -> dict[tuple[str, str, int] | tuple[str], list[float]]:
    """Wall times of an earlier run's successful serving cells, keyed (workload label,
    variant, threads) and (workload label,) for fallbacks."""
    from tfvariants.store.cellresult import serving
    from tfvariants.store.rawfields import finite_number
    from tfvariants.store.rundir import load_run_dir

    if not Path(run_dir, "cells").is_dir():
        raise UserError(f"--estimate-from {run_dir}: not a results folder (no cells/)")
    out: dict[tuple[str, str, int] | tuple[str], list[float]] = {}
    for r in serving(load_run_dir(Path(run_dir), allow_mixed_hosts=True).parsed.values()):
        wall = finite_number(r.get("runner", "wall_s"))
        if r.ok and wall is not None and wall > 0:
            out.setdefault((r.workload, r.variant, r.threads), []).append(wall)
            out.setdefault((r.workload,), []).append(wall)
    if not out:
        raise UserError(f"--estimate-from {run_dir}: no successful serving cells with timings")
    return out


def dry_run(spec: Any, pricing: Any, console: Any, *, estimate_from: Path | None = None) -> int:
    from statistics import median

    from tfvariants.analyze.cost import estimate as est
    from tfvariants.analyze.report.format import money
    from tfvariants.commands.compare_cluster import print_bill
    from tfvariants.plan.serve import plan_serve_cells

    if pricing is None:
        raise UserError("--dry-run needs --pricing: node types are catalog instances")
    devices = {v: (spec.variant_info.get(v) or {}).get("device", "cpu") for v in spec.variants}
    configurations = [(v, t) for v in spec.variants for t in spec.threads]
    placed = est.place_cells(configurations, devices, pricing)
    cells = plan_serve_cells(spec)
    run_times = serve_times_from_run(estimate_from) if estimate_from is not None else None
    estimates = []
    for c in cells:
        node = placed[(c.variant, c.threads)][0].name
        times = None
        if run_times is not None:
            times = run_times.get((c.workload, c.variant, c.threads)) or run_times.get(
                (c.workload,)
            )
        if times:
            seconds, source = median(times), "run"
        else:
            seconds, source = rough_serve_seconds(c, spec.options), "rough"
        estimates.append(est.CellEstimate(c.workload, c.variant, c.threads, node, seconds, source))
    rows = est.bill(estimates, {i.name: i for i, _ in placed.values()}, pricing)
    cat = pricing.catalog
    console.print(
        f"[bold]dry run[/]: {len(cells)} serving cells ({len(spec.models)} model(s), "
        f"{len(spec.variants)} variant(s), threads {','.join(map(str, spec.threads))}, "
        f"{spec.repeats} repeat(s)"
        + (", more rounds within the budget" if spec.options.budget_s else "")
        + f") billed as {len(rows)} node type(s); prices: {cat.name} ({cat.title}), "
        f"billing {cat.billing.describe()}",
        highlight=False,
    )
    total, _ = print_bill(rows, cat, "planned serving cells per node type", overhead=False)
    for (v, t), (inst, why) in placed.items():
        if why:
            console.print(f"  {v}@{t}: {inst.name} ({why})", highlight=False)
    console.print(
        f"estimated bill: {money(total, cat.currency)} for the cells (one node per "
        "type, no boot or idle time)",
        highlight=False,
    )
    if any(e.source == "rough" for e in estimates):
        console.print(
            f"times are ROUGH lower bounds: each load run's minimum duration plus "
            f"{SERVE_CELL_OVERHEAD_S:g} s per cell; measure once, then use --estimate-from RUN",
            highlight=False,
        )
    return 0
