"""`tfvariants compare`: run the matrix (variant x threads x workload x repeat), then
render the report from the stored results."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from tfvariants.analyze.statistics.stats import DEFAULT_REPEATS
from tfvariants.commands import common, compare_cluster, presets, rounds
from tfvariants.commands.matrix_args import (  # noqa: F401 (quick_scale: the command's API)
    QUICK_SAMPLES,
    cell_options,
    checked,
    default_threads,
    parse_names,
    quick_scale,
    ready_variants,
    run_options_for,
    workload_spec,
)
from tfvariants.commands.outdir import check_writable, out_dir
from tfvariants.commands.variant_probe import probe_variants, store_variant_info
from tfvariants.errors import UserError
from tfvariants.options import argtypes, declare
from tfvariants.options.cell import SCALE
from tfvariants.options.training import TrainingOptions
from tfvariants.plan.cell import MAX_THREADS
from tfvariants.store.runfolder import RunFolder


def register(sub: Any) -> None:
    p = sub.add_parser(
        "compare",
        help="run the matrix of variants x threads x workloads and write a report",
        description="Run every cell (variant x threads x workload x repeat) in interleaved "
        "rounds, store one result per cell in OUT/cells/, then write the HTML report.",
    )
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
    p.set_defaults(func=run)


# ---- argument parsing (UserError, one line, before anything is written) ----


def parse_threads(text: str) -> list[int]:
    return checked("threads", argtypes.thread_list, text)


def _parsed(option: str, parse: Any, value: Any) -> Any:
    """Command-line text through the shared parser; values already parsed pass."""
    return checked(option, parse, value) if isinstance(value, str) else value


def _available_workloads() -> list[str]:
    from workloads import registry

    return list(registry.available())


def build_spec(
    args: argparse.Namespace, stored: dict | None = None, pricing: Any = None
) -> tuple[Any, dict[str, Any]]:
    """MatrixSpec + the variant objects, from args (missing args taken from a stored run
    when resuming); ``pricing`` gives a GPU variant its instance's vCPU count."""
    from tfvariants.plan.spec import MatrixSpec, logical_cpus
    from tfvariants.variants import get_variant

    stored = stored or {}
    sopts = stored.get("options") or {}

    def given_or_stored(name: str, value: Any, parse: Any, default: Any) -> Any:
        # None = not on the command line: a resume takes the stored value.
        if value is not None:
            return _parsed(name.replace("_", "-"), parse, value)
        stored_value = sopts.get(name) if name in sopts else stored.get(name)
        return stored_value if stored_value is not None else default

    variants = given_or_stored(
        "variants", args.variants, lambda v: parse_names("variants", v), ["local"]
    )
    explicit = split_fixed_threads(variants)
    variants = list(dict.fromkeys(n for n, _ in explicit))
    if len(variants) != len(explicit):
        raise UserError("--variants: a variant is named twice (with different @THREADS?)")
    threads = given_or_stored(
        "threads", args.threads, parse_threads, default_threads(logical_cpus())
    )
    known = _available_workloads()
    if args.workloads is None and stored.get("workloads"):
        workloads = stored["workloads"]
    elif args.workloads in (None, "all"):
        workloads = known
    else:
        workloads = parse_names("workloads", args.workloads)
        for w in workloads:
            if w not in known and not (w.endswith(".py") and os.path.isfile(w)):
                raise UserError(
                    f"unknown workload {w!r} (known: {', '.join(known)}; or a path to a .py file)"
                )
    if not workloads:
        raise UserError("no workloads available")

    repeats = given_or_stored("repeats", args.repeats, argtypes.repeats, DEFAULT_REPEATS)
    quick = bool(args.quick or sopts.get("quick"))
    per_workload = {w: quick_scale(w) for w in workloads} if quick else None
    options = rounds.training_options(args, stored, repeats=repeats, per_workload=per_workload)
    variant_objs = {v: get_variant(v, args.variants_file) for v in variants}
    info = {v: {"kind": o.kind, "device": o.device} for v, o in variant_objs.items()}
    # A resume keeps the stored thread counts of fixed-thread variants.
    fixed = dict(stored.get("fixed_threads") or {}) if args.variants is None else {}
    fixed.update({n: t for n, t in explicit if t is not None})
    for v, o in variant_objs.items():
        if v not in fixed and o.device == "gpu":
            # A GPU configuration is one per GPU instance: its vCPUs are the instance's
            # (or, with no catalog instance, this host's), never the --threads axis.
            fixed[v] = gpu_threads(v, pricing)
    spec = MatrixSpec(
        tuple(variants), tuple(threads), tuple(workloads), repeats, options, info, fixed
    )
    return spec, variant_objs


