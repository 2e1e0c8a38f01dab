"""`tfvariants prices`: show a pricing catalog."""

from __future__ import annotations

import argparse
from typing import Any


def register(sub: Any) -> None:
    p = sub.add_parser(
        "prices",
        help="show a cloud pricing catalog",
        description="Print a pricing catalog (built-in name or TOML file) as a table.",
    )
    p.add_argument("--catalog", default="gce-2017", help="built-in NAME or FILE (default gce-2017)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from tfvariants.analyze.pricing import builtin_catalogs, load_catalog

    cat = load_catalog(args.catalog)
    console = Console()
    table = Table(title=f"{cat.name}: {cat.title}", title_justify="left")
    for col in (
        "instance",
        "vCPUs",
        "GPU",
        "as of",
        f"on-demand {cat.currency}/h",
        f"preemptible {cat.currency}/h",
        "note",
    ):
        right = col.startswith(("vCPU", "on-", "pre"))
        table.add_column(col, justify="right" if right else "left", no_wrap=col != "note")
    for inst in cat.instances:
        gpu = f"{inst.gpu_count}x {inst.gpu_type}" if inst.gpu_type else "-"
        for i, p in enumerate(sorted(inst.prices, key=lambda p: p.as_of)):
            table.add_row(
                inst.name if i == 0 else "",
                str(inst.vcpus) if i == 0 else "",
                gpu if i == 0 else "",
                p.as_of,
                "-" if p.on_demand is None else f"{p.on_demand:.4f}",
                "-" if p.preemptible is None else f"{p.preemptible:.4f}",
                p.note,
            )
    console.print(table)
    default = f"default selection: {cat.default_tier.replace('_', '-')}"
    if cat.default_as_of:
        default += f" prices as of {cat.default_as_of}"
    console.print(f"billing: {cat.billing.describe()}; {default}", highlight=False)
    console.print(f"source: {cat.source}", highlight=False)
    console.print(
        f"file: {cat.path}  (built-in: {', '.join(builtin_catalogs())})",
        highlight=False,
        soft_wrap=True,
    )
    return 0
