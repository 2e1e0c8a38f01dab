"""Rank statistics behind the comparisons, fast at any size (pure Python).

* The null distributions of the Mann-Whitney U (two samples) and the Wilcoxon signed
  rank W (one sample of paired differences): exact while that is cheap, above that the
  normal approximation with continuity correction. Both statistics have lighter tails
  than the normal, so the approximation overstates tail probabilities and picks an
  interval at least as wide as the exact one (tests/test_stats.py checks this wherever
  both can be computed).
* Order statistics of the n*m pairwise differences x_i - y_j and of the n(n+1)/2 Walsh
  averages (d_i + d_j)/2 without listing them all: bisection on the value with an O(n+m)
  count, then the few candidates left are listed and sorted. 2,000 x 2,000 values take
  well under a second instead of sorting four million differences.

Every difference and average is computed the same way (one float subtraction or one
float mean), in the small and the large path, so both give bit-identical results.
"""

from __future__ import annotations

import functools
import math
import statistics
from collections.abc import Callable, Sequence

EXACT_MAX_PAIRS = 2500  # exact U distribution up to n*m = 2,500 (e.g. 50 x 50)
EXACT_MAX_SIGNED = 100  # exact signed-rank distribution up to n = 100
LIST_MAX = 20_000  # below this many differences, list and sort them all
TOLERANCE = 1e-9  # relative: 1 - 0.9 is 0.09999999999999998, and must still mean 0.1
# The normal approximation picks k for a slightly smaller alpha: at low confidence (80 %)
# its tail is up to 0.8 % too light near n*m = 2,500 (checked against the exact one).
NORMAL_MARGIN = 0.97


@functools.lru_cache(maxsize=256)
def u_counts(n: int, m: int) -> tuple[int, ...]:
    """Orderings of n a's and m b's with U = 0..n*m (all values distinct).

    The coefficients of the Gaussian binomial [n+m choose n]_q = prod_{i=1..n}
    (1 - q^(m+i)) / (1 - q^i): n multiplications and divisions of O(n*m) each."""
    if n > m:
        n, m = m, n  # U's distribution is symmetric in the roles of the samples
    size = n * m + 1
    c = [0] * size
    c[0] = 1
    for i in range(1, n + 1):
        up = m + i  # multiply by (1 - q^up): coefficients only move upwards
        for u in range(size - 1, up - 1, -1):
            c[u] -= c[u - up]
        for u in range(i, size):  # divide by (1 - q^i): a running sum with stride i
            c[u] += c[u - i]
    return tuple(c)


@functools.lru_cache(maxsize=256)
def signed_rank_counts(n: int) -> tuple[int, ...]:
    """Sign patterns of n ranks with W+ = 0..n(n+1)/2 (no ties, no zeros)."""
    size = n * (n + 1) // 2 + 1
    c = [0] * size
    c[0] = 1
    top = 0
    for r in range(1, n + 1):
        top += r
        for w in range(top, r - 1, -1):
            c[w] += c[w - r]
    return tuple(c)