def split_fixed_threads(names: list[str]) -> list[tuple[str, int | None]]:
    """``gpu@16`` -> ("gpu", 16): that variant runs at 16 threads only; ``pip`` -> ("pip",
    None): the --threads axis."""
    out: list[tuple[str, int | None]] = []
    for name in names:
        base, at, count = name.rpartition("@")
        if at and base:
            out.append((base, checked("variants", argtypes.threads, count)))
        else:
            out.append((name, None))
    return out


def gpu_threads(variant: str, pricing: Any) -> int:
    """A GPU variant's vCPU count: its catalog instance's (the instance a cloud run rents
    and bills), capped at nothing; without a catalog, this host's logical CPUs."""
    from tfvariants.plan.spec import logical_cpus

    found = pricing.instance_for(variant, 0, "gpu") if pricing is not None else None
    return found[0].vcpus if found else logical_cpus()


def _check_baseline(baseline: str | None, spec: Any) -> None:
    from tfvariants.analyze.baseline import parse_baseline

    parsed = parse_baseline(baseline)
    if parsed is None:
        return
    if parsed[0] not in spec.variants:
        raise UserError(
            f"--baseline {baseline}: {parsed[0]!r} is not one of --variants "
            f"({', '.join(spec.variants)})"
        )
    counts = [t for v, t in spec.configurations() if v == parsed[0]]
    if parsed[1] is not None and parsed[1] not in counts:
        if parsed[0] in spec.fixed_threads:
            raise UserError(f"--baseline {baseline}: {parsed[0]} runs at {counts[0]} threads only")
        raise UserError(f"--baseline {baseline}: {parsed[1]} is not one of --threads")


def measure_peaks(out: Path, variant_objs: dict[str, Any], configs: list[tuple[str, int]]) -> None:
    """Each configuration's attainable and theoretical peak, into run.json (before its
    first timed cell; tfvariants.variants.peak)."""
    from tfvariants.variants.peak import measure_all, store_peaks

    store_peaks(out, measure_all(variant_objs, configs))


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from tfvariants.commands.report import write_report
    from tfvariants.store import workloadfiles
    from tfvariants.store.runfile import load_run

    compare_cluster.check(args)
    stored = None
    if args.quarantine and not args.resume:
        raise UserError("--quarantine only applies to --resume")
    if args.resume:
        if args.out is None:
            raise UserError("--resume needs --out RESULTS_DIR (the run to continue)")
        stored = load_run(args.out) or None
        if stored:  # a results folder is data: its workload files are confirmed first
            named = (args.workloads or "").split(",")
            workloadfiles.check_resume(stored, named=named, trusted=args.trust_workloads)
    # Before the pricing: a preset may name the catalog. A resume keeps the preset its
    # run was started with (the report opens with it).
    preset = presets.apply(args) or ((stored or {}).get("options") or {}).get("preset")
    pricing = common.pricing_from(args)
    spec, variant_objs = build_spec(args, stored, pricing)
    if preset is not None:
        spec = dataclasses.replace(spec, options=dataclasses.replace(spec.options, preset=preset))
    _check_baseline(args.baseline, spec)
    if args.dry_run:
        return compare_cluster.dry_run(args, spec, pricing, Console(soft_wrap=True))
    if args.executor == "ray":
        compare_cluster.placement(spec, pricing)  # a cell with no node type: stop now
    name = ("quick-" if spec.options.quick else "compare-") + datetime.now().strftime(
        "%Y%m%d-%H%M%S"
    )
    out = args.out or Path("results") / name
    report_path = args.output or Path("reports") / out.name / "index.html"
    check_writable(out)
    common.check_report_outputs(report_path, args.csv, results_dirs=[out])
    if args.executor == "ray":  # readiness is checked on the node that runs the cell
        variant_objs = compare_cluster.with_engine(variant_objs, args.engine)
    else:
        variant_objs = ready_variants(variant_objs, args.engine)
    console = Console(stderr=True, soft_wrap=True)

    def report_stored() -> None:
        """After a store error mid-run (e.g. a full disk): what was stored, if it fits."""
        with contextlib.suppress(UserError):
            write_report(
                out,
                report_path,
                pricing=pricing,
                baseline=args.baseline,
                csv_path=args.csv,
                allow_mixed_hosts=args.allow_mixed_hosts,
            )

    outcome = _run_matrix(args, spec, variant_objs, pricing, out, stored, console, report_stored)
    if outcome.was_interrupted:
        console.print(
            f"interrupted during {outcome.interrupted.cell_id if outcome.interrupted else '?'}: "
            f"finished cells are saved in {out}/cells; continue with: tfvariants compare "
            f"--resume --out {out}",
            highlight=False,
            markup=False,
        )
        return 130
    _report(args, out, report_path, pricing, outcome, console)
    return outcome.exit_code()


