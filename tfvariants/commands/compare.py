"""Run every cell (variant x threads x workload x repeat) in interleaved rounds, store one
result per cell in OUT/cells/, then write the HTML report."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tfvariants.commands import common, compare_cluster, design, presets, rounds
from tfvariants.commands.command import Command
from tfvariants.commands.compare_spec import build_spec as build_spec
from tfvariants.commands.compare_spec import (
    check_baseline,
    check_duet,
    check_later,
    duet_line,
)
from tfvariants.commands.compare_spec import parse_threads as parse_threads
from tfvariants.commands.matrix_args import (  # noqa: F401 (quick_scale: the command's API)
    QUICK_SAMPLES,
    cell_options,
    check_fits_host,
    checked,
    default_threads,
    parse_names,
    quick_scale,
    ready_variants,
    run_options_for,
    workload_spec,
)
from tfvariants.commands.outdir import check_writable, out_dir
from tfvariants.commands.variant_probe import probe_variants
from tfvariants.errors import UserError
from tfvariants.execute import policy
from tfvariants.execute.policy import Policy
from tfvariants.options import argtypes, declare
from tfvariants.options.cell import SCALE
from tfvariants.options.limits import MAX_THREADS
from tfvariants.options.training import TrainingOptions
from tfvariants.rounds import firstlook
from tfvariants.store.record import RunRecord
from tfvariants.store.runfolder import RunFolder
from tfvariants.store.runrecord import store_variant_info

if TYPE_CHECKING:
    import threading
    from collections.abc import Sequence

    from rich.console import Console

    from tfvariants.analyze.cost.pricing import Pricing
    from tfvariants.analyze.report.build import Report
    from tfvariants.analyze.shared.settings import ReportSettings
    from tfvariants.execute.duet import Duet
    from tfvariants.execute.executors import Executor
    from tfvariants.execute.matrix import Matrix, MatrixOutcome
    from tfvariants.execute.quiet import QuietGate, QuietWait
    from tfvariants.execute.record import StoredCell
    from tfvariants.execute.runner import RunOptions
    from tfvariants.plan.cell import Cell
    from tfvariants.plan.duet import DuetPlans
    from tfvariants.plan.pinning import PinPlan
    from tfvariants.plan.spec import MatrixSpec
    from tfvariants.variants.registry import Variant


def add_options(p: argparse.ArgumentParser) -> None:
    presets.add_option(p)
    p.add_argument(
        "--quick",
        action="store_true",
        help="quick scale: each workload's quick_samples, a 6 s/50-step steady window, --budget "
        "10m",
    )
    p.add_argument(
        "--threads",
        type=argtypes.thread_list,
        default=None,
        help=f"comma list of vCPU counts (1..{MAX_THREADS}), e.g. 8,16,32,64 (default: 1..CPUs)",
    )
    p.add_argument(
        "--variants",
        default=None,
        help="comma list, e.g. pip,compiled,gpu or local,local+isa-sse41 (default: local)",
    )
    common.add_variants_file(p)
    common.add_engine(p)
    p.add_argument(
        "--no-probe", action="store_true", help="skip the oneDNN and peak probes of each variant"
    )
    p.add_argument(
        "--no-peak",
        action="store_true",
        help="skip the peak probe (attainable GFLOP/s per variant and thread count)",
    )
    declare.add_arguments(p, TrainingOptions, ("duet", "oversubscribe"))
    p.add_argument("--workloads", default=None, help="'all' (default) or a comma list")
    p.add_argument(
        "--trust-workloads",
        action="store_true",
        help="with --resume: run the workload files run.json names without asking",
    )
    p.add_argument(
        "--repeats",
        type=argtypes.repeats,
        default=None,
        help="repeats per configuration (default 5, the fewest that can decide with "
        "--budget's looks); with --budget: the repeats before the first look",
    )
    rounds.add_options(p)
    declare.add_arguments(p, TrainingOptions, SCALE)
    declare.add_arguments(p, TrainingOptions, ("timeout_s",))
    common.add_pricing(p)
    p.add_argument(
        "--baseline",
        default=None,
        help="VARIANT[@THREADS] (default: the GPU if one ran, else the most threads that fit "
        "on the host, with the most successful repeats)",
    )
    p.add_argument(
        "--out", type=out_dir, default=None, help="results folder (default: results/<run>)"
    )
    common.add_report_outputs(p, old_flag="--report")
    common.add_beside(p)
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue the run in --out: only missing, failed or timed-out cells run; "
        "stops, writing nothing, if a file in it cannot be read",
    )
    p.add_argument(
        "--quarantine",
        action="store_true",
        help="with --resume: move files that cannot be read to OUT/quarantine/ "
        "(and say so) instead of stopping",
    )
    common.add_allow_mixed_hosts(p)
    compare_cluster.register(p)


# ---- argument parsing (UserError, one line, before anything is written) ----


def measure_peaks(out: Path, variant_objs: dict[str, Any], spec: MatrixSpec) -> None:
    """Each configuration's attainable and theoretical peak, into run.json (before its
    first timed cell, at the cells' priority; tfvariants.variants.peak); a run with a
    budget keeps a busy host's cached peak rather than probe it again."""
    from functools import partial

    from tfvariants.execute.probe import peak_probe
    from tfvariants.store.runfile import store_peaks
    from tfvariants.variants.peak import measure_all

    probe = partial(peak_probe, priority=spec.options.priority)
    again = not spec.options.budget_s
    store_peaks(out, measure_all(variant_objs, spec.configurations(), probe, again=again))


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from tfvariants.store import workloadfiles
    from tfvariants.store.record import run_record
    from tfvariants.store.runfile import load_run

    compare_cluster.check(args)
    stored = None
    if args.quarantine and not args.resume:
        raise UserError("--quarantine only applies to --resume")
    if args.resume:
        if args.out is None:
            raise UserError("--resume needs --out RESULTS_DIR (the run to continue)")
        stored = load_run(args.out) or None
        if stored is None and args.dry_run:  # a real resume says it when it opens the run
            raise UserError(f"--resume: {args.out / 'run.json'} not found (nothing to resume)")
        if stored:  # a results folder is data: its workload files are confirmed first
            named = (args.workloads or "").split(",")
            workloadfiles.check_resume(stored, named=named, trusted=args.trust_workloads)
    # Before the pricing: a preset may name the catalog. A resume keeps the preset its
    # run was started with (the report opens with it): the stored options' layer wins.
    preset = presets.apply(args)
    pricing = common.pricing_from(args)
    record = run_record(stored or {})  # typed once, for every reader below
    spec, variant_objs = build_spec(args, record, pricing, preset)
    opts = spec.options
    check_baseline(args.baseline, spec)
    check_later(args.baseline, spec)
    if not (args.dry_run or args.executor == "ray" or opts.oversubscribe):
        check_fits_host("compare", spec.configurations(), spec.variant_info, spec.threads)
    duet_at = check_duet(spec, variant_objs, args.executor)
    firstlook.say(spec, args.out if args.resume else None, args.estimate_from)
    if args.beside:  # named inputs: refused in one line before any cell runs
        from tfvariants.analyze.report.otherruns import check_beside

        check_beside(args.beside)
    if args.dry_run:
        if duet_at is not None:
            print(duet_line(duet_at), file=sys.stderr)
        kinds = {n: v.kind for n, v in variant_objs.items()}
        return compare_cluster.dry_run(args, spec, pricing, Console(soft_wrap=True), kinds)
    if args.executor == "ray":
        compare_cluster.placement(spec, pricing)  # a cell with no node type: stop now
    name = ("quick-" if opts.quick else "compare-") + datetime.now().strftime("%Y%m%d-%H%M%S")
    out = args.out or Path("results") / name
    report_path = args.output or Path("reports") / out.name / "index.html"
    check_writable(out)
    common.check_report_outputs(report_path, args.csv, results_dirs=[out])
    if args.executor == "ray":  # readiness is checked on the node that runs the cell
        variant_objs = compare_cluster.with_engine(variant_objs, args.engine)
    else:
        variant_objs = ready_variants(variant_objs, args.engine)
    # The budget's clock starts here, the environments ready: the folder's checks, the
    # probes, the census and the peaks before the first cell count in it.
    args.began = policy.run_clock()
    console = Console(stderr=True, soft_wrap=True)

    report_to = _ReportTo(report_path, _settings(args, pricing), args.csv, args.verbose)
    outcome = _run_matrix(args, spec, variant_objs, out, record, console, report_to, duet_at)
    if outcome.was_interrupted:
        console.print(
            f"interrupted during {outcome.interrupted.cell_id if outcome.interrupted else '?'}: "
            f"finished cells are saved in {out}/cells; continue with: tfvariants compare "
            f"--resume --out {out}",
            highlight=False,
            markup=False,
        )
        return 130
    _report(out, report_to, outcome, console)
    return outcome.exit_code()