def _exact_rank(counts: Sequence[int], total: int, alpha: float) -> tuple[int, float]:
    """Largest k with P(T <= k-1) <= alpha/2, and the coverage 1 - 2 P(T <= k-1)."""
    limit = alpha / 2 * total * (1 + TOLERANCE)
    cum, k = 0, 0
    for t, c in enumerate(counts):
        if cum + c > limit:
            break
        cum += c
        k = t + 1
    k = min(k, (len(counts)) // 2)
    below = sum(counts[:k])
    return k, 1 - 2 * below / total


def _normal_rank(mean: float, sd: float, n_stats: int, alpha: float) -> tuple[int, float]:
    z = statistics.NormalDist()
    q = z.inv_cdf(alpha / 2 * NORMAL_MARGIN)
    k = max(0, math.floor(mean - 0.5 + sd * q) + 1)
    k = min(k, (n_stats + 1) // 2)
    if k == 0:
        return 0, 1.0
    return k, 1 - 2 * z.cdf((k - 1 + 0.5 - mean) / sd)


def mann_whitney_rank(n: int, m: int, alpha: float) -> tuple[int, float | None, bool]:
    """(k, coverage, exact) of the (1-alpha) interval [D_(k), D_(nm-k+1)] of the n*m
    sorted differences; k = 0 and coverage None when no interval of that level exists."""
    if n < 1 or m < 1:
        return 0, None, True
    if n * m <= EXACT_MAX_PAIRS:
        k, cov = _exact_rank(u_counts(n, m), math.comb(n + m, n), alpha)
        exact = True
    else:
        sd = math.sqrt(n * m * (n + m + 1) / 12)
        k, cov = _normal_rank(n * m / 2, sd, n * m, alpha)
        exact = False
    return (k, cov, exact) if k >= 1 else (0, None, exact)


def signed_rank_rank(n: int, alpha: float) -> tuple[int, float | None, bool]:
    """(k, coverage, exact) of the (1-alpha) interval [W_(k), W_(N-k+1)] of the
    N = n(n+1)/2 sorted Walsh averages of n paired differences (Wilcoxon signed rank)."""
    if n < 1:
        return 0, None, True
    pairs = n * (n + 1) // 2
    if n <= EXACT_MAX_SIGNED:
        k, cov = _exact_rank(signed_rank_counts(n), 2**n, alpha)
        exact = True
    else:
        sd = math.sqrt(n * (n + 1) * (2 * n + 1) / 24)
        k, cov = _normal_rank(pairs / 2, sd, pairs, alpha)
        exact = False
    return (k, cov, exact) if k >= 1 else (0, None, exact)


# ---- order statistics of pairwise differences and Walsh averages ----

# A "pair family" is given by: how many values it has, how many of them are <= t
# (counted in O(n)), and which lie in (lo, hi] (listed in O(n + how many)).


def _select(
    total: int,
    k: int,
    smallest: float,
    largest: float,
    count_le: Callable[[float], int],
    between: Callable[[float, float], list[float]],
    limit: int,
) -> float:
    """The k-th smallest (1-based) of a family of values, by bisection on the value."""
    lo = math.nextafter(smallest, -math.inf)  # count_le(lo) = 0 < k
    hi = largest  # count_le(hi) = total >= k
    c_lo, c_hi = 0, total
    while c_hi - c_lo > limit:
        mid = lo + (hi - lo) / 2
        if mid <= lo or mid >= hi:
            break  # adjacent floats: every candidate in (lo, hi] equals hi
        c = count_le(mid)
        if c >= k:
            hi, c_hi = mid, c
        else:
            lo, c_lo = mid, c
    if c_hi - c_lo > limit:
        return hi
    cands = sorted(between(lo, hi))
    return cands[k - c_lo - 1]


def kth_difference(xs: Sequence[float], ys: Sequence[float], k: int) -> float:
    """The k-th smallest (1-based) of all x_i - y_j; xs and ys sorted ascending."""
    n, m = len(xs), len(ys)
    if not 1 <= k <= n * m:
        raise ValueError("k out of range")
    if n * m <= LIST_MAX:
        return sorted(x - y for x in xs for y in ys)[k - 1]

    def count_le(t: float) -> int:
        # For x ascending, the j with x - ys[j] <= t are ys[j:] from a j that only grows.
        count, j = 0, 0
        for x in xs:
            while j < m and x - ys[j] > t:
                j += 1
            count += m - j
        return count

    def between(lo: float, hi: float) -> list[float]:
        out: list[float] = []
        j_hi = j_lo = 0  # first j with x - ys[j] <= hi, resp. <= lo
        for x in xs:
            while j_hi < m and x - ys[j_hi] > hi:
                j_hi += 1
            while j_lo < m and x - ys[j_lo] > lo:
                j_lo += 1
            out += [x - ys[j] for j in range(j_hi, j_lo)]
        return out

    return _select(n * m, k, xs[0] - ys[-1], xs[-1] - ys[0], count_le, between, 4 * (n + m))


def _walsh(a: float, b: float) -> float:
    return a / 2 + b / 2  # never overflows, unlike (a + b) / 2


def kth_walsh(ds: Sequence[float], k: int) -> float:
    """The k-th smallest (1-based) of the Walsh averages (d_i + d_j)/2, i <= j; ds sorted."""
    n = len(ds)
    total = n * (n + 1) // 2
    if not 1 <= k <= total:
        raise ValueError("k out of range")
    if total <= LIST_MAX:
        return sorted(_walsh(ds[i], ds[j]) for i in range(n) for j in range(i, n))[k - 1]

    def last_le(t: float) -> list[int]:
        # For each i, the largest j (>= i - 1) with avg(d_i, d_j) <= t; it only shrinks.
        out, j = [], n - 1
        for i in range(n):
            while j >= i and _walsh(ds[i], ds[j]) > t:
                j -= 1
            out.append(j)
        return out

    def count_le(t: float) -> int:
        return sum(max(0, j - i + 1) for i, j in enumerate(last_le(t)))

    def between(lo: float, hi: float) -> list[float]:
        out: list[float] = []
        for i, (j_lo, j_hi) in enumerate(zip(last_le(lo), last_le(hi), strict=True)):
            out += [_walsh(ds[i], ds[j]) for j in range(max(i, j_lo + 1), j_hi + 1)]
        return out

    return _select(total, k, ds[0], ds[-1], count_le, between, 4 * n)


def median_difference(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Hodges-Lehmann shift: the median of all x_i - y_j (xs, ys sorted)."""
    total = len(xs) * len(ys)
    lo = kth_difference(xs, ys, (total + 1) // 2)
    return lo if total % 2 else _walsh(lo, kth_difference(xs, ys, total // 2 + 1))


def median_walsh(ds: Sequence[float]) -> float:
    """Hodges-Lehmann centre: the median of the Walsh averages (ds sorted)."""
    total = len(ds) * (len(ds) + 1) // 2
    lo = kth_walsh(ds, (total + 1) // 2)
    return lo if total % 2 else _walsh(lo, kth_walsh(ds, total // 2 + 1))
