"""`compare`'s executor options: --executor ray, --ray-address, --node-wait, and the
--dry-run plan with its estimated bill (--estimate-from)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tfvariants.commands import common
from tfvariants.errors import UserError
from tfvariants.options.decision import DecisionOptions

if TYPE_CHECKING:
    from tfvariants.execute.runner import RunOptions
    from tfvariants.plan.cell import Cell

STUDY = "study-2017"  # --estimate-from study-2017: the 2017 study's own training times


def register(p: Any) -> None:
    g = p.add_argument_group("where cells run (executor) and dry run")
    g.add_argument(
        "--executor",
        choices=("local", "ray"),
        default="local",
        help="local (default): one pinned cell at a time on this host; ray: each "
        "cell on a Ray node of its instance type (pip install 'tfvariants[ray]')",
    )
    g.add_argument(
        "--ray-address",
        default=None,
        metavar="ADDR",
        help="Ray cluster to join (default: auto, the cluster this machine belongs to)",
    )
    g.add_argument(
        "--node-wait",
        default=None,
        metavar="S",
        help="seconds a cell waits for a node of its type to join (default 900)",
    )
    g.add_argument(
        "--dry-run",
        action="store_true",
        help="print the planned cells per node type and the estimated bill; run nothing",
    )
    g.add_argument(
        "--estimate-from",
        type=Path,
        default=None,
        metavar="RUN|study-2017",
        help="estimate times from an earlier results folder, or from the 2017 study's "
        "training times as measured then (default: rough figures)",
    )


def check(args: argparse.Namespace) -> None:
    """Option combinations that make no sense, before anything else happens."""
    if args.executor != "ray" and (args.ray_address or args.node_wait):
        raise UserError("--ray-address/--node-wait need --executor ray")
    if args.estimate_from is not None and not args.dry_run:
        raise UserError("--estimate-from is for --dry-run")
    no_pricing = not args.pricing or args.pricing.strip().lower() == "none"
    if (args.executor == "ray" or args.dry_run) and no_pricing:
        raise UserError(
            f"{'--dry-run' if args.dry_run else '--executor ray'} needs --pricing: node types "
            "are catalog instances"
        )


def with_engine(variant_objs: dict[str, Any], engine: str | None) -> dict[str, Any]:
    """--engine applied to image variants (their readiness is checked on the nodes)."""
    import dataclasses

    if not engine:
        return variant_objs
    return {
        n: dataclasses.replace(v, engine=engine) if v.kind == "image" else v
        for n, v in variant_objs.items()
    }


def placement(spec: Any, pricing: Any) -> dict[tuple[str, int], Any]:
    """(variant, threads) -> (instance, why): the one mapping rule of runs and reports."""
    from tfvariants.analyze.cost.estimate import place_cells

    devices = {v: (spec.variant_info.get(v) or {}).get("device", "cpu") for v in spec.variants}
    return place_cells(spec.configurations(), devices, pricing)


def _shape_for(spec: Any) -> Any:
    """What a cell of each workload trains (for rough times): its SPEC and the options,
    worked out once per workload (not per cell: 10,000 variants make 100,000 cells)."""
    import functools
    import math

    from tfvariants.analyze.cost.estimate import CellShape
    from tfvariants.commands.matrix_args import run_options_for, workload_spec

    @functools.cache
    def shape(workload: str) -> CellShape:
        ws = workload_spec(workload)
        batch = int(ws.get("batch_size") or 128)
        full_samples = int(ws.get("train_samples") or batch)
        ro = run_options_for(spec, workload)
        per_epoch = ro.steps_per_epoch or math.ceil((ro.samples or full_samples) / batch)
        return CellShape(
            epochs_full=int(ws.get("epochs") or 1),
            steps_per_epoch_full=math.ceil(full_samples / batch),
            epochs=ro.epochs,
            steps_per_epoch=per_epoch,
            min_steady_s=float(getattr(ro, "min_steady_s", 10.0)),
            min_steady_steps=int(getattr(ro, "min_steady_steps", 100)),
        )

    return shape


def dry_run(args: argparse.Namespace, spec: Any, pricing: Any, console: Any) -> int:
    """Print cells per node type and the estimated bill. Writes nothing."""
    from tfvariants.analyze.cost import estimate as est
    from tfvariants.analyze.report.format import money
    from tfvariants.plan.spec import plan_cells

    placed = placement(spec, pricing)
    cells = plan_cells(spec)
    devices = {v: (spec.variant_info.get(v) or {}).get("device", "cpu") for v in spec.variants}
    study = args.estimate_from == Path(STUDY) and not Path(STUDY).exists()
    run_times = est.times_from_run(args.estimate_from) if args.estimate_from and not study else None
    estimates = est.estimate_cells(
        cells, placed, devices, run_times=run_times, shape_for=_shape_for(spec), study=study
    )
    by_name = {i.name: i for i, _ in placed.values()}
    rows = est.bill(estimates, by_name, pricing)
    cat = pricing.catalog
    rough = any(e.source == "rough" for e in estimates)
    if study:
        console.print(
            f"[bold]2017 speeds at today's prices[/]: {est.STUDY_2017_SOURCE}, priced with "
            f"{cat.name}; no per-cell overhead added",
            highlight=False,
        )
    where = "on a Ray cluster" if args.executor == "ray" else "billed as"
    console.print(
        f"[bold]dry run[/]: {len(cells)} cells {where} {len(rows)} node type(s); "
        f"prices: {cat.name} ({cat.title}), billing {cat.billing.describe()}",
        highlight=False,
    )
    total, total_overhead = print_bill(rows, cat, "planned cells per node type")
    console.print(
        f"estimated bill: {money(total, cat.currency)} for the cells + "
        f"{money(total_overhead, cat.currency)} for one "
        f"node per type booting (~{est.NODE_BOOT_S / 60:.0f} min) and idling until it stops "
        f"(~{est.NODE_IDLE_S / 60:.0f} min) = {money(total + total_overhead, cat.currency)}",
        highlight=False,
    )
    if rough:
        console.print(
            f"times are ROUGH: the step times implied by {est.STUDY_2017_SOURCE}, times the steps "
            f"a cell trains (its steady window, or --epochs), +{est.CELL_OVERHEAD_S:g} s per cell. "
            "Measure once, then use --estimate-from RUN.",
            highlight=False,
        )
    if run_times is not None:
        console.print(
            f"times from {args.estimate_from} (median cell time per configuration)", highlight=False
        )
    _per_config(estimates, placed, pricing, rough)
    return 0


def print_bill(
    rows: list[Any], cat: Any, title: str, *, overhead: bool = True
) -> tuple[float, float]:
    """The bill per node type as a plain table (compare's and serve's dry runs), every
    amount in the catalog's currency; returns (cells cost, boot/idle cost) in total."""
    from tfvariants.analyze.report.format import money

    table_rows = []
    total, total_overhead = 0.0, 0.0
    for r in rows:
        gpu = f"{r.instance.gpu_count}x {r.instance.gpu_type}" if r.instance.gpu_type else "-"
        row = [
            r.instance.name,
            r.instance.vcpus,
            gpu,
            r.cells,
            _hours(r.cell_seconds),
            "-" if r.per_hour is None else f"{r.per_hour:.4f}",
            "-" if r.tier is None else cat.tier_word(r.tier),
            "no price" if r.cells_cost is None else money(r.cells_cost, cat.currency),
        ]
        if overhead:
            none = r.node_overhead_cost is None
            row.append("-" if none else money(r.node_overhead_cost, cat.currency))
        table_rows.append(row)
        total += r.cells_cost or 0.0
        total_overhead += r.node_overhead_cost or 0.0
    columns = ["node type", "vCPUs", "GPU", "cells", "cell time", "price/h", "tier", "cells cost"]
    right = ["vCPUs", "cells", "cell time", "price/h", "cells cost"]
    if overhead:
        columns.append("+ boot/idle")
        right.append("+ boot/idle")
    common.print_table(title, columns, table_rows, right=right)
    return total, total_overhead


