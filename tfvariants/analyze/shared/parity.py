"""Accuracy parity: a variant that is fast but trains to a different result must not win.

For each workload, every variant's final accuracy and loss (all its successful repeats,
all thread counts) is set against the workload's baseline variant's (the one its ratios
use). The same seed does not give the same initial weights across builds or backends,
so exact equality is not expected: a variant is flagged when its median is worse than
the baseline's median (lower accuracy, higher loss) by more than the tolerance, which is
the larger of ``SPREAD_K`` times the pooled spread of repeats and a floor (``ACC_FLOOR``
accuracy points, ``LOSS_FLOOR`` of the baseline's loss) that keeps a near-deterministic
pair of variants from being flagged over rounding. A loss that is not finite (diverged)
or an accuracy no better than chance, when the baseline learned, is always flagged. A
result *better* than the baseline's by more than the tolerance is noted, not flagged:
another backend's initial weights can train to a lower loss.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Protocol

from tfvariants.store.training import CellResult

SPREAD_K = 4.0
ACC_FLOOR = 0.05  # absolute accuracy
LOSS_FLOOR = 0.15  # relative to the baseline's median loss


@dataclass(frozen=True)
class Metric:
    """One metric of one variant: its repeats against the baseline's."""

    values: list[float]
    median: float | None
    sd: float | None
    delta: float | None = None  # median - baseline median
    tolerance: float | None = None
    outlier: bool = False  # worse than the baseline beyond the tolerance
    better: bool = False  # better than the baseline beyond the tolerance


@dataclass(frozen=True)
class VariantParity:
    variant: str
    n: int
    accuracy: Metric
    loss: Metric
    diverged: int = 0  # repeats with a non-finite loss
    chance: float | None = None
    flags: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # differs, but for the better

    @property
    def outlier(self) -> bool:
        return bool(self.flags)


def _metric(values: Iterable[float | None]) -> Metric:
    vals = [v for v in values if v is not None]
    median = statistics.median(vals) if vals else None
    sd = statistics.stdev(vals) if len(vals) > 1 else None
    return Metric(vals, median, sd)


def _pooled_sd(metrics: list[Metric]) -> float:
    """Pooled within-variant standard deviation (0 when nobody repeated)."""
    num = sum((len(m.values) - 1) * m.sd**2 for m in metrics if m.sd is not None)
    dof = sum(len(m.values) - 1 for m in metrics if m.sd is not None)
    return (num / dof) ** 0.5 if dof else 0.0


class Repeats(Protocol):
    """One configuration's repeats, as parity reads them (a training Group is one)."""

    @property
    def variant(self) -> str: ...

    @property
    def ok(self) -> list[CellResult]: ...

    @property
    def chance(self) -> float | None: ...


def parity(groups: Iterable[Repeats], baseline_variant: str | None) -> list[VariantParity]:
    """One row per variant of a workload (its groups, any threads)."""
    by_variant: dict[str, list[CellResult]] = {}
    chance: dict[str, float | None] = {}
    for g in groups:
        by_variant.setdefault(g.variant, []).extend(g.ok)
        chance.setdefault(g.variant, g.chance)
    rows = []
    for variant, results in by_variant.items():
        losses = [r.loss for r in results]
        row = VariantParity(
            variant=variant,
            n=len(results),
            accuracy=_metric(r.accuracy for r in results),
            loss=_metric(losses),
            diverged=sum(
                1 for r, v in zip(results, losses, strict=True) if v is None and r.has_metrics
            ),
            chance=chance.get(variant),
        )
        rows.append(row)
    base = next((r for r in rows if r.variant == baseline_variant), None)
    if base is None or not base.n:
        return rows
    acc_sd = _pooled_sd([r.accuracy for r in rows])
    loss_sd = _pooled_sd([r.loss for r in rows])
    return [
        row if row is base or not row.n else _judged(row, base, acc_sd, loss_sd) for row in rows
    ]


def _judged(
    row: VariantParity, base: VariantParity, acc_sd: float, loss_sd: float
) -> VariantParity:
    """``row`` judged against the baseline's: its metrics' deltas, flags and notes."""
    accuracy = _judge(row.accuracy, base.accuracy, max(SPREAD_K * acc_sd, ACC_FLOOR), +1)
    loss = row.loss
    if base.loss.median is not None:
        floor = LOSS_FLOOR * abs(base.loss.median)
        loss = _judge(row.loss, base.loss, max(SPREAD_K * loss_sd, floor), -1)
    flags: list[str] = []
    notes: list[str] = []
    for name, metric, ref, fmt in (
        ("accuracy", accuracy, base.accuracy, ".3f"),
        ("loss", loss, base.loss, ".4g"),
    ):
        if metric.outlier or metric.better:
            text = (
                f"{name} {metric.median:{fmt}} vs {ref.median:{fmt}} "
                f"(tolerance ±{metric.tolerance:{'.3f' if name == 'accuracy' else '.3g'}})"
            )
            (flags if metric.outlier else notes).append(
                text if metric.outlier else text + ": better than the baseline"
            )
    if row.diverged and not base.diverged:
        flags.append(f"{row.diverged} of {row.n} repeats diverged (loss not finite)")
    at_chance, base_acc, acc = row.chance, base.accuracy.median, accuracy.median
    if at_chance is not None and base_acc is not None and base_acc > at_chance + ACC_FLOOR:
        if acc is not None and acc <= at_chance + 0.01:
            flags.append(f"accuracy at chance ({at_chance:.2f})")
    return replace(row, accuracy=accuracy, loss=loss, flags=flags, notes=notes)


def _judge(metric: Metric, base: Metric, tolerance: float, higher_is_better: int) -> Metric:
    if metric.median is None or base.median is None:
        return metric
    delta = metric.median - base.median
    improved = delta * higher_is_better > 0
    beyond = abs(delta) > tolerance
    return replace(
        metric,
        delta=delta,
        tolerance=tolerance,
        better=beyond and improved,
        outlier=beyond and not improved,
    )
