"""The analysis: stored results grouped by (workload, variant, threads), with statistics,
costs, comparisons to a baseline and conclusions, as plain data (no HTML).

It reads results/<run>/run.json (when present) and results/<run>/cells/*.json through
the run store and nothing else.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from tfvariants.analyze import stats
from tfvariants.analyze.billing import device_of, no_price_reason
from tfvariants.analyze.conclusions import conclude
from tfvariants.analyze.coverage import cell_counts, folder_warnings, usable_results
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
from tfvariants.analyze.parity import VariantParity, parity
from tfvariants.analyze.pricing import CellCost, Pricing
from tfvariants.errors import UserError
from tfvariants.store.rundir import RunContents, load_run_dir


@dataclass
class Group:
    """All repeats of one (workload, variant, threads)."""

    workload: str
    variant: str
    threads: int
    device: str = "cpu"
    results: list[dict] = field(default_factory=list)
    time: stats.Interval | None = None  # projected full-schedule training time, s
    steady: stats.Interval | None = None  # steady epoch time, s
    warmup_s: float | None = None
    samples_per_s: float | None = None
    gflops_per_s: float | None = None
    accuracy: float | None = None
    chance: float | None = None
    peak_rss_bytes: int | None = None
    oversubscribed: bool = False
    oversubscription_ratio: float = 1.0
    times: list[float] = field(default_factory=list)
    costs: list[float] = field(default_factory=list)
    cost: CellCost | None = None  # at the median time
    cost_iv: stats.Interval | None = None
    time_cmp: stats.Comparison | None = None
    cost_cmp: stats.Comparison | None = None
    is_baseline: bool = False
    warnings: list[stats.StatWarning] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"{self.variant}@{self.threads}"

    @property
    def ok(self) -> list[dict]:
        return [r for r in self.results if r.get("status") == "ok"]

    def n(self, status: str) -> int:
        return sum(1 for r in self.results if r.get("status") == status)

    @property
    def reasons(self) -> list[str]:
        return sorted(
            {
                str(r.get("reason"))
                for r in self.results
                if r.get("status") != "ok" and r.get("reason")
            }
        )

    @property
    def flags(self) -> list[str]:
        out = []
        if self.oversubscribed:
            out.append(f"oversubscribed x{self.oversubscription_ratio:g}")
        for status in ("failed", "timeout", "skipped"):
            if self.n(status):
                out.append(f"{self.n(status)} {status}")
        if (
            self.time_cmp is not None
            and not self.is_baseline
            and self.time_cmp.verdict == "not significant"
        ):
            out.append("not significant")
        return out


@dataclass
class WorkloadReport:
    name: str
    groups: list[Group]
    baseline: Group | None
    fastest: Group | None = None
    cheapest: Group | None = None
    pareto: list[Group] = field(default_factory=list)
    conclusions: list[str] = field(default_factory=list)
    parity: list[VariantParity] = field(default_factory=list)  # final accuracy/loss


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
    devices: dict[str, str] = field(default_factory=dict)  # variant -> cpu|gpu (billing)
    store: RunContents | None = None  # the run folder as loaded, with its named problems


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


def analyze(
    results_dir: Path,
    *,
    pricing: Pricing | None = None,
    baseline: str | None = None,
    min_effect: float = stats.MIN_EFFECT,
    allow_mixed_hosts: bool = False,
) -> Analysis:
    """Group stored results, compute statistics, costs, comparisons and conclusions."""
    results_dir = Path(results_dir)
    contents = load_run_dir(results_dir, allow_mixed_hosts=allow_mixed_hosts)
    run = contents.run
    cells = usable_results(contents)
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
    groups: dict[tuple[str, str, int], Group] = {}
    for r in cells:
        c = r["cell"]
        key = (str(c["workload"]), str(c["variant"]), int(c["threads"]))
        g = groups.setdefault(key, Group(key[0], key[1], key[2], devices[key[1]]))
        g.results.append(r)

    variants = _order((k[1] for k in groups), run.get("variants"))
    workloads = _order((k[0] for k in groups), run.get("workloads"))
    base = parse_baseline(baseline)
    if base is None:
        first = variants[0]
        base = (first, max(k[2] for k in groups if k[1] == first))
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
        _summarise(g, pricing, cpus)
        all_warnings += [w for w in g.warnings if w.kind != "oversubscribed"]
        if g.oversubscribed:
            over.setdefault(g.threads, []).append(g.label)
    # One line per thread count, not one per cell: the same fact repeated drowns the rest.
    for threads, labels in sorted(over.items()):
        configs = ", ".join(dict.fromkeys(labels))
        w = stats.oversubscribed_warning(configs, threads, cpus or 0)
        all_warnings.insert(0, w)

    all_warnings[:0] = folder_warnings(contents)

    reports = []
    for w in workloads:
        wgroups = sorted(
            (g for g in groups.values() if g.workload == w),
            key=lambda g: (variants.index(g.variant), g.threads),
        )
        bgroup = groups.get((w, base[0], base[1]))
        wr = WorkloadReport(w, wgroups, bgroup)
        _compare_to_baseline(wr, min_effect)
        if wr.baseline is None or wr.baseline.time is None:
            all_warnings.append(
                stats.StatWarning(
                    "no_baseline",
                    f"{w}: the baseline {baseline_label} has no successful runs, so no ratios",
                    "pick another --baseline (VARIANT@THREADS) or --resume the failed cells",
                )
            )
        conclude(wr, baseline_label, cpus, pricing)
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
        devices=devices,
        store=contents,
    )


def _summarise(g: Group, pricing: Pricing | None, cpus: int | None) -> None:
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
                    "read the cell's stderr_tail in results/<run>/cells/, fix, then rerun with --resume",
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
    g.time = stats.median_interval(g.times)
    steadies = [
        x for x in (finite_number(get_path(r, "timing", "steady_epoch_s")) for r in ok) if x
    ]
    g.steady = stats.median_interval(steadies) if steadies else None
    g.warmup_s = median_of(warmup_time_s(r) for r in ok)
    g.samples_per_s = median_of(get_path(r, "timing", "samples_per_s") for r in ok)
    g.gflops_per_s = median_of(get_path(r, "gflops_per_s") for r in ok)
    g.accuracy = median_of(accuracy_of(r) for r in ok)
    g.chance = finite_number(
        next((r.get("chance_accuracy") for r in ok if r.get("chance_accuracy") is not None), None)
    )
    rss = [x for x in (finite_number(get_path(r, "memory", "peak_rss_bytes")) for r in ok) if x]
    g.peak_rss_bytes = int(max(rss)) if rss else None
    g.warnings += stats.stability_warnings(label, steadies or g.times)
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
            # Billing is monotone in time, so the time interval maps to a cost interval.
            g.cost_iv = stats.Interval(
                g.cost.cost,
                per_s * bill(g.time.lo),
                per_s * bill(g.time.hi),
                g.time.method,
                g.time.n,
            )


def _compare_to_baseline(wr: WorkloadReport, min_effect: float) -> None:
    b = wr.baseline
    if b is None or not b.times:
        return
    b.is_baseline = True
    for g in wr.groups:
        if not g.times:
            continue
        if g is b:
            one = stats.Interval(1.0, 1.0, 1.0, "exact", len(g.times))
            g.time_cmp = stats.Comparison(one, None, None, "baseline")
            if g.costs:
                g.cost_cmp = stats.Comparison(one, None, None, "baseline")
            continue
        g.time_cmp = stats.compare(g.times, b.times, min_effect=min_effect)
        if g.costs and b.costs:
            g.cost_cmp = _cost_compare(g, b, min_effect)


def _cost_compare(g: Group, b: Group, min_effect: float) -> stats.Comparison:
    cmp = stats.compare(g.costs, b.costs, min_effect=min_effect)
    if g.cost_iv and b.cost_iv and g.cost_iv.value > 0 and b.cost_iv.value > 0:
        ratio = stats.ratio_interval(g.cost_iv, b.cost_iv)
        return stats.Comparison(ratio, cmp.p_value, cmp.ci_overlap, cmp.verdict, cmp.reasons)
    return cmp