def _per_config(
    estimates: list, placed: dict[tuple[str, int], Any], pricing: Any, rough: bool
) -> None:
    from statistics import median

    from tfvariants.analyze.report.format import money

    title = "per configuration (one cell)" + (" - rough times" if rough else "")
    if any(e.source == "study-2017" for e in estimates):
        title = "per configuration: 2017 speeds at today's prices"
    time_col = "training time" if any(e.source == "study-2017" for e in estimates) else "time"
    seen: dict[tuple, list] = {}
    for e in estimates:
        seen.setdefault((e.workload, e.variant, e.threads, e.instance), []).append(e.seconds)
    rows = []
    # In the matrix's order (workload, then variant, then threads), not the cells' order.
    for (w, v, t, inst), secs in sorted(seen.items(), key=lambda kv: kv[0][:3]):
        s = median(secs)
        cost = None  # the placement decides the instance, so price it directly
        inst_obj = pricing.catalog.instance(inst)
        sel = pricing.catalog.price(inst_obj, as_of=pricing.as_of, tier=pricing.tier)
        if sel is not None:
            cost = sel.per_hour * pricing.catalog.billing.billed_seconds(s) / 3600
        why = placed[(v, t)][1]
        rows.append(
            (
                w,
                f"{v}@{t}",
                inst,
                why or "exact vCPUs",
                _hours(s),
                "-" if cost is None else money(cost, pricing.catalog.currency),
            )
        )
    common.print_table(
        title,
        ("workload", "configuration", "node type", "why this node", time_col, "cost"),
        rows,
        right=(time_col, "cost"),
    )


