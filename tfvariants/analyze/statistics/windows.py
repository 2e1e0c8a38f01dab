"""Where the steady step time varies, and so how long a cell's steady window should be.

Kalibera & Jones ("Rigorous benchmarking in reasonable time", 2013): a measurement has
levels (here: processes, and windows of steps inside one process), each with its own
variance and its own cost. A cell costs ``fixed_s`` (process start, TensorFlow import,
data, model build, tracing, warm-up, epoch boundaries) plus the steady window it
measures. With ``sigma2_between`` the variance of a process's true mean step time from
process to process, and ``sigma2_window`` the variance of one window's mean inside a
process, a cell whose steady window holds K windows has

    Var(cell) = sigma2_between + sigma2_window / K,   cost(cell) = fixed_s + K * window_s

and for a fixed time budget the variance of the configuration's estimate is smallest at

    K* = sqrt(fixed_s * sigma2_window / (window_s * sigma2_between)).

When processes differ much more than windows do, more processes (repeats) pay and the
window should be short; when windows scatter and processes agree, longer windows pay.

Everything is on the log scale (relative variation), so configurations of different
speeds pool. The windows of one process are not independent (a burst of other work
covers several adjacent windows): that inflates the estimate of ``sigma2_between``, so
the rule errs towards more processes, which also keeps repeats independent.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from tfvariants.store.adaptiveplans import WindowPlan as StoredWindowPlan
from tfvariants.store.training import CellResult, ConfigKey

# The window the host may choose, in seconds of steady steps per cell.
MIN_WINDOW_S = 3.0
MAX_WINDOW_S = 60.0
# The process-to-process variance needs this many degrees of freedom (cells beyond one
# per configuration) before it plans anything. A variance from 3 is known only within a
# factor of 0.32-14 (95 %), from 8 within 0.46-3.7. Why: an unprivileged quick compare
# under bursts kept 6 cells with windows of 3 configurations for its first look (the
# rest were disturbed, or measured on their clean steps, which carry no windows); the
# process variance came out 0, the plan chose 60 s windows (10x), and the next round of
# 2 cells took 140 s of an 8-minute budget.
MIN_BETWEEN_DF = 8
# A plan may at most double the window. A process variance estimated at 0 (the
# estimator's floor: MSB - MSW/k cut at 0) makes K* infinite, and one round of 10x
# windows can spend the rest of a budget before the next look's check
# (rounds/training.py check_plan) could revert it.
MAX_GROWTH = 2.0


@dataclass(frozen=True)
class Components:
    """Variance components of the log steady step time, pooled over configurations."""

    sigma2_window: float  # one window's mean, inside one process
    sigma2_between: float  # a process's mean, from process to process (beyond the windows)
    windows: int  # windows per cell (median)
    cells: int
    configs: int  # configurations with at least two cells (the between-process estimate)
    fixed_s: float  # median per-cell wall time outside the steady window
    window_s: float  # median seconds of one window

    def optimal_windows(self) -> float:
        """K* (may be 0 or infinite: the caller clamps it)."""
        if self.sigma2_between <= 0:
            return math.inf
        return math.sqrt(self.fixed_s * self.sigma2_window / (self.window_s * self.sigma2_between))

    def to_json(self) -> dict[str, Any]:
        return {
            "sigma2_window": self.sigma2_window,
            "sigma2_between": self.sigma2_between,
            "windows": self.windows,
            "cells": self.cells,
            "configs": self.configs,
            "fixed_s": round(self.fixed_s, 2),
            "window_s": round(self.window_s, 3),
        }


def components(results: Iterable[CellResult]) -> Components | None:
    """Within- and between-process variance of the log steady step time, from ok cells
    with at least two windows; None without two cells of one configuration."""
    by_config: dict[ConfigKey, list[list[float]]] = {}
    fixed: list[float] = []
    window_s: list[float] = []
    for r in results:
        means = r.steady_windows_s
        if not r.ok or len(means) < 2:
            continue
        by_config.setdefault(r.key, []).append([math.log(m) for m in means])
        steady_s = r.overhead.get("steady")
        if steady_s is not None and r.wall_s is not None and r.wall_s > steady_s:
            fixed.append(r.wall_s - steady_s)
        if steady_s is not None:
            window_s.append(steady_s / len(means))
    cells = [c for group in by_config.values() for c in group]
    within_df = sum(len(c) - 1 for c in cells)
    if not cells or within_df == 0:
        return None
    sigma2_window = sum(statistics.variance(c) * (len(c) - 1) for c in cells) / within_df
    k = int(statistics.median(len(c) for c in cells))
    between_ss = between_df = 0.0
    configs = 0
    for group in by_config.values():
        if len(group) < 2:
            continue
        configs += 1
        cell_means = [statistics.fmean(c) for c in group]
        between_ss += statistics.variance(cell_means) * (len(group) - 1)
        between_df += len(group) - 1
    if between_df < MIN_BETWEEN_DF or not fixed or not window_s:
        return None
    sigma2_between = max(between_ss / between_df - sigma2_window / k, 0.0)
    return Components(
        sigma2_window=sigma2_window,
        sigma2_between=sigma2_between,
        windows=k,
        cells=len(cells),
        configs=configs,
        fixed_s=statistics.median(fixed),
        window_s=statistics.median(window_s),
    )


# The rule in words, as run.json keeps it with a plan (store/adaptiveplans.py).
RULE = "Kalibera & Jones 2013: K* = sqrt(fixed_s * sigma2_window / (window_s * sigma2_between))"


@dataclass(frozen=True)
class WindowPlan:
    """The steady window chosen for the rounds after the first look, and why."""

    min_steady_s: float
    previous_s: float
    reason: str
    components: Components | None

    def to_json(self) -> dict[str, Any]:
        return {
            "min_steady_s": round(self.min_steady_s, 2),
            "previous_s": self.previous_s,
            "reason": self.reason,
            "components": self.components.to_json() if self.components else None,
            "rule": RULE,
        }


def plan(
    comp: Components | None,
    current_s: float,
    *,
    min_s: float = MIN_WINDOW_S,
    max_s: float = MAX_WINDOW_S,
) -> WindowPlan:
    """The steady window (seconds) for the next rounds; ``current_s`` when the first
    rounds cannot tell where the variance is. At most MAX_GROWTH times ``current_s``."""
    if comp is None:
        return WindowPlan(
            current_s,
            current_s,
            f"too few cells to split the variance (the process variance needs "
            f"{MIN_BETWEEN_DF} degrees of freedom): kept",
            None,
        )
    k = comp.optimal_windows()
    max_s = min(max_s, max(MAX_GROWTH * current_s, min_s))
    seconds = min(max(k * comp.window_s, min_s), max_s) if math.isfinite(k) else max_s
    seconds = round(seconds, 1)
    costs = (
        f"K* = {k:.1f} windows of {comp.window_s:.1f} s from a window's variance "
        f"{comp.sigma2_window:.2g}, the processes' {comp.sigma2_between:.2g} and "
        f"{comp.fixed_s:.0f} s per cell outside the window"
    )
    if seconds < current_s:
        why = f"shorter windows, more repeats: {costs}"
    elif seconds > current_s:
        why = f"longer windows, fewer repeats: {costs}"
    else:
        why = f"the window is about right: {costs}"
    return WindowPlan(seconds, current_s, why, comp)


def plan_sentence(recorded: StoredWindowPlan | None) -> str | None:
    """run.json's window plan (``adaptive.window_plan``) in words, or None."""
    if recorded is None:
        return None
    return (
        f"Steady window: {recorded.previous_s:g} s per cell up to the first look, then "
        f"{recorded.min_steady_s:g} s from repeat {recorded.from_repeat} on ({recorded.reason})."
    )
