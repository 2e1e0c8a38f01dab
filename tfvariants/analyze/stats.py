"""Statistics over repeats: one method gives both the interval and the verdict.

Pure Python on purpose (no numpy/scipy): the host must render reports without
TensorFlow or a scientific stack installed. docs/compare.md explains it for users.

* One configuration: the median over repeats, with a distribution-free interval from
  order statistics. Its real coverage is stated: with 5 repeats the widest one
  (min-max) covers the median with 93.8 %, not 95 %, and the label says so. One
  repeat is one measurement: no interval.
* Two configurations (a versus b, lower is better): the ratio a/b is estimated on the
  log scale by Hodges-Lehmann (the median of all pairwise differences of log values)
  with the Mann-Whitney interval around it (the U test inverted, exact: no normal or
  t approximation). The verdict comes from that same interval and a symmetric band
  around 1, [1/(1+e), 1+e] with e = ``min_effect``:
    - "different":  the interval lies entirely outside the band (so the difference is
      at least e with the stated confidence);
    - "equivalent": the interval lies entirely inside the band;
    - "undecided":  anything else, with an estimate of how many repeats would decide.
* Repeated looks (adaptive rounds) split the error rate: with K looks each interval
  is a (1 - alpha/K) interval, so all K together hold with 1 - alpha (Bonferroni).
* The exact interval needs enough repeats to exist: at 95 % and one look, 4 per side
  (smallest two-sided p of 4 vs 4 is 2/70 = 0.029); with 4 looks, 5 per side.
"""

from __future__ import annotations

import functools
import math
import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

CONFIDENCE = 0.95
MIN_EFFECT = 0.05
UNSTABLE_SPREAD = 0.10
MIN_REPEATS = 4  # smallest n per side for which a 95 % one-look ratio interval exists
DEFAULT_REPEATS = 5  # the default: decidable with up to 4 looks (2/252 < 0.05/4)
VERDICTS = ("different", "equivalent", "undecided", "baseline")
MAX_MORE = 500  # "about N more repeats" above this is reported as not practical


@dataclass(frozen=True)
class Interval:
    """A point estimate with an interval, what it is, and its real coverage."""

    value: float
    lo: float
    hi: float
    method: str  # "order-statistics" | "min-max" | "single" | "hodges-lehmann" | "exact"
    n: int = 0
    coverage: float | None = None  # the interval's actual coverage (None: no interval)
    looks: int = 1

    @property
    def has_interval(self) -> bool:
        return self.coverage is not None and self.lo < self.hi

    @property
    def rel_halfwidth(self) -> float:
        return (self.hi - self.lo) / (2 * self.value) if self.value else math.inf

    @property
    def label(self) -> str:
        """What the interval is, in words (shown next to every interval)."""
        if self.method == "single":
            return "one measurement, no interval"
        if self.method == "exact":
            return "baseline"
        cov = f"{self.coverage:.1%}" if self.coverage is not None else "no"
        if self.method == "min-max":
            return f"median of {self.n}; range of the repeats = {cov} interval for the median"
        if self.method == "order-statistics":
            return f"median of {self.n}; {cov} interval for the median (order statistics)"
        if self.method == "propagated":
            return (
                "ratio of medians; approximate interval (both intervals combined on the log scale)"
            )
        if self.method == "hodges-lehmann":
            looks = f", {self.looks} looks" if self.looks > 1 else ""
            return f"Hodges-Lehmann ratio; {cov} Mann-Whitney interval{looks}"
        return self.method


@dataclass(frozen=True)
class StatWarning:
    """A typed warning in plain words with an actionable hint."""

    kind: str  # unstable | bimodal | few_repeats | oversubscribed | failed | noisy_host | ...
    message: str
    hint: str = ""


@dataclass(frozen=True)
class Comparison:
    """a versus b for a lower-is-better quantity: ratio ~ a / b."""

    ratio: Interval
    verdict: str  # one of VERDICTS
    reasons: tuple[str, ...] = field(default_factory=tuple)
    more_repeats: int | None = None  # undecided: about how many more per side would decide
    min_effect: float = MIN_EFFECT

    @property
    def significant(self) -> bool:
        return self.verdict == "different"

    @property
    def direction(self) -> str:
        """ "lower" or "higher" (a versus b), from the point estimate."""
        return "lower" if self.ratio.value < 1 else "higher"