def _hours(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.2f} h"
    if seconds >= 60:
        return f"{seconds / 60:.1f} min"
    return f"{seconds:.0f} s"


def run_on_ray(
    args: argparse.Namespace,
    spec: Any,
    variant_objs: dict,
    pricing: Any,
    out: Path,
    console: Any,
    next_round: Any = None,
    spent_before: float = 0.0,
    *,
    options_for: Callable[[Cell], RunOptions],
) -> Any:
    """Run the matrix on the cluster (adaptive rounds as waves when ``next_round`` is
    given), each cell with ``options_for(cell)`` (matrix_args.cell_options, as a local
    run's); returns the MatrixOutcome."""
    from tfvariants.commands.matrix_args import checked
    from tfvariants.execute.ray_executor import DEFAULT_NODE_WAIT_S, RayMatrix, RaySettings
    from tfvariants.options import argtypes

    node_wait = (
        checked("node-wait", argtypes.positive_float, args.node_wait)
        if args.node_wait is not None
        else DEFAULT_NODE_WAIT_S
    )
    placed = {k: inst.name for k, (inst, _) in placement(spec, pricing).items()}
    settings = RaySettings(address=args.ray_address or "auto", node_wait_s=node_wait)
    by_type: dict[str, list[str]] = {}
    for (variant, threads), name in placed.items():
        by_type.setdefault(name, []).append(f"{variant}@{threads}")
    console.print(
        "node types: "
        + "; ".join(f"{n} <- {', '.join(c)}" for n, c in sorted(by_type.items()))
        + f" (a cell waits up to {node_wait:g} s for a node of its type)",
        highlight=False,
    )
    return RayMatrix(spec, out, settings).run(
        variants=variant_objs,
        options_for=options_for,
        placement=placed,
        console=console,
        next_round=next_round,
        budget_s=DecisionOptions.of(spec.options).budget_s,
        spent_before=spent_before,
    )
