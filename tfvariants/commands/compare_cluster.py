"""`compare`'s executor options: --executor ray, --ray-address, --node-wait, and the
--dry-run plan with its estimated bill (--estimate-from)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tfvariants.analyze.cost import dryrun
from tfvariants.analyze.cost.preemption import DEFAULT_PREEMPT_RATE, PREEMPT_RATE_SOURCE
from tfvariants.analyze.training import training_dry_run
from tfvariants.errors import UserError
from tfvariants.plan.cell import config_label
from tfvariants.render.dryrun import print_dry_run

if TYPE_CHECKING:
    from rich.console import Console

    from tfvariants.analyze.cost.dryrun import Placement
    from tfvariants.analyze.cost.estimate import CellShape
    from tfvariants.analyze.cost.pricing import Pricing
    from tfvariants.execute.ray_executor import RayWaves
    from tfvariants.execute.runner import RunOptions
    from tfvariants.plan.cell import Cell
    from tfvariants.plan.spec import MatrixSpec
    from tfvariants.variants.registry import Variant


def register(p: argparse.ArgumentParser) -> None:
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
        "--preempt-retries",
        default=None,
        metavar="N",
        help="reruns of a cell whose node is lost mid-cell (a spot preemption), each on "
        "another node of its type, before it fails (default 3)",
    )
    g.add_argument(
        "--preempt-rate",
        default=None,
        metavar="R",
        help="--dry-run: expected preemptions per node-hour, priced into the bill "
        f"(default {DEFAULT_PREEMPT_RATE:g}: "
        + PREEMPT_RATE_SOURCE.replace("%", "%%")  # argparse formats help with %
        + "; 0 for on-demand)",
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
    if args.executor != "ray" and (args.ray_address or args.node_wait or args.preempt_retries):
        raise UserError("--ray-address/--node-wait/--preempt-retries need --executor ray")
    if args.preempt_rate is not None and not (args.dry_run and args.executor == "ray"):
        raise UserError("--preempt-rate is for --executor ray --dry-run")
    if args.estimate_from is not None and not args.dry_run:
        raise UserError("--estimate-from is for --dry-run")
    no_pricing = not args.pricing or args.pricing.strip().lower() == "none"
    if (args.executor == "ray" or args.dry_run) and no_pricing:
        raise UserError(
            f"{'--dry-run' if args.dry_run else '--executor ray'} needs --pricing: node types "
            "are catalog instances"
        )


def with_engine(variant_objs: dict[str, Any], engine: str | None) -> dict[str, Any]:
    """--engine applied to the variants an engine runs (their readiness is checked on the
    nodes): each kind says whether it takes one (``Variant.with_engine``)."""
    return {n: v.with_engine(engine) for n, v in variant_objs.items()}


def placement(spec: MatrixSpec, pricing: Pricing | None) -> Placement:
    """(variant, threads) -> (instance, why): the one mapping rule of runs and reports."""
    if pricing is None:  # check() refuses this first; kept for callers that skip it
        raise UserError("--executor ray needs --pricing: node types are catalog instances")
    return dryrun.placement(spec, pricing)


def _shape_for(spec: MatrixSpec) -> Callable[[str], CellShape]:
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


def dry_run(
    args: argparse.Namespace,
    spec: MatrixSpec,
    pricing: Pricing | None,
    console: Console,
    kinds: dict[str, str],
) -> int:
    """Print cells per node type and the estimated bill (the one dry run of every task,
    ``kinds``: each variant's kind, for what a cluster's nodes build or skip;
    analyze/cost/dryrun.py; training's cells and times: analyze/training/dryrun.py).
    Writes nothing."""
    dry = training_dry_run(spec, pricing, args.estimate_from, _shape_for(spec))
    where = "on a Ray cluster" if args.executor == "ray" else "billed as"
    print_dry_run(dry, console, f"{dry.cells} cells {where}")
    if args.executor == "ray":  # what the nodes build, skip and may lose
        from tfvariants.commands.nodeprep import print_node_prep

        print_node_prep(args, dry, kinds, console)
    return 0


def ray_waves(
    args: argparse.Namespace,
    spec: MatrixSpec,
    variant_objs: dict[str, Variant],
    pricing: Pricing | None,
    out: Path,
    console: Console,
    options_for: Callable[[Cell], RunOptions],
) -> RayWaves:
    """The matrix loop's Ray executor for this run (each cell with ``options_for(cell)``,
    matrix_args.cell_options, as a local run's), its node types said on the console."""
    from tfvariants.commands.matrix_args import checked
    from tfvariants.execute.preempt import DEFAULT_RETRIES
    from tfvariants.execute.ray_executor import DEFAULT_NODE_WAIT_S, RaySettings, RayWaves
    from tfvariants.options import argtypes

    node_wait = (
        checked("node-wait", argtypes.positive_float, args.node_wait)
        if args.node_wait is not None
        else DEFAULT_NODE_WAIT_S
    )
    placed = {k: inst.name for k, (inst, _) in placement(spec, pricing).items()}
    retries = (
        checked("preempt-retries", lambda t: argtypes.whole_number(t, 0, 20), args.preempt_retries)
        if args.preempt_retries is not None
        else DEFAULT_RETRIES
    )
    settings = RaySettings(args.ray_address or "auto", node_wait, retries)
    by_type: dict[str, list[str]] = {}
    for (variant, threads), name in placed.items():
        by_type.setdefault(name, []).append(config_label(variant, threads))
    console.print(
        "node types: "
        + "; ".join(f"{n} <- {', '.join(c)}" for n, c in sorted(by_type.items()))
        + f" (a cell waits up to {node_wait:g} s for a node of its type)",
        highlight=False,
    )
    return RayWaves(out, settings, placed, variant_objs, options_for)
