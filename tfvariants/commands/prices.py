"""`tfvariants prices`: show a pricing catalog."""

from __future__ import annotations

import argparse
import dataclasses
import json
from typing import Any

from tfvariants.commands import common


def register(sub: Any) -> None:
    p = sub.add_parser(
        "prices",
        help="show a cloud pricing catalog",
        description="Print a pricing catalog (built-in name or TOML file) as a table.",
    )
    p.add_argument("--catalog", default="gce-2017", help="built-in NAME or FILE (default gce-2017)")
    common.add_json(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tfvariants.analyze.pricing import builtin_catalogs, load_catalog

    cat = load_catalog(args.catalog)
    if args.json:
        print(json.dumps(catalog_json(cat), indent=2))
        return 0
    rows = []
    for inst in cat.instances:
        gpu = f"{inst.gpu_count}x {inst.gpu_type}" if inst.gpu_type else "-"
        for i, p in enumerate(sorted(inst.prices, key=lambda p: p.as_of)):
            rows.append([
                inst.name if i == 0 else "",
                str(inst.vcpus) if i == 0 else "",
                gpu if i == 0 else "",
                p.as_of,
                "-" if p.on_demand is None else f"{p.on_demand:.4f}",
                "-" if p.preemptible is None else f"{p.preemptible:.4f}",
                p.note,
            ])  # fmt: skip
    od, pe = f"on-demand {cat.currency}/h", f"preemptible {cat.currency}/h"
    common.print_table(
        f"{cat.name}: {cat.title}",
        ["instance", "vCPUs", "GPU", "as of", od, pe, "note"],
        rows,
        right=("vCPUs", od, pe),
    )
    default = f"default selection: {cat.default_tier.replace('_', '-')}"
    if cat.default_as_of:
        default += f" prices as of {cat.default_as_of}"
    # print(), not rich: a catalog's text may hold anything, e.g. "[/]".
    print(f"billing: {cat.billing.describe()}; {default}")
    print(f"source: {cat.source}")
    print(f"file: {cat.path}  (built-in: {', '.join(builtin_catalogs())})")
    return 0


def catalog_json(cat: Any) -> dict[str, Any]:
    return {
        "name": cat.name,
        "title": cat.title,
        "source": cat.source,
        "currency": cat.currency,
        "billing": {"rule": cat.billing.rule, "minimum_seconds": cat.billing.minimum_seconds},
        "default": {"tier": cat.default_tier, "as_of": cat.default_as_of, "gpu": cat.default_gpu},
        "instances": [
            {
                "name": i.name,
                "vcpus": i.vcpus,
                "gpu": {"type": i.gpu_type, "count": i.gpu_count} if i.gpu_type else None,
                "prices": [dataclasses.asdict(p) for p in i.prices],
            }
            for i in cat.instances
        ],
        "file": cat.path,
    }
