"""What a comparison is decided with: the settings (minimum effect, confidence, number
of looks of the stopping rule) and the default baseline. :meth:`Settings.from_options`
and :func:`run_settings` are the ONE reader of the decision settings that the adaptive
rounds and the reports (training and serving) use, so that they never judge with
different settings."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from tfvariants.analyze.statistics import bands, stats
from tfvariants.analyze.statistics import looks as looks_mod
from tfvariants.analyze.statistics.looks import Looks
from tfvariants.options.decision import DecisionOptions, Override
from tfvariants.store.record import RunRecord


@dataclass(frozen=True)
class Settings:
    min_effect: float = stats.MIN_EFFECT
    confidence: float = stats.CONFIDENCE
    # The looks of the adaptive stopping rule (their repeat counts, or K): each interval
    # has the per-look level of tfvariants.analyze.statistics.looks.
    looks: Looks = 1
    # "equivalent within +/- this": the interval lies inside [1/(1+B), 1+B]. Separate from
    # min_effect (what "different" must exceed), so --min-effect 0 can still say
    # "equivalent". None: 5 %, or min_effect when that is larger (no gap between the two).
    equivalence_band: float | None = None

    @classmethod
    def from_options(
        cls, options: DecisionOptions | None, looks: Looks = 1, override: Override | None = None
    ) -> Settings:
        """The decision settings: ``override``'s, else the run's options (stored and
        bounded by run.json's loader, or the resolved options of a run being made), else
        the defaults."""
        o = options if options is not None else DecisionOptions()
        given = override or Override()
        effect = given.min_effect if given.min_effect is not None else o.min_effect
        confidence = given.confidence if given.confidence is not None else o.confidence
        band = o.equivalence_band
        return cls(
            float(effect), float(confidence), looks, float(band) if band is not None else None
        )

    @property
    def band(self) -> float:
        """The equivalence band in force."""
        if self.equivalence_band is not None:
            return self.equivalence_band
        return max(stats.EQUIVALENCE_BAND, self.min_effect)

    @property
    def k(self) -> int:
        return looks_mod.count(self.looks)

    @property
    def level(self) -> float:
        """The level of each displayed ratio interval."""
        return 1 - looks_mod.per_look_alpha(self.confidence, self.looks)

    @property
    def eq_level(self) -> float:
        """The level of the interval "equivalent" is judged on (two one-sided tests:
        analyze/statistics/bands.py)."""
        return 1 - bands.equivalence_alpha(self.confidence, self.looks)

    @property
    def narrowing(self) -> float:
        """ "equivalent"'s interval's width over "different"'s (normal limit)."""
        return bands.equivalence_narrowing(self.confidence, self.looks)

    def describe(self) -> str:
        looks = (
            f" over all {self.k} looks together ({stats.percent(self.level)} each, "
            "repeated confidence intervals)"
            if self.k > 1
            else ""
        )
        return (
            f"{self.confidence:.0%} confidence{looks} for each comparison on its own; "
            f"'different' means {_different_words(self.min_effect)}, 'equivalent' within "
            f"+/-{self.band:.0%} (two one-sided tests, each at {self.confidence:.0%}: "
            f"a {stats.percent(self.eq_level)} interval{' each look' if self.k > 1 else ''}); "
            "verdicts are about typical runs (medians), not the mean a bill sums"
        )


def _different_words(min_effect: float) -> str:
    """What "different" needs: an effect of at least e, or (e = 0) an interval that
    excludes 1 ("by at least 0%" would read as no condition at all)."""
    return f"by at least {min_effect:.0%}" if min_effect > 0 else "the interval excludes 1"


def run_settings(run: RunRecord, override: Override | None = None) -> Settings:
    """A stored run's decision settings (:meth:`Settings.from_options`), with the looks of
    its stopping rule: what its report decides with, training and serving alike."""
    options = run.options if isinstance(run.options, DecisionOptions) else None
    return Settings.from_options(options, run_looks(run), override)


def run_looks(run: RunRecord) -> Looks:
    """The looks of the run's stopping rule (run.json "adaptive"): their repeat counts, or
    1 for a fixed number of repeats (and for a list that is not increasing counts)."""
    planned = run.adaptive.looks if run.adaptive is not None else None
    if not planned:
        return 1
    try:
        looks_mod.check(planned)
    except ValueError:
        return 1
    return planned


def choose_baseline(
    ok_counts: Mapping[tuple[str, int], int],
    devices: Mapping[str, str],
    order: Sequence[str] = (),
    oversubscribed: Collection[tuple[str, int]] = (),
) -> tuple[str, int] | None:
    """The default baseline: the GPU configuration if one has results (most successful
    repeats, then most threads), else among the configurations with the most threads
    the one with the most successful repeats (first variant on a tie). Never one without
    results; None when nothing succeeded. Configurations that ran within their host's
    CPUs come first: an ``oversubscribed`` one says nothing about a machine with that
    many vCPUs, so it makes a poor yardstick for the others."""
    have = {k: n for k, n in ok_counts.items() if n > 0}
    if not have:
        return None
    fitting = {k: n for k, n in have.items() if k not in set(oversubscribed)}
    if fitting and not any(devices.get(k[0]) == "gpu" for k in have):
        have = fitting

    def rank(v: str) -> int:
        return list(order).index(v) if v in order else len(order)

    gpus = [k for k in have if devices.get(k[0]) == "gpu"]
    if gpus:
        return min(gpus, key=lambda k: (-have[k], -k[1], rank(k[0])))
    top = max(k[1] for k in have)
    return min((k for k in have if k[1] == top), key=lambda k: (-have[k], rank(k[0])))