def _prepare(
    args: argparse.Namespace,
    spec: MatrixSpec,
    variant_objs: dict[str, Variant],
    out: Path,
    console: Console,
) -> Matrix:
    """The run folder checked and prepared, the variants probed, the matrix announced."""
    from tfvariants.execute.matrix import Matrix

    matrix = Matrix(spec, out)
    moved = matrix.prepare(
        resume=args.resume,
        allow_mixed_hosts=args.allow_mixed_hosts,
        quarantine=args.quarantine,
        hosts=[] if args.executor == "ray" else None,  # the nodes are declared as they join
    )  # the folder's checks come before any output: a refusal is one line
    # After the folder's checks (a refusal must not wait for it), before any cell.
    # (With --executor ray the cells run on other machines: this host's oneDNN says nothing.)
    probe_variants(
        spec.variant_info,
        variant_objs,
        probe=not args.no_probe and args.executor != "ray",
        count_isa=spec.options.preset is not None and spec.options.preset.name == presets.PRESET,
    )
    store_variant_info(out, spec.variant_info)
    if not (args.no_peak or args.no_probe) and args.executor != "ray":  # cached, like the census
        measure_peaks(out, variant_objs, spec)
    rounds.said_probes(spec.options.budget_s, policy.run_clock() - args.began, console)
    rounds.announce(spec, out, moved, console)
    return matrix