def _run_matrix(
    args: argparse.Namespace,
    spec: Any,
    variant_objs: dict[str, Any],
    pricing: Any,
    out: Path,
    stored: dict[str, Any] | None,
    console: Any,
    report_stored: Callable[[], None],
) -> Any:
    """Prepare the run folder, probe the variants, run the cells (locally or on Ray, with
    the adaptive rounds when there is a budget); the MatrixOutcome, with its lines said.
    A store error while the cells run (not while the folder is checked) renders what was
    stored first (``report_stored``)."""
    from tfvariants.execute import runner
    from tfvariants.execute.matrix import Matrix
    from tfvariants.store.runfolder import StoreError

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
        count_isa=(spec.options.preset or {}).get("name") == presets.PRESET,
    )
    store_variant_info(out, spec.variant_info)
    if not (args.no_peak or args.no_probe) and args.executor != "ray":  # cached, like the census
        measure_peaks(out, variant_objs, spec.configurations())
    _announce(spec, out, moved, console)
    quiet_gate = rounds.quiet_gate(spec)
    # One stopping rule for both executors; on Ray each round is a wave of tasks.
    before = (stored or {}).get("adaptive") or {}
    spent_before = float(before.get("spent_s") or 0.0)
    next_round, rule = rounds.adaptive_hook(spec, args.baseline, console, spent_before)
    options_for = cell_options(spec, lambda: getattr(next_round, "window_plan", None))

    def run_one(cell: Any, folder: RunFolder) -> dict:
        return runner.run_cell(
            cell,
            variant_objs[cell.variant],
            options_for(cell),
            folder,
            quiet=quiet_gate,
            priority=spec.options.priority,
        )

    if args.executor == "ray":
        outcome = compare_cluster.run_on_ray(
            args,
            spec,
            variant_objs,
            pricing,
            out,
            console,
            next_round,
            spent_before,
            options_for=options_for,
        )
    else:
        try:
            outcome = matrix.run(
                run_cell=run_one,
                resume=args.resume,
                console=console,
                next_round=next_round,
                budget_s=spec.options.budget_s,
                spent_before=spent_before,
                **rounds.retry_options(spec, quiet_gate),
            )
        except StoreError:
            report_stored()
            raise
    if rule is not None:
        rounds.record(out, rule, spec, before, outcome, console, next_round)
    _print_outcome(outcome, console)
    return outcome


def _announce(spec: Any, out: Path, moved: list[str], console: Any) -> None:
    """What the folder's checks moved aside, and the matrix about to run."""
    from rich.markup import escape

    for line in moved:
        console.print(f"[yellow]quarantined[/] {escape(line)}", highlight=False)
    configs = spec.configurations()
    cells = len(configs) * len(spec.workloads) * spec.repeats
    fixed = "".join(f"; {v} at {t} threads only" for v, t in spec.fixed_threads.items())
    console.print(
        f"[bold]compare[/]: {len(configs)} configuration(s) ({len(spec.variants)} variant(s), "
        f"threads {','.join(map(str, spec.threads))}{fixed}) x {len(spec.workloads)} "
        f"workload(s) x {spec.repeats} repeat(s) = {cells} cells -> {escape(str(out))}",
        highlight=False,
    )


def _print_outcome(outcome: Any, console: Any) -> None:
    from rich.markup import escape

    ok, skipped = outcome.count("ok"), outcome.count("skipped")
    failed, timeout = outcome.count("failed"), outcome.count("timeout")
    console.print(
        f"{ok} ok, {failed} failed, {timeout} timed out, {skipped} skipped of "
        f"{outcome.planned} cells ({len(outcome.ran)} run now)",
        highlight=False,
    )
    for cid in outcome.problems[:20]:
        console.print(
            f"  [red]{outcome.statuses[cid]}[/] {escape(cid)}: "
            f"{escape(outcome.reasons.get(cid, ''))}",
            highlight=False,
        )


def _report(
    args: argparse.Namespace,
    out: Path,
    report_path: Path,
    pricing: Any,
    outcome: Any,
    console: Any,
) -> None:
    """The report of the whole run folder, and its first lines on the console."""
    from rich.markup import escape

    from tfvariants.commands.report import (
        print_compiled_answer,
        print_store_warnings,
        write_report,
    )

    rounds.print_disturbed(outcome, console)
    analysis = write_report(
        out,
        report_path,
        pricing=pricing,
        baseline=args.baseline,
        csv_path=args.csv,
        allow_mixed_hosts=args.allow_mixed_hosts,
    ).frame
    print_store_warnings(analysis)
    console.print(f"report: {report_path}", highlight=False, markup=False)
    if args.csv:
        console.print(f"csv: {args.csv}", highlight=False, markup=False)
    rounds.summary(analysis, out, console)
    print_compiled_answer(analysis)
    if outcome.problems:
        console.print(
            f"[red]{len(outcome.problems)} cell(s) failed or timed out[/]; rerun them with: "
            f"tfvariants compare --resume --out {escape(str(out))}",
            highlight=False,
        )
