"""The one comparison: which configuration is a workload's baseline, which repeats of a
configuration are set against which of the baseline's, and the verdict.

The report (:mod:`tfvariants.analyze.analysis`) and the adaptive rounds
(:mod:`tfvariants.commands.rounds`) both call :func:`workload_verdicts`, so the rounds
keep running exactly the comparisons the report will call undecided, and never stop on
one it would not call decided.

Verdicts are contemporaneous: a configuration is compared with the baseline on the
rounds (repeat index) both have, so slow drift of the machine, or a configuration that
stopped early while the baseline went on, cannot bias the ratio. Disturbed cells (others
used their CPUs, :data:`tfvariants.store.cellresult.DISTURBED_SHARE`) are left out by
default: they stay on disk and in the report's tables.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from tfvariants.analyze import stats
from tfvariants.analyze.decide import Settings, choose_baseline
from tfvariants.store.cellresult import CellResult, ConfigKey

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
    ``include_disturbed``) undisturbed."""
    out: dict[ConfigKey, dict[int, float]] = {}
    for r in results:
        if not r.ok or (r.disturbed and not include_disturbed):
            continue
        v = value(r)
        if v is not None and v > 0:
            out.setdefault(r.key, {})[r.round] = v
    return out


def statistic(base: RoundValues, other: RoundValues, settings: Settings) -> stats.Comparison:
    """The statistic, on the rounds both sides have (the caller checks there is one).
    ``stats.compare`` restricted to common rounds; a round-paired statistic with the
    same arguments replaces it in this one place."""
    common = sorted(set(base) & set(other))
    return stats.compare(
        [other[i] for i in common],
        [base[i] for i in common],
        min_effect=settings.min_effect,
        confidence=settings.confidence,
        looks=settings.looks,
    )


@dataclass(frozen=True)
class Verdict:
    """One configuration against its workload's baseline."""

    config: ConfigKey
    baseline: ConfigKey
    rounds: tuple[int, ...]  # the rounds compared: both sides have a usable value
    comparison: stats.Comparison | None  # None: no common round yet

    @property
    def open(self) -> bool:
        """Another round of both sides could still change the verdict."""
        return self.comparison is None or self.comparison.verdict == "undecided"


def compare_with(
    values: Mapping[ConfigKey, RoundValues],
    baseline: ConfigKey,
    configs: Iterable[ConfigKey],
    settings: Settings,
) -> dict[ConfigKey, Verdict]:
    """Every configuration that has usable values (but the baseline) against it."""
    base = values.get(baseline) or {}
    out: dict[ConfigKey, Verdict] = {}
    if not base:
        return out
    for c in configs:
        mine = values.get(c) or {}
        if c == baseline or not mine:
            continue
        rounds = tuple(sorted(set(base) & set(mine)))
        out[c] = Verdict(c, baseline, rounds, statistic(base, mine, settings) if rounds else None)
    return out


def pick_baseline(
    configs: Sequence[ConfigKey],
    values: Mapping[ConfigKey, RoundValues],
    *,
    devices: Mapping[str, str],
    variant_order: Sequence[str],
    oversubscribed: Collection[tuple[str, int]] = (),
    requested: Requested | None = None,
) -> ConfigKey | None:
    """The baseline among one workload's configurations.

    ``--baseline VARIANT@THREADS`` is taken as given; ``--baseline VARIANT`` means its
    configuration with the most threads that has usable values (else with the most
    threads); the default is :func:`tfvariants.analyze.decide.choose_baseline` on the
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
    chosen = choose_baseline(counts, devices, variant_order, oversubscribed)
    return ConfigKey(workload, *chosen) if chosen else None


@dataclass(frozen=True)
class WorkloadVerdicts:
    workload: str
    baseline: ConfigKey | None
    verdicts: Mapping[ConfigKey, Verdict]

    @property
    def open(self) -> list[Verdict]:
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
) -> WorkloadVerdicts:
    """THE comparison of one workload: its baseline, and every configuration in
    ``configs`` (one workload's) against it on common rounds."""
    if not configs:
        raise ValueError("workload_verdicts needs at least one configuration")
    base = pick_baseline(configs, values, devices=devices, variant_order=variant_order,
                         oversubscribed=oversubscribed, requested=requested)  # fmt: skip
    verdicts = compare_with(values, base, configs, settings) if base is not None else {}
    return WorkloadVerdicts(configs[0].workload, base, verdicts)
