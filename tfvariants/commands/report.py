"""`tfvariants report`: statistics + pricing over stored results -> HTML (and CSV)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from tfvariants.commands.argtypes import duration_s
from tfvariants.commands.outdir import check_writable
from tfvariants.errors import UserError


def register(sub: Any) -> None:
    p = sub.add_parser(
        "report",
        help="write the HTML report (and optionally a CSV) from stored results",
        description="Read RESULTS_DIR/run.json and RESULTS_DIR/cells/*.json and write one "
        "self-contained HTML file. Nothing is run.",
    )
    p.add_argument("results_dir", type=Path, metavar="RESULTS_DIR")
    p.add_argument("-o", "--output", type=Path, default=None,
                   help="HTML path (default reports/<run>/index.html)")  # fmt: skip
    p.add_argument("--pricing", default="gce-2017",
                   help="catalog NAME or FILE, optionally @YYYY-MM (default gce-2017; 'none' for no costs)")  # fmt: skip
    p.add_argument("--price-tier", choices=("preemptible", "on_demand"), default=None)
    p.add_argument("--instance", action="append", default=[], metavar="VARIANT[@THREADS]=INSTANCE",
                   help="bill these cells as this catalog instance (repeatable)")  # fmt: skip
    p.add_argument("--baseline", default=None, help="VARIANT[@THREADS]")
    p.add_argument(
        "--csv", type=Path, default=None, help="also write one row per cell to this CSV file"
    )
    p.add_argument("--p99", default=None,
                   help="serving runs: the latency bound for the cheapest answer (default: the run's)")  # fmt: skip
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tfvariants.analyze.pricing import parse_pricing_option
    from tfvariants.render.html import write_report

    if not args.results_dir.is_dir():
        raise UserError(f"{args.results_dir}: no such results folder")
    pricing = None
    if args.pricing and args.pricing != "none":
        pricing = parse_pricing_option(
            args.pricing, tier=args.price_tier, instance_map=args.instance
        )
    out = args.output or Path("reports") / args.results_dir.resolve().name / "index.html"
    check_writable(out.parent)
    if args.csv:
        check_writable(args.csv.parent)
    p99_ms = None
    if args.p99 is not None:
        try:
            p99_ms = duration_s(args.p99) * 1e3
        except argparse.ArgumentTypeError as exc:
            raise UserError(f"--p99: {exc}") from None
    analysis = write_report(
        args.results_dir, out, pricing=pricing, baseline=args.baseline, csv_path=args.csv,
        p99_bound_ms=p99_ms,
    )  # fmt: skip
    print(f"report: {out}")
    if args.csv:
        rows = len(analysis.cells)
        if not rows and args.csv.is_file():  # a serving-only run: the CSV holds serving cells
            rows = max(len(args.csv.read_text(encoding="utf-8").splitlines()) - 1, 0)
        print(f"csv: {args.csv} ({rows} rows)")
    for w in analysis.workloads:
        for line in w.conclusions:
            print(f"  {line}")
    return 0
