"""The level of each look when a run looks at its data several times: repeated
confidence intervals with Pocock's constant boundary (Pocock 1977; Jennison & Turnbull,
"Repeated confidence intervals for group sequential clinical trials", 1984).

Adaptive rounds look at the repeats after K planned counts n_1 < ... < n_K. If each
look's interval has two-sided level 1 - a, the chance that ANY of them misses the
truth is below K * a (Bonferroni), but by much: the looks share their data, so their
misses come together. The exact chance follows from the estimates' joint law, a
Brownian motion observed at the information fractions t_k = n_k / n_K (Z_k =
W(t_k) / sqrt(t_k)); the per-look level a is the one that makes
P(|Z_k| > c for some k) = alpha, with c = z(1 - a/2). For the default looks after 5, 7,
10, 15 and 20 repeats at 95 %: c = 2.404 and a = 1.62 % per look, against 1.0 % with
Bonferroni (published Pocock constants for K = 2..5 equally spaced looks: 2.178, 2.289,
2.361, 2.413; the tests check them).

The rank intervals are discrete, so each look's actual level is at least the nominal
one, and the normal limit is approached from the conservative side; benchmarks/decide.py
measures the coverage of the interval a run stops at, with adaptive stopping, by
simulation.

Computed by propagating the density of W on a grid from look to look (Armitage,
McPherson & Rowe 1969) with Simpson weights, then bisection on c: about 0.1 s, cached.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from statistics import NormalDist

Looks = int | tuple[int, ...]  # K equally spaced looks, or the planned repeat counts

_N = NormalDist()
GRID = 61  # points per look (odd, for Simpson): the K = 2..5 constants to 3 decimals


def count(looks: Looks) -> int:
    """K, the number of looks."""
    return looks if isinstance(looks, int) else len(looks)


def check(looks: object) -> None:
    """A whole number >= 1, or increasing positive repeat counts."""
    if isinstance(looks, bool):
        raise ValueError(f"looks must be a whole number >= 1, got {looks!r}")
    if isinstance(looks, int):
        if looks < 1:
            raise ValueError(f"looks must be a whole number >= 1, got {looks!r}")
        return
    if (
        not isinstance(looks, tuple)
        or not looks
        or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 1 for n in looks)
        or any(b <= a for a, b in zip(looks, looks[1:], strict=False))
    ):
        raise ValueError(f"looks must be increasing repeat counts >= 1, got {looks!r}")


def fractions(looks: Looks) -> tuple[float, ...]:
    """The information fractions t_k = n_k / n_K (K equally spaced looks: k / K)."""
    if isinstance(looks, int):
        return tuple((k + 1) / looks for k in range(looks))
    return tuple(n / looks[-1] for n in looks)


def _no_crossing(c: float, ts: Sequence[float]) -> float:
    """P(|W(t_k)| < c sqrt(t_k) for every k) for a standard Brownian motion W."""
    prev: tuple[list[float], list[float], float] | None = None  # points, weighted density, t
    for t in ts:
        b = c * math.sqrt(t)
        h = 2 * b / (GRID - 1)
        xs = [-b + i * h for i in range(GRID)]
        weights = [h / 3 * (1 if i in (0, GRID - 1) else 4 if i % 2 else 2) for i in range(GRID)]
        if prev is None:
            s = math.sqrt(t)
            density = [_N.pdf(x / s) / s for x in xs]
        else:
            pxs, pdens, pt = prev
            s = math.sqrt(t - pt)
            norm = s * math.sqrt(2 * math.pi)
            density = [
                sum(
                    d * math.exp(-0.5 * ((x - u) / s) ** 2) for u, d in zip(pxs, pdens, strict=True)
                )
                / norm
                for x in xs
            ]
        prev = (xs, [w * d for w, d in zip(weights, density, strict=True)], t)
    assert prev is not None
    return sum(prev[1])


@functools.lru_cache(maxsize=64)
def _pocock(alpha: float, ts: tuple[float, ...]) -> float:
    if len(ts) == 1:
        return alpha
    lo = _N.inv_cdf(1 - alpha / 2)  # one look's c: never crossed less often
    hi = _N.inv_cdf(1 - alpha / (2 * len(ts)))  # Bonferroni's c: never crossed more often
    for _ in range(40):
        mid = (lo + hi) / 2
        if 1 - _no_crossing(mid, ts) > alpha:
            lo = mid
        else:
            hi = mid
    return 2 * (1 - _N.cdf(hi))  # hi: the side that keeps the together level


def per_look_alpha(confidence: float, looks: Looks = 1) -> float:
    """The two-sided error rate of each look's interval so that all looks together hold
    with ``confidence`` (one look: 1 - confidence)."""
    check(looks)
    alpha = 1 - confidence
    ts = fractions(looks)
    # Repeat counts of the same look twice cannot happen (checked); rounding keeps the
    # cache small for rules that differ only in how the same fractions were written.
    return _pocock(round(alpha, 12), tuple(round(t, 9) for t in ts))
