"""One configuration's repeats summarised (medians with intervals, costs, cautions) and
the comparisons to its workload's baseline put onto its group."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from tfvariants.analyze.cost.billing import no_price_reason
from tfvariants.analyze.cost.pricing import Pricing
from tfvariants.analyze.shared import cautions
from tfvariants.analyze.shared.coverage import first_cell_id
from tfvariants.analyze.shared.fields import median_of
from tfvariants.analyze.statistics import stats
from tfvariants.analyze.statistics.decide import Settings
from tfvariants.analyze.statistics.verdict import Verdict
from tfvariants.analyze.statistics.verdicts import Judgement, round_values, statistic
from tfvariants.analyze.training.groups import Group, Measurements
from tfvariants.store.training import CellResult, ConfigKey


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
    figures = f"{warning.figures}, r{r.round} {t / med:.2f}x"
    if r.others_share is not None and r.others_share >= 0.10:
        text += f", while other processes used {r.others_share:.0%} of its pinned CPUs"
        figures += f", while other processes used {r.others_share:.0%} of its pinned CPUs"
    return replace(warning, message=warning.message + text, figures=figures)


def summarise_group(
    g: Group,
    pricing: Pricing | None,
    cpus: int | None,
    settings: Settings,
    include_disturbed: bool = False,
) -> Group:
    """``g`` (its key and repeats) with its figures and cautions."""
    confidence = settings.confidence  # the intervals' level
    ok = g.ok
    oversubscribed = any(r.oversubscribed for r in g.results)
    ratio = max(r.oversubscription_ratio for r in g.results) if oversubscribed else 1.0
    label = f"{g.workload} {g.label}"
    warnings: list[cautions.StatWarning] = []
    if oversubscribed:
        warnings.append(
            cautions.oversubscribed_warning(label, g.threads, cpus or int(g.threads / ratio))
        )
    warnings += _status_warnings(g, label)
    times = [r.training_time_s for r in ok if r.training_time_s]
    # What comparisons use: the same usable values as the verdicts' (disturbed attempts
    # too when the run's policy includes them), or the sentences and the table disagree.
    round_times = round_values(g.results, include_disturbed=include_disturbed).get(g.key, {})
    figures: dict[str, Any] = {}
    if times:
        time = stats.median_interval(times, confidence)
        warnings += [_explain_spread(w, ok) for w in cautions.stability_warnings(label, times)]
        figures = {
            "time": time,
            "measured": measure(ok, confidence),
            "bimodal": cautions.bimodal(times),
            **_costs(g, time.value, times, round_times, pricing, confidence, warnings),
        }
    return replace(
        g,
        oversubscribed=oversubscribed,
        oversubscription_ratio=ratio,
        times=times,
        round_times=round_times,
        warnings=warnings,
        **figures,
    )


def _status_warnings(g: Group, label: str) -> list[cautions.StatWarning]:
    """A caution per failed, timed-out or skipped status among the repeats."""
    out = [
        cautions.StatWarning(
            status,
            f"{label}: {g.n(status)} of {len(g.results)} repeats {status} "
            f"({'; '.join(g.reasons)[:200]})",
            # the file to open, not a placeholder path
            "read stderr_tail in the run folder's "
            f"cells/{first_cell_id(g.results, status)}.json, fix, then rerun with --resume",
        )
        for status in ("failed", "timeout")
        if g.n(status)
    ]
    if g.n("skipped"):
        out.append(
            cautions.StatWarning(
                "skipped",
                f"{label} was skipped: {'; '.join(g.reasons)[:200]}",
                "run it on a host that has what it needs",
            )
        )
    return out


def _costs(
    g: Group,
    median_s: float,
    times: list[float],
    round_times: Mapping[int, float],
    pricing: Pricing | None,
    confidence: float,
    warnings: list[cautions.StatWarning],
) -> dict[str, Any]:
    """The group's cost at its median time, per repeat and per round (no prices: none;
    no price for this cell: a caution appended to ``warnings``)."""
    if pricing is None:
        return {}
    cost = pricing.cost(g.variant, g.threads, median_s, g.device)
    if cost is None:
        warnings.append(
            cautions.StatWarning(
                "no_price",
                f"{g.workload} {g.label}: no cost: "
                f"{no_price_reason(pricing, g.variant, g.threads, g.device)}",
                "choose another price date (--pricing NAME@YYYY-MM) or catalog, or map "
                "the cell with --instance VARIANT[@THREADS]=INSTANCE",
            )
        )
        return {}
    per_s = cost.per_hour / 3600
    bill = pricing.catalog.billing.billed_seconds
    costs = [per_s * bill(t) for t in times]
    return {
        "cost": cost,
        "costs": costs,
        "cost_iv": stats.median_interval(costs, confidence),
        # per round, as the verdicts use them: the rounds' usable values
        "round_costs": {rnd: per_s * bill(t) for rnd, t in round_times.items()},
    }


def apply_verdicts(
    groups: list[Group],
    baseline: Group | None,
    verdicts: Mapping[ConfigKey, Judgement],
    settings: Settings,
) -> list[Group]:
    """The groups with the time verdicts (from the one comparison), and the costs
    through the same statistic on the same common rounds (``baseline``: one of
    ``groups``, marked as the baseline)."""
    b = baseline
    if b is None or not b.times:
        return list(groups)
    one = stats.Interval(1.0, 1.0, 1.0, "exact", len(b.times))
    same = stats.Comparison(one, Verdict.BASELINE, min_effect=settings.min_effect)
    out = []
    for g in groups:
        v = verdicts.get(g.key)
        if g is b:
            out.append(
                replace(g, is_baseline=True, time_cmp=same, cost_cmp=same if g.costs else None)
            )
        elif v is None:
            out.append(g)
        else:
            out.append(replace(g, verdict=v, time_cmp=v.comparison, **_cost_cmp(g, b, settings)))
    return out


def _cost_cmp(g: Group, b: Group, settings: Settings) -> dict[str, Any]:
    """g's cost against the baseline's on their common rounds (a free instance: none)."""
    costs, base_costs = g.round_costs, b.round_costs
    common = set(costs) & set(base_costs)
    if common and min([costs[i] for i in common] + [base_costs[i] for i in common]) > 0:
        # Costs per repeat through the same statistic as times: one machinery.
        return {"cost_cmp": statistic(base_costs, costs, settings), "cost_rounds": len(common)}
    return {}


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
