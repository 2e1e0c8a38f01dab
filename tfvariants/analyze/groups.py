"""The analysis's units: a Group is every repeat of one (workload, variant, threads),
a WorkloadReport the groups of one workload with its baseline and conclusions."""

from __future__ import annotations

from dataclasses import dataclass, field

from tfvariants.analyze import stats
from tfvariants.analyze.parity import VariantParity
from tfvariants.analyze.pricing import CellCost


@dataclass
class Group:
    """All repeats of one (workload, variant, threads)."""

    workload: str
    variant: str
    threads: int
    device: str = "cpu"
    results: list[dict] = field(default_factory=list)
    time: stats.Interval | None = None  # projected full-schedule training time, s
    steady: stats.Interval | None = None  # steady epoch time, s
    warmup_s: float | None = None
    samples_per_s: float | None = None
    gflops_per_s: float | None = None
    accuracy: float | None = None
    chance: float | None = None
    peak_rss_bytes: int | None = None
    oversubscribed: bool = False
    oversubscription_ratio: float = 1.0
    times: list[float] = field(default_factory=list)
    costs: list[float] = field(default_factory=list)
    cost: CellCost | None = None  # at the median time
    cost_iv: stats.Interval | None = None
    time_cmp: stats.Comparison | None = None
    cost_cmp: stats.Comparison | None = None
    is_baseline: bool = False
    warnings: list[stats.StatWarning] = field(default_factory=list)
    step_s: stats.Interval | None = None  # steady step time over repeats
    utilisation: float | None = None  # CPU time / wall / CPUs pinned, median over repeats
    overhead: dict[str, float] = field(default_factory=dict)  # import/build/warm-up/steady, s
    bimodal: str | None = None

    @property
    def label(self) -> str:
        return f"{self.variant}@{self.threads}"

    @property
    def ok(self) -> list[dict]:
        return [r for r in self.results if r.get("status") == "ok"]

    def n(self, status: str) -> int:
        return sum(1 for r in self.results if r.get("status") == status)

    @property
    def reasons(self) -> list[str]:
        return sorted(
            {
                str(r.get("reason"))
                for r in self.results
                if r.get("status") != "ok" and r.get("reason")
            }
        )

    @property
    def flags(self) -> list[str]:
        out = []
        if self.oversubscribed:
            out.append(f"oversubscribed x{self.oversubscription_ratio:g}")
        for status in ("failed", "timeout", "skipped"):
            if self.n(status):
                out.append(f"{self.n(status)} {status}")
        if (
            self.time_cmp is not None
            and not self.is_baseline
            and self.time_cmp.verdict == "undecided"
        ):
            out.append("undecided")
        if self.bimodal:
            out.append("bimodal")
        return out


@dataclass
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
