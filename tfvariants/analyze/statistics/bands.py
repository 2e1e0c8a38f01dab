"""The two bands a ratio interval is judged against, the level each is judged at, and
how many more repeats would reach either.

- "different": the run's interval (each look's two-sided level, Pocock: looks.py) lies
  beyond +/-e. Its error is a two-sided one: under "no difference" the interval may miss
  on either side, so each side gets half of 1 - confidence.
- "equivalent": the claim "the true ratio lies inside +/-B" is the intersection of two
  one-sided claims, "not above 1+B" and "not below 1/(1+B)" (Schuirmann's two one-sided
  tests, 1987). It is false only when the truth lies beyond one edge, and then only the
  test on that edge can err, so each test may use the whole 1 - confidence. Both at
  once are the interval of two-sided level 2 * confidence - 1 (90 % for 95 %), and
  across the looks Pocock's boundary for that level makes each one-sided end hold with
  ``confidence`` over all looks together. Judging "equivalent" on the "different"
  interval instead (as this tool did until 2026-11) tests each edge at half the error
  rate asked for: its interval 14 % wider at the default looks, so about 30 % more
  repeats per side for the same claim.
  benchmarks/decide.py measures false "equivalent" with the truth on the band's edge.

The two claims come from two intervals of the same estimate; they cannot contradict each
other in the default settings: "different" needs the wider interval beyond +/-e, and a
narrower interval inside +/-B <= e is then impossible. With B > e both can hold (a real
difference smaller than the band); "different" is reported, as it always was.
"""

from __future__ import annotations

import math
from statistics import NormalDist

from tfvariants.analyze.statistics import looks as looks_mod
from tfvariants.analyze.statistics.looks import Looks

MAX_MORE = 500  # "about N more repeats" above this is reported as not practical
BAND_TOLERANCE = 1e-9  # on the log scale: log(63) - log(60) and log(1.05) differ by 1e-16


def equivalence_confidence(confidence: float) -> float:
    """The two-sided level of the two one-sided tests' interval (90 % for 95 %); at or
    below 50 % there is no such interval, and "equivalent" uses "different"'s."""
    return 2 * confidence - 1 if confidence > 0.5 else confidence


def equivalence_alpha(confidence: float, looks: Looks = 1) -> float:
    """Each look's two-sided error rate of the interval "equivalent" is judged on."""
    return looks_mod.per_look_alpha(equivalence_confidence(confidence), looks)


def equivalence_narrowing(confidence: float, looks: Looks = 1) -> float:
    """How much narrower "equivalent"'s interval is than "different"'s (normal limit):
    0.88 at the default looks and 95 %, 0.84 at one look."""
    z = NormalDist().inv_cdf
    a, a_eq = looks_mod.per_look_alpha(confidence, looks), equivalence_alpha(confidence, looks)
    return z(1 - a_eq / 2) / z(1 - a / 2)


def beyond(lo: float, hi: float, effect: float) -> bool:
    """The log interval lies entirely outside [-effect, effect] ("different")."""
    return lo > effect + BAND_TOLERANCE or hi < -effect - BAND_TOLERANCE


def inside(lo: float, hi: float, equal: float) -> bool:
    """The log interval lies entirely inside [-equal, equal], closed: floating point must
    not split ties at its edge ("equivalent")."""
    return -equal - BAND_TOLERANCE <= lo and hi <= equal + BAND_TOLERANCE


def more_repeats(
    est: float,
    halves: tuple[float | None, float | None],
    n: int,
    bands: tuple[float, float],
    min_n: int,
) -> int | None:
    """About how many more repeats per side would decide (interval width ~ 1/sqrt(n)).

    ``halves``: the half-widths on the log scale of "different"'s and "equivalent"'s
    intervals (measured, or guessed from the spread when there is no interval yet);
    ``bands``: their edges on the log scale. The nearer of the two decisions counts. None
    when nothing can be said, or when the estimate sits so close to an edge for this
    much noise that more than MAX_MORE would be needed ("not practical")."""
    usable = [h if h is not None and math.isfinite(h) and h > 0 else None for h in halves]
    if not any(usable):
        return min_n - n if n < min_n else None
    est = abs(est)
    needs = []
    for half, target in zip(usable, (est - bands[0], bands[1] - est), strict=True):
        if half is None or target <= 0:
            continue
        need = n * (half / target) ** 2
        if need <= n + MAX_MORE:
            needs.append(max(math.ceil(need), min_n))
    return max(min(needs) - n, 1) if needs else None
