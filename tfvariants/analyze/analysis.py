"""The analysis: stored results grouped by (workload, variant, threads), with statistics,
costs, comparisons to a baseline and conclusions, as plain data (no HTML).

It reads results/<run>/run.json (when present) and results/<run>/cells/*.json through
the run store and nothing else.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from tfvariants.analyze import interference, stats
from tfvariants.analyze.billing import device_of, no_price_reason
from tfvariants.analyze.conclusions import conclude
from tfvariants.analyze.coverage import cell_counts, first_cell_id, folder_warnings, usable_results
from tfvariants.analyze.decide import Settings, choose_baseline, run_looks
from tfvariants.analyze.fields import (
    accuracy_of,
    environment_summary,
    finite_number,
    flatten,
    get_path,
    median_of,
    training_time_s,
    warmup_time_s,
)
from tfvariants.analyze.groups import Group, WorkloadReport
from tfvariants.analyze.interference import Interference
from tfvariants.analyze.noise import HostNoise, host_noise
from tfvariants.analyze.parity import parity
from tfvariants.analyze.pricing import Pricing
from tfvariants.errors import UserError
from tfvariants.store.rundir import RunContents, load_run_dir


def _sum_known(*values: Any) -> float | None:
    known = [x for x in (finite_number(v) for v in values) if x is not None]
    return sum(known) if known else None


def overhead_split(r: dict) -> dict[str, float]:
    """Where one cell's wall time went: TensorFlow import, data + model build, warm-up
    steps, steady steps, time between epochs (start-up, validation), and the rest
    (process start, probing, writing), which makes the parts add up to the cell."""
    t = r.get("timing") or {}
    parts = {
        "import": finite_number(t.get("import_tf_s")),
        "build": _sum_known(t.get("build_s"), t.get("data_s")),
        "warm-up": finite_number(t.get("warmup_s")),
        "steady": finite_number(t.get("steady_s")),
    }
    fit = finite_number(t.get("fit_s"))
    if fit is not None and parts["warm-up"] is not None and parts["steady"] is not None:
        parts["between epochs"] = max(fit - parts["warm-up"] - parts["steady"], 0.0)
    wall = finite_number(get_path(r, "runner", "wall_s"))
    if wall is not None and fit is not None and parts["import"] is not None:
        parts["other"] = max(wall - parts["import"] - (parts["build"] or 0.0) - fit, 0.0)
    return {k: v for k, v in parts.items() if v is not None}


@dataclass
class Analysis:
    results_dir: str
    run: dict
    workloads: list[WorkloadReport]
    baseline_label: str
    pricing: Pricing | None
    environments: dict[str, dict[str, str]]
    raw_environments: dict[str, list[tuple[str, str]]]
    warnings: list[stats.StatWarning]
    counts: dict[str, int]
    logical_cpus: int | None
    generated_at: str
    cells: list[dict]
    variants: list[str] = field(default_factory=list)  # in display order
    settings: Settings = field(default_factory=lambda: Settings())
    noise: HostNoise | None = None
    devices: dict[str, str] = field(default_factory=dict)  # variant -> cpu|gpu (billing)
    store: RunContents | None = None  # the run folder as loaded, with its named problems
    serving: Any = None  # the serving analysis of the same folder, when it holds serving cells
    interference: Interference | None = None  # disturbed cells and waits for quiet


# ---- analysis ----


def parse_baseline(text: str | None) -> tuple[str, int | None] | None:
    if not text:
        return None
    variant, sep, threads = text.partition("@")
    if not variant or (sep and not threads.isdigit()):
        raise UserError(f"--baseline {text!r}: expected VARIANT or VARIANT@THREADS")
    return variant, int(threads) if sep else None


def _order(values: Iterable[Any], preferred: list | None) -> list:
    seen = list(dict.fromkeys(values))
    pref = [v for v in (preferred or []) if v in seen]
    return pref + sorted((v for v in seen if v not in pref), key=str)


def _is_serving(result: dict) -> bool:
    return get_path(result, "cell", "task") == "serve"


def analyze(
    results_dir: Path,
    *,
    pricing: Pricing | None = None,
    baseline: str | None = None,
    min_effect: float | None = None,
    confidence: float | None = None,
    allow_mixed_hosts: bool = False,
    disturbed: str | None = None,
) -> Analysis:
    """Group stored results, compute statistics, costs, comparisons and conclusions.

    Disturbed cells (analyze/interference.py) are used in the statistics or not as the
    policy ``disturbed`` says (default: the run's, else "auto"), and counted in
    ``interference``."""
    results_dir = Path(results_dir)
    contents = load_run_dir(results_dir, allow_mixed_hosts=allow_mixed_hosts)
    run = contents.run
    # Serving cells have their own analysis (analyze/serving.py).
    cells = [r for r in usable_results(contents) if not _is_serving(r)]
    cpus = run.get("logical_cpus") if isinstance(run.get("logical_cpus"), int) else None
    if cpus is None:
        cpus = next(
            (
                c
                for c in (get_path(r, "environment", "cpu", "logical_cpus") for r in cells)
                if isinstance(c, int)
            ),
            None,
        )

    devices = {v: device_of(v, run, cells) for v in {str(r["cell"]["variant"]) for r in cells}}
    opts = run.get("options") if isinstance(run.get("options"), dict) else {}
    used, quiet = interference.split(
        cells, limit=interference.limit_of(opts), policy=interference.policy_of(opts, disturbed)
    )
    interference.add_waits(quiet, opts)
    groups: dict[tuple[str, str, int], Group] = {}
    for r in used:
        c = r["cell"]
        key = (str(c["workload"]), str(c["variant"]), int(c["threads"]))
        g = groups.setdefault(key, Group(key[0], key[1], key[2], devices[key[1]]))
        g.results.append(r)

    variants = _order((k[1] for k in groups), run.get("variants"))
    workloads = _order((k[0] for k in groups), run.get("workloads"))
    if min_effect is None:
        min_effect = finite_number(opts.get("min_effect")) or stats.MIN_EFFECT
    if confidence is None:
        confidence = finite_number(opts.get("confidence")) or stats.CONFIDENCE
    looks = run_looks(run)
    ok_counts: dict[tuple[str, int], int] = {}
    for (_w, v, t), g in groups.items():
        ok_counts[(v, t)] = ok_counts.get((v, t), 0) + len(g.ok)  # before _summarise
    # Oversubscribed as the worker recorded it (a cluster node's own CPU count counts,
    # not the driver's).
    over = {
        (v, t)
        for (_w, v, t), g in groups.items()
        if any(get_path(r, "requested", "oversubscribed") is True for r in g.results)
    }
    base = parse_baseline(baseline)
    if base is None:
        chosen = choose_baseline(ok_counts, devices, variants, over)
        base = chosen or (variants[0], max(k[2] for k in groups if k[1] == variants[0]))
    elif base[0] not in variants:
        raise UserError(
            f"--baseline {baseline}: no results for variant {base[0]!r} (have: {', '.join(variants)})"
        )
    if base[1] is None:
        base = (base[0], max(k[2] for k in groups if k[1] == base[0]))
    baseline_label = f"{base[0]}@{base[1]}"

    all_warnings: list[stats.StatWarning] = []
    over: dict[int, list[str]] = {}
    for g in groups.values():
        _summarise(g, pricing, cpus, confidence)
        all_warnings += [w for w in g.warnings if w.kind != "oversubscribed"]
        if g.oversubscribed:
            over.setdefault(g.threads, []).append(g.label)
    # One line per thread count, not one per cell: the same fact repeated drowns the rest.
    for threads, labels in sorted(over.items()):
        configs = ", ".join(dict.fromkeys(labels))
        w = stats.oversubscribed_warning(configs, threads, cpus or 0)
        all_warnings.insert(0, w)

    all_warnings[:0] = folder_warnings(contents)

    settings = Settings(min_effect, confidence, looks)
    reports = []
    for w in workloads:
        wgroups = sorted(
            (g for g in groups.values() if g.workload == w),
            key=lambda g: (variants.index(g.variant), g.threads),
        )
        bgroup = groups.get((w, base[0], base[1]))
        if baseline is None:
            # The default is chosen per workload too: never a configuration without results.
            counts = {(g.variant, g.threads): len(g.times) for g in wgroups}
            mine = choose_baseline(counts, devices, variants, over)
            bgroup = groups.get((w, *mine)) if mine else bgroup
        wr = WorkloadReport(w, wgroups, bgroup)
        _compare_to_baseline(wr, min_effect, confidence, looks)
        if wr.baseline is None or wr.baseline.time is None:
            all_warnings.append(
                stats.StatWarning(
                    "no_baseline",
                    f"{w}: the baseline {baseline_label} has no successful runs, so no ratios",
                    "pick another --baseline (VARIANT@THREADS) or --resume the failed cells",
                )
            )
        conclude(wr, baseline_label, cpus, pricing, settings)
        wr.parity = parity(wgroups, base[0])
        for row in wr.parity:
            if row.outlier:
                all_warnings.append(
                    stats.StatWarning(
                        "accuracy_parity",
                        f"{w}: {row.variant} trains to a different result than {base[0]}: "
                        + "; ".join(row.flags),
                        "a fast variant that learns something else is not a faster build "
                        "(see Accuracy parity)",
                    )
                )
        reports.append(wr)
    noise = host_noise(list(groups.values()), settings)
    all_warnings += noise.warnings
    if quiet.disturbed:
        all_warnings.append(
            stats.StatWarning("disturbed", quiet.sentence(), "run when the machine is quieter, "
                              "or on a dedicated machine; the cells are listed in the report")
        )  # fmt: skip

    envs: dict[str, dict[str, str]] = {}
    raw_envs: dict[str, list[tuple[str, str]]] = {}
    for v in variants:
        env = next(
            (
                r.get("environment")
                for r in cells
                if r["cell"].get("variant") == v and isinstance(r.get("environment"), dict)
            ),
            None,
        )
        if env:
            envs[v] = environment_summary(env)
            raw_envs[v] = flatten(env)
    return Analysis(
        results_dir=str(results_dir),
        run=run,
        workloads=reports,
        baseline_label=baseline_label,
        pricing=pricing,
        environments=envs,
        raw_environments=raw_envs,
        warnings=all_warnings,
        counts=cell_counts(cells, contents),
        logical_cpus=cpus,
        generated_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        cells=cells,
        variants=variants,
        settings=settings,
        noise=noise,
        devices=devices,
        store=contents,
        interference=quiet,
    )


def _explain_spread(warning: stats.StatWarning, ok: list[dict]) -> stats.StatWarning:
    """An 'unstable' warning names its worst repeat, and whether other processes were
    using that cell's CPUs: a sceptic can then tell a noisy host from a noisy config."""
    timed = [(t, r) for r in ok if (t := training_time_s(r))]
    if warning.kind != "unstable" or len(timed) < 3:
        return warning
    med = median_of(t for t, _ in timed) or 0.0
    if med <= 0:
        return warning
    t, r = max(timed, key=lambda tr: abs(math.log(tr[0] / med)))
    repeat = get_path(r, "cell", "repeat")
    text = f"; the farthest repeat (r{repeat}) took {t / med:.2f}x the median"
    others = finite_number(get_path(r, "cpu", "others_share"))
    if others is not None and others >= 0.10:
        text += f", while other processes used {others:.0%} of its pinned CPUs"
    return stats.StatWarning(warning.kind, warning.message + text, warning.hint)


def _summarise(
    g: Group, pricing: Pricing | None, cpus: int | None, confidence: float = stats.CONFIDENCE
) -> None:
    ok = g.ok
    g.oversubscribed = any(bool(get_path(r, "requested", "oversubscribed")) for r in g.results)
    ratios = [finite_number(get_path(r, "requested", "oversubscription_ratio")) for r in g.results]
    g.oversubscription_ratio = max([x for x in ratios if x] or [g.threads / cpus if cpus else 1.0])
    if not g.oversubscribed and cpus and g.threads > cpus and g.device == "cpu":
        g.oversubscribed, g.oversubscription_ratio = True, g.threads / cpus
    label = f"{g.workload} {g.label}"
    if g.oversubscribed:
        g.warnings.append(
            stats.oversubscribed_warning(
                label, g.threads, cpus or int(g.threads / g.oversubscription_ratio)
            )
        )
    for status in ("failed", "timeout"):
        if g.n(status):
            g.warnings.append(
                stats.StatWarning(
                    status,
                    f"{label}: {g.n(status)} of {len(g.results)} repeats {status} ({'; '.join(g.reasons)[:200]})",
                    # the file to open, not a placeholder path
                    f"read stderr_tail in the run folder's cells/{first_cell_id(g.results, status)}.json, "
                    "fix, then rerun with --resume",
                )
            )
    if g.n("skipped"):
        g.warnings.append(
            stats.StatWarning(
                "skipped",
                f"{label} was skipped: {'; '.join(g.reasons)[:200]}",
                "run it on a host that has what it needs",
            )
        )
    g.times = [t for t in (training_time_s(r) for r in ok) if t]
    if not g.times:
        return
    g.time = stats.median_interval(g.times, confidence)
    steadies = [
        x for x in (finite_number(get_path(r, "timing", "steady_epoch_s")) for r in ok) if x
    ]
    g.steady = stats.median_interval(steadies, confidence) if steadies else None
    steps = [x for x in (finite_number(get_path(r, "timing", "steady_step_s")) for r in ok) if x]
    g.step_s = stats.median_interval(steps, confidence) if steps else None
    g.utilisation = median_of(get_path(r, "cpu", "utilisation") for r in ok)
    splits = [overhead_split(r) for r in ok]
    for name in dict.fromkeys(k for sp in splits for k in sp):
        value = median_of(sp.get(name) for sp in splits)
        if value is not None:
            g.overhead[name] = value
    g.bimodal = stats.bimodal(g.times)
    g.warmup_s = median_of(warmup_time_s(r) for r in ok)
    g.samples_per_s = median_of(get_path(r, "timing", "samples_per_s") for r in ok)
    g.gflops_per_s = median_of(get_path(r, "gflops_per_s") for r in ok)
    g.accuracy = median_of(accuracy_of(r) for r in ok)
    g.chance = finite_number(
        next((r.get("chance_accuracy") for r in ok if r.get("chance_accuracy") is not None), None)
    )
    rss = [x for x in (finite_number(get_path(r, "memory", "peak_rss_bytes")) for r in ok) if x]
    g.peak_rss_bytes = int(max(rss)) if rss else None
    g.warnings += [_explain_spread(w, ok) for w in stats.stability_warnings(label, g.times)]
    if pricing is not None:
        g.cost = pricing.cost(g.variant, g.threads, g.time.value, g.device)
        if g.cost is None:
            g.warnings.append(
                stats.StatWarning(
                    "no_price",
                    f"{label}: no cost: {no_price_reason(pricing, g.variant, g.threads, g.device)}",
                    "choose another price date (--pricing NAME@YYYY-MM) or catalog, or map "
                    "the cell with --instance VARIANT[@THREADS]=INSTANCE",
                )
            )
        else:
            per_s = g.cost.per_hour / 3600
            bill = pricing.catalog.billing.billed_seconds
            g.costs = [per_s * bill(t) for t in g.times]
            g.cost_iv = stats.median_interval(g.costs, confidence)


def _compare_to_baseline(
    wr: WorkloadReport, min_effect: float, confidence: float, looks: int
) -> None:
    b = wr.baseline
    if b is None or not b.times:
        return
    b.is_baseline = True
    for g in wr.groups:
        if not g.times:
            continue
        if g is b:
            one = stats.Interval(1.0, 1.0, 1.0, "exact", len(g.times))
            g.time_cmp = stats.Comparison(one, "baseline", min_effect=min_effect)
            if g.costs:
                g.cost_cmp = stats.Comparison(one, "baseline", min_effect=min_effect)
            continue
        kw = {"min_effect": min_effect, "confidence": confidence, "looks": looks}
        g.time_cmp = stats.compare(g.times, b.times, **kw)
        if g.costs and b.costs and min(g.costs + b.costs) > 0:  # a free instance has no ratio
            # Costs per repeat through the same statistic as times: one machinery.
            g.cost_cmp = stats.compare(g.costs, b.costs, **kw)
