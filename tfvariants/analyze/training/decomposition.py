"""Where a cell's time varies, from a run's stored cells: inside its process (the windows
of one cell), between processes, and over time (consecutive cells of different
configurations moving together: a neighbour, the hypervisor, the clock), and so about
how many repeats per side a +/-10 % interval needs, one cell after another or side by
side (docs/methods.md, "The noise, decomposed").

All on the log scale (relative variation, so configurations of different speeds pool),
on the values the verdicts use (each configuration's usable repeats, by round):

- a cell's variance ``total``: the pooled variance of its configuration's log times
  around their mean;
- ``within``: a cell's share from its own windows, the pooled variance of one window's
  log mean inside a process over the cell's number of windows (what a longer window
  lowers);
- ``over_time``: what two cells of different configurations run one after the other in
  the same round share: the mean product of their deviations from their configuration's
  mean, times n/(n-1) (a configuration's mean holds 1/n of a shared round effect, so the
  raw products underestimate it by that factor: exact for round effects, and a slight
  underestimate for a slower wander). It is what a side-by-side design cancels;
- ``between``: the rest, ``total - within - over_time`` (at least 0): what only more
  processes average out.

With 5-20 rounds the over-time estimate is rough: from m pairs its standard error is
about total/sqrt(m) (4 configurations, 5 rounds: 15 pairs, about +/-0.26 of ``total``).
So the estimate carries its standard error (``over_time_se``, from the products' own
spread), and the measurement design (analyze/training/design.py) asks for two of them
before it acts on it.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tfvariants.analyze.training.groups import Group

# The +/-band an interval of the ratio should reach, and its confidence (two-sided):
# the line's "about N repeats per side for +/-10 %".
TARGET_BAND = 0.10
Z = 1.96


@dataclass(frozen=True)
class Cell:
    """One usable repeat as the decomposition reads it."""

    config: str  # workload + configuration
    round: int
    started: str  # ISO 8601: the cells' order in time ("" when unknown)
    log_time: float
    window_logs: tuple[float, ...] = ()  # log mean step time of each steady window


@dataclass(frozen=True)
class Decomposition:
    """Variance components of a cell's log time (a frozen record, computed once per
    report)."""

    total: float
    within: float
    between: float
    over_time: float
    over_time_se: float  # the over-time estimate's standard error
    cells: int
    configs: int
    pairs: int  # consecutive cells of one round and different configurations
    windowed: bool = True  # some cell had windows: else the within part is in "between"

    def share(self, part: float) -> float:
        return part / self.total if self.total > 0 else 0.0

    def repeats_for(self, band: float = TARGET_BAND, *, side_by_side: bool = False) -> int:
        """Repeats per side for a 95 % interval of the ratio of two configurations'
        mean times within +/-band: 2 * (z * sigma / log(1 + band))^2, with sigma^2 a
        cell's variance (side by side: without the part consecutive cells share)."""
        var = self.total - (self.over_time if side_by_side else 0.0)
        return max(2, math.ceil(2 * (Z * math.sqrt(max(var, 0.0)) / math.log1p(band)) ** 2))

    @property
    def spread(self) -> float:
        """A cell's standard deviation on the log scale (about a relative spread)."""
        return math.sqrt(self.total)

    def parts(self) -> str:
        """The split in few words (the report's noise sentence holds it: a page of many
        configurations must not grow by a paragraph)."""
        within, between, time = (self.share(x) for x in (self.within, self.between, self.over_time))
        se = self.share(self.over_time_se)
        processes = (
            f"{within:.0%} within processes, {between:.0%} between"
            if self.windowed
            else f"{between:.0%} within or between processes"  # no windows to tell them apart
        )
        sure = f"+/-{se:.0%}" if math.isfinite(se) else "(too few pairs to tell)"
        return f"{processes}, {time:.0%} over time {sure}"

    def implication(self) -> str:
        """What the spread implies for the repeats, one after another and side by side."""
        n, paired = self.repeats_for(), self.repeats_for(side_by_side=True)
        return f"+/-{TARGET_BAND:.0%} needs about {n} repeats per side" + (
            f", {paired} side by side" if paired < n else ""
        )

    def sentence(self) -> str:
        """The terminal's noise line: a cell's spread, where it comes from, what it implies."""
        return (
            f"noise: a cell varied by about {self.spread:.1%} ({self.parts()}); "
            f"{self.implication()}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "within": self.within,
            "between": self.between,
            "over_time": self.over_time,
            "over_time_se": self.over_time_se,
            "cells": self.cells,
            "configs": self.configs,
            "pairs": self.pairs,
            "windowed": self.windowed,
        }