# ---- the null distribution of the Mann-Whitney U statistic (no ties) ----


@functools.lru_cache(maxsize=256)
def _u_counts(n: int, m: int) -> tuple[int, ...]:
    """Number of orderings with U = 0..n*m (n of a, m of b, all values distinct)."""
    # f(n, m, u) = f(n-1, m, u-m) + f(n, m-1, u): does the largest value belong to a or b.
    prev = [[1] for _ in range(m + 1)]  # n == 0: U is always 0
    for i in range(1, n + 1):
        cur = [[1]]  # m == 0
        for j in range(1, m + 1):
            size = i * j + 1
            row = [0] * size
            for u, c in enumerate(prev[j]):  # largest is an a: it beats all j b's
                row[u + j] += c
            for u, c in enumerate(cur[j - 1]):
                row[u] += c
            cur.append(row)
        prev = cur
    return tuple(prev[m])


def moses_rank(n: int, m: int, alpha: float) -> int:
    """Largest k with P(U <= k-1) <= alpha/2; 0 when no interval of that level exists.
    The (1-alpha) interval is then [D_(k), D_(nm-k+1)] of the n*m sorted differences."""
    counts = _u_counts(n, m)
    total = math.comb(n + m, n)
    cum, k = 0, 0
    for u, c in enumerate(counts):
        cum += c
        if cum / total <= alpha / 2:
            k = u + 1
        else:
            break
    return min(k, (n * m + 1) // 2)


def _coverage(n: int, m: int, k: int) -> float:
    counts = _u_counts(n, m)
    return 1 - 2 * sum(counts[:k]) / math.comb(n + m, n)


# ---- one configuration ----


def _binom_cdf_half(k: int, n: int) -> float:
    """P(Binomial(n, 1/2) <= k)."""
    return sum(math.comb(n, i) for i in range(k + 1)) / 2**n


def median_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> Interval:
    """The median with a distribution-free order-statistics interval of stated coverage.

    When n is too small for ``confidence`` the interval is the range (min-max) and its
    real coverage (1 - 2/2^n) is recorded instead of pretending."""
    xs = sorted(float(v) for v in values)
    n = len(xs)
    if n == 0:
        raise ValueError("no values")
    med = statistics.median(xs)
    if n == 1:
        return Interval(med, med, med, "single", 1, None)
    alpha = 1 - confidence
    k = 0
    for cand in range(1, n // 2 + 1):
        if _binom_cdf_half(cand - 1, n) <= alpha / 2:
            k = cand
    if k <= 1:
        return Interval(med, xs[0], xs[-1], "min-max", n, 1 - 2 / 2**n)
    coverage = 1 - 2 * _binom_cdf_half(k - 1, n)
    return Interval(med, xs[k - 1], xs[n - k], "order-statistics", n, coverage)


def relative_spread(values: Sequence[float]) -> float:
    """Standard deviation / mean (0 for fewer than two values)."""
    if len(values) < 2:
        return 0.0
    mean = statistics.fmean(values)
    return statistics.stdev(values) / mean if mean else math.inf


# ---- two configurations ----


def _logs(values: Sequence[float]) -> list[float]:
    if any(v <= 0 for v in values):
        raise ValueError("ratios need positive values")
    return [math.log(v) for v in values]


def shift_interval(
    a: Sequence[float], b: Sequence[float], alpha: float
) -> tuple[float, float | None, float | None, float | None]:
    """Hodges-Lehmann shift of a over b with the inverted Mann-Whitney interval.

    Returns (estimate, lo, hi, coverage); lo/hi/coverage are None when n is too small."""
    diffs = sorted(x - y for x in a for y in b)
    est = statistics.median(diffs)
    k = moses_rank(len(a), len(b), alpha)
    if k < 1:
        return est, None, None, None
    return est, diffs[k - 1], diffs[len(diffs) - k], _coverage(len(a), len(b), k)


def smallest_decidable_n(alpha: float, limit: int = 60) -> int:
    """The smallest n per side (n vs n) for which a (1-alpha) interval exists."""
    for n in range(2, limit + 1):
        if moses_rank(n, n, alpha) >= 1:
            return n
    return limit


def _more_repeats(
    est: float, half: float | None, n: int, band: float, alpha: float, spread: float
) -> int | None:
    """About how many more repeats per side would decide (interval width ~ 1/sqrt(n))."""
    if half is None or not math.isfinite(half) or half <= 0:
        # No interval yet: guess its half-width from the spread of the log values.
        z = statistics.NormalDist().inv_cdf(1 - alpha / 2)
        n_eff = max(n, 2)
        half = z * spread * math.sqrt(2 / n_eff) if spread > 0 else None
        if half is None:
            return smallest_decidable_n(alpha) - n if n < smallest_decidable_n(alpha) else None
    target = abs(abs(est) - band)
    # Beyond MAX_MORE the answer is "not practical": the estimate sits close to the band's
    # edge for this much noise.
    if target <= 0 or n * (half / target) ** 2 > n + MAX_MORE:
        return None
    need = max(math.ceil(n * (half / target) ** 2), smallest_decidable_n(alpha))
    return max(need - n, 1)


def compare(
    a: Sequence[float],
    b: Sequence[float],
    *,
    min_effect: float = MIN_EFFECT,
    confidence: float = CONFIDENCE,
    looks: int = 1,
) -> Comparison:
    """Compare repeats a and b of a lower-is-better quantity (times, costs).

    Interval and verdict come from the same Hodges-Lehmann / Mann-Whitney interval of
    log(a) - log(b) at level 1 - (1 - confidence) / looks."""
    if min_effect < 0 or not 0 < confidence < 1 or looks < 1:
        raise ValueError("min_effect >= 0, 0 < confidence < 1 and looks >= 1 are required")
    la, lb = _logs(a), _logs(b)
    band = math.log1p(min_effect)
    alpha = (1 - confidence) / looks
    if len(la) < 2 or len(lb) < 2:
        r = math.exp(statistics.median(la) - statistics.median(lb))
        return Comparison(
            Interval(r, r, r, "single", min(len(la), len(lb)), None, looks),
            "undecided",
            ("one measurement on a side: no interval, nothing can be decided",),
            smallest_decidable_n(alpha) - min(len(la), len(lb)),
            min_effect,
        )
    est, lo, hi, coverage = shift_interval(la, lb, alpha)
    n = min(len(la), len(lb))
    spread = math.sqrt(
        (statistics.variance(la) * (len(la) - 1) + statistics.variance(lb) * (len(lb) - 1))
        / (len(la) + len(lb) - 2)
    )
    if lo is None or hi is None:
        ratio = Interval(
            math.exp(est), math.exp(est), math.exp(est), "hodges-lehmann", n, None, looks
        )
        need = smallest_decidable_n(alpha)
        return Comparison(
            ratio,
            "undecided",
            (
                f"{len(la)} vs {len(lb)} repeats are too few for a {1 - alpha:.1%} interval "
                f"(needs {need} per side)",
            ),  # fmt: skip
            _more_repeats(est, None, n, band, alpha, spread),
            min_effect,
        )
    ratio = Interval(
        math.exp(est), math.exp(lo), math.exp(hi), "hodges-lehmann", n, coverage, looks
    )
    if lo > band or hi < -band:
        return Comparison(ratio, "different", (), None, min_effect)
    if -band <= lo and hi <= band:
        return Comparison(ratio, "equivalent", (), None, min_effect)
    if lo > 0 or hi < 0:
        why = f"the difference is real but may be smaller than {min_effect:.0%}"
    else:
        why = f"the interval includes both no difference and {min_effect:.0%} or more"
    more = _more_repeats(est, (hi - lo) / 2, n, band, alpha, spread)
    return Comparison(ratio, "undecided", (why,), more, min_effect)


def ratio_interval(a: Interval, b: Interval) -> Interval:
    """a / b of two summaries when the repeats themselves are not at hand (serving's
    cost per million): the interval propagates both log half-widths in quadrature and is
    labelled as approximate. It gives no verdict; comparisons of repeats use compare()."""
    if a.value <= 0 or b.value <= 0:
        raise ValueError("ratio of non-positive values")
    r = a.value / b.value
    if not (a.has_interval and b.has_interval) or a.lo <= 0 or b.lo <= 0:
        return Interval(r, r, r, "single", min(a.n, b.n), None)
    h = math.hypot(math.log(a.hi / a.lo) / 2, math.log(b.hi / b.lo) / 2)
    cov = min(a.coverage or 0.0, b.coverage or 0.0)
    return Interval(r, r * math.exp(-h), r * math.exp(h), "propagated", min(a.n, b.n), cov)


# ---- the machine's noise ----


def pooled_log_residuals(groups: Sequence[Sequence[float]]) -> list[float]:
    """Log values minus their group's median, pooled over groups of >= 2 repeats: the
    run-to-run noise of identical configurations."""
    out: list[float] = []
    for g in groups:
        if len(g) >= 2:
            logs = _logs(g)
            med = statistics.median(logs)
            out += [x - med for x in logs]
    return out


def resolvable_ratio(
    residuals: Sequence[float],
    n: int,
    *,
    min_effect: float = MIN_EFFECT,
    confidence: float = CONFIDENCE,
    looks: int = 1,
    trials: int = 200,
    seed: int = 0,
) -> float | None:
    """A/A estimate: the smallest ratio this host's noise lets n vs n repeats call
    "different" about half the time. Two samples of identical configurations are drawn
    from the pooled residuals; the median interval half-width h gives (1+e)*exp(h)."""
    if len(residuals) < 4 or n < 2:
        return None
    alpha = (1 - confidence) / looks
    if moses_rank(n, n, alpha) < 1:
        return None
    rng = random.Random(seed)
    halves = []
    for _ in range(trials):
        a = [rng.choice(residuals) for _ in range(n)]
        b = [rng.choice(residuals) for _ in range(n)]
        _, lo, hi, _ = shift_interval(a, b, alpha)
        if lo is not None and hi is not None:
            halves.append((hi - lo) / 2)
    if not halves:
        return None
    return (1 + min_effect) * math.exp(statistics.median(halves))


def bimodal(values: Sequence[float]) -> str | None:
    """Plain words when repeats fall into two separate clusters, else None.

    Rule: split the sorted log values at their largest gap; both sides have >= 2
    repeats, the gap is >= 10 % and >= 2x the wider cluster's own range."""
    if len(values) < 4 or any(v <= 0 for v in values):
        return None
    xs = sorted(values)
    logs = [math.log(v) for v in xs]
    gaps = [(logs[i + 1] - logs[i], i) for i in range(len(logs) - 1)]
    gap, i = max(gaps)
    low, high = logs[: i + 1], logs[i + 1 :]
    if len(low) < 2 or len(high) < 2 or gap < math.log(1.10):
        return None
    if gap < 2 * max(low[-1] - low[0], high[-1] - high[0]):
        return None
    lo_med, hi_med = statistics.median(xs[: i + 1]), statistics.median(xs[i + 1 :])
    return (
        f"two clusters: {len(low)} repeats near {lo_med:.3g} and {len(high)} near "
        f"{hi_med:.3g} ({hi_med / lo_med:.2f}x apart)"
    )


# ---- warnings ----


def stability_warnings(label: str, values: Sequence[float]) -> list[StatWarning]:
    """Plain-words warnings about a group of repeats (spread, two clusters, few repeats)."""
    out: list[StatWarning] = []
    spread = relative_spread(values)
    modes = bimodal(values)
    if modes:
        out.append(
            StatWarning(
                "bimodal",
                f"{label} is bimodal: {modes}. The machine switched between two speeds "
                "from run to run; a single run shows one of them at random",
                "run more repeats; check what else runs on this host",
            )
        )
    elif len(values) >= 2 and spread >= UNSTABLE_SPREAD:
        out.append(
            StatWarning(
                "unstable",
                f"{label} is unstable: repeats differ by {spread:.0%} (std/mean)",
                "run more repeats (--repeats, --budget) or close other programs",
            )
        )
    if len(values) < MIN_REPEATS:
        out.append(
            StatWarning(
                "few_repeats",
                f"{label} has only {len(values)} successful repeat(s): comparisons need "
                f"{MIN_REPEATS} per side to decide anything",
                f"use --repeats {DEFAULT_REPEATS} (the default) or --budget",
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
