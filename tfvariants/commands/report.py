"""`tfvariants report`: statistics + pricing over stored results -> HTML (and CSV)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from tfvariants.commands import argtypes
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
    p.add_argument("--min-effect", type=argtypes.fraction, default=None,
                   help="smallest difference that matters, e.g. 5%% (default: the run's, else 5%%)")  # fmt: skip
    p.add_argument("--confidence", type=argtypes.fraction, default=None,
                   help="confidence of the intervals (default: the run's, else 0.95)")  # fmt: skip
    p.add_argument(
        "--csv", type=Path, default=None, help="also write one row per cell to this CSV file"
    )
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
    if args.confidence is not None and not args.confidence > 0.5:
        raise UserError(f"--confidence: must be above 0.5, got {args.confidence}")
    analysis = write_report(
        args.results_dir, out, pricing=pricing, baseline=args.baseline, csv_path=args.csv,
        min_effect=args.min_effect, confidence=args.confidence,
    )  # fmt: skip
    print(f"report: {out}")
    if args.csv:
        print(f"csv: {args.csv} ({len(analysis.cells)} rows)")
    for w in analysis.workloads:
        for line in w.conclusions:
            print(f"  {line}")
    return 0
