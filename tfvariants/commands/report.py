"""`tfvariants report`: statistics + pricing over stored results -> HTML (and CSV)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from tfvariants.commands import common
from tfvariants.errors import UserError

# Warnings that change what the figures mean: always printed, not only in the HTML.
LOUD_KINDS = ("unreadable", "duplicate", "foreign_host", "mixed_hosts", "incomplete", "no_price")


def register(sub: Any) -> None:
    p = sub.add_parser(
        "report",
        help="write the HTML report (and optionally a CSV) from stored results",
        description="Read RESULTS_DIR/run.json and RESULTS_DIR/cells/*.json and write one "
        "self-contained HTML file. Nothing is run. Files that cannot be read, copies of a "
        "cell and cells from hosts run.json does not declare are named as warnings and left "
        "out of the figures (the last ones unless --allow-mixed-hosts).",
    )
    p.add_argument("results_dir", type=Path, metavar="RESULTS_DIR")
    common.add_report_outputs(p)
    common.add_pricing(p)
    p.add_argument("--baseline", default=None, help="VARIANT[@THREADS]")
    common.add_allow_mixed_hosts(p)
    p.set_defaults(func=run)


def print_store_warnings(analysis: Any) -> None:
    """The run folder's problems, one named line each, on stderr."""
    for w in analysis.warnings:
        if w.kind in LOUD_KINDS:
            print(f"tfvariants: warning: {w.message}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    from tfvariants.render.html import write_report

    if not args.results_dir.is_dir():
        raise UserError(f"{args.results_dir}: no such results folder")
    out = args.output or Path("reports") / args.results_dir.resolve().name / "index.html"
    common.check_report_outputs(out, args.csv, results_dirs=[args.results_dir])
    pricing = common.pricing_from(args)
    analysis = write_report(
        args.results_dir,
        out,
        pricing=pricing,
        baseline=args.baseline,
        csv_path=args.csv,
        allow_mixed_hosts=args.allow_mixed_hosts,
    )
    print_store_warnings(analysis)
    print(f"report: {out}")
    if args.csv:
        print(f"csv: {args.csv} ({len(analysis.cells)} rows)")
    for w in analysis.workloads:
        for line in w.conclusions:
            print(f"  {line}")
    return 0
