"""The analysis's units: a Group is every repeat of one (workload, variant, threads),
a WorkloadReport the groups of one workload with its baseline and conclusions."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from tfvariants.analyze.cost.pricing import CellCost
from tfvariants.analyze.shared import cautions
from tfvariants.analyze.shared.parity import VariantParity
from tfvariants.analyze.statistics import stats
from tfvariants.analyze.statistics.verdict import Verdict
from tfvariants.analyze.statistics.verdicts import Judgement
from tfvariants.store.training import CellResult, OfConfig


@dataclass(frozen=True)
class Measurements:
    """What a configuration's successful repeats measured besides the time (medians)."""

    steady: stats.Interval | None = None  # steady epoch time, s
    step_s: stats.Interval | None = None  # steady step time
    warmup_s: float | None = None
    samples_per_s: float | None = None
    gflops_per_s: float | None = None
    accuracy: float | None = None
    chance: float | None = None  # accuracy by guessing
    peak_rss_bytes: int | None = None  # the largest over repeats
    utilisation: float | None = None  # CPU time / wall / CPUs pinned
    overhead: Mapping[str, float] = field(default_factory=dict)  # import/build/warm-up/steady, s


@dataclass(frozen=True)
class Group(OfConfig):
    """All repeats of one (workload, variant, threads)."""

    workload: str
    variant: str
    threads: int
    device: str = "cpu"
    results: list[CellResult] = field(default_factory=list)
    time: stats.Interval | None = None  # projected full-schedule training time, s
    measured: Measurements = field(default_factory=lambda: Measurements())
    oversubscribed: bool = False
    oversubscription_ratio: float = 1.0
    times: list[float] = field(default_factory=list)
    costs: list[float] = field(default_factory=list)
    round_times: dict[int, float] = field(default_factory=dict)  # usable repeats, by round
    round_costs: dict[int, float] = field(default_factory=dict)  # usable repeats, by round
    cost: CellCost | None = None  # at the median time
    cost_iv: stats.Interval | None = None
    time_cmp: stats.Comparison | None = None
    cost_cmp: stats.Comparison | None = None
    verdict: Judgement | None = None  # the time comparison with the rounds it used
    under_load: tuple[int, int] | None = None  # its rounds from disturbed or busy cells (loadlabel)
    cost_rounds: int = 0  # rounds the cost comparison used
    is_baseline: bool = False
    warnings: list[cautions.StatWarning] = field(default_factory=list)
    bimodal: str | None = None

    @property
    def chance(self) -> float | None:
        """Accuracy by guessing (the workload's), as accuracy parity reads it."""
        return self.measured.chance

    @property
    def ok(self) -> list[CellResult]:
        return [r for r in self.results if r.ok]

    def n(self, status: str) -> int:
        return sum(1 for r in self.results if r.status == status)

    @property
    def disturbed(self) -> int:
        """Successful repeats left out of the verdict: others used the cell's CPUs."""
        return sum(1 for r in self.results if r.disturbed)

    @property
    def rounds_compared(self) -> int:
        """The rounds the time ratio to the baseline was computed on."""
        return len(self.verdict.rounds) if self.verdict is not None else 0

    @property
    def reasons(self) -> list[str]:
        return sorted({r.reason for r in self.results if not r.ok and r.reason})

    @property
    def flags(self) -> list[str]:
        out: list[str] = []
        if self.oversubscribed:
            out.append(f"oversubscribed x{self.oversubscription_ratio:g}")
        for status in ("failed", "timeout", "skipped"):
            if self.n(status):
                out.append(f"{self.n(status)} {status}")
        if (
            self.time_cmp is not None
            and not self.is_baseline
            and self.time_cmp.verdict == Verdict.UNDECIDED
        ):
            out.append(Verdict.UNDECIDED)
        if self.verdict is not None and self.verdict.comparison is None:
            out.append("no common undisturbed round with the baseline")
        if self.bimodal:
            out.append("bimodal")
        if self.disturbed:
            out.append(f"{self.disturbed} disturbed")
        return out


@dataclass(frozen=True)
class WorkloadReport:
    name: str
    groups: list[Group]
    baseline: Group | None
    fastest: Group | None = None
    cheapest: Group | None = None
    pareto: list[Group] = field(default_factory=list)
    conclusions: list[str] = field(default_factory=list)
    # decided against the next fastest / next cheapest (else the lead is only a median's)
    fastest_decided: bool = False
    cheapest_decided: bool = False
    parity: list[VariantParity] = field(default_factory=list)  # final accuracy/loss
    parity_baseline: str | None = None  # the variant parity is judged against
