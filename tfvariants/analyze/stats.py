"""Statistics over repeats: medians with intervals, ratios, significance, warnings.

Pure Python on purpose (no numpy/scipy): the host must render reports without
TensorFlow or a scientific stack installed.

The rules, in one place (docs/compare.md repeats them for users):

* Point estimate: the median over repeats (robust to one disturbed repeat).
* Interval for the median (95 % by default):
  - n >= 6: distribution-free, from order statistics: [x_(k), x_(n-k+1)] with the
    largest k whose binomial coverage is still >= 95 %;
  - 2 <= n < 6: that interval would be [min, max] with only 75-94 % coverage, so we
    use a Student t-interval on the mean instead (method "t"), which is honest about
    how little three numbers tell;
  - n == 1: no interval (lo == hi == the value, method "none").
* Ratio of two medians (a / b) with an interval by log-ratio propagation: the
  half-widths of both intervals on the log scale are added in quadrature.
* A difference is called ("faster"/"slower") only when it is at least the minimum
  effect (default 5 %) AND it is significant: Mann-Whitney U two-sided p < alpha
  (exact for small samples) OR the two intervals do not overlap. The second test is
  needed because with 3 vs 3 repeats the exact U test can never give p < 0.1.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

CONFIDENCE = 0.95
MIN_EFFECT = 0.05
ALPHA = 0.05
UNSTABLE_SPREAD = 0.10
MIN_REPEATS = 3
# Exact Mann-Whitney enumerates C(n+m, n) splits; above this use the normal approximation.
_EXACT_MWU_LIMIT = 200_000

# Two-sided 95 % Student t quantiles by degrees of freedom (t_0.975).
_T975 = {
    1: 12.706,
    2: 4.303,
    3: 3.182,
    4: 2.776,
    5: 2.571,
    6: 2.447,
    7: 2.365,
    8: 2.306,
    9: 2.262,
    10: 2.228,
    15: 2.131,
    20: 2.086,
    30: 2.042,
}


@dataclass(frozen=True)
class Interval:
    """A point estimate with an interval and the method that produced it."""

    value: float
    lo: float
    hi: float
    method: str  # "order-statistics" | "t" | "none" | "propagated" | "exact"
    n: int = 0

    @property
    def rel_halfwidth(self) -> float:
        return (self.hi - self.lo) / (2 * self.value) if self.value else math.inf


@dataclass(frozen=True)
class StatWarning:
    """A typed warning in plain words with an actionable hint."""

    kind: str  # unstable | few_repeats | oversubscribed | failed | timeout | skipped | no_baseline
    message: str
    hint: str = ""


@dataclass(frozen=True)
class Comparison:
    """a versus b (lower is better, e.g. times): ratio = median(a) / median(b)."""

    ratio: Interval
    p_value: float | None
    ci_overlap: bool | None
    verdict: str  # "faster" | "slower" | "not significant" | "baseline"
    reasons: tuple[str, ...] = field(default_factory=tuple)

    @property
    def significant(self) -> bool:
        return self.verdict in ("faster", "slower")


def _t_quantile(df: int) -> float:
    if df in _T975:
        return _T975[df]
    keys = sorted(_T975)
    for lo, hi in itertools.pairwise(keys):
        if lo < df < hi:  # conservative: the smaller df gives the larger quantile
            return _T975[lo]
    return 1.96


def _binom_cdf_half(k: int, n: int) -> float:
    """P(Binomial(n, 1/2) <= k)."""
    return sum(math.comb(n, i) for i in range(k + 1)) / 2**n


def median_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> Interval:
    """Median with a confidence interval (method documented in the module docstring)."""
    xs = sorted(float(v) for v in values)
    n = len(xs)
    if n == 0:
        raise ValueError("no values")
    med = statistics.median(xs)
    if n == 1:
        return Interval(med, med, med, "none", 1)
    alpha = 1 - confidence
    # Largest k (1-based) with P(B <= k-1) <= alpha/2: coverage >= confidence.
    k = 0
    for cand in range(1, n // 2 + 1):
        if _binom_cdf_half(cand - 1, n) <= alpha / 2:
            k = cand
    if k >= 1 and n >= 6:
        return Interval(med, xs[k - 1], xs[n - k], "order-statistics", n)
    mean = statistics.fmean(xs)
    half = _t_quantile(n - 1) * statistics.stdev(xs) / math.sqrt(n)
    # A time can't be negative: keep the lower end positive so ratios stay defined.
    lo = max(mean - half, min(xs) * 1e-3, 1e-12)
    hi = mean + half
    return Interval(med, min(lo, med), max(hi, med), "t", n)


def relative_spread(values: Sequence[float]) -> float:
    """Standard deviation / mean (0 for fewer than two values)."""
    if len(values) < 2:
        return 0.0
    mean = statistics.fmean(values)
    return statistics.stdev(values) / mean if mean else math.inf


def ratio_interval(a: Interval, b: Interval) -> Interval:
    """a / b with an interval by log-ratio propagation (independent samples)."""
    if a.value <= 0 or b.value <= 0:
        raise ValueError("ratio of non-positive values")
    r = a.value / b.value

    def half_log(iv: Interval) -> float:
        if iv.method == "none" or iv.lo <= 0:
            return 0.0 if iv.method == "none" else math.inf
        return (math.log(iv.hi) - math.log(iv.lo)) / 2

    h = math.hypot(half_log(a), half_log(b))
    if math.isinf(h):
        return Interval(r, 0.0, math.inf, "propagated", min(a.n, b.n))
    return Interval(r, r * math.exp(-h), r * math.exp(h), "propagated", min(a.n, b.n))


def _midranks(pooled: Sequence[float]) -> list[float]:
    order = sorted(range(len(pooled)), key=lambda i: pooled[i])
    ranks = [0.0] * len(pooled)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and pooled[order[j + 1]] == pooled[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def mann_whitney_p(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided Mann-Whitney U p-value: exact (permutation over midranks) for small
    samples, normal approximation with tie correction otherwise."""
    n, m = len(a), len(b)
    if n == 0 or m == 0:
        raise ValueError("empty sample")
    ranks = _midranks(list(a) + list(b))
    mean_rank_sum = n * (n + m + 1) / 2
    observed = abs(sum(ranks[:n]) - mean_rank_sum)
    if math.comb(n + m, n) <= _EXACT_MWU_LIMIT:
        total = extreme = 0
        for idx in itertools.combinations(range(n + m), n):
            total += 1
            if abs(sum(ranks[i] for i in idx) - mean_rank_sum) >= observed - 1e-9:
                extreme += 1
        return extreme / total
    # Normal approximation with tie correction and continuity correction.
    counts: dict[float, int] = {}
    for r in ranks:
        counts[r] = counts.get(r, 0) + 1
    nm = n + m
    tie = sum(t**3 - t for t in counts.values()) / (nm * (nm - 1))
    var = n * m / 12 * ((nm + 1) - tie)
    if var <= 0:
        return 1.0
    z = max(observed - 0.5, 0) / math.sqrt(var)
    return math.erfc(z / math.sqrt(2))


