"""Steady state from step times (stdlib only: runs inside every variant).

* Warm-up end: MSER-5, the marginal standard error rule from simulation output
  analysis. Step times are averaged in batches of 5; the truncation point d (at most
  half the data) minimises the squared standard error of the mean of what remains,
  sum((x - mean)^2) / (n - d)^2. Slow tracing steps at the start inflate that error, so
  they are cut; a steady series keeps everything. The first step (the trace) always
  counts as warm-up.
* The steady window is met when, after the warm-up, there are at least ``min_steps``
  steps AND at least ``min_s`` seconds of steps (whichever comes later).
* The within-cell interval of the mean step time uses batch means (consecutive steps are
  correlated, so steps are averaged in 10 batches) with a Student t quantile computed,
  not looked up.
* The steady steps are also cut into K consecutive windows of equal step counts, and
  each window's mean is recorded: the host compares the variance between these windows
  (within one process) with the variance between processes to choose how long the next
  cells' steady window should be (Kalibera & Jones 2013; tfvariants.analyze.statistics.windows).
  The cell's statistic stays ONE number per process (the mean of all its steady steps),
  so repeats stay independent.
* The full schedule is projected as warm-up time + mean steady step x the remaining
  steps + the measured time between epochs (validation, callbacks), with the same
  interval carried through (the warm-up is measured, not estimated).
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

MSER_BATCH = 5
CI_BATCHES = 10
CONFIDENCE = 0.95
WINDOWS = 5  # sub-windows of the steady window whose means are recorded


def warmup_steps(
    steps: Sequence[float],
    batch: int = MSER_BATCH,
    first_epoch: int | None = None,
    max_s: float | None = None,
) -> int:
    """How many leading steps are warm-up (MSER-5; at least 1, at most half).

    ``first_epoch`` (the first epoch's step count, once a second epoch has begun) caps
    the cut: warm-up is the process's start-up transient, so it ends inside the first
    epoch, while the slow steps after each epoch's start recur every epoch and are part
    of what the full schedule pays. Uncapped, MSER took the second epoch's start-up bump
    for warm-up and cut a whole epoch of steady steps (mnist_cnn at 1 thread: 70 of 210
    steps, 6.3 s). A first epoch of fewer than 4 batches is too short to hold the
    transient: then only the half-the-data bound applies.

    ``max_s`` (--warmup-max) caps the cut at the steps within the first ``max_s`` seconds
    of training: a workload whose step times drift for long would otherwise have up to
    half of its steps cut, and the window wait for as many more. The first step (the
    trace) stays warm-up whatever the cap."""
    n = len(steps)
    if n <= 1:
        return n
    m = n // batch
    if m < 4:
        return 1
    limit = m // 2
    if first_epoch is not None and first_epoch >= 4 * batch:
        limit = min(limit, first_epoch // batch)
    if max_s is not None:
        within = next((i for i, t in enumerate(itertools.accumulate(steps)) if t > max_s), n)
        limit = min(limit, within // batch)
    means = [statistics.fmean(steps[i * batch : (i + 1) * batch]) for i in range(m)]
    # Suffix sums make every candidate d O(1).
    s = sq = 0.0
    suffix: list[tuple[float, float]] = [(0.0, 0.0)] * (m + 1)
    for i in range(m - 1, -1, -1):
        s += means[i]
        sq += means[i] * means[i]
        suffix[i] = (s, sq)
    best_d, best = 0, math.inf
    for d in range(0, limit + 1):
        k = m - d
        s_d, sq_d = suffix[d]
        sse = max(sq_d - s_d * s_d / k, 0.0)
        score = sse / (k * k)
        if score < best - 1e-15:
            best_d, best = d, score
    return max(1, best_d * batch)


def window_met(
    steps: Sequence[float],
    min_s: float,
    min_steps: int,
    first_epoch: int | None = None,
    warmup_max_s: float | None = None,
) -> bool:
    """True when the steps after the detected warm-up fill the minimum window."""
    if len(steps) < min_steps + 1:
        return False
    d = warmup_steps(steps, first_epoch=first_epoch, max_s=warmup_max_s)
    steady = steps[d:]
    return len(steady) >= min_steps and math.fsum(steady) >= min_s


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the regularised incomplete beta (Lentz's method)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c if abs(1.0 + aa / c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c if abs(1.0 + aa / c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-12:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    lbeta = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
    front = math.exp(lbeta + a * math.log(x) + b * math.log(1 - x))
    if x < (a + 1) / (a + b + 2):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1 - x) / b


def t_cdf(t: float, df: float) -> float:
    x = df / (df + t * t)
    tail = 0.5 * _betainc(df / 2, 0.5, x)
    return 1 - tail if t > 0 else tail


def t_quantile(p: float, df: float) -> float:
    """Inverse Student t CDF by bisection (p in (0, 1))."""
    lo, hi = -1e3, 1e3
    for _ in range(200):
        mid = (lo + hi) / 2
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def batch_means_interval(
    values: Sequence[float], confidence: float = CONFIDENCE, batches: int = CI_BATCHES
) -> tuple[float, float] | None:
    """Interval for the mean of correlated values; None with fewer than 2 per batch."""
    n = len(values)
    if n < 2 * batches:
        return None
    size = n // batches
    means = [statistics.fmean(values[i * size : (i + 1) * size]) for i in range(batches)]
    centre = statistics.fmean(values)
    half = t_quantile(1 - (1 - confidence) / 2, batches - 1) * statistics.stdev(means)
    half /= math.sqrt(batches)
    if centre - half <= 0:
        return None  # too noisy for an interval: say so rather than clamp
    return centre - half, centre + half


def window_means(steady: Sequence[float], count: int = WINDOWS) -> list[float]:
    """Mean step time of ``count`` consecutive windows of (nearly) equal step counts.

    Equal step counts, not equal seconds: cutting by time would put fewer steps in the
    windows with slow steps, and the windows' means would no longer average to the
    cell's mean."""
    n = len(steady)
    count = min(count, n)
    if count < 1:
        return []
    bounds = [round(i * n / count) for i in range(count + 1)]
    return [statistics.fmean(steady[a:b]) for a, b in zip(bounds, bounds[1:], strict=False)]


@dataclass(frozen=True)
class SteadyState:
    warmup_steps: int
    warmup_s: float
    steady_steps: int
    steady_s: float
    step_mean_s: float | None
    step_median_s: float | None
    step_ci_s: tuple[float, float] | None
    window_means_s: tuple[float, ...] = ()
    warmup_max_s: float | None = None  # the cap on the warm-up cut (None: MSER alone)

    def to_json(self) -> dict[str, Any]:
        cap = f", at most {self.warmup_max_s:g} s" if self.warmup_max_s is not None else ""
        return {
            "warmup_steps": self.warmup_steps,
            "warmup_s": self.warmup_s,
            "warmup_rule": f"MSER-{MSER_BATCH}{cap}",
            "steady_steps": self.steady_steps,
            "steady_s": self.steady_s,
            "steady_step_s": self.step_mean_s,
            "steady_step_median_s": self.step_median_s,
            "steady_step_ci_s": list(self.step_ci_s) if self.step_ci_s else None,
            "steady_step_ci_method": f"batch means ({CI_BATCHES} batches), t {CONFIDENCE:.0%}",
            "steady_windows_s": list(self.window_means_s),
        }


def analyse(
    steps: Sequence[float],
    windows: int = WINDOWS,
    first_epoch: int | None = None,
    warmup_max_s: float | None = None,
) -> SteadyState:
    d = warmup_steps(steps, first_epoch=first_epoch, max_s=warmup_max_s)
    steady = list(steps[d:])
    return SteadyState(
        warmup_steps=d,
        warmup_s=math.fsum(steps[:d]),
        steady_steps=len(steady),
        steady_s=math.fsum(steady),
        step_mean_s=statistics.fmean(steady) if steady else None,
        step_median_s=statistics.median(steady) if steady else None,
        step_ci_s=batch_means_interval(steady),
        window_means_s=tuple(window_means(steady, windows)),
        warmup_max_s=warmup_max_s,
    )


def project(
    state: SteadyState,
    full_steps: int,
    full_epochs: int,
    epoch_gap_s: float,
) -> dict[str, Any]:
    """Projected full-schedule time with the within-cell interval of the step time.

    ``epoch_gap_s`` is the measured time per epoch outside training steps, already
    scaled to a full-size epoch."""
    if state.step_mean_s is None:
        return {"projected_full_s": None, "projection_basis": "no steady steps"}
    remaining = max(full_steps - state.warmup_steps, 0)
    fixed = state.warmup_s + max(epoch_gap_s, 0.0) * full_epochs

    def at(step_s: float) -> float:
        return fixed + step_s * remaining

    out: dict[str, Any] = {
        "projected_full_s": at(state.step_mean_s),
        "projection_basis": "warmup+steady-steps",
        "projected_full_ci_s": None,
    }
    if state.step_ci_s is not None:
        out["projected_full_ci_s"] = [at(state.step_ci_s[0]), at(state.step_ci_s[1])]
    return out


@dataclass(frozen=True)
class Window:
    """What a cell's steady window asks for. Its fields are read by name from the worker
    request (:meth:`of`), so a window setting the host declares with its run options and
    the request carries reaches the window here without further wiring."""

    min_steady_s: float = 10.0  # at least this many seconds of steps after the warm-up
    min_steady_steps: int = 100  # and at least this many steps
    warmup_max_s: float | None = None  # the warm-up ends within this many seconds

    @classmethod
    def requested(cls, request: Any) -> Window:
        """The window a worker request (workloads.protocol) asks for."""
        given = {f.name: getattr(request, f.name) for f in fields(cls) if hasattr(request, f.name)}
        return cls(**given)

    def met(self, steps: Sequence[float], first_epoch: int | None = None) -> bool:
        """True when the steps after the warm-up fill the window (:func:`window_met`)."""
        return window_met(
            steps, self.min_steady_s, self.min_steady_steps, first_epoch, self.warmup_max_s
        )

    def analyse(self, steps: Sequence[float], first_epoch: int | None = None) -> SteadyState:
        """The warm-up and steady statistics of ``steps`` (:func:`analyse`)."""
        return analyse(steps, first_epoch=first_epoch, warmup_max_s=self.warmup_max_s)

    def to_json(self) -> dict[str, Any]:
        """The result's record of what the window asked for (the warm-up limit only when
        there is one: a cell without it reads as cells always did)."""
        out: dict[str, Any] = {"min_s": self.min_steady_s, "min_steps": self.min_steady_steps}
        if self.warmup_max_s is not None:
            out["warmup_max_s"] = self.warmup_max_s
        return out
