"""`tfvariants compare`: run the matrix (variant x threads x workload x repeat), then
render the report from the stored results."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from tfvariants.analyze.stats import DEFAULT_REPEATS
from tfvariants.commands import argtypes, common, compare_cluster, presets, rounds
from tfvariants.commands.matrix_args import (  # noqa: F401 (quick_scale: part of this command's API)
    QUICK_SAMPLES,
    checked,
    default_threads,
    parse_names,
    quick_scale,
    ready_variants,
    run_options_for,
    workload_spec,
)
from tfvariants.commands.outdir import check_writable, out_dir
from tfvariants.errors import UserError
from tfvariants.plan.cell import MAX_THREADS


def register(sub: Any) -> None:
    p = sub.add_parser(
        "compare",
        help="run the matrix of variants x threads x workloads and write a report",
        description="Run every cell (variant x threads x workload x repeat) in interleaved "
        "rounds, store one result per cell in OUT/cells/, then write the HTML report.",
    )
    presets.add_option(p)
    p.add_argument("--quick", action="store_true",
                   help="quick scale: each workload's quick_samples, a 6 s/50-step steady window, --budget 10m")  # fmt: skip
    p.add_argument("--threads", type=argtypes.thread_list, default=None,
                   help=f"comma list of vCPU counts (1..{MAX_THREADS}), e.g. 8,16,32,64 (default: 1..CPUs)")  # fmt: skip
    p.add_argument(
        "--variants",
        default=None,
        help="comma list, e.g. pip,compiled,gpu or local,local+isa-sse41 (default: local)",
    )
    common.add_variants_file(p)
    common.add_engine(p)
    p.add_argument("--no-probe", action="store_true",
                   help="skip the per-variant oneDNN probe (ISA used, no-op settings)")  # fmt: skip
    p.add_argument("--workloads", default=None, help="'all' (default) or a comma list")
    p.add_argument(
        "--trust-workloads",
        action="store_true",
        help="with --resume: run the workload files run.json names without asking",
    )
    p.add_argument("--repeats", type=argtypes.repeats, default=None,
                   help="repeats per configuration (default 5, the fewest that can decide with "
                   "--budget's looks); with --budget: the repeats before the first look")  # fmt: skip
    rounds.add_options(p)
    p.add_argument("--epochs", type=argtypes.positive_int, default=None,
                   help="train whole epochs per cell instead of stopping after the steady window")  # fmt: skip
    p.add_argument("--samples", type=argtypes.positive_int, default=None,
                   help="cap on training samples per cell")  # fmt: skip
    p.add_argument("--steps-per-epoch", type=argtypes.positive_int, default=None,
                   help="cap on steps per epoch")  # fmt: skip
    p.add_argument("--data", choices=("synthetic", "real"), default=None, help="default synthetic")
    p.add_argument("--data-dir", default=None, help="cache folder for real data sets")
    p.add_argument("--seed", type=argtypes.seed, default=None, help="default 0")
    p.add_argument("--timeout", type=argtypes.positive_float, default=1800.0,
                   help="seconds per cell (default 1800)")  # fmt: skip
    common.add_pricing(p)
    p.add_argument("--baseline", default=None,
                   help="VARIANT[@THREADS] (default: the GPU if one ran, else the most threads that fit "
                   "on the host, with the most successful repeats)")  # fmt: skip
    p.add_argument(
        "--out", type=out_dir, default=None, help="results folder (default: results/<run>)"
    )
    common.add_report_outputs(p, old_flag="--report")
    p.add_argument("--resume", action="store_true",
                   help="continue the run in --out: only missing, failed or timed-out cells run; "
                   "stops, writing nothing, if a file in it cannot be read")  # fmt: skip
    p.add_argument("--quarantine", action="store_true",
                   help="with --resume: move files that cannot be read to OUT/quarantine/ "
                   "(and say so) instead of stopping")  # fmt: skip
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

    options: dict[str, Any] = {
        "quick": bool(args.quick or sopts.get("quick")),
        "epochs": given_or_stored("epochs", args.epochs, argtypes.positive_int, None),
        "samples": given_or_stored("samples", args.samples, argtypes.positive_int, None),
        "steps_per_epoch": given_or_stored(
            "steps_per_epoch", args.steps_per_epoch, argtypes.positive_int, None
        ),
        "data": given_or_stored("data", args.data, str, "synthetic"),
        "seed": given_or_stored("seed", args.seed, argtypes.seed, 0),
        "data_dir": args.data_dir,
    }
    repeats = given_or_stored("repeats", args.repeats, argtypes.repeats, DEFAULT_REPEATS)
    quick = options["quick"]
    options.update(rounds.options_from(args, given_or_stored, quick=quick, repeats=repeats))
    options["timeout_s"] = _parsed("timeout", argtypes.positive_float, args.timeout)
    if quick:
        options["per_workload"] = {w: quick_scale(w) for w in workloads}
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
    from tfvariants.analyze.analysis import parse_baseline

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


def _store_variant_info(out: Path, info: dict[str, dict]) -> None:
    """Add what the probe found to run.json's variant_info (a resume keeps what a
    variant's first probe stored and adds only what is new)."""
    from tfvariants.store.runfile import load_run, write_run

    record = load_run(out)
    stored = record.get("variant_info") or {}
    merged = {name: {**entry, **stored.get(name, {})} for name, entry in info.items()}
    if merged != stored:
        write_run(out, {**record, "variant_info": merged})


