"""How close to the hardware each configuration ran: its achieved GFLOP/s in the steady
window (the workload's FLOPs per step / the steady step time) against the attainable peak
(a dense matrix product and a convolution measured by each variant's own TensorFlow at
the cell's pinning: tfvariants.variants.peak) and the theoretical peak of the CPU.

Plain data for the report (a section, its chart, the CSV's columns and the compiled
answer's headroom), from run.json's ``variant_info[variant]["peak"][threads]`` only.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tfvariants.analyze.shared.format import sig3
from tfvariants.plan.cell import config_label
from tfvariants.store.record import RunRecord
from tfvariants.store.training import OfConfig

if TYPE_CHECKING:
    from tfvariants.analyze.training.groups import WorkloadReport

NOT_MEASURED = "not measured"
NO_GPU = "not measured (no GPU)"  # as tfvariants.variants.peak.gpu says it


@dataclass(frozen=True)
class Peak:
    """One variant at one thread count: what its kernels reached, what the CPU could."""

    variant: str
    threads: int
    device: str
    attainable: float | None  # GFLOP/s, best kernel of the probe
    kernel: str | None
    theoretical: float | None  # GFLOP/s for the instructions its kernels use
    level: str | None  # SSE4 / AVX / AVX2 / AVX512
    how: str  # where the theoretical figure's parts come from
    why: str | None  # why there is no attainable figure
    busy: float | None = None  # others' share of its CPUs while the probe ran
    # what the theoretical column says without a figure: "not measured (no GPU)" for a
    # GPU variant on a host without one, "<name>: unknown, not stated" for a GPU the
    # datasheet table does not know
    no_theoretical: str = NOT_MEASURED
    memory: float | None = None  # GB/s of the probe's in-place add (STREAM's counting)

    @property
    def missing(self) -> str:
        """What the attainable column says without a figure."""
        return NO_GPU if self.device == "gpu" and NO_GPU in (self.why or "") else NOT_MEASURED

    @property
    def disturbed(self) -> bool:
        return self.busy is not None and self.busy > 0.10  # as a cell's default limit

    @property
    def label(self) -> str:
        return config_label(self.variant, self.threads)


@dataclass(frozen=True)
class Share(OfConfig):
    """One configuration of one workload against the peaks of its thread count."""

    workload: str
    variant: str
    threads: int
    achieved: float | None  # GFLOP/s, median over repeats
    own_attainable: float | None  # its own build's attainable peak
    cpu_attainable: float | None  # the best attainable of any build at these threads
    cpu_theoretical: float | None  # the highest theoretical of any build at these threads
    device: str = "cpu"  # a GPU configuration against the GPU's peaks
    note: str | None = None  # why its own build's peak has no figure (the CSV's peak_note)

    def share(self, peak: float | None) -> float | None:
        """Achieved as a fraction of ``peak``."""
        return self.achieved / peak if self.achieved and peak else None

    @property
    def headroom(self) -> float | None:
        """How many times faster it would run at the CPU's attainable peak."""
        return (
            self.cpu_attainable / self.achieved if self.achieved and self.cpu_attainable else None
        )


@dataclass(frozen=True)
class Roofline:
    peaks: tuple[Peak, ...]
    shares: tuple[Share, ...]
    sentences: tuple[str, ...]


