"""The report's sentences, most important first: with a GPU, the GPU against the fastest
and the cheapest CPU configuration (time and cost); then the fastest configuration
against the baseline, thread scaling, the cheapest, and what stayed undecided."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol

from tfvariants.analyze.cost.pricing import Pricing
from tfvariants.analyze.shared.format import dur, money, ratio_end, sig3
from tfvariants.analyze.statistics import family, stats
from tfvariants.analyze.statistics.decide import Settings
from tfvariants.analyze.statistics.verdict import TIME_WORDS, Said, Verdict
from tfvariants.analyze.statistics.verdicts import statistic
from tfvariants.analyze.training import loadlabel

if TYPE_CHECKING:
    from tfvariants.analyze.training.groups import Group, WorkloadReport


def _time(g: Group) -> float:
    """The group's time; only for groups filtered to have one."""
    if g.time is None:
        raise ValueError(f"{g.label}: no time")
    return g.time.value


def _speed(g: Group, b: Group | None) -> float:
    """The time a configuration is ranked by: the baseline's median times the
    Hodges-Lehmann ratio the sentences quote, so "fastest" and its ratio come from one
    estimator (a ranking by median could name the baseline fastest while the ratio
    favoured the other); the median when there is no ratio to the baseline."""
    if b is not None and b.time is not None and g.time_cmp is not None:
        return g.time_cmp.ratio.value * b.time.value
    return _time(g)


def _cost(g: Group) -> float:
    """The group's cost; only for groups filtered to have one."""
    if g.cost is None:
        raise ValueError(f"{g.label}: no cost")
    return g.cost.cost


def interval_words(r: stats.Interval, invert: bool = False) -> str:
    """ "95.2% interval 2.10-2.52x" (the achieved coverage of the ratio interval); for
    "equivalent"'s narrower one "96.8% interval of the two one-sided tests ..."."""
    if not r.has_interval or r.coverage is None:
        return "no interval"
    lo, hi = (1 / r.hi, 1 / r.lo) if invert else (r.lo, r.hi)
    what = "interval of the two one-sided tests" if r.one_sided else "interval"
    return f"{stats.percent(r.coverage)} {what} {ratio_end(lo)}-{ratio_end(hi)}x"


class Labelled(Protocol):
    """What a sentence names: a training Group or a serving Config."""

    @property
    def label(self) -> str: ...


def phrase(a: Labelled, b: Labelled, cmp: stats.Comparison, what: str = "time") -> str:
    """a versus b in words, from the comparison's one interval and verdict, saying so
    when it rests on disturbed cells (analyze/training/loadlabel.py)."""
    return loadlabel.qualify(_phrase(a, b, cmp, what), a, b)


def _phrase(a: Labelled, b: Labelled, cmp: stats.Comparison, what: str) -> str:
    r = cmp.ratio
    low, high = TIME_WORDS if what == "time" else (Said.CHEAPER, Said.MORE_EXPENSIVE)
    if cmp.verdict == Verdict.DIFFERENT:
        if r.value < 1:
            words = interval_words(r, True)
            return f"{a.label} was {sig3(1 / r.value)}x {low} than {b.label} ({words}, decided)"
        return (
            f"{a.label} was {sig3(r.value)}x {high} than {b.label} ({interval_words(r)}, decided)"
        )
    if cmp.verdict == Verdict.EQUIVALENT:
        return (
            f"{a.label} and {b.label} were equivalent in {what} ({what} ratio {sig3(r.value)}, "
            f"{interval_words(r)} lies within +/-{cmp.equivalence_band:.0%}; typical runs)"
        )
    # The ordinary undecided (an interval that holds 1 and reaches past the band) is what
    # "undecided" means (the report's methods say it once): only other reasons are said.
    ordinary = r.has_interval and r.lo <= 1 <= r.hi
    said = [] if ordinary else list(cmp.reasons)
    said.append(
        f"~{cmp.more_repeats} more repeats per side"
        if cmp.more_repeats
        else "no practical number of repeats would decide it (the ratio is too close "
        f"to the {cmp.min_effect:.0%} threshold for this much noise)"
    )
    return (
        f"{a.label} vs {b.label}: undecided ({what} ratio {sig3(r.value)}, {interval_words(r)}; "
        f"{'; '.join(said)})"
    )


def _cmp(a: Group, b: Group, settings: Settings, what: str) -> stats.Comparison | None:
    """a against b through the one statistic (analyze/statistics/verdicts.py), on the rounds both
    have usable (undisturbed) repeats in; None without a common round or with a free
    instance."""
    xa, xb = (a.round_times, b.round_times) if what == "time" else (a.round_costs, b.round_costs)
    common = set(xa) & set(xb)
    if not common or min([xa[i] for i in common] + [xb[i] for i in common]) <= 0:
        return None
    return statistic(xb, xa, settings)