def _run_matrix(
    args: argparse.Namespace,
    spec: MatrixSpec,
    variant_objs: dict[str, Variant],
    out: Path,
    stored: RunRecord,
    console: Console,
    report_to: _ReportTo,
    duet_at: DuetPlans | None = None,
) -> MatrixOutcome:
    """Prepare the run folder, probe the variants, run the cells (one loop, on this host
    one by one or in duets, or on Ray in waves, with the adaptive rounds when there is a
    budget); the MatrixOutcome, with its lines said. A store error while the cells run
    (not while the folder is checked) renders what was stored first (``report_to``)."""
    from tfvariants.store.runfolder import StoreError

    matrix = _prepare(args, spec, variant_objs, out, console)
    opts = spec.options
    quiet_gate = rounds.quiet_gate(spec)
    # One policy (one stopping rule) for every executor; on Ray each round is a wave.
    before = stored.adaptive
    spent_before = (before.spent_s if before is not None else None) or 0.0
    # The looks' times (run.json "looks_made" at_s) count this command's probes too.
    spent = spent_before + policy.run_clock() - args.began
    next_round, rule = rounds.adaptive_hook(spec, args.baseline, console, spent)
    options_for = cell_options(spec, lambda: next_round.window_plan if next_round else None)
    resume = rounds.resume_command(args.argv, out)
    held = not opts.at_least_first_look  # else the planned cells run past the budget
    run_policy: Policy[Cell] = Policy(
        next_round, opts.budget_s, spent_before, held, began=args.began, resume=resume,
        clock=policy.run_clock,
    )  # fmt: skip
    chosen = None
    if args.executor == "ray":  # disturbed cells are judged on this host's CPUs only
        executor: Executor[Cell] = compare_cluster.ray_waves(
            args, spec, variant_objs, report_to.settings.pricing, out, console, options_for
        )
    else:
        run_policy = dataclasses.replace(run_policy, **rounds.retry_options(spec, quiet_gate))
        executor = _local(spec, variant_objs, options_for, quiet_gate, console, duet_at)
        if next_round is not None and design.chooses(spec, args.executor, next_round):
            # The compiled preset: sequential to its first look, then the design it chose.
            def duet(plans: DuetPlans) -> Executor[Cell]:  # said when the design chooses it
                return _duet(plans, spec, variant_objs, options_for, quiet_gate, console, False)

            pinned = {name: v.pins_on_host() for name, v in variant_objs.items()}
            chosen = design.choosing(spec, pinned, (executor, duet), next_round, stored, console)
            executor = chosen.executor
            run_policy = dataclasses.replace(run_policy, next_round=chosen)
    try:
        outcome = matrix.run(executor=executor, policy=run_policy, console=console)
    except StoreError:
        report_to.write_quietly(out)
        raise
    if rule is not None:
        said = chosen.design if chosen is not None else None
        rounds.record(out, rule, spec, before, outcome, console, next_round, said)
    rounds.print_outcome(outcome, console)
    return outcome