def _num(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and value > 0 else None


def peaks_of(run: RunRecord) -> list[Peak]:
    """The peaks stored in run.json (none for runs made before the probe or --no-peak)."""
    out: list[Peak] = []
    for variant, entry in run.variant_info.items():
        for threads, rec in entry.peak.items():
            if not isinstance(rec, dict) or not str(threads).isdigit():
                continue
            theo: dict[str, Any] = (
                rec["theoretical"] if isinstance(rec.get("theoretical"), dict) else {}
            )
            how = ", ".join(
                str(p)
                for p in (
                    theo.get("level_source"),
                    theo.get("microarch") and f"{theo['microarch']}: {theo.get('units_source')}",
                    theo.get("mhz") and f"{sig3(theo['mhz'])} MHz from {theo.get('mhz_source')}",
                    theo.get("cores") and f"{theo['cores']} core(s)",
                )
                if p
            )
            out.append(
                Peak(
                    variant,
                    int(threads),
                    str(rec.get("device") or "cpu"),
                    _num(rec.get("attainable_gflops_per_s")),
                    rec.get("best_kernel"),
                    _num(theo.get("gflops_per_s")),
                    theo.get("level"),
                    how or str(rec.get("theoretical_why") or NOT_MEASURED),
                    rec.get("why") if not _num(rec.get("attainable_gflops_per_s")) else None,
                    _share(rec.get("others_share")),
                    str(rec.get("theoretical_why") or NOT_MEASURED),
                    _num(rec.get("memory_gb_per_s")),
                )
            )
    return sorted(out, key=lambda p: (p.device, p.threads, p.variant))


def _share(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and 0 <= value <= 1 else None


def _best(values: Iterable[float | None]) -> float | None:
    found = [v for v in values if v]
    return max(found) if found else None


def shares_of(workloads: Iterable[WorkloadReport], peaks: list[Peak]) -> list[Share]:
    by_config = {(p.variant, p.threads): p for p in peaks}
    out: list[Share] = []
    for w in workloads:
        for g in w.groups:
            own = by_config.get((g.variant, g.threads))
            # The CPU's peaks: over the CPU builds at this thread count (a GPU has its own).
            same = [p for p in peaks if p.threads == g.threads and p.device == g.device]
            out.append(
                Share(
                    w.name,
                    g.variant,
                    g.threads,
                    g.measured.gflops_per_s,
                    own.attainable if own else None,
                    _best(p.attainable for p in same),
                    _best(p.theoretical for p in same),
                    g.device,
                    _note(own),
                )
            )
    return out


def _note(peak: Peak | None) -> str | None:
    """Why a configuration's own peaks lack a figure, in the CSV's words."""
    if peak is None:
        return None
    parts = [] if peak.attainable else [f"attainable {peak.missing}: {peak.why or '?'}"]
    if not peak.theoretical:
        parts.append(f"theoretical {peak.no_theoretical}")
    return "; ".join(parts) or None


def _pct(x: float | None) -> str:
    return f"{x * 100:.0f} %" if x is not None else "n/a"


def sentences(shares: list[Share], peaks: list[Peak]) -> list[str]:
    """One per workload, for its configuration nearest the peak; plus what the
    theoretical peak means when a measured kernel beat it."""
    out: list[str] = []
    for workload in dict.fromkeys(s.workload for s in shares):
        mine = [s for s in shares if s.workload == workload and s.headroom]
        if not mine:
            continue
        s = min(mine, key=lambda x: x.headroom or 0.0)
        theo = s.share(s.cpu_theoretical)
        tail = f" and {_pct(theo)} of its theoretical peak" if theo else ""
        out.append(
            f"{workload} at {s.threads} thread(s) ({s.variant}) runs at "
            f"{_pct(s.share(s.cpu_attainable))} of this {s.device.upper()}'s attainable peak "
            f"({sig3(s.cpu_attainable or 0)} GFLOP/s, the best dense kernel any build "
            f"reached at {s.threads} thread(s)){tail}: no build whose kernels reach that peak "
            f"can make it more than {sig3(s.headroom or 0)}x faster."
        )
    busy = [p for p in peaks if p.disturbed]
    if busy:
        out.append(
            "Other processes used more than 10 % of the CPUs while the peak probe ran for "
            f"{', '.join(p.label for p in busy)}: those attainable peaks are low (shares high); "
            "a later run probes them again (up to 3 times) and keeps the best."
        )
    beaten = [p for p in peaks if p.attainable and p.theoretical and p.attainable > p.theoretical]
    if beaten:
        labels = ", ".join(p.label for p in beaten)
        out.append(
            f"Measured kernels beat the theoretical peak ({labels}): the cores ran above the "
            "clock the host reports (a nominal clock under a hypervisor, or boost), so read "
            "the theoretical figures as lower bounds."
        )
    return out


def roofline(workloads: list[WorkloadReport], run: RunRecord) -> Roofline | None:
    """The report's section, or None when the run stored no peaks."""
    peaks = peaks_of(run)
    if not peaks:
        return None
    shares = shares_of(workloads, peaks)
    return Roofline(tuple(peaks), tuple(shares), tuple(sentences(shares, peaks)))


def csv_columns(roof: Roofline | None) -> dict[tuple[str, str, int], dict[str, Any]]:
    """Per (workload, variant, threads): the CSV's peak columns."""
    out: dict[tuple[str, str, int], dict[str, Any]] = {}
    for s in roof.shares if roof else ():
        out[(s.workload, s.variant, s.threads)] = {
            "attainable_gflops_per_s": s.own_attainable,
            "cpu_attainable_gflops_per_s": s.cpu_attainable,
            "theoretical_gflops_per_s": s.cpu_theoretical,
            "pct_of_attainable": s.share(s.cpu_attainable),
            "pct_of_theoretical": s.share(s.cpu_theoretical),
            "peak_note": s.note,
        }
    return out


CSV_COLUMNS = [
    "attainable_gflops_per_s",
    "cpu_attainable_gflops_per_s",
    "theoretical_gflops_per_s",
    "pct_of_attainable",
    "pct_of_theoretical",
    "peak_note",
]


def headroom(roof: Roofline | None, variants: Iterable[str]) -> list[str]:
    """For the compiled answer: how much faster each build could have run each workload
    (``roof``: the report's one roofline)."""
    if roof is None:
        return []
    wanted = set(variants)
    lines = []
    for s in roof.shares:
        if s.variant in wanted and s.headroom:
            own = s.share(s.own_attainable)
            lines.append(
                f"Headroom: {s.workload} on {s.label} ran at {_pct(s.share(s.cpu_attainable))} of "
                f"this CPU's attainable peak ({_pct(own)} of its own build's): at most "
                f"{sig3(s.headroom)}x faster with any build."
            )
    return lines