def _leads(
    g: Group, groups: list[Group], settings: Settings, what: str, b: Group | None = None
) -> bool:
    """g's lead over every other is decided at the family's level (family.lead: the
    ranking as a whole holds with the stated confidence)."""
    rest = [h for h in groups if h is not g]
    if not rest:
        return False
    of: Callable[[Group], dict[int, float]] = (
        (lambda h: h.round_times) if what == "time" else (lambda h: h.round_costs)
    )
    return family.lead(of(g), {h.label: of(h) for h in rest}, settings).decided


def _tiers(a: Group, b: Group) -> str:
    """Say so when a cost comparison mixes price tiers (gce-2017: on-demand K80 vs
    preemptible CPUs, as the study did): the ratio is partly the tier's."""
    if a.cost is None or b.cost is None or a.cost.tier == b.cost.tier:
        return ""
    ta, tb = (c.tier_word or c.tier.replace("_", "-") for c in (a.cost, b.cost))
    return f" (prices of different tiers: {a.label} {ta}, {b.label} {tb})"


def _gpu_first(with_time: list[Group], settings: Settings, lines: list[str]) -> set[frozenset]:
    said: set[frozenset] = set()
    gpus = [g for g in with_time if g.device == "gpu"]
    cpus = [g for g in with_time if g.device != "gpu"]
    if not gpus or not cpus:
        return said
    gpu = min(gpus, key=_time)
    fastest = min(cpus, key=_time)
    costed = [g for g in cpus if g.cost is not None]
    cheapest = min(costed, key=_cost) if costed else None
    for label, cpu in (
        ("the fastest CPU configuration", fastest),
        ("the cheapest CPU configuration", cheapest),
    ):
        if cpu is None or frozenset((gpu.key, cpu.key)) in said:
            continue
        said.add(frozenset((gpu.key, cpu.key)))
        parts = []
        t = _cmp(gpu, cpu, settings, "time")
        if t is not None:
            parts.append(phrase(gpu, cpu, t, "time"))
        c = _cmp(gpu, cpu, settings, "cost")
        if c is not None:
            parts.append(phrase(gpu, cpu, c, "cost") + _tiers(gpu, cpu))
        lines.append(f"GPU vs {label} ({cpu.label}): " + "; ".join(parts) + ".")
    return said


def conclude(
    wr: WorkloadReport,
    baseline_label: str,
    cpus: int | None,
    pricing: Pricing | None,
    settings: Settings | None = None,
) -> WorkloadReport:
    """``wr`` with its fastest, cheapest and Pareto front, and its sentences in reading
    order: the GPU first, then the fastest, threads, the cheapest, what is undecided."""
    settings = settings or Settings()
    with_time = [g for g in wr.groups if g.time is not None]
    if not with_time:
        return replace(
            wr,
            conclusions=[
                f"{wr.name}: no configuration finished successfully, so there is nothing "
                "to compare."
            ],
        )
    b = wr.baseline if wr.baseline is not None and wr.baseline.time is not None else None
    wr = _rank(wr, with_time, b, settings)
    lines: list[str] = []
    said = _gpu_first(with_time, settings, lines)
    _fastest_sentences(wr, with_time, b, baseline_label, cpus, settings, said, lines)
    # Thread scaling per variant: most vs fewest threads (what a 2-core --quick run answers).
    for v in dict.fromkeys(g.variant for g in with_time):
        vg = sorted((g for g in with_time if g.variant == v), key=lambda g: g.threads)
        if len(vg) >= 2:
            hi, lo = vg[-1], vg[0]
            cmp = _cmp(hi, lo, settings, "time")
            if cmp is not None and frozenset((hi.key, lo.key)) not in said:
                lines.append(f"Threads: {phrase(hi, lo, cmp)}.")
                said.add(frozenset((hi.key, lo.key)))
    if wr.cheapest is not None and pricing is not None:
        lines.append(_cheapest_sentence(wr, wr.cheapest, b, pricing, settings))
    lines += _open_sentences(wr, with_time, b)
    return replace(wr, conclusions=lines)


def _rank(
    wr: WorkloadReport, with_time: list[Group], b: Group | None, settings: Settings
) -> WorkloadReport:
    """``wr`` with its fastest, cheapest, time-cost Pareto front, and whether each lead
    is decided against the next."""
    fastest = min(with_time, key=lambda g: _speed(g, b))
    costed = [g for g in with_time if g.cost is not None]
    cheapest = min(costed, key=_cost) if costed else None
    points = [(g, _time(g), _cost(g)) for g in costed]
    pareto = [
        g
        for g, t, c in points
        if not any(ht <= t and hc <= c and (ht < t or hc < c) for _h, ht, hc in points)
    ]
    return replace(
        wr,
        fastest=fastest,
        cheapest=cheapest,
        pareto=pareto,
        fastest_decided=_leads(fastest, with_time, settings, "time", b),
        cheapest_decided=cheapest is not None and _leads(cheapest, costed, settings, "cost"),
    )


