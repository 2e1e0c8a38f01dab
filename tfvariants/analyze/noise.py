"""The machine's own noise: how much identical configurations vary from run to run (an
A/A estimate), which configurations switched between two speeds, what else ran on
the pinned CPUs, and so how big a difference this host can resolve in this run."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tfvariants.analyze import stats, windows
from tfvariants.analyze.decide import Settings
from tfvariants.analyze.fields import median_of

if TYPE_CHECKING:
    from tfvariants.analyze.groups import Group

NOISY_SHARE = 0.10  # other processes or steal above this share of the pinned CPUs


@dataclass
class HostNoise:
    spread: float | None  # typical run-to-run variation of one configuration (MAD of log)
    repeats: int  # typical successful repeats per configuration
    resolvable: float | None  # smallest ratio called "different" about half the time
    bimodal: list[str] = field(default_factory=list)  # "workload config: words"
    others_share: float | None = None  # median share of the pinned CPUs used by others
    steal_share: float | None = None
    windows: str | None = None  # within- vs between-process variance of the step time
    window_plan: str | None = None  # the steady window the adaptive rounds chose
    warnings: list[stats.StatWarning] = field(default_factory=list)

    def sentence(self) -> str:
        if self.spread is None:
            return "Too few repeats to estimate this host's run-to-run noise."
        text = (
            f"Identical configurations varied by about {self.spread:.1%} from run to run "
            f"(median absolute deviation of the log times, {self.repeats} repeats each)"
        )
        if self.resolvable is not None:
            text += (
                f"; with {self.repeats} repeats per side this run can resolve differences of "
                f"about {self.resolvable - 1:.0%} or more (smaller ones stay undecided)"
            )
        return text + "."


def host_noise(groups: Sequence[Group], settings: Settings) -> HostNoise:
    times = [g.times for g in groups if len(g.times) >= 2]
    residuals = stats.pooled_log_residuals(times)
    n = int(statistics.median(len(t) for t in times)) if times else 0
    spread = statistics.median(abs(r) for r in residuals) if residuals else None
    resolvable = stats.resolvable_ratio(
        residuals, n, min_effect=settings.min_effect, confidence=settings.confidence,
        looks=settings.looks,
    ) if residuals else None  # fmt: skip
    noise = HostNoise(spread, n, resolvable)
    for g in groups:
        if g.bimodal:
            noise.bimodal.append(f"{g.workload} {g.label}: {g.bimodal}")
    ok = [r for g in groups for r in g.ok]
    comp = windows.components(ok)
    noise.windows = comp.sentence() if comp else None
    noise.others_share = median_of(r.others_share for r in ok)
    noise.steal_share = median_of(r.steal_share for r in ok)
    parts = []
    if noise.others_share is not None and noise.others_share >= NOISY_SHARE:
        parts.append(f"other processes used {noise.others_share:.0%}")
    if noise.steal_share is not None and noise.steal_share >= NOISY_SHARE:
        parts.append(f"the hypervisor stole {noise.steal_share:.0%}")
    if parts:
        noise.warnings.append(
            stats.StatWarning(
                "noisy_host",
                "The machine was busy during the cells: "
                + " and ".join(parts)
                + " of the pinned CPUs' time (median over cells)",
                "close other programs, or run on a dedicated machine",
            )
        )
    return noise
