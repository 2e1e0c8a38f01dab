"""`tfvariants report`: statistics + pricing over stored results -> HTML (and CSV)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tfvariants.commands import common, rounds
from tfvariants.errors import UserError, one_line
from tfvariants.options import declare
from tfvariants.options.decision import DecisionOptions

if TYPE_CHECKING:  # the analysis is imported only when a report is made (start-up time)
    from tfvariants.analyze.frame import RunFrame

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
    p.add_argument(
        "--baseline",
        default=None,
        help="VARIANT[@THREADS] (default: the GPU if one ran, else the most threads that fit on "
        "the host, with "
        "the most successful repeats; serving: the GPU, else the first variant)",
    )
    declare.add_arguments(
        p,
        DecisionOptions,
        ("min_effect", "confidence"),
        default_words={"min_effect": "the run's, else 5%%", "confidence": "the run's, else 0.95"},
    )
    common.add_allow_mixed_hosts(p)
    rounds.add_disturbed_policy(p)
    p.add_argument(
        "--p99",
        default=None,
        help="serving runs: the latency bound for the cheapest answer (default: the run's, else "
        "100ms)",
    )
    p.set_defaults(func=run)


def print_store_warnings(analysis: RunFrame) -> None:
    """The run folder's problems, one named line each, on stderr."""
    for w in analysis.warnings:
        if w.kind in LOUD_KINDS:
            print(f"tfvariants: warning: {one_line(w.message)}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    from tfvariants.analyze.analysis import Analysis
    from tfvariants.render.html import write_report

    if not args.results_dir.is_dir():
        raise UserError(f"{args.results_dir}: no such results folder")
    out = args.output or Path("reports") / args.results_dir.resolve().name / "index.html"
    common.check_report_outputs(out, args.csv, results_dirs=[args.results_dir])
    p99_ms = None
    if args.p99 is not None:
        from tfvariants.options.argtypes import duration_s

        try:
            p99_ms = duration_s(args.p99) * 1e3
        except argparse.ArgumentTypeError as exc:
            raise UserError(f"--p99: {exc}") from None
    pricing = common.pricing_from(args)
    analysis = write_report(
        args.results_dir,
        out,
        pricing=pricing,
        baseline=args.baseline or preset_baseline(args.results_dir),
        csv_path=args.csv,
        allow_mixed_hosts=args.allow_mixed_hosts,
        p99_bound_ms=p99_ms,
        min_effect=args.min_effect,
        confidence=args.confidence,
        disturbed=args.disturbed_policy,
    )
    print_store_warnings(analysis)
    print(f"report: {out}")
    training = analysis if isinstance(analysis, Analysis) else None
    if args.csv:
        rows = len(training.cells) if training is not None else 0
        if not rows and args.csv.is_file():  # a serving-only run: the CSV holds serving cells
            rows = max(len(args.csv.read_text(encoding="utf-8").splitlines()) - 1, 0)
        print(f"csv: {args.csv} ({rows} rows)")
    print_compiled_answer(analysis)
    for w in training.workloads if training is not None else []:
        print(f"{w.name}:")  # the sentences do not all name their workload
        for line in w.conclusions:
            print(f"  {line}")
    quiet = training.interference if training is not None else None
    if quiet is not None and quiet.disturbed:
        print(quiet.sentence())
    if analysis.serving is not None:
        for m in analysis.serving.models:
            print(f"serving {m.model}:")
            for line in m.conclusions:
                print(f"  {line}")
    return 0


def print_compiled_answer(analysis: Any) -> None:
    """A compiled-preset run opens with its answer for this CPU (tfvariants.analyze.compiled)."""
    from tfvariants.analyze.analysis import Analysis
    from tfvariants.analyze.compiled import answer

    if not isinstance(analysis, Analysis):  # a serving-only run
        return
    lines = answer(analysis.workloads, analysis.run, analysis.settings.min_effect)
    for i, line in enumerate(lines or []):
        print(line if i == 0 else f"  {line}")


def preset_baseline(results_dir: Path) -> str | None:
    """The stock wheel a ``--preset compiled`` run compares against (its report's
    baseline unless --baseline says otherwise)."""
    from tfvariants.store.runfile import load_run

    try:
        options = load_run(results_dir).get("options") or {}
    except (OSError, ValueError, UserError):
        return None
    preset = options.get("preset") if isinstance(options, dict) else None
    return str(preset["stock"]) if isinstance(preset, dict) and preset.get("stock") else None
