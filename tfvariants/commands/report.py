"""`tfvariants report`: statistics + pricing over stored results -> HTML (and CSV)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from tfvariants.commands import common, rounds
from tfvariants.errors import UserError, one_line
from tfvariants.options import declare
from tfvariants.options.decision import DecisionOptions

if TYPE_CHECKING:  # the analysis is imported only when a report is made (start-up time)
    from tfvariants.analyze.cost.pricing import Pricing
    from tfvariants.analyze.report.build import Report
    from tfvariants.analyze.shared.frame import RunFrame

# Warnings that change what the figures mean: always printed, not only in the HTML.
LOUD_KINDS = ("unreadable", "duplicate", "foreign_host", "mixed_hosts", "incomplete", "no_price")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
        help="VARIANT[@THREADS] (default, training and serving alike: the GPU if one ran, else "
        "the most threads that fit on the host, with the most successful repeats; serving: "
        "in-process and unbatched first)",
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
        help="serving runs: the latency bound for the cheapest answer (default: the run's, "
        "else 100ms)",
    )
    p.set_defaults(func=run)


def print_store_warnings(analysis: RunFrame) -> None:
    """The run folder's problems, one named line each, on stderr."""
    for w in analysis.warnings:
        if w.kind in LOUD_KINDS:
            print(f"tfvariants: warning: {one_line(w.message)}", file=sys.stderr)


def write_report(
    results_dir: Path,
    out: Path,
    *,
    csv_path: Path | None = None,
    pricing: Pricing | None = None,
    baseline: str | None = None,
    min_effect: float | None = None,
    confidence: float | None = None,
    allow_mixed_hosts: bool = False,
    p99_bound_ms: float | None = None,
    disturbed: str | None = None,
) -> Report:
    """The report stage (report, compare and serve end with it): its settings made once
    (analyze/shared/settings.py), ``results_dir`` loaded and analysed once with them
    (analyze/report/build.py), the HTML written (atomically) and the optional CSV
    (render/). ``min_effect``/``confidence``: the command line's (None: the run's)."""
    from tfvariants.analyze.report.build import build_report
    from tfvariants.analyze.shared.settings import ReportSettings
    from tfvariants.options.decision import Override
    from tfvariants.render.csvout import write_report_csv
    from tfvariants.render.html import write_html

    settings = ReportSettings(
        pricing=pricing,
        baseline=baseline,
        decision=Override(min_effect, confidence),
        allow_mixed_hosts=allow_mixed_hosts,
        p99_bound_ms=p99_bound_ms,
        disturbed=disturbed,
    )
    report = build_report(results_dir, settings)
    write_html(report, out)
    if csv_path is not None:
        write_report_csv(report, csv_path)
    return report


def run(args: argparse.Namespace) -> int:
    if not args.results_dir.is_dir():
        raise UserError(f"{args.results_dir}: no such results folder")
    out = args.output or Path("reports") / args.results_dir.resolve().name / "index.html"
    common.check_report_outputs(out, args.csv, results_dirs=[args.results_dir])
    p99_ms = None
    if args.p99 is not None:
        from tfvariants.options.argtypes import milliseconds  # as serve's --p99

        try:
            p99_ms = milliseconds(args.p99)
        except argparse.ArgumentTypeError as exc:
            raise UserError(f"--p99: {exc}") from None
    report = write_report(
        args.results_dir,
        out,
        csv_path=args.csv,
        pricing=common.pricing_from(args),
        baseline=args.baseline,
        allow_mixed_hosts=args.allow_mixed_hosts,
        p99_bound_ms=p99_ms,
        min_effect=args.min_effect,
        confidence=args.confidence,
        disturbed=args.disturbed_policy,
    )
    print_store_warnings(report.frame)
    print(f"report: {out}")
    training = report.training
    if args.csv:
        rows = len(training.cells) if training is not None else 0
        if not rows and args.csv.is_file():  # a serving-only run: the CSV holds serving cells
            rows = max(len(args.csv.read_text(encoding="utf-8").splitlines()) - 1, 0)
        print(f"csv: {args.csv} ({rows} rows)")
    print_compiled_answer(report.frame)
    for w in training.workloads if training is not None else []:
        print(f"{w.name}:")  # the sentences do not all name their workload
        for line in w.conclusions:
            print(f"  {line}")
    if report.other_runs is not None:
        print(report.other_runs.sentence())
    quiet = training.interference if training is not None else None
    if quiet is not None and (quiet.disturbed or quiet.clean):
        print(quiet.sentence())
    for m in report.serving.models if report.serving is not None else []:
        print(f"serving {m.model}:")
        for line in m.conclusions:
            print(f"  {line}")
    return 0


def print_compiled_answer(analysis: RunFrame) -> None:
    """A compiled-preset run opens with its answer for this CPU (analyze/report/compiled.py)."""
    from tfvariants.analyze.report.compiled import answer
    from tfvariants.analyze.training.analysis import Analysis

    if not isinstance(analysis, Analysis):  # a serving-only run
        return
    lines = answer(analysis.workloads, analysis.run, analysis.settings.min_effect)
    for i, line in enumerate(lines or []):
        print(line if i == 0 else f"  {line}")
