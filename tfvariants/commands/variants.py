"""`tfvariants variants`: every configured variant and whether it can run here."""

from __future__ import annotations

import argparse
import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from tfvariants.commands import common


def register(sub: Any) -> None:
    p = sub.add_parser(
        "variants",
        help="list the configured variants and whether each is ready",
        description="List the built-in variants and those in the variants file, with "
        "where each runs and whether it is ready (TensorFlow installed, image built, GPU "
        "present); a variant that is not ready shows the command that makes it.",
    )
    common.add_variants_file(p)
    common.add_engine(p)
    common.add_json(p)
    p.set_defaults(func=run)


def describe(variants_file: str | None = None, engine: str | None = None) -> list[dict[str, Any]]:
    """One dict per variant: its definition plus readiness (checked in parallel, since
    each check may start an interpreter or the engine)."""
    import dataclasses

    from tfvariants.variants import load_variants

    variants = list(load_variants(variants_file).values())
    if engine:
        variants = [
            dataclasses.replace(v, engine=engine) if v.kind == "image" else v for v in variants
        ]
    with ThreadPoolExecutor(max_workers=4) as pool:
        readiness = list(pool.map(lambda v: v.readiness(), variants))
    rows = []
    for variant, (ready, detail) in zip(variants, readiness, strict=True):
        rows.append(
            {
                "name": variant.name,
                "kind": variant.kind,
                "device": variant.device,
                "where": variant.where(),
                "engine": variant.engine,
                "env": dict(variant.env),
                "keras": dict(variant.keras),
                "description": variant.description,
                "build": variant.build,
                "ready": ready,
                "detail": detail,
            }
        )
    return rows


def run(args: argparse.Namespace) -> int:
    rows = describe(args.variants_file, args.engine)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0

    common.print_table(
        "tfvariants variants",
        ["name", "kind", "device", "image / python", "env", "keras", "status"],
        [
            [
                row["name"],
                row["kind"],
                row["device"],
                row["where"],
                " ".join(f"{k}={v}" for k, v in row["env"].items()),
                json.dumps(row["keras"]) if row["keras"] else "",
                "ready" if row["ready"] else row["detail"],
            ]
            for row in rows
        ],
        style=lambda col, v: ("green" if v == "ready" else "yellow") if col == "status" else None,
    )
    return 0
