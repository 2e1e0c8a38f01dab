"""What a cluster run needs on its nodes beyond the cells, in `compare --executor ray
--dry-run`: the requirement-spec environments each node builds on first use (their
time and cost per node type), the image variants the recipes do not load (their cells
will be skipped), and the expected spot preemptions (``--preempt-rate``) priced."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import TYPE_CHECKING

from tfvariants.analyze.cost import estimate as est
from tfvariants.analyze.cost import preemption
from tfvariants.analyze.shared.format import money

if TYPE_CHECKING:
    from rich.console import Console

    from tfvariants.analyze.cost.dryrun import DryRun

# Rough, per environment and node: a TensorFlow 2.14 wheel and its dependencies
# downloaded and installed with pip (~600 MB of wheels, ~2 GB installed), plus the
# import check. uv is faster; measure with `tfvariants variants build NAME`.
BUILD_S = 600.0
BUILD_DISK_GB = 2.0


def print_node_prep(
    args: argparse.Namespace, dry: DryRun, kinds: Mapping[str, str], console: Console
) -> None:
    """``kinds``: variant name -> its kind (requirements, image, local, venv)."""
    rate = _checked_rate(args)
    builds: dict[str, list[str]] = {}
    for (variant, _t), (inst, _why) in dry.placed.items():
        if kinds.get(variant) == "requirements":
            builds.setdefault(inst.name, [])
            if variant not in builds[inst.name]:
                builds[inst.name].append(variant)
    built = sorted({v for names in builds.values() for v in names})
    images = sorted(v for v in {v for v, _ in dry.placed} if kinds.get(v) == "image")
    if built:
        console.print(
            f"on the nodes: {', '.join(built)} (requirement specs) are built on each node "
            f"that runs their cells, once, on first use (rough: {BUILD_S / 60:.0f} min and "
            f"~{BUILD_DISK_GB:g} GB of disk per environment); a build the node's CPU cannot "
            "run (the ISA gate, e.g. AVX-512 on a CPU without it) is recorded as skipped",
            highlight=False,
        )
    if images:
        cells, cost = _skipped_share(dry, set(images))
        console.print(
            f"image variant(s) {', '.join(images)}: the recipes load no images, so their "
            f"{cells} cell(s) will be SKIPPED on the nodes; the bill above still counts "
            f"them (about {money(cost, dry.pricing.catalog.currency)}) "
            "(load or build the images in the recipe's "
            "setup_commands, or name a variant the nodes have, e.g. cuda from "
            "docs/cluster/variants.toml)",
            highlight=False,
        )
    _print_table(dry, builds, rate, console)


def _skipped_share(dry: DryRun, variants: set[str]) -> tuple[int, float]:
    """(cells, their cost, billed as the bill bills them) of ``variants``: what the bill
    counts for cells the nodes will skip."""
    placed = {r.instance.name: r.instance for r in dry.rows}
    mine = [e for e in dry.estimates if e.variant in variants]
    return len(mine), sum(r.cells_cost or 0.0 for r in est.bill(mine, placed, dry.pricing))


def _checked_rate(args: argparse.Namespace) -> float:
    from tfvariants.commands.matrix_args import checked
    from tfvariants.errors import UserError
    from tfvariants.options import argtypes

    if args.preempt_rate is None:
        return preemption.DEFAULT_PREEMPT_RATE
    rate = checked("preempt-rate", argtypes.decimal, args.preempt_rate)
    if rate is None or not 0 <= rate <= 10:
        raise UserError(
            f"--preempt-rate: expected preemptions per node-hour from 0 to 10, "
            f"got {args.preempt_rate!r}"
        )
    return float(rate)


def _print_table(
    dry: DryRun, builds: Mapping[str, list[str]], rate: float, console: Console
) -> None:
    cur = dry.pricing.catalog.currency
    console.print("node builds and expected preemptions per node type (one node per type):")
    total_build, total_lost = 0.0, 0.0
    for r in dry.rows:
        names = builds.get(r.instance.name, [])
        build_s = BUILD_S * len(names)
        count, lost_s = preemption.expected(
            r.cell_seconds + build_s, r.cells, rate, est.NODE_BOOT_S
        )
        build_cost = None if r.per_hour is None else r.per_hour * build_s / 3600
        lost_cost = None if r.per_hour is None else r.per_hour * lost_s / 3600
        total_build += build_cost or 0.0
        total_lost += lost_cost or 0.0
        built = (
            f"builds {', '.join(names)} ({build_s / 60:.0f} min, {money(build_cost, cur)})"
            if names
            else "builds nothing"
        )
        console.print(
            f"  {r.instance.name}: {built}; expected preemptions {count:.2f} "
            f"({lost_s / 60:.1f} min lost, {money(lost_cost, cur)})",
            highlight=False,
        )
    cells = sum((r.cells_cost or 0.0) + (r.node_overhead_cost or 0.0) for r in dry.rows)
    console.print(
        f"expected preemptions at {rate:g} per node-hour (--preempt-rate; default: "
        f"{preemption.PREEMPT_RATE_SOURCE}), each costing half a cell and a replacement's "
        f"boot; estimated bill with the node builds and preemptions: {money(cells, cur)} + "
        f"{money(total_build, cur)} + {money(total_lost, cur)} = "
        f"{money(cells + total_build + total_lost, cur)}",
        highlight=False,
    )
