"""Run one cell in a fresh, pinned worker and write its result JSON to
OUT/cells/<cell>.json."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from tfvariants.commands import common
from tfvariants.commands.command import Command
from tfvariants.commands.outdir import check_writable, default_run_dir, out_dir
from tfvariants.errors import UserError
from tfvariants.options import argtypes, declare
from tfvariants.options.cell import CELL, CellOptions
from tfvariants.store.runfolder import RunFolder

if TYPE_CHECKING:
    from rich.console import Console

    from tfvariants.variants import Variant


def add_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("workload", help="a built-in workload name or a path to a workload .py file")
    p.add_argument(
        "--threads",
        type=argtypes.threads,
        required=True,
        help=f"vCPUs to emulate (1..{argtypes.MAX_THREADS})",
    )
    p.add_argument("--variant", default="local", help="variant name (default: local)")
    common.add_variants_file(p)
    common.add_engine(p)
    # What the cell runs with: the training options a cell takes, as compare declares them.
    declare.add_arguments(p, CellOptions, CELL)
    p.add_argument(
        "--out", type=out_dir, default=None, help="run folder (default: results/run-<time>)"
    )
    p.add_argument(
        "--repeat",
        type=argtypes.repeat_index,
        default=0,
        help="repeat index recorded in the cell (default 0)",
    )
    p.add_argument("--json", action="store_true", help="print the result JSON")


def validate_workload(name: str) -> str:
    from workloads import registry

    if registry.is_path(name):
        if not os.path.isfile(name):
            raise UserError(f"workload file not found: {name}")
        return os.path.abspath(name)
    if name not in registry.available():
        raise UserError(
            f"unknown workload '{name}' (known: {', '.join(registry.available())}; "
            "or give a path to a .py file)"
        )
    return name


def ready_variant(variant: Variant, engine: str | None) -> Variant:
    """The variant with ``--engine`` applied, refused up front (one line, exit 2, before
    anything is written) when it cannot run here: its backend, interpreter, environment
    or image is missing. A requirement-spec variant is built on first use (cached). One
    that is skipped on this host (a GPU variant without a GPU, a binary for instructions
    this CPU lacks) is let through: its cell is recorded as skipped with the reason."""
    from tfvariants.variants import ensure_built, skip_reason

    variant = variant.with_engine(engine)
    if skip_reason(variant):
        return variant

    def log(line: str) -> None:
        print(f"  {variant.name}: {line}", file=sys.stderr)

    done = ensure_built(variant, log)
    if done:
        print(f"{variant.name}: {done}", file=sys.stderr)
    ready, detail = variant.readiness()
    if not ready:
        raise UserError(f"variant '{variant.name}' is not ready: {detail}")
    return variant


def run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.markup import escape

    from tfvariants.execute.runner import run_cell
    from tfvariants.plan.cell import Cell
    from tfvariants.variants import get_variant

    workload = validate_workload(args.workload)
    variant = get_variant(args.variant, args.variants_file)
    out = args.out or default_run_dir(Path(workload).stem)
    check_writable(out)  # before a first-use build that may take minutes
    variant = ready_variant(variant, args.engine)

    cell = Cell(variant=variant.name, threads=args.threads, workload=workload, repeat=args.repeat)
    folder = RunFolder(out)
    for line in folder.lock():  # held until the command ends
        print(f"tfvariants: warning: {line}", file=sys.stderr)
    folder.check_links()
    existing = folder.cell_path(cell.cell_id)
    if os.path.lexists(existing):
        raise UserError(
            f"{existing} already exists: choose another --out or --repeat (results are never "
            "overwritten)"
        )
    for line in folder.remove_stale_scratch():  # accepted: only now, only its own
        print(f"tfvariants: warning: {line}", file=sys.stderr)
    options = CellOptions(**declare.resolve(CellOptions, vars(args), {}, {}))
    console = Console(stderr=True)
    started = time.monotonic()
    label = f"running {cell.cell_id} (log when it ends: {folder.log_path(cell.cell_id)})"
    if console.is_terminal:
        # One redraw a second: the spinner shares the CPUs being measured.
        with console.status(escape(label), refresh_per_second=1, speed=0.1):
            result = dict(run_cell(cell, variant, options, folder).raw)
    else:
        console.print(label, highlight=False, markup=False)
        result = dict(run_cell(cell, variant, options, folder).raw)
    if args.json:
        import json

        print(json.dumps(result, indent=2))
    else:
        print_summary(console, result, folder.cell_path(cell.cell_id), time.monotonic() - started)
    return 0 if result["status"] in ("ok", "skipped") else 1


def print_summary(console: Console, result: dict, path: Path, wall_s: float) -> None:
    from rich.markup import escape

    status = result["status"]
    colour = {"ok": "green", "skipped": "yellow"}.get(status, "red")
    console.print(f"[{colour}]{status}[/] {escape(str(path))}  ({wall_s:.1f} s)")
    if status != "ok":
        console.print(f"  reason: {result.get('reason')}", markup=False, highlight=False)
        return
    timing = result["timing"]
    epochs = ", ".join(f"{t:.2f}" for t in timing["epoch_times_s"])
    console.print(f"  epochs (s): {epochs}")
    if timing.get("warmup_steps") is not None:
        console.print(
            f"  warm-up: {timing['warmup_steps']} steps, {timing['warmup_s']:.2f} s (detected); "
            f"steady: {timing['steady_steps']} steps, {timing['steady_s']:.2f} s"
        )
    if timing.get("samples_per_s"):
        console.print(
            f"  steady: {timing['samples_per_s']:.0f} samples/s"
            + (f", {result['gflops_per_s']:.1f} GFLOP/s" if result.get("gflops_per_s") else "")
        )
    metrics = result.get("metrics", {})
    if "accuracy" in metrics:
        chance = result.get("chance_accuracy")
        extra = f" (chance {chance:.2f})" if chance else ""
        console.print(f"  accuracy: {metrics['accuracy']:.3f}{extra}")
    applied = result.get("applied", {})
    console.print(
        f"  applied: cpus {applied.get('affinity')}, intra-op {applied.get('intra_op')}, "
        f"inter-op {applied.get('inter_op')}"
    )
    if result.get("requested", {}).get("oversubscribed"):
        console.print(
            f"  [yellow]oversubscribed[/]: {result['requested']['threads']} threads "
            f"on {len(applied.get('affinity') or [])} CPUs"
        )
    sched = result.get("schedule", {})
    if sched.get("projected_full_s"):
        console.print(
            f"  projected full schedule ({sched['full_epochs']} epochs x "
            f"{sched['full_samples']} samples): {sched['projected_full_s']:.0f} s"
        )


COMMAND = Command(2, "run one workload in one variant at one thread count", add_options, run)