def _fastest_sentences(
    wr: WorkloadReport,
    with_time: list[Group],
    b: Group | None,
    baseline_label: str,
    cpus: int | None,
    settings: Settings,
    said: set[frozenset],
    lines: list[str],
) -> None:
    host = f"On {cpus} logical CPUs" if cpus else "On this host"
    f = wr.fastest
    assert f is not None  # ranked among groups with a time
    if b is None:
        fastest = "was the fastest" if wr.fastest_decided else "had the shortest estimated time"
        lines.append(
            f"{host}, {f.label} {fastest} for {wr.name} ({dur(_time(f))} for the full "
            f"schedule); the baseline {baseline_label} has no successful runs, so no "
            "comparison is claimed."
        )
    elif f is b:
        others = [g for g in with_time if g is not b]
        runner_up = min(others, key=lambda g: _speed(g, b)) if others else None
        cmp = _cmp(b, runner_up, settings, "time") if runner_up is not None else None
        # "Fastest" only when decided against every other at the family's level (as for
        # any other configuration, family.lead), not against the runner-up alone;
        # otherwise the estimate is shortest and the next sentence says why.
        if runner_up is None:
            lead = f"only the baseline {b.label} ran successfully for {wr.name}"
        elif wr.fastest_decided:
            lead = f"the baseline {b.label} was the fastest for {wr.name}"
        else:
            lead = f"the baseline {b.label} had the shortest estimated time for {wr.name}"
        said_lead = f"{host}, {lead} ({dur(_time(b))} for the full schedule)"
        # "fastest" rests on the comparison with the runner-up: labelled as it is
        lines.append(loadlabel.qualify(said_lead, b, runner_up) + ".")
        pair = frozenset((b.key, runner_up.key)) if runner_up is not None else None
        if runner_up is not None and cmp is not None and pair not in said:
            lines.append(f"Against the next best: {phrase(b, runner_up, cmp)}.")
            said.add(frozenset((runner_up.key, b.key)))
    elif f.time_cmp is not None and frozenset((f.key, b.key)) not in said:
        # Name it: after "a and b were equivalent", "it" could be either.
        # An undecided lead is flagged in the summary table ("not decided"), not said.
        rank = f"; {f.label} was the fastest configuration" if wr.fastest_decided else ""
        lines.append(f"{host}, for {wr.name}, {phrase(f, b, f.time_cmp)}{rank}.")
        said.add(frozenset((f.key, b.key)))


def _cheapest_sentence(
    wr: WorkloadReport, c: Group, b: Group | None, pricing: Pricing, settings: Settings
) -> str:
    assert c.cost is not None  # the cheapest is chosen among the groups with a cost
    amount = money(c.cost.cost, pricing.catalog.currency)
    # the instance is the measurements' (said once there)
    text = f"Cheapest: {c.label} at {amount} per full training run"
    parts = []
    if (
        c.cost_cmp is not None
        and b is not None
        and c is not b
        and c.cost_cmp.verdict != Verdict.BASELINE
    ):
        parts.append(phrase(c, b, c.cost_cmp, "cost") + _tiers(c, b))
    # "Cheapest" claims a lead over the next cheapest: say whether that is decided.
    rest = [g for g in wr.groups if g.time is not None and g.cost is not None and g is not c]
    nxt = min(rest, key=_cost) if rest else None
    cc = _cmp(c, nxt, settings, "cost") if nxt is not None and nxt is not b else None
    if nxt is not None and nxt is b and not parts:
        cc = _cmp(c, nxt, settings, "cost")
    if nxt is not None and cc is not None:
        parts.append(f"against the next cheapest: {phrase(c, nxt, cc, 'cost')}{_tiers(c, nxt)}")
    if parts:
        text += f" ({'; '.join(parts)})"
    return text + "."


def _open_sentences(wr: WorkloadReport, with_time: list[Group], b: Group | None) -> list[str]:
    """What stays uncompared, and the oversubscription caution."""
    lines: list[str] = []
    # What stays undecided against the baseline, and how many more repeats would likely
    # decide it, is in the workload's table (its "more repeats" column): not said again.
    apart = [g.label for g in with_time if g.verdict is not None and g.verdict.comparison is None]
    if apart and b is not None:
        lines.append(
            f"Not compared with {b.label}: {', '.join(apart)} (no round in which both ran "
            "undisturbed: other processes were using their CPUs; run again on a quieter machine "
            "or --resume with a --budget)."
        )
    flagged = [g.label for g in (wr.fastest, wr.cheapest) if g is not None and g.oversubscribed]
    if flagged:
        lines.append(
            f"Caution: {', '.join(dict.fromkeys(flagged))} ran with more threads than this host "
            "has CPUs: these numbers do not show how a machine with that many vCPUs behaves."
        )
    return lines