def _within(cells: Sequence[Cell]) -> float:
    """A cell's variance from its windows: the pooled window variance over the windows
    per cell (median), 0 without cells of two windows or more."""
    windowed = [c.window_logs for c in cells if len(c.window_logs) >= 2]
    df = sum(len(w) - 1 for w in windowed)
    if not df:
        return 0.0
    pooled = sum(statistics.variance(w) * (len(w) - 1) for w in windowed) / df
    return pooled / statistics.median(len(w) for w in windowed)


def _over_time(
    deviations: Sequence[tuple[Cell, float]], repeats: Mapping[str, int]
) -> tuple[float, float, int]:
    """(estimate, its standard error, pairs): the mean product of the deviations of
    consecutive cells of one round and different configurations, corrected for the 1/n
    of a shared effect each configuration's mean absorbs."""
    ordered = sorted(deviations, key=lambda cd: (cd[0].round, cd[0].started, cd[0].config))
    products = []
    for (a, da), (b, db) in zip(ordered, ordered[1:], strict=False):
        if a.round != b.round or a.config == b.config:
            continue
        n = 2 / (1 / repeats[a.config] + 1 / repeats[b.config])  # their harmonic mean
        products.append(da * db * n / (n - 1))
    if len(products) < 2:
        return 0.0, math.inf, len(products)
    se = statistics.stdev(products) / math.sqrt(len(products))
    return statistics.fmean(products), se, len(products)


def decompose(cells: Sequence[Cell]) -> Decomposition | None:
    """The components from the usable repeats; None without two configurations of two
    repeats or more (nothing moves "together" with one)."""
    by_config: dict[str, list[Cell]] = {}
    for c in cells:
        by_config.setdefault(c.config, []).append(c)
    kept = {k: v for k, v in by_config.items() if len(v) >= 2}
    df = sum(len(v) - 1 for v in kept.values())
    if len(kept) < 2:
        return None
    deviations: list[tuple[Cell, float]] = []
    for group in kept.values():
        mean = statistics.fmean(c.log_time for c in group)
        deviations += [(c, c.log_time - mean) for c in group]
    total = sum(d * d for _, d in deviations) / df
    used = [c for group in kept.values() for c in group]
    within = min(_within(used), total)
    time, se, pairs = _over_time(deviations, {k: len(v) for k, v in kept.items()})
    time = min(max(time, 0.0), total - within)  # a variance: not below 0, not above the rest
    return Decomposition(
        total=total,
        within=within,
        between=total - within - time,
        over_time=time,
        over_time_se=se,
        cells=len(used),
        configs=len(kept),
        pairs=pairs,
        windowed=any(len(c.window_logs) >= 2 for c in used),
    )


def cells_of(groups: Sequence[Group]) -> list[Cell]:
    """The usable repeats of ``groups`` (the values the verdicts use, by round), each
    with when its process started and its windows."""
    out = []
    for g in groups:
        by_round = {r.round: r for r in sorted(g.ok, key=lambda r: r.attempt)}  # last attempt
        for rnd, value in g.round_times.items():
            if not value > 0:
                continue
            r = by_round.get(rnd)
            out.append(
                Cell(
                    config=f"{g.workload} {g.label}",
                    round=rnd,
                    started=(r.started_at if r is not None else None) or "",
                    log_time=math.log(value),
                    window_logs=tuple(math.log(w) for w in r.steady_windows_s if w > 0)
                    if r is not None
                    else (),
                )
            )
    return out
