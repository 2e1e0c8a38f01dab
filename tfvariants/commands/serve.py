"""Run serving cells (variant x threads x model x scenario [x concurrency] [x batching] x
path x repeat) in interleaved rounds, each whole inside its variant (model, HTTP server and
load generator in one pinned worker), store one result per cell in OUT/cells/ and LoadGen's
logs in OUT/artifacts/, then write the HTML report with a verdict per comparison."""

# A separate command rather than ``compare --task serve``: its matrix has other axes
# (models, scenarios, concurrency, paths) and other options (durations, latency bound).

from __future__ import annotations

import argparse
import dataclasses
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from tfvariants.commands import common
from tfvariants.commands.command import Command
from tfvariants.commands.matrix_args import check_fits_host, ready_variants
from tfvariants.commands.outdir import check_writable, out_dir
from tfvariants.commands.serve_spec import (
    DEFAULTS,
    PRESET_OPTIONS,
    PRESETS,
    build_serve_spec,
    check_loadgen,
    check_target,
)
from tfvariants.commands.serve_spec import LOADGEN_SPEC as LOADGEN_SPEC
from tfvariants.commands.serve_spec import with_loadgen as with_loadgen
from tfvariants.errors import UserError
from tfvariants.execute import policy
from tfvariants.options import declare
from tfvariants.options.decision import ADAPTIVE, JUDGED, DecisionOptions
from tfvariants.options.serving import COMMAND_LINE, ServingOptions
from tfvariants.store.record import AdaptiveRecord
from tfvariants.store.runfolder import RunFolder

if TYPE_CHECKING:
    from rich.console import Console

    from tfvariants.analyze.cost.pricing import Pricing
    from tfvariants.execute.matrix import MatrixOutcome
    from tfvariants.execute.record import StoredCell
    from tfvariants.plan.serve import ServeSpec
    from tfvariants.rounds.serving import NextServeRound
    from tfvariants.variants.registry import Variant


