"""Print a pricing catalog (built-in name or TOML file) as a table. `prices import CSV -o
FILE.toml` builds a catalog from a SkyPilot catalog CSV (vms.csv) or a simple CSV with the
columns instance,vcpus,gpu,on_demand,spot,region,date."""

from __future__ import annotations

import argparse
import dataclasses
import json
from datetime import date
from pathlib import Path
from typing import Any

from tfvariants.analyze.cost.catalog import Catalog
from tfvariants.commands import common
from tfvariants.commands.command import Command
from tfvariants.errors import UserError, one_line
from tfvariants.options import argtypes


def add_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", nargs="?", choices=("show", "import"), default="show")
    p.add_argument("csv", nargs="?", type=Path, help="import: the CSV file")
    p.add_argument(
        "--catalog", default="gce-2017", help="show: built-in NAME or FILE (default gce-2017)"
    )
    common.add_json(p)
    p.add_argument(
        "-o", "--output", type=Path, default=None, help="import: the catalog TOML to write"
    )
    for flag, words in (  # import's plain text options
        ("--region", "import: region to take (required for SkyPilot files)"),
        ("--match", "import: comma list of instance names, NAME* for a prefix (default all)"),
        ("--name", "import: catalog name (default: the output file's stem)"),
        ("--as-of", "import: price date for SkyPilot files, YYYY-MM[-DD] (default today)"),
    ):
        p.add_argument(flag, default=None, help=words)
    p.add_argument("--force", action="store_true", help="import: replace an existing -o file")
    p.add_argument(
        "--minimum-seconds",
        type=argtypes.positive_float,
        default=60.0,
        help="import: billing minimum with per-second billing (default 60: GCE and AWS)",
    )


def run(args: argparse.Namespace) -> int:
    if args.action == "import":
        return run_import(args)
    from tfvariants.analyze.cost.catalog import builtin_catalogs, load_catalog

    cat = load_catalog(args.catalog)
    common.print_catalog_warnings(cat)
    if args.json:
        print(json.dumps(catalog_json(cat), indent=2))
        return 0
    rows = []
    for inst in cat.instances:
        gpu = f"{inst.gpu_count}x {inst.gpu_type}" if inst.gpu_type else "-"
        for i, p in enumerate(sorted(inst.prices, key=lambda p: p.as_of)):
            rows.append(
                [
                    inst.name if i == 0 else "",
                    str(inst.vcpus) if i == 0 else "",
                    gpu if i == 0 else "",
                    p.as_of,
                    "-" if p.on_demand is None else f"{p.on_demand:.4f}",
                    "-" if p.preemptible is None else f"{p.preemptible:.4f}",
                    p.note,
                ]
            )
    od, pe = f"on-demand {cat.currency}/h", f"{cat.spot_word} {cat.currency}/h"
    common.print_table(
        f"{cat.name}: {cat.title}",
        ["instance", "vCPUs", "GPU", "as of", od, pe, "note"],
        rows,
        right=("vCPUs", od, pe),
    )
    default = f"default selection: {cat.tier_word(cat.default_tier)}"
    if cat.default_as_of:
        default += f" prices as of {cat.default_as_of}"
    # print(), not rich: a catalog's text may hold anything, e.g. "[/]".
    print(f"billing: {cat.billing.describe()}; {default}")
    print(f"source: {cat.source}")
    print(f"file: {cat.path}  (built-in: {', '.join(builtin_catalogs())})")
    return 0


def catalog_json(cat: Catalog) -> dict[str, Any]:
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


# From here on a TOML catalog takes seconds to read (tomllib: about 4 s per 100k).
BIG_TOML_ROWS = 20_000


def run_import(args: argparse.Namespace) -> int:
    import json
    import sys

    import tomllib

    from tfvariants.analyze.cost import catalog_import as ci
    from tfvariants.analyze.cost.catalog import parse_catalog
    from tfvariants.analyze.cost.catalog_fields import valid_date
    from tfvariants.render.output import write_text_atomic

    if args.csv is None or args.output is None:
        raise UserError("prices import needs a CSV file and -o OUT.toml (or OUT.json)")
    common.check_name_lengths(args.output)
    if args.output.is_dir():
        raise UserError(f"-o {args.output}: is a folder; give a .toml or .json file path")
    common.check_output_file(args.output, "-o")  # never into a run folder's evidence
    same = args.output.exists() and args.csv.exists() and args.output.samefile(args.csv)
    if same or args.output.resolve() == args.csv.resolve():
        raise UserError(f"-o {args.output}: that is the input CSV; give another file")
    if args.output.is_file() and not args.force:  # a device or FIFO is written into, not replaced
        raise UserError(f"-o {args.output}: exists; --force replaces it (nothing was written)")
    name = args.name if args.name is not None else args.output.stem
    if not name.strip() or not name.isprintable() or len(name) > 200:
        # The name lands in a TOML string, tables and one-line messages.
        raise UserError(
            f"--name: expected a one-line name of printable characters (at most 200), "
            f"got {argtypes.shown(name)}"
        )
    as_of = args.as_of or date.today().isoformat()
    if not valid_date(as_of):
        raise UserError(f"--as-of: expected a real YYYY-MM or YYYY-MM-DD, got {as_of!r}")
    match = [m.strip() for m in args.match.split(",") if m.strip()] if args.match else []
    imported = ci.read_csv(args.csv, region=args.region, as_of=as_of, match=match)
    where = f", region {args.region}" if args.region else ""
    source = one_line(f"{args.csv.name}{where}, imported {date.today().isoformat()}")
    data = ci.to_data(imported, name=name, source=source, minimum_s=args.minimum_seconds)
    if args.output.suffix == ".json":  # a whole cloud reads in a second, not a minute
        text = json.dumps(data, ensure_ascii=False, indent=0)
        parse_catalog(data, str(args.output))  # the same checks as any catalog
    else:
        text = ci.to_toml(data)
        parse_catalog(tomllib.loads(text), str(args.output))  # the checks on the text itself
    write_text_atomic(args.output, text)  # all or nothing, even on a full disk
    for w in imported.warnings:
        print(f"tfvariants: warning: {one_line(w)}", file=sys.stderr)
    if args.output.suffix != ".json" and len(imported.rows) >= BIG_TOML_ROWS:
        print(
            f"tfvariants: note: {len(imported.rows):,} instances read about 3x faster as "
            f"JSON: -o {args.output.with_suffix('.json')}",
            file=sys.stderr,
        )
    print(
        f"{args.output}: {len(imported.rows)} instance(s); show with: "
        f"tfvariants prices --catalog {args.output}"
    )
    return 0


COMMAND = Command(7, "show a cloud pricing catalog, or import one from a CSV", add_options, run)
