"""The dry run on the terminal, for every task: the header, the bill per node type, the
total and where the times came from (:mod:`tfvariants.analyze.cost.dryrun` computes it).
A task's ``Layout`` says the rest: a table per configuration (training), or the
configurations that run on a larger node than their vCPUs named (serving)."""

from __future__ import annotations

from statistics import median
from typing import TYPE_CHECKING

from tfvariants.analyze.cost import estimate as est
from tfvariants.analyze.cost.catalog import Catalog
from tfvariants.analyze.cost.dryrun import DryRun
from tfvariants.analyze.shared.format import money
from tfvariants.plan.cell import config_label
from tfvariants.render.terminal import print_table

if TYPE_CHECKING:
    from rich.console import Console


def print_dry_run(dry: DryRun, console: Console, header: str) -> None:
    """``header`` is the task's own description of its cells ("12 cells on a Ray
    cluster", "8 serving cells (...) billed as"); the node-type count follows it."""
    cat = dry.pricing.catalog
    per_config = dry.layout.per_configuration
    if dry.study:
        console.print(
            f"[bold]2017 speeds at today's prices[/]: {est.STUDY_2017_SOURCE}, priced with "
            f"{cat.name}; no per-cell overhead added",
            highlight=False,
        )
    console.print(
        f"[bold]dry run[/]: {header} {len(dry.rows)} node type(s); "
        f"prices: {cat.name} ({cat.title}), billing {cat.billing.describe()}",
        highlight=False,
    )
    total, total_overhead = print_bill(dry.rows, cat, dry.layout.title, overhead=per_config)
    if not per_config:
        for (v, t), (inst, why) in dry.placed.items():
            if why:
                console.print(f"  {config_label(v, t)}: {inst.name} ({why})", highlight=False)
    _print_total(dry, cat, console, total, total_overhead)
    if dry.rough:
        console.print(dry.layout.rough_note, highlight=False)
    if per_config and dry.estimate_from is not None:
        console.print(
            f"times from {dry.estimate_from} (median cell time per configuration)",
            highlight=False,
        )
    if per_config:
        _per_config(dry)


def _print_total(
    dry: DryRun, cat: Catalog, console: Console, total: float, total_overhead: float
) -> None:
    if not dry.layout.per_configuration:  # serving: cells only, no node booting or idling
        console.print(
            f"estimated bill: {money(total, cat.currency)} for the cells (one node per "
            "type, no boot or idle time)",
            highlight=False,
        )
        return
    console.print(
        f"estimated bill: {money(total, cat.currency)} for the cells + "
        f"{money(total_overhead, cat.currency)} for one "
        f"node per type booting (~{est.NODE_BOOT_S / 60:.0f} min) and idling until it stops "
        f"(~{est.NODE_IDLE_S / 60:.0f} min) = {money(total + total_overhead, cat.currency)}",
        highlight=False,
    )


def print_bill(
    rows: list[est.NodeTypeBill], cat: Catalog, title: str, *, overhead: bool = True
) -> tuple[float, float]:
    """The bill per node type as a plain table, every amount in the catalog's currency;
    returns (cells cost, boot/idle cost) in total."""
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
    print_table(title, columns, table_rows, right=right)
    return total, total_overhead


def _per_config(dry: DryRun) -> None:
    pricing = dry.pricing
    estimates = dry.estimates
    title = "per configuration (one cell)" + (" - rough times" if dry.rough else "")
    if any(e.source == "study-2017" for e in estimates):
        title = "per configuration: 2017 speeds at today's prices"
    time_col = "training time" if any(e.source == "study-2017" for e in estimates) else "time"
    seen: dict[tuple[str, str, int, str], list[float]] = {}
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
        why = dry.placed[(v, t)][1]
        cost_text = "-" if cost is None else money(cost, pricing.catalog.currency)
        rows.append((w, config_label(v, t), inst, why or "exact vCPUs", _hours(s), cost_text))
    print_table(
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
