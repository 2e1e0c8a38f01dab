"""The analysis: stored results grouped by (workload, variant, threads), with statistics,
costs, comparisons to a baseline and conclusions, as plain data (no HTML).

It reads results/<run>/run.json (when present) and results/<run>/cells/*.json through
the run store and nothing else.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tfvariants.analyze import cautions, interference, stats, windows
from tfvariants.analyze.billing import no_price_reason
from tfvariants.analyze.conclusions import conclude
from tfvariants.analyze.coverage import cell_counts, first_cell_id, folder_warnings, usable_results
from tfvariants.analyze.decide import Settings, choose_baseline, run_looks
from tfvariants.analyze.fields import median_of
from tfvariants.analyze.frame import RunFrame, environments_of, logical_cpus_of
from tfvariants.analyze.groups import Group, WorkloadReport
from tfvariants.analyze.interference import Interference
from tfvariants.analyze.noise import HostNoise, host_noise
from tfvariants.analyze.parity import parity
from tfvariants.analyze.pricing import Pricing
from tfvariants.analyze.verdicts import (
    Requested,
    Verdict,
    measured,
    round_values,
    statistic,
    workload_verdicts,
)
from tfvariants.errors import UserError
from tfvariants.store.cellresult import CellResult, ConfigKey
from tfvariants.store.rawfields import finite_number
from tfvariants.store.rundir import load_run_dir


@dataclass(kw_only=True)
class Analysis(RunFrame):
    """A run folder's training cells, analysed (its serving cells: ``serving``)."""

    workloads: list[WorkloadReport]
    cells: list[CellResult]
    settings: Settings = field(default_factory=lambda: Settings())
    noise: HostNoise | None = None
    devices: dict[str, str] = field(default_factory=dict)  # variant -> cpu|gpu (billing)
    interference: Interference | None = None  # disturbed cells and waits for quiet

    @property
    def rounds_compared(self) -> tuple[int, int] | None:
        """(fewest, most) common rounds behind the time ratios, None without ratios."""
        ns = [g.rounds_compared for w in self.workloads for g in w.groups if g.verdict]
        return (min(ns), max(ns)) if ns else None


# ---- analysis ----


def parse_baseline(text: str | None) -> Requested | None:
    if not text:
        return None
    variant, sep, threads = text.partition("@")
    if not variant or (sep and not threads.isdigit()):
        raise UserError(f"--baseline {text!r}: expected VARIANT or VARIANT@THREADS")
    return variant, int(threads) if sep else None


def _order(values: Iterable[str], preferred: Any) -> list[str]:
    seen = list(dict.fromkeys(values))
    pref = [v for v in (preferred if isinstance(preferred, list) else []) if v in seen]
    return pref + sorted((v for v in seen if v not in pref), key=str)


