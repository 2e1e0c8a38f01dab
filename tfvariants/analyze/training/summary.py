"""One configuration's repeats summarised (medians with intervals, costs, cautions) and
the comparisons to its workload's baseline put onto its group."""

from __future__ import annotations

import math
from collections.abc import Mapping

from tfvariants.analyze.cost.billing import no_price_reason
from tfvariants.analyze.cost.pricing import Pricing
from tfvariants.analyze.shared import cautions
from tfvariants.analyze.shared.coverage import first_cell_id
from tfvariants.analyze.shared.fields import median_of
from tfvariants.analyze.statistics import stats
from tfvariants.analyze.statistics.decide import Settings
from tfvariants.analyze.statistics.verdicts import Verdict, round_values, statistic
from tfvariants.analyze.training.groups import Group, Measurements, WorkloadReport
from tfvariants.store.cellresult import CellResult, ConfigKey


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


def summarise_group(
    g: Group,
    pricing: Pricing | None,
    cpus: int | None,
    settings: Settings,
    include_disturbed: bool = False,
) -> None:
    confidence = settings.confidence  # the intervals' level
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
                    f"{label}: {g.n(status)} of {len(g.results)} repeats {status} "
                    f"({'; '.join(g.reasons)[:200]})",
                    # the file to open, not a placeholder path
                    "read stderr_tail in the run folder's "
                    f"cells/{first_cell_id(g.results, status)}.json, fix, then rerun with --resume",
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
    g.measured = measure(ok, confidence)
    g.bimodal = cautions.bimodal(g.times)
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


def apply_verdicts(
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


def measure(ok: list[CellResult], confidence: float) -> Measurements:
    """What the successful repeats measured besides the time: medians over them."""
    steadies = [r.steady_epoch_s for r in ok if r.steady_epoch_s]
    steps = [r.steady_step_s for r in ok if r.steady_step_s]
    overhead: dict[str, float] = {}
    for name in dict.fromkeys(k for r in ok for k in r.overhead):
        value = median_of(r.overhead.get(name) for r in ok)
        if value is not None:
            overhead[name] = value
    rss = [r.peak_rss_bytes for r in ok if r.peak_rss_bytes]
    return Measurements(
        steady=stats.median_interval(steadies, confidence) if steadies else None,
        step_s=stats.median_interval(steps, confidence) if steps else None,
        warmup_s=median_of(r.warmup_s for r in ok),
        samples_per_s=median_of(r.samples_per_s for r in ok),
        gflops_per_s=median_of(r.gflops_per_s for r in ok),
        accuracy=median_of(r.accuracy for r in ok),
        chance=next((r.chance_accuracy for r in ok if r.chance_accuracy is not None), None),
        peak_rss_bytes=int(max(rss)) if rss else None,
        utilisation=median_of(r.utilisation for r in ok),
        overhead=overhead,
    )
