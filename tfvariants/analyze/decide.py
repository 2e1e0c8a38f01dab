"""What a comparison is decided with: the settings (minimum effect, confidence, number
of looks of the stopping rule) and the default baseline."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from tfvariants.analyze import stats


@dataclass(frozen=True)
class Settings:
    min_effect: float = stats.MIN_EFFECT
    confidence: float = stats.CONFIDENCE
    looks: int = 1  # K looks of the adaptive stopping rule: each interval is 1 - alpha/K

    @property
    def level(self) -> float:
        """The level of each displayed ratio interval."""
        return 1 - (1 - self.confidence) / self.looks

    def describe(self) -> str:
        looks = (
            f" over all {self.looks} looks ({stats.percent(self.level)} each, Bonferroni)"
            if self.looks > 1
            else ""
        )
        return (
            f"{self.confidence:.0%} confidence{looks}; differences under "
            f"{self.min_effect:.0%} count as equivalent"
        )


def run_looks(run: Mapping) -> int:
    """K of the run's stopping rule (run.json "adaptive"), 1 for a fixed number of repeats."""
    adaptive = run.get("adaptive")
    looks = adaptive.get("looks") if isinstance(adaptive, Mapping) else None
    if isinstance(looks, list) and looks and all(isinstance(x, int) for x in looks):
        return len(looks)
    return 1


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