def add_options(p: argparse.ArgumentParser) -> None:
    _add_matrix_options(p)
    _add_load_options(p)
    common.add_pricing(p)  # the same options, defaults and help as compare and report
    p.add_argument(
        "--baseline",
        default=None,
        help="VARIANT[@THREADS] for ratios (default: training's rule: the GPU if one ran, "
        "else the most threads that fit on the host; in-process, unbatched first)",
    )
    p.add_argument(
        "--out", type=out_dir, default=None, help="results folder (default results/serve-<time>)"
    )
    p.add_argument(
        "-o",
        "--output",
        "--report",
        dest="report",
        type=Path,
        default=None,
        metavar="FILE.html",
        help="HTML report path (default reports/<run>/index.html; -o/--output as in compare and "
        "report)",
    )
    p.add_argument(
        "--csv",
        type=Path,
        default=None,
        metavar="FILE.csv",
        help="also write one row per serving cell to this CSV file",
    )
    common.add_verbose(p)
    p.add_argument(
        "--resume", action="store_true", help="continue the run in --out (same arguments)"
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print the planned cells per node type and the estimated bill (needs --pricing "
        "and a catalog instance per thread count); run nothing",
    )
    p.add_argument(
        "--estimate-from",
        type=Path,
        default=None,
        metavar="RUN",
        help="with --dry-run: cell times from an earlier results folder (default: rough)",
    )


def _add_matrix_options(p: argparse.ArgumentParser) -> None:
    """What the matrix sweeps: models, scenarios, concurrency, paths, threads, variants."""
    d = DEFAULTS
    p.add_argument(
        "--preset",
        choices=sorted(PRESETS),
        default=None,
        help="study: the serving study (Keras applications MobileNetV2..NASNetLarge at 1, 8, 20, "
        "50 "
        "requests in flight over HTTP with b64 bodies, on every --variants given); "
        "options given explicitly win",
    )
    p.add_argument(
        "--models",
        default=None,
        help=f"comma list of built-in models (default {d['models']}; mobilenet_v2, resnet50, "
        "inception_v3, "
        "densenet121, efficientnet_b0, nasnet_mobile, nasnet_large, noop) or .py / .keras files",
    )
    p.add_argument(
        "--scenarios",
        default=None,
        help="comma list of single_stream, offline, server, server_search, concurrency "
        f"(default {d['scenarios']})",
    )
    p.add_argument(
        "--concurrency",
        default=None,
        help=f"requests in flight for the closed-loop sweep (default {d['concurrency']})",
    )
    p.add_argument(
        "--path",
        default=None,
        help="inprocess (client calls the model), http (TensorFlow Serving REST on 127.0.0.1), or "
        "both "
        f"(default {d['path']})",
    )
    p.add_argument(
        "--target",
        default=None,
        metavar="URL",
        help="measure an external server speaking TensorFlow Serving's REST API instead (replaces "
        "--path)",
    )
    p.add_argument(
        "--target-model", default=None, help="model name on --target (default: the --models name)"
    )
    p.add_argument(
        "--input-shape",
        default=None,
        metavar="H,W,C",
        help="with --target: one instance's shape (default: a built-in model's, else read "
        "from the server's model metadata, GET /v1/models/NAME/metadata)",
    )
    p.add_argument("--threads", default=None, help="comma list, e.g. 8,16 (default: 1..CPUs)")
    p.add_argument("--variants", default="local", help="comma list (default local)")
    p.add_argument("--variants-file", default=None, help="TOML file with more variants")
    p.add_argument("--engine", choices=("docker", "podman"), default=None)


def _add_load_options(p: argparse.ArgumentParser) -> None:
    """Repeats, the budget, the decision settings, and what each load run does."""
    d = DEFAULTS
    p.add_argument(
        "--repeats",
        default=None,
        help=f"repeats per configuration (default {d['repeats']}; with --budget: before the first "
        "look)",
    )
    budget_words = f"{d['budget_s']}, off when --repeats is given; --preset study off"
    declare.add_arguments(
        p, DecisionOptions, ("budget_s",), {"budget_s": budget_words}, parse_later=True
    )
    declare.add_arguments(
        p,
        DecisionOptions,
        (*ADAPTIVE, *JUDGED, "disturbed_policy"),
        # rounds/serving.py: the last look the budget holds at the first look's round cost
        {"max_repeats": "the rounds the budget holds at the first look's round cost, at most 50"},
    )
    # Declared in options/serving.py; --preset may change some defaults (DEFAULTS).
    preset_words = {name: str(d[name]) for name in PRESET_OPTIONS if name != "min_queries"}
    declare.add_arguments(p, ServingOptions, COMMAND_LINE, preset_words, parse_later=True)
    p.add_argument(
        "--max-batch-size",
        default=None,
        help="batching, a swept axis: comma list of batch limits (server-side batching over HTTP, "
        "like "
        "TensorFlow Serving's max_batch_size; in-process LoadGen runs and Offline batch queued "
        f"samples up to it; default {d['max_batch_size']} = no batching)",
    )
    p.add_argument(
        "--batch-timeout",
        default=None,
        help="comma list: how long a batch waits for more requests (TensorFlow Serving's "
        f"batch_timeout_micros; default {d['batch_timeout']})",
    )


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    spec, variant_objs = build_serve_spec(args)
    pricing = common.pricing_from(args)
    if args.baseline:
        from tfvariants.analyze.baseline import parse_baseline

        base = parse_baseline(args.baseline)
        if base and base[0] not in spec.variants:
            raise UserError(f"--baseline {args.baseline}: {base[0]!r} is not one of --variants")
    if args.estimate_from is not None and not args.dry_run:
        raise UserError("--estimate-from is for --dry-run")
    console = Console(stderr=True, soft_wrap=True)
    if args.resume and args.out is None:
        raise UserError("--resume needs --out RESULTS_DIR (the run to continue)")
    if args.resume and not (args.out / "run.json").is_file():  # a dry run too
        raise UserError(f"--resume: {args.out / 'run.json'} not found (nothing to resume)")
    if args.dry_run:
        return _dry_run(spec, pricing, console, args.estimate_from)
    if not spec.options.oversubscribe:
        check_fits_host("serve", spec.configurations(), spec.variant_info, spec.threads)
    if args.target:
        for m in spec.models:
            check_target(args.target, args.target_model or m, m, spec.options.input_shape)
    variant_objs = ready_variants(with_loadgen(spec.scenarios, variant_objs), args.engine)
    args.began = policy.run_clock()  # the budget's clock: the environments ready, the checks count
    out = args.out or Path("results") / f"serve-{datetime.now().strftime('%Y%m%d-%H%M%S')}"
    report_path = args.report or Path("reports") / out.name / "index.html"
    if args.resume:  # its model files are named again: each must be the file it measured
        from tfvariants.store import workloadfiles
        from tfvariants.store.runfile import load_run

        workloadfiles.check_recorded(load_run(out), workloadfiles.file_workloads(spec.models))
    check_writable(out)
    common.check_report_outputs(report_path, args.csv, results_dirs=[out])
    check_loadgen(spec.scenarios, variant_objs)

    from tfvariants.rounds.serving import order_seed, stored_max_repeats

    seed = order_seed(out, args.resume)
    if seed is not None:  # absent from a run stored before rounds were shuffled
        spec = dataclasses.replace(spec, options=dataclasses.replace(spec.options, order_seed=seed))
    last = stored_max_repeats(out, args.resume) if spec.options.max_repeats is None else None
    if last is not None:  # a resume keeps the last look its run fixed
        spec = dataclasses.replace(
            spec, options=dataclasses.replace(spec.options, max_repeats=last)
        )
    outcome = _run_matrix(args, spec, variant_objs, pricing, out, console)
    if outcome.was_interrupted:
        console.print(
            f"interrupted: finished cells are saved in {out}/cells; continue with: "
            f"tfvariants serve --resume --out {out} (same arguments)",
            highlight=False,
        )
        return 130
    if len(outcome.statuses) == 0:
        return outcome.exit_code()
    _report(args, spec, out, report_path, pricing, console)
    return outcome.exit_code()


def _dry_run(
    spec: ServeSpec, pricing: Pricing | None, console: Console, estimate_from: Path | None
) -> int:
    """The serving cells per node type and the estimated bill (the one dry run of every
    task, analyze/cost/dryrun.py; serving's cells and times: analyze/serving/dryrun.py).
    Writes nothing."""
    from tfvariants.analyze.serving import serving_dry_run
    from tfvariants.render.dryrun import print_dry_run

    dry = serving_dry_run(spec, pricing, estimate_from)
    budget = spec.options.budget_s
    header = (
        f"{dry.cells} serving cells ({len(spec.models)} model(s), "
        f"{len(spec.variants)} variant(s), threads {','.join(map(str, spec.threads))}, "
        f"{spec.repeats} repeat(s)"
        + (", more rounds within the budget" if budget else "")
        + ") billed as"
    )
    print_dry_run(dry, console, header)
    return 0


def _run_matrix(
    args: argparse.Namespace,
    spec: ServeSpec,
    variant_objs: dict[str, Variant],
    pricing: Pricing | None,
    out: Path,
    console: Console,
) -> MatrixOutcome:
    """Run the serving cells (adaptive rounds when there is a budget); the MatrixOutcome,
    with its lines said."""
    from tfvariants.commands.rounds import resume_command
    from tfvariants.execute.matrix import Matrix
    from tfvariants.execute.policy import Policy
    from tfvariants.execute.runner import run_cell
    from tfvariants.plan.serve import ServeCell

    cells = spec.cells()
    console.print(
        f"[bold]serve[/]: {len(cells)} cells ({len(spec.variants)} variant(s) x "
        f"{len(spec.threads)} thread count(s) x {len(spec.workloads)} model/scenario/path "
        f"x {spec.repeats} repeat(s)) -> {out}",
        highlight=False,
    )

    def run_one(cell: ServeCell, folder: RunFolder) -> StoredCell:
        return run_cell(cell, variant_objs[cell.variant], spec.options, folder)

    matrix = Matrix(spec, out)
    before = None
    if args.resume:
        from tfvariants.store.runfile import read_run

        # run.json alone: the matrix loads the cells (once) when it resumes
        before = read_run(out).adaptive
    next_round = None
    o = spec.options
    if o.budget_s:
        next_round = _next_round_hook(spec, pricing, args.baseline, console)
    run_policy = Policy(
        next_round,
        o.budget_s,
        (before.spent_s if before is not None else None) or 0.0,
        # The default run's promise: an answer within the budget, unless asked otherwise.
        budget_covers_plan=not o.at_least_first_look,
        began=args.began,
        resume=resume_command(args.argv, out),
        clock=policy.run_clock,
    )
    outcome = matrix.run(run_one, policy=run_policy, resume=args.resume, console=console)
    if next_round is not None:
        _record(out, next_round, spec, before, outcome, console)
    console.print(
        f"{outcome.count('ok')} ok, {outcome.count('failed')} failed, "
        f"{outcome.count('timeout')} timed out, {outcome.count('skipped')} skipped of "
        f"{outcome.planned} cells ({len(outcome.ran)} run now)",
        highlight=False,
    )
    for cid in outcome.problems[:20]:
        reason = outcome.reasons.get(cid, "")
        console.print(f"  [red]{outcome.statuses[cid]}[/] {cid}: {reason}", highlight=False)
    return outcome


def _next_round_hook(
    spec: ServeSpec, pricing: Pricing | None, baseline: str | None, console: Console
) -> NextServeRound:
    """The adaptive rounds' hook, its rule said: fixed by --max-repeats, else planned from
    the budget once the first look's rounds are stored (rounds/serving.py)."""
    from tfvariants.commands import rounds
    from tfvariants.rounds.serving import NextServeRound

    o = spec.options
    if o.max_repeats is not None:
        rule = rounds.stopping_rule(spec, console)
        return NextServeRound(spec, rule, pricing=pricing, baseline=baseline)
    console.print(
        f"adaptive: the first look after {spec.repeats} repeats; the later looks are planned "
        f"then, before any verdict, from the rounds' measured cost to fill the budget of "
        f"{(o.budget_s or 0) / 60:.3g} min (--max-repeats fixes them instead)",
        highlight=False,
    )

    def say(line: str) -> None:
        console.print(line, highlight=False, markup=False)

    return NextServeRound(spec, None, pricing=pricing, baseline=baseline, say=say)


def _record(
    out: Path,
    hook: NextServeRound,
    spec: ServeSpec,
    before: AdaptiveRecord | None,
    outcome: MatrixOutcome,
    console: Console,
) -> None:
    """run.json's "adaptive" (commands/rounds.py ``record``), with the look plan when the
    last look followed the budget. A run stopped before its first look has no looks yet."""
    from tfvariants.analyze.statistics.adaptive import StoppingRule
    from tfvariants.commands import rounds
    from tfvariants.store.runrecord import update_adaptive

    rule = hook.rule or StoppingRule(spec.repeats, spec.repeats, ())
    rounds.record(out, rule, spec, before, outcome, console)
    stored_plan = before.look_plan if before is not None else None
    plan = hook.plan if hook.plan is not None else stored_plan
    if plan is not None:
        update_adaptive(out, look_plan=plan.to_json())


def _report(
    args: argparse.Namespace,
    spec: ServeSpec,
    out: Path,
    report_path: Path,
    pricing: Pricing | None,
    console: Console,
) -> None:
    """The report, with each model's first conclusions on the console."""
    from tfvariants.analyze.shared.settings import ReportSettings
    from tfvariants.commands import rounds
    from tfvariants.commands.report import write_report
    from tfvariants.render.answertext import answer_of_report, print_answer

    o = spec.options
    # The decision settings: the run's, as stored.
    settings = ReportSettings(pricing=pricing, baseline=args.baseline, p99_bound_ms=o.p99_bound_ms)
    report = write_report(out, report_path, settings, csv_path=args.csv)
    answer = answer_of_report(report)
    rounds.last_look_next(report.frame, answer, console)
    for part in report.parts if args.verbose else ():
        for _, lines in part.said(report.shared):
            for line in lines[:3]:
                console.print(f"  {line}", highlight=False, markup=False)
    tail = [f"report: {report_path}", *([f"csv: {args.csv}"] if args.csv else [])]
    print_answer(answer, tail, stderr=True)


COMMAND = Command(
    5,
    "measure serving throughput and tail latency (LoadGen + closed loop) and cost per "
    "million predictions",
    add_options,
    run,
)