def compiled_for(variant: Any, *, count: bool) -> str | None:
    """What the variant's TensorFlow is compiled for: from the census cache, or with
    ``count`` from a census of its framework library (~45 MB: under a minute, once per
    binary)."""
    from tfvariants.variants import census

    known = census.known_compiled_for(variant)
    if known or not count:
        return known
    try:
        print(f"counting instructions in {variant.name}'s TensorFlow (once per binary)",
              file=sys.stderr)  # fmt: skip
        return str(census.variant_census(variant)["compiled_for"])
    except (OSError, RuntimeError):
        return None


def probe_variants(
    info: dict[str, dict], variant_objs: dict[str, Any], probe: bool, count_isa: bool = False
) -> None:
    """Once per variant, before the sweep (never inside a timed cell: oneDNN's verbose
    output is large): its backend and overlays, the oneDNN ISA it uses against this
    host's default, and which overlay settings are no-ops here."""
    from tfvariants.commands.env import probe_variant
    from tfvariants.variants import skip_reason
    from tfvariants.variants.noop import judge

    for name, variant in variant_objs.items():
        entry = info.setdefault(name, {})
        entry.update(backend=variant.backend, base=variant.base,
                     overlay_env=dict(variant.overlay_env), env=dict(variant.env))  # fmt: skip
        if variant.kind == "requirements":
            entry["requirements"] = list(variant.requirements)
        if not probe or skip_reason(variant):
            continue
        entry["compiled_for"] = compiled_for(variant, count=count_isa)
        print(f"probing oneDNN in {name} (once, outside timed cells)", file=sys.stderr)
        try:
            result = probe_variant(variant, module="workloads.onednn")
        except UserError as exc:
            result = {"error": str(exc)}
        entry["onednn"] = judge(variant.overlay_env, variant.backend, result)
        for line in entry["onednn"]["noop"] + entry["onednn"]["unknown"]:
            print(f"  {name}: {line}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.markup import escape

    from tfvariants.commands.report import print_store_warnings
    from tfvariants.execute import runner
    from tfvariants.execute.matrix import Matrix
    from tfvariants.render.html import write_report
    from tfvariants.store import workloadfiles
    from tfvariants.store.runfile import load_run
    from tfvariants.store.runfolder import StoreError

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
        spec.options["preset"] = preset
    _check_baseline(args.baseline, spec)
    if args.dry_run:
        return compare_cluster.dry_run(args, spec, pricing, Console(soft_wrap=True))
    if args.executor == "ray":
        compare_cluster.placement(spec, pricing)  # a cell with no node type: stop now
    name = ("quick-" if spec.options.get("quick") else "compare-") + datetime.now().strftime(
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
        count_isa=(spec.options.get("preset") or {}).get("name") == presets.PRESET,
    )
    _store_variant_info(out, spec.variant_info)

    console = Console(stderr=True, soft_wrap=True)
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

    quiet_gate = rounds.quiet_gate(spec)

    def run_one(cell: Any, cells_dir: Path) -> dict:
        return runner.run_cell(
            cell,
            variant_objs[cell.variant],
            run_options_for(spec, cell.workload, cell.repeat),
            cells_dir,
            quiet=quiet_gate,
            priority=str(spec.options.get("priority") or "normal"),
        )

    # One stopping rule for both executors; on Ray each round is a wave of tasks.
    before = (stored or {}).get("adaptive") or {}
    spent_before = float(before.get("spent_s") or 0.0)
    next_round, rule = rounds.adaptive_hook(spec, args.baseline, console, spent_before)
    if args.executor == "ray":
        outcome = compare_cluster.run_on_ray(
            args, spec, variant_objs, pricing, out, console, next_round, spent_before
        )
    else:
        try:
            outcome = matrix.run(
                run_cell=run_one, resume=args.resume, console=console, next_round=next_round,
                budget_s=spec.options.get("budget_s"), spent_before=spent_before,
                **rounds.retry_options(spec, quiet_gate),
            )  # fmt: skip
        except StoreError:  # e.g. a full disk: still render what was stored, if it fits
            with contextlib.suppress(UserError):
                stored_only = {"csv_path": args.csv, "allow_mixed_hosts": args.allow_mixed_hosts}
                write_report(
                    out, report_path, pricing=pricing, baseline=args.baseline, **stored_only
                )
            raise
    if rule is not None:
        rounds.record(out, rule, spec, before, outcome, console, next_round)
    ok, skipped = outcome.count("ok"), outcome.count("skipped")
    failed, timeout = outcome.count("failed"), outcome.count("timeout")
    console.print(
        f"{ok} ok, {failed} failed, {timeout} timed out, {skipped} skipped of {outcome.planned} cells "
        f"({len(outcome.ran)} run now)",
        highlight=False,
    )
    for cid in outcome.problems[:20]:
        console.print(
            f"  [red]{outcome.statuses[cid]}[/] {escape(cid)}: {escape(outcome.reasons.get(cid, ''))}",
            highlight=False,
        )
    if outcome.was_interrupted:
        console.print(
            f"interrupted during {outcome.interrupted.cell_id if outcome.interrupted else '?'}: finished cells are "
            f"saved in {out}/cells; continue with: tfvariants compare --resume --out {out}",
            highlight=False,
            markup=False,
        )
        return 130
    rounds.print_disturbed(outcome, console)
    analysis = write_report(
        out,
        report_path,
        pricing=pricing,
        baseline=args.baseline,
        csv_path=args.csv,
        allow_mixed_hosts=args.allow_mixed_hosts,
    )
    print_store_warnings(analysis)
    console.print(f"report: {report_path}", highlight=False, markup=False)
    if args.csv:
        console.print(f"csv: {args.csv}", highlight=False, markup=False)
    rounds.summary(analysis, out, console)
    from tfvariants.commands.report import print_compiled_answer

    print_compiled_answer(analysis)
    if outcome.problems:
        console.print(
            f"[red]{len(outcome.problems)} cell(s) failed or timed out[/]; rerun them with: "
            f"tfvariants compare --resume --out {escape(str(out))}",
            highlight=False,
        )
    return outcome.exit_code()