def compare(
    a: Sequence[float],
    b: Sequence[float],
    *,
    min_effect: float = MIN_EFFECT,
    alpha: float = ALPHA,
    confidence: float = CONFIDENCE,
) -> Comparison:
    """Compare samples a and b of a lower-is-better quantity (times, costs).

    "faster" means a is lower than b by at least ``min_effect`` and the difference is
    significant (U test p < alpha, or the two intervals do not overlap)."""
    ia, ib = median_interval(a, confidence), median_interval(b, confidence)
    ratio = ratio_interval(ia, ib)
    reasons: list[str] = []
    p = mann_whitney_p(a, b)
    overlap = not (ia.hi < ib.lo or ib.hi < ia.lo)
    if len(a) < 2 or len(b) < 2:
        reasons.append("fewer than 2 repeats on one side")
        return Comparison(ratio, p, None, "not significant", tuple(reasons))
    effect = abs(ratio.value - 1)
    significant = p < alpha or not overlap
    if effect < min_effect:
        reasons.append(f"difference {effect:.1%} is below the minimum effect {min_effect:.0%}")
    if not significant:
        reasons.append(f"U test p={p:.2g} and the intervals overlap")
    if reasons:
        verdict = "not significant"
    else:
        verdict = "faster" if ratio.value < 1 else "slower"
    return Comparison(ratio, p, overlap, verdict, tuple(reasons))


def stability_warnings(label: str, values: Sequence[float]) -> list[StatWarning]:
    """Plain-words warnings about a group of repeats (spread, too few repeats)."""
    out: list[StatWarning] = []
    spread = relative_spread(values)
    if len(values) >= 2 and spread >= UNSTABLE_SPREAD:
        out.append(
            StatWarning(
                "unstable",
                f"{label} is unstable: repeats differ by {spread:.0%} (std/mean)",
                "run more repeats (--repeats) or close other programs",
            )
        )
    if len(values) < MIN_REPEATS:
        out.append(
            StatWarning(
                "few_repeats",
                f"{label} has only {len(values)} successful repeat(s)",
                f"use --repeats {MIN_REPEATS} or more for an interval worth reading",
            )
        )
    return out


def oversubscribed_warning(label: str, threads: int, cpus: int) -> StatWarning:
    host = f"{cpus} CPUs" if cpus else "fewer CPUs"
    return StatWarning(
        "oversubscribed",
        f"{label}: emulates {threads} vCPUs on {host}: not representative",
        "run on a machine with at least that many logical CPUs",
    )
