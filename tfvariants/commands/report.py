"""Read RESULTS_DIR/run.json and RESULTS_DIR/cells/*.json and write one self-contained HTML
file. Nothing is run. Files that cannot be read, copies of a cell and cells from hosts
run.json does not declare are named as warnings and left out of the figures (the last ones
unless --allow-mixed-hosts)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from tfvariants.commands import common, rounds
from tfvariants.commands.command import Command
from tfvariants.errors import UserError, one_line
from tfvariants.options import declare
from tfvariants.options.decision import DecisionOptions
from tfvariants.options.declare import RunOptionsBase
from tfvariants.plan.tasks import tasks

if TYPE_CHECKING:  # the analysis is imported only when a report is made (start-up time)
    from tfvariants.analyze.report.build import Report
    from tfvariants.analyze.shared.frame import RunFrame
    from tfvariants.analyze.shared.settings import ReportSettings

# Warnings that change what the figures mean: always printed, not only in the HTML.
LOUD_KINDS = ("unreadable", "duplicate", "foreign_host", "mixed_hosts", "incomplete", "no_price")


def add_options(p: argparse.ArgumentParser) -> None:
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
    common.add_beside(p)
    rounds.add_disturbed_policy(p)
    # the latency bound for the cheapest answer, as the task that measures it declares it
    words = {"p99_bound_ms": "the run's, else 100ms"}
    declare.add_arguments(p, _declaring("p99_bound_ms"), ("p99_bound_ms",), words, parse_later=True)


def _declaring(name: str) -> type[RunOptionsBase]:
    """The task's options class that declares ``name`` (a report option is taken as its
    task declares it, naming no task here)."""
    return next(t.options for t in tasks().values() if name in declare.declared(t.options))


def print_store_warnings(analysis: RunFrame) -> None:
    """The run folder's problems, one named line each, on stderr."""
    for w in analysis.warnings:
        if w.kind in LOUD_KINDS:
            print(f"tfvariants: warning: {one_line(w.message)}", file=sys.stderr)


def write_report(
    results_dir: Path,
    out: Path,
    settings: ReportSettings | None = None,
    *,
    csv_path: Path | None = None,
) -> Report:
    """The report stage (report, compare and serve end with it): ``results_dir`` loaded
    and analysed once with the report's ``settings`` (analyze/shared/settings.py, made
    once by the command; None: all the run's own), the HTML written (atomically) and the
    optional CSV (render/)."""
    from tfvariants.analyze.report.build import build_report
    from tfvariants.analyze.shared.settings import ReportSettings
    from tfvariants.render.csvout import write_report_csv
    from tfvariants.render.html import write_html

    report = build_report(results_dir, settings or ReportSettings())
    write_html(report, out)
    if csv_path is not None:
        write_report_csv(report, csv_path)
    return report


def run(args: argparse.Namespace) -> int:
    if not args.results_dir.is_dir():
        raise UserError(f"{args.results_dir}: no such results folder")
    out = args.output or Path("reports") / args.results_dir.resolve().name / "index.html"
    common.check_report_outputs(out, args.csv, results_dirs=[args.results_dir])
    beside = tuple(args.beside or ())
    if beside:  # named inputs: refused in one line before anything is written
        from tfvariants.analyze.report.otherruns import check_beside

        check_beside(beside)
    p99_ms = None  # the run's
    if args.p99_bound_ms is not None:  # parsed as declared: one line when it does not parse
        given = {"p99_bound_ms": args.p99_bound_ms}
        p99_ms = declare.resolve(_declaring("p99_bound_ms"), given, {}, {})["p99_bound_ms"]
    from tfvariants.analyze.shared.settings import ReportSettings
    from tfvariants.options.decision import Override
    from tfvariants.render.answertext import answer_of_report, print_answer

    settings = ReportSettings(
        pricing=common.pricing_from(args),
        baseline=args.baseline,
        # The decision settings given here win over the run's (None: the run's).
        decision=Override(args.min_effect, args.confidence),
        allow_mixed_hosts=args.allow_mixed_hosts,
        p99_bound_ms=p99_ms,
        disturbed=args.disturbed_policy,
        beside=beside,
    )
    report = write_report(args.results_dir, out, settings, csv_path=args.csv)
    print_store_warnings(report.frame)
    if beside and report.other_runs is None:  # named, so never dropped without a word
        print(
            "tfvariants: warning: --beside: no run set beside this one (a run without training "
            "cells, or only itself named)",
            file=sys.stderr,
        )
    tail = [f"report: {out}"]
    if args.csv:
        from tfvariants.render.csvout import csv_rows

        tail.append(f"csv: {args.csv} ({len(csv_rows(report))} rows)")
    if args.verbose:
        print_long(report)
    print_answer(answer_of_report(report), tail)
    return 0


def print_long(report: Report) -> None:
    """The long paragraphs (--verbose): the compiled answer's sentences, each task's
    verdicts in sentences (each workload's, model's) and its notes (other runs,
    interference)."""
    print_compiled_answer(report)
    for part in report.parts:
        for subject, lines in part.said(report.shared):
            print(f"{subject}:")  # the sentences do not all name their subject
            for line in lines:
                print(f"  {line}")
        for note in part.notes(report.shared):
            print(note)


def print_compiled_answer(report: Report) -> None:
    """A compiled-preset run opens with its answer for this CPU: the report's one answer,
    as its HTML shows it (analyze/report/build.py)."""
    for i, line in enumerate(report.compiled):
        print(line if i == 0 else f"  {line}")


COMMAND = Command(
    6, "write the HTML report (and optionally a CSV) from stored results", add_options, run
)
