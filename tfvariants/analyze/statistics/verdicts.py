"""The one comparison: which configuration is a workload's baseline, which repeats of a
configuration are set against which of the baseline's, and the verdict.

The report (:mod:`tfvariants.analyze.analysis`) and the adaptive rounds
(:mod:`tfvariants.rounds.training`) both call :func:`workload_verdicts`, so the rounds
keep running exactly the comparisons the report will call undecided, and never stop on
one it would not call decided.

Verdicts are contemporaneous: a configuration is compared with the baseline on the
rounds (repeat index) both have, so slow drift of the machine, or a configuration that
stopped early while the baseline went on, cannot bias the ratio
(``pairing.compare_rounds``). Disturbed cells (others used their CPUs,
:data:`tfvariants.store.disturbance.DISTURBED_SHARE`) are left out by default: they stay
on disk and in the report's tables.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from tfvariants.analyze.statistics import pairing, stats
from tfvariants.analyze.statistics.decide import Settings, choose_baseline
from tfvariants.analyze.statistics.verdict import Verdict
from tfvariants.store.training import CellResult, ConfigKey

RoundValues = Mapping[int, float]  # round (repeat index) -> one value of that round
Requested = tuple[str, int | None]  # --baseline VARIANT[@THREADS]


def training_time(r: CellResult) -> float | None:
    return r.training_time_s


def round_values(
    results: Iterable[CellResult],
    value: Callable[[CellResult], float | None] = training_time,
    *,
    include_disturbed: bool = False,
) -> dict[ConfigKey, dict[int, float]]:
    """Per configuration, its usable values by round: successful, positive, and (unless
    ``include_disturbed``) undisturbed. A round run again after a disturbed attempt has
    several attempts: its first undisturbed one counts, else (included) its first."""
    out: dict[ConfigKey, dict[int, float]] = {}
    # Undisturbed attempts first, each group in attempt order: the first one seen wins.
    for r in sorted(results, key=lambda r: (r.disturbed, r.attempt)):
        if not r.ok or (r.disturbed and not include_disturbed):
            continue
        v = value(r)
        if v is not None and v > 0:
            out.setdefault(r.key, {}).setdefault(r.round, v)
    return out


# How pairing.compare_rounds compares the common rounds: "auto", chosen by simulation
# (benchmarks/decide.py, docs/methods.md): Mann-Whitney on the common rounds by default,
# paired by round (Wilcoxon signed-rank) when one side is over 3x as noisy as the other or
# the rounds move both sides together (drift, bursts), read from statistics that do not
# see the difference's sign (pairing.choose_method). With 2 % vs 50 % noise and equal
# medians, bench-decide's scenario gave false "different" 2.92 +/- 0.22 % (1 standard
# error, 6,000 trials) for auto and 6.43 +/- 0.32 % for Mann-Whitney on the common rounds
# alone (an independent audit measured the first auto rule at 2.85 +/- 0.26 %, not the
# 2.1 % this comment said); a 20 % slowdown under 1 %/round drift was found in 91.6 %.
# Below the 7 rounds a paired interval needs at the default looks, auto pairs only when
# the spreads differ over 8x, so a clear difference is still decided at the first look.
ROUND_METHOD = "auto"


def statistic(
    base: RoundValues,
    other: RoundValues,
    settings: Settings,
    dependence_r: float | None = None,
) -> stats.Comparison:
    """The statistic, on the rounds both sides have (the caller checks there is one):
    :func:`tfvariants.analyze.statistics.pairing.compare_rounds` with :data:`ROUND_METHOD`
    (``dependence_r``: the workload's between-round dependence, :func:`dependence`)."""
    return pairing.compare_rounds(
        base,
        other,
        min_effect=settings.min_effect,
        confidence=settings.confidence,
        looks=settings.looks,
        method=ROUND_METHOD,
        equivalence_band=settings.band,
        dependence_r=dependence_r,
    )


def dependence(values: Mapping[ConfigKey, RoundValues], baseline: ConfigKey) -> float | None:
    """The between-round dependence of a workload, pooled over every configuration's
    per-round log ratios to the baseline (pairing.dependence): a machine whose
    configurations each wander is seen sooner and surer in all of them than in one pair
    (one pair's lag-1 at 10 rounds flags an AR(1) 0.5 wander in few runs)."""
    base = values.get(baseline) or {}
    series = []
    for c, mine in values.items():
        rounds = sorted(set(base) & set(mine)) if c != baseline else []
        if all(base[r] > 0 and mine[r] > 0 for r in rounds):
            series.append([math.log(mine[r] / base[r]) for r in rounds])
    return pairing.dependence(series)


@dataclass(frozen=True)
class Judgement:
    """One configuration against its workload's baseline."""

    config: ConfigKey
    baseline: ConfigKey
    rounds: tuple[int, ...]  # the rounds compared: both sides have a usable value
    comparison: stats.Comparison | None  # None: no common round yet

    @property
    def open(self) -> bool:
        """Another round of both sides could still change the verdict."""
        return self.comparison is None or self.comparison.verdict == Verdict.UNDECIDED


def measured(results: Iterable[CellResult]) -> set[ConfigKey]:
    """Configurations with at least one successful repeat, disturbed or not."""
    return {r.key for r in results if r.ok}


def compare_with(
    values: Mapping[ConfigKey, RoundValues],
    baseline: ConfigKey,
    configs: Iterable[ConfigKey],
    settings: Settings,
    ran: Collection[ConfigKey] | None = None,
) -> dict[ConfigKey, Judgement]:
    """Every configuration (but the baseline) against it, where both ``ran`` (have a
    successful repeat; default: usable values). A pair without a common usable round
    (e.g. every repeat of one side disturbed) gets a Judgement with no comparison: open,
    since another round may give one; a side that never succeeded gets none."""
    ran = set(values) if ran is None else set(ran)
    base = values.get(baseline) or {}
    out: dict[ConfigKey, Judgement] = {}
    if baseline not in ran:
        return out
    pooled = dependence(values, baseline)
    for c in configs:
        if c == baseline or c not in ran:
            continue
        mine = values.get(c) or {}
        rounds = tuple(sorted(set(base) & set(mine)))
        cmp = statistic(base, mine, settings, pooled) if rounds else None
        out[c] = Judgement(c, baseline, rounds, cmp)
    return out


def pick_baseline(
    configs: Sequence[ConfigKey],
    values: Mapping[ConfigKey, RoundValues],
    *,
    devices: Mapping[str, str],
    variant_order: Sequence[str],
    oversubscribed: Collection[tuple[str, int]] = (),
    requested: Requested | None = None,
    ran: Collection[ConfigKey] | None = None,
) -> ConfigKey | None:
    """The baseline among one workload's configurations.

    ``--baseline VARIANT@THREADS`` is taken as given; ``--baseline VARIANT`` means its
    configuration with the most threads that has usable values (else with the most
    threads); the default is :func:`tfvariants.analyze.statistics.decide.choose_baseline` on the
    number of usable values (so never a configuration without any)."""
    if not configs:
        return None
    workload = configs[0].workload
    if requested is not None:
        variant, threads = requested
        if threads is not None:
            return ConfigKey(workload, variant, threads)
        mine = [c for c in configs if c.variant == variant]
        usable = [c for c in mine if values.get(c)]
        pool = usable or mine
        return max(pool, key=lambda c: c.threads) if pool else None
    counts = {(c.variant, c.threads): len(values.get(c) or {}) for c in configs}
    if not any(counts.values()) and ran is not None:
        # Nothing usable yet (every repeat disturbed): the same rule among those that ran,
        # so the comparisons stay open instead of vanishing.
        counts = {(c.variant, c.threads): int(c in ran) for c in configs}
    chosen = choose_baseline(counts, devices, variant_order, oversubscribed)
    return ConfigKey(workload, *chosen) if chosen else None


@dataclass(frozen=True)
class WorkloadVerdicts:
    workload: str
    baseline: ConfigKey | None
    verdicts: Mapping[ConfigKey, Judgement]

    @property
    def open(self) -> list[Judgement]:
        return [v for v in self.verdicts.values() if v.open]


def workload_verdicts(
    configs: Sequence[ConfigKey],
    values: Mapping[ConfigKey, RoundValues],
    settings: Settings,
    *,
    devices: Mapping[str, str],
    variant_order: Sequence[str],
    oversubscribed: Collection[tuple[str, int]] = (),
    requested: Requested | None = None,
    ran: Collection[ConfigKey] | None = None,
) -> WorkloadVerdicts:
    """THE comparison of one workload: its baseline, and every configuration in
    ``configs`` (one workload's) against it on common rounds (``ran``: see
    :func:`compare_with`)."""
    if not configs:
        raise ValueError("workload_verdicts needs at least one configuration")
    base = pick_baseline(
        configs,
        values,
        devices=devices,
        variant_order=variant_order,
        oversubscribed=oversubscribed,
        requested=requested,
        ran=ran,
    )
    verdicts = compare_with(values, base, configs, settings, ran) if base is not None else {}
    return WorkloadVerdicts(configs[0].workload, base, verdicts)
