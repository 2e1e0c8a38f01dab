"""The report's sentences: what was fastest, cheapest, and which differences are real."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from tfvariants.analyze import stats
from tfvariants.analyze.format import dur, money
from tfvariants.analyze.pricing import Pricing

if TYPE_CHECKING:
    from tfvariants.analyze.analysis import Group, WorkloadReport


def _speed_phrase(a: Group, b: Group, cmp: stats.Comparison) -> str:
    r = cmp.ratio
    if cmp.verdict == "faster":
        lo, hi = (1 / r.hi if r.hi else math.inf), 1 / r.lo if r.lo else math.inf
        return f"{a.label} was {1 / r.value:.2f}x faster than {b.label} (significant; 95% interval {lo:.2f}-{hi:.2f}x)"
    if cmp.verdict == "slower":
        return f"{a.label} was {r.value:.2f}x slower than {b.label} (significant; 95% interval {r.lo:.2f}-{r.hi:.2f}x the time)"
    return (
        f"{a.label} vs {b.label}: no significant difference shown (time ratio {r.value:.2f}, "
        f"not significant: {'; '.join(cmp.reasons) or 'too little data'})"
    )


def conclude(
    wr: WorkloadReport, baseline_label: str, cpus: int | None, pricing: Pricing | None
) -> None:
    with_time = [g for g in wr.groups if g.time is not None]
    if not with_time:
        wr.conclusions.append(
            f"{wr.name}: no configuration finished successfully, so there is nothing to compare."
        )
        return
    wr.fastest = min(with_time, key=lambda g: g.time.value)  # type: ignore[union-attr]
    costed = [g for g in with_time if g.cost is not None]
    if costed:
        wr.cheapest = min(costed, key=lambda g: g.cost.cost)  # type: ignore[union-attr]
        wr.pareto = [
            g
            for g in costed
            if not any(
                h.time.value <= g.time.value
                and h.cost.cost <= g.cost.cost  # type: ignore[union-attr]
                and (h.time.value < g.time.value or h.cost.cost < g.cost.cost)  # type: ignore[union-attr]
                for h in costed
            )
        ]
    host = f"On {cpus} logical CPUs" if cpus else "On this host"
    said: set[frozenset] = set()  # pairs already compared in a sentence
    b = wr.baseline if wr.baseline is not None and wr.baseline.time is not None else None
    f = wr.fastest
    if b is None:
        wr.conclusions.append(
            f"{host}, {f.label} was the fastest for {wr.name} ({dur(f.time.value)} for the full schedule); "  # type: ignore[union-attr]
            f"the baseline {baseline_label} has no successful runs, so no comparison is claimed."
        )
    elif f is b:
        others = [g for g in with_time if g is not b and g.time_cmp is not None]
        wr.conclusions.append(
            f"{host}, the baseline {b.label} was the fastest for {wr.name} ({dur(b.time.value)} for the full schedule)."
        )  # type: ignore[union-attr]
        if others:
            runner_up = min(others, key=lambda g: g.time.value)  # type: ignore[union-attr]
            cmp = stats.compare(b.times, runner_up.times)
            wr.conclusions.append(f"Against the next best: {_speed_phrase(b, runner_up, cmp)}.")
            said.add(frozenset((runner_up.label, b.label)))
    else:
        wr.conclusions.append(
            f"{host}, for {wr.name}, {_speed_phrase(f, b, f.time_cmp)}; it was the fastest configuration."
        )  # type: ignore[arg-type]
        said.add(frozenset((f.label, b.label)))
    # Thread scaling per variant: most vs fewest threads (the question a 2-core --quick run answers).
    for v in dict.fromkeys(g.variant for g in with_time):
        vg = sorted((g for g in with_time if g.variant == v), key=lambda g: g.threads)
        if len(vg) >= 2:
            hi, lo = vg[-1], vg[0]
            if frozenset((hi.label, lo.label)) not in said:
                cmp = stats.compare(hi.times, lo.times)
                wr.conclusions.append(f"Threads: {_speed_phrase(hi, lo, cmp)}.")
    if wr.cheapest is not None and pricing is not None:
        c = wr.cheapest
        text = f"Cheapest: {c.label} at {money(c.cost.cost)} per full training run on {c.cost.instance}"  # type: ignore[union-attr]
        if c.cost_cmp is not None and c is not b:
            r = c.cost_cmp.ratio
            sig = "significant" if c.cost_cmp.significant else "not significant"
            text += f" ({r.value:.2f}x the baseline's cost, {sig})"
        wr.conclusions.append(text + ".")
    flagged = [g.label for g in (wr.fastest, wr.cheapest) if g is not None and g.oversubscribed]
    if flagged:
        wr.conclusions.append(
            f"Caution: {', '.join(dict.fromkeys(flagged))} ran with more threads than this host has CPUs: "
            "these numbers do not show how a machine with that many vCPUs behaves."
        )