def settings_of(
    run: dict[str, Any], min_effect: float | None = None, confidence: float | None = None
) -> Settings:
    """The decision settings: given, else the run's stored options, else the defaults;
    looks from the run's stopping rule."""
    stored = run.get("options")
    opts: dict[str, Any] = stored if isinstance(stored, dict) else {}
    if min_effect is None:
        min_effect = finite_number(opts.get("min_effect")) or stats.MIN_EFFECT
    if confidence is None:
        confidence = finite_number(opts.get("confidence")) or stats.CONFIDENCE
    band = finite_number(opts.get("equivalence_band")) or None
    return Settings(min_effect, confidence, run_looks(run), band)


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

    Disturbed cells (analyze/interference.py) are used in the verdicts or not as the
    policy ``disturbed`` says (default: the run's, else "auto"), and counted in
    ``interference``."""
    results_dir = Path(results_dir)
    contents = load_run_dir(results_dir, allow_mixed_hosts=allow_mixed_hosts)
    run = contents.run
    # Serving cells have their own analysis (analyze/serving.py).
    usable_results(contents)  # one line when there is nothing to analyse
    cells = [r for _, r in sorted(contents.parsed.items()) if isinstance(r, CellResult)]
    cpus = logical_cpus_of(run)
    if cpus is None:
        cpus = next((r.machine_cpus for r in cells if r.machine_cpus), None)

    devices = {r.variant: r.device for r in cells}
    groups: dict[ConfigKey, Group] = {}
    for r in cells:
        g = groups.setdefault(r.key, Group(*r.key, device=r.device))
        g.results.append(r)

    variants = _order((k.variant for k in groups), run.get("variants"))
    workloads = _order((k.workload for k in groups), run.get("workloads"))
    settings = settings_of(run, min_effect, confidence)
    requested = parse_baseline(baseline)
    if requested is not None and requested[0] not in variants:
        raise UserError(
            f"--baseline {baseline}: no results for variant {requested[0]!r} "
            f"(have: {', '.join(variants)})"
        )
    # Oversubscribed as the cells say (store/cellresult.py decides it, once).
    over = {
        (k.variant, k.threads)
        for k, g in groups.items()
        if any(r.oversubscribed for r in g.results)
    }
    options = run.get("options")
    opts: dict[str, Any] = options if isinstance(options, dict) else {}
    quiet = interference.summarise(cells, policy=interference.policy_of(opts, disturbed),
                                   options=opts)  # fmt: skip
    times = round_values(cells, include_disturbed=quiet.included)  # what verdicts use
    ran = measured(cells)

    all_warnings: list[cautions.StatWarning] = []
    over_threads: dict[int, list[str]] = {}
    for g in groups.values():
        _summarise(g, pricing, cpus, settings.confidence, include_disturbed=quiet.included)
        all_warnings += [w for w in g.warnings if w.kind != "oversubscribed"]
        if g.oversubscribed:
            over_threads.setdefault(g.threads, []).append(g.label)
    # One line per thread count, not one per cell: the same fact repeated drowns the rest.
    for threads, labels in sorted(over_threads.items()):
        configs = ", ".join(dict.fromkeys(labels))
        all_warnings.insert(0, cautions.oversubscribed_warning(configs, threads, cpus or 0))

    all_warnings[:0] = folder_warnings(contents)

    baseline_label = _run_baseline_label(requested, groups, times, devices, variants, over)
    reports = []
    for w in workloads:
        wgroups = sorted(
            (g for g in groups.values() if g.workload == w),
            key=lambda g: (variants.index(g.variant), g.threads),
        )
        found = workload_verdicts([g.key for g in wgroups], times, settings, devices=devices,
                                  variant_order=variants, oversubscribed=over,
                                  requested=requested, ran=ran)  # fmt: skip
        wr = WorkloadReport(w, wgroups, groups.get(found.baseline) if found.baseline else None)
        _apply_verdicts(wr, found.verdicts, settings)
        if wr.baseline is None or wr.baseline.time is None:
            all_warnings.append(
                cautions.StatWarning(
                    "no_baseline",
                    f"{w}: the baseline {baseline_label} has no successful runs, so no ratios",
                    "pick another --baseline (VARIANT@THREADS) or --resume the failed cells",
                )
            )
        conclude(wr, baseline_label, cpus, pricing, settings)
        base_variant = baseline_label.split("@")[0]  # the header's, as the template says
        wr.parity = parity(wgroups, base_variant)
        for row in wr.parity:
            if row.outlier:
                all_warnings.append(
                    cautions.StatWarning(
                        "accuracy_parity",
                        f"{w}: {row.variant} trains to a different result than {base_variant}: "
                        + "; ".join(row.flags),
                        "a fast variant that learns something else is not a faster build "
                        "(see Accuracy parity)",
                    )
                )
        reports.append(wr)
    noise = host_noise(list(groups.values()), settings)
    noise.window_plan = windows.plan_sentence((run.get("adaptive") or {}).get("window_plan"))
    all_warnings += noise.warnings
    if quiet.disturbed:
        all_warnings.append(
            cautions.StatWarning("disturbed", quiet.sentence(), "run when the machine is quieter, "
                              "or on a dedicated machine; the cells are listed in the report")
        )  # fmt: skip

    envs, raw_envs = environments_of(cells, variants)
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
        cells=cells,
        variants=variants,
        settings=settings,
        noise=noise,
        devices=devices,
        store=contents,
        interference=quiet,
    )


def _run_baseline_label(
    requested: Requested | None,
    groups: dict[ConfigKey, Group],
    times: dict[ConfigKey, dict[int, float]],
    devices: dict[str, str],
    variants: list[str],
    over: set[tuple[str, int]],
) -> str:
    """The run's baseline in one label (the header): the one asked for, else the
    default rule on all workloads' usable repeats together. Each workload's own
    baseline (the same rule on its own repeats) is what its ratios use."""
    if requested is not None and requested[1] is not None:
        return f"{requested[0]}@{requested[1]}"
    if requested is not None:
        mine = [k for k in groups if k.variant == requested[0]]
        usable = [k for k in mine if times.get(k)] or mine
        return f"{requested[0]}@{max(k.threads for k in usable)}"
    counts: dict[tuple[str, int], int] = {}
    for k in groups:
        counts[(k.variant, k.threads)] = counts.get((k.variant, k.threads), 0) + len(
            times.get(k) or {}
        )
    if not any(counts.values()):  # every repeat disturbed: as verdicts.pick_baseline does
        for k, g in groups.items():
            counts[(k.variant, k.threads)] += int(bool(g.ok))
    chosen = choose_baseline(counts, devices, variants, over)
    if chosen is None:
        first = variants[0]
        chosen = (first, max(k.threads for k in groups if k.variant == first))
    return f"{chosen[0]}@{chosen[1]}"


def _explain_spread(warning: cautions.StatWarning, ok: list[CellResult]) -> cautions.StatWarning:
    """An 'unstable' warning names its worst repeat, and whether other processes were
    using that cell's CPUs: a sceptic can then tell a noisy host from a noisy config."""
    timed = [(r.training_time_s, r) for r in ok if r.training_time_s]
    if warning.kind != "unstable" or len(timed) < 3:
        return warning
    med = median_of(t for t, _ in timed) or 0.0
    if med <= 0:
        return warning
    t, r = max(timed, key=lambda tr: abs(math.log(tr[0] / med)))
    text = f"; the farthest repeat (r{r.round}) took {t / med:.2f}x the median"
    if r.others_share is not None and r.others_share >= 0.10:
        text += f", while other processes used {r.others_share:.0%} of its pinned CPUs"
    return cautions.StatWarning(warning.kind, warning.message + text, warning.hint)


def _summarise(
    g: Group,
    pricing: Pricing | None,
    cpus: int | None,
    confidence: float = stats.CONFIDENCE,
    include_disturbed: bool = False,
) -> None:
    ok = g.ok
    g.oversubscribed = any(r.oversubscribed for r in g.results)
    if g.oversubscribed:
        g.oversubscription_ratio = max(r.oversubscription_ratio for r in g.results)
    label = f"{g.workload} {g.label}"
    if g.oversubscribed:
        g.warnings.append(
            cautions.oversubscribed_warning(
                label, g.threads, cpus or int(g.threads / g.oversubscription_ratio)
            )
        )
    for status in ("failed", "timeout"):
        if g.n(status):
            g.warnings.append(
                cautions.StatWarning(
                    status,
                    f"{label}: {g.n(status)} of {len(g.results)} repeats {status} ({'; '.join(g.reasons)[:200]})",
                    # the file to open, not a placeholder path
                    f"read stderr_tail in the run folder's cells/{first_cell_id(g.results, status)}.json, "
                    "fix, then rerun with --resume",
                )
            )
    if g.n("skipped"):
        g.warnings.append(
            cautions.StatWarning(
                "skipped",
                f"{label} was skipped: {'; '.join(g.reasons)[:200]}",
                "run it on a host that has what it needs",
            )
        )
    g.times = [r.training_time_s for r in ok if r.training_time_s]
    # What comparisons use: the same usable values as the verdicts' (disturbed attempts
    # too when the run's policy includes them), or the sentences and the table disagree.
    g.round_times = round_values(g.results, include_disturbed=include_disturbed).get(g.key, {})
    if not g.times:
        return
    g.time = stats.median_interval(g.times, confidence)
    steadies = [r.steady_epoch_s for r in ok if r.steady_epoch_s]
    g.steady = stats.median_interval(steadies, confidence) if steadies else None
    steps = [r.steady_step_s for r in ok if r.steady_step_s]
    g.step_s = stats.median_interval(steps, confidence) if steps else None
    g.utilisation = median_of(r.utilisation for r in ok)
    for name in dict.fromkeys(k for r in ok for k in r.overhead):
        value = median_of(r.overhead.get(name) for r in ok)
        if value is not None:
            g.overhead[name] = value
    g.bimodal = cautions.bimodal(g.times)
    g.warmup_s = median_of(r.warmup_s for r in ok)
    g.samples_per_s = median_of(r.samples_per_s for r in ok)
    g.gflops_per_s = median_of(r.gflops_per_s for r in ok)
    g.accuracy = median_of(r.accuracy for r in ok)
    g.chance = next((r.chance_accuracy for r in ok if r.chance_accuracy is not None), None)
    rss = [r.peak_rss_bytes for r in ok if r.peak_rss_bytes]
    g.peak_rss_bytes = int(max(rss)) if rss else None
    g.warnings += [_explain_spread(w, ok) for w in cautions.stability_warnings(label, g.times)]
    if pricing is not None:
        g.cost = pricing.cost(g.variant, g.threads, g.time.value, g.device)
        if g.cost is None:
            g.warnings.append(
                cautions.StatWarning(
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
            # per round, as the verdicts use them: the rounds' usable values
            g.round_costs = {rnd: per_s * bill(t) for rnd, t in g.round_times.items()}


def _apply_verdicts(
    wr: WorkloadReport, verdicts: Mapping[ConfigKey, Verdict], settings: Settings
) -> None:
    """The time verdicts (from the one comparison) onto the groups, and the costs
    through the same statistic on the same common rounds."""
    b = wr.baseline
    if b is None or not b.times:
        return
    b.is_baseline = True
    one = stats.Interval(1.0, 1.0, 1.0, "exact", len(b.times))
    b.time_cmp = stats.Comparison(one, "baseline", min_effect=settings.min_effect)
    if b.costs:
        b.cost_cmp = stats.Comparison(one, "baseline", min_effect=settings.min_effect)
    base_costs = b.round_costs
    for g in wr.groups:
        v = verdicts.get(g.key)
        if g is b or v is None:
            continue
        g.verdict, g.time_cmp = v, v.comparison
        costs = g.round_costs
        common = set(costs) & set(base_costs)
        # A free instance has no ratio.
        if common and min([costs[i] for i in common] + [base_costs[i] for i in common]) > 0:
            # Costs per repeat through the same statistic as times: one machinery.
            g.cost_cmp = statistic(base_costs, costs, settings)
            g.cost_rounds = len(common)