def _local(
    spec: MatrixSpec,
    variant_objs: dict[str, Variant],
    options_for: Callable[[Cell], RunOptions],
    gate: QuietGate | None,
    console: Console,
    duet_at: DuetPlans | None,
) -> Executor[Cell]:
    """This host's executor: cells one by one, or in duets on the plans check_duet found."""
    from tfvariants.execute import runner
    from tfvariants.execute.executors import Sequential

    if duet_at is not None:
        return _duet(duet_at, spec, variant_objs, options_for, gate, console)
    at = runner.Conditions(quiet=gate, priority=spec.options.priority)

    def run_one(cell: Cell, folder: RunFolder) -> StoredCell:
        return runner.run_cell(cell, variant_objs[cell.variant], options_for(cell), folder, at=at)

    return Sequential(run_one)


def _duet(
    plans: DuetPlans,
    spec: MatrixSpec,
    variant_objs: dict[str, Variant],
    options_for: Callable[[Cell], RunOptions],
    gate: QuietGate | None,
    console: Console,
    say: bool = True,
) -> Duet[Cell]:
    """The run's duet on the plans check_duet found, said on the console (``say``; a
    design's duet is said when it is chosen)."""
    from tfvariants.analyze.statistics import interference
    from tfvariants.execute import runner
    from tfvariants.execute.duet import Duet

    priority = spec.options.priority

    def run_on(
        cell: Cell,
        folder: RunFolder,
        plan: PinPlan,
        quiet: Callable[[Sequence[int]], QuietWait] | None,
        stop: threading.Event | None,
    ) -> StoredCell:
        at = runner.Conditions(quiet=quiet, priority=priority, stop=stop)
        return runner.run_cell(cell, variant_objs[cell.variant], options_for(cell), folder,
                               at=at, plan=plan)  # fmt: skip

    if say:
        console.print(duet_line(plans), highlight=False, markup=False)
    return Duet(plans, run_on, gate, interference.rule_of(spec.options))


@dataclasses.dataclass(frozen=True)
class _ReportTo:
    """Where the run's report goes (HTML, optional CSV) and the settings it is made with."""

    path: Path
    settings: ReportSettings
    csv: Path | None
    verbose: bool = False  # the long paragraphs on the console too (--verbose)

    def write(self, out: Path) -> Report:
        from tfvariants.commands.report import write_report

        return write_report(out, self.path, self.settings, csv_path=self.csv)

    def write_quietly(self, out: Path) -> None:
        """After a store error mid-run (e.g. a full disk): what was stored, if it fits."""
        with contextlib.suppress(UserError):
            self.write(out)


def _settings(args: argparse.Namespace, pricing: Pricing | None) -> ReportSettings:
    """The report's settings: the command line's; the decision settings the run's."""
    from tfvariants.analyze.shared.settings import ReportSettings

    return ReportSettings(
        pricing=pricing,
        baseline=args.baseline,
        allow_mixed_hosts=args.allow_mixed_hosts,
        beside=tuple(args.beside or ()),
    )


def _report(out: Path, report_to: _ReportTo, outcome: MatrixOutcome, console: Console) -> None:
    """The report of the whole run folder, and its first lines on the console."""
    from rich.markup import escape

    from tfvariants.commands.report import print_compiled_answer, print_store_warnings
    from tfvariants.render.answertext import answer_of_report, print_answer

    rounds.print_disturbed(outcome, console)
    report = report_to.write(out)
    analysis = report.frame
    answer = answer_of_report(report)
    rounds.last_look_next(analysis, answer, console)
    print_store_warnings(analysis)
    if report_to.verbose:  # the long paragraphs; the report has them always
        rounds.summary(analysis, out, console)
        print_compiled_answer(report)
        if report.other_runs is not None and not report.compiled:  # else in the answer
            console.print(report.other_runs.sentence(), highlight=False, markup=False)
    if outcome.problems:
        console.print(
            f"[red]{len(outcome.problems)} cell(s) failed or timed out[/]; rerun them with: "
            f"tfvariants compare --resume --out {escape(str(out))}",
            highlight=False,
        )
    tail = [f"report: {report_to.path}", *([f"csv: {report_to.csv}"] if report_to.csv else [])]
    print_answer(answer, tail, stderr=True)


COMMAND = Command(
    4, "run the matrix of variants x threads x workloads and write a report", add_options, run
)
