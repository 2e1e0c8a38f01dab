"""Statistics over repeats: one method gives both the interval and the verdict.

Pure Python on purpose (no numpy/scipy): the host must render reports without
TensorFlow or a scientific stack installed. docs/methods.md explains it for users.

* One configuration: the median over repeats, with a distribution-free interval from
  order statistics. Its real coverage is stated: with 5 repeats the widest one
  (min-max) covers the median with 93.8 %, not 95 %, and the label says so. One
  repeat is one measurement: no interval.
* Two configurations (a versus b, lower is better): the ratio a/b is estimated on the
  log scale by Hodges-Lehmann (the median of all pairwise differences of log values)
  with the Mann-Whitney interval around it (the U test inverted; exact up to 50 x 50
  repeats, the normal approximation above: see ranktests.py). Repeats from the same
  rounds are compared on those rounds (:func:`.pairing.compare_rounds`).
  The verdict comes from that same interval and two symmetric bands around 1 (closed: an
  interval end within 1e-9 of a band's edge counts as on it):
    - "different":  the interval lies entirely outside [1/(1+e), 1+e], e = ``min_effect``
      (so the difference is at least e with the stated confidence);
    - "equivalent": the interval lies entirely inside [1/(1+B), 1+B], B =
      ``equivalence_band`` (default: e);
    - "undecided":  anything else, with an estimate of how many repeats would decide.
  Both describe typical runs (medians), not means: see pairing.py on tails.
* Repeated looks (adaptive rounds) share the error rate: with K looks each interval has
  the per-look level that makes all K hold together with 1 - alpha (repeated confidence
  intervals, Pocock's constant boundary: tfvariants.analyze.statistics.looks; 98.4 % each for the
  default looks after 5, 7, 10, 15, 20 repeats at 95 %). The label says the level is
  per look and what holds together.
* The exact interval needs enough repeats to exist: at 95 % and one look, 4 per side
  (smallest two-sided p of 4 vs 4 is 2/70 = 0.029); with the default looks, 5 per side.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from tfvariants.analyze.statistics import bands, ranktests
from tfvariants.analyze.statistics import looks as looks_mod
from tfvariants.analyze.statistics.looks import Looks
from tfvariants.analyze.statistics.verdict import Verdict
from tfvariants.options.decision import (  # declared with the options
    CONFIDENCE,
    EQUIVALENCE_BAND,
    MIN_EFFECT,
)

MIN_REPEATS = 4  # smallest n per side for which a 95 % one-look ratio interval exists
DEFAULT_REPEATS = 5  # the default: decidable at the default looks (2/252 < 0.0162, per look)


def percent(p: float) -> str:
    """A probability as a label, one decimal unless that would round it up to 100 %:
    0.9375 -> "93.8%", 0.99975 -> "99.97%" (never "100.0%" for less than certainty)."""
    if p >= 1:
        return "100%"
    for digits in range(1, 10):
        text = f"{p * 100:.{digits}f}"
        if float(text) < 100:
            return text + "%"
    return f"{math.floor(p * 1e11) / 1e9:.9f}%"


def exp_or_inf(x: float) -> float:
    """exp that says inf instead of raising for ratios beyond the float range."""
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


def median_of_sorted(xs: Sequence[float]) -> float:
    """Median of sorted values without overflow ((a + b) / 2 overflows near 1e308)."""
    n = len(xs)
    return xs[n // 2] if n % 2 else xs[n // 2 - 1] / 2 + xs[n // 2] / 2


@dataclass(frozen=True)
class Interval:
    """A point estimate with an interval, what it is, and its real coverage."""

    value: float
    lo: float
    hi: float
    # "order-statistics" | "min-max" | "single" | "exact" | "propagated" | "hodges-lehmann"
    # | "paired" (pairing.compare_rounds); "-approx" when the rank distribution was
    # approximated; "-widened[-why]" when stretched for wandering rounds (pairing.py)
    method: str
    n: int = 0
    coverage: float | None = None  # the interval's actual coverage (None: no interval)
    looks: int = 1
    together: float | None = None  # with looks > 1: the level all looks hold together
    # "equivalent"'s interval (bands.py): each end a one-sided bound holding with the
    # run's confidence, the interval two-sided at 2 * confidence - 1
    one_sided: bool = False

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
            return Verdict.BASELINE.value  # the baseline against itself
        cov = percent(self.coverage) if self.coverage is not None else "no"
        if self.method == "min-max":
            return f"median of {self.n}; range of the repeats = {cov} interval for the median"
        if self.method == "order-statistics":
            return f"median of {self.n}; {cov} interval for the median (order statistics)"
        if self.method == "propagated":
            return (
                "ratio of medians; approximate interval (both intervals combined on the log scale)"
            )
        # What holds for the one interval a run stops at is the together level.
        together = self.together if self.looks > 1 and self.coverage is not None else None
        held = together if together is not None else self.coverage
        words = [f"{percent(together)} over all {self.looks} looks together"] if together else []
        if self.one_sided and held is not None:
            words.append(f"each end alone {percent((1 + held) / 2)}")
        looks = f"{' per look' if together else ''} ({'; '.join(words)})" if words else ""
        looks += ": the two one-sided tests of 'equivalent'" if self.one_sided else ""
        base, widened, why = self.method.partition("-widened")
        approx = ", normal approximation" if base.endswith("approx") else ""
        approx += f", widened for {why[1:] or 'rounds that wander'}" if widened else ""
        if base in ("hodges-lehmann", "hodges-lehmann-approx"):
            return f"Hodges-Lehmann ratio; {cov} Mann-Whitney interval{looks}{approx}"
        if base in ("paired", "paired-approx"):
            return (
                f"Hodges-Lehmann ratio of {self.n} paired rounds; {cov} Wilcoxon signed-rank "
                f"interval{looks}{approx}"
            )
        return self.method


@dataclass(frozen=True)
class Comparison:
    """a versus b for a lower-is-better quantity: ratio ~ a / b."""

    ratio: Interval
    verdict: Verdict
    reasons: tuple[str, ...] = field(default_factory=tuple)
    more_repeats: int | None = None  # undecided: about how many more per side would decide
    min_effect: float = MIN_EFFECT
    equivalence_band: float = EQUIVALENCE_BAND  # "equivalent": the interval within +/- this
    # Named warnings about the comparison itself, "name: words" (pairing.py: "wandering",
    # "tail"), shown with the verdict whatever it is.
    warnings: tuple[str, ...] = ()

    def __post_init__(self) -> None:  # a word (stored, a test's) becomes the enum
        object.__setattr__(self, "verdict", Verdict(self.verdict))

    @property
    def significant(self) -> bool:
        return self.verdict == Verdict.DIFFERENT

    @property
    def direction(self) -> str:
        """ "lower" or "higher" (a versus b), from the point estimate."""
        return "lower" if self.ratio.value < 1 else "higher"


# ---- checks ----


def _finite(values: Sequence[float]) -> list[float]:
    out = [float(v) for v in values]
    if not all(math.isfinite(v) for v in out):
        raise ValueError("values must be finite numbers (no NaN or inf)")
    return out


def check_settings(
    min_effect: float, confidence: float, looks: Looks, equivalence_band: float | None = None
) -> float:
    """Checks the settings; returns each look's two-sided error rate."""
    if not (math.isfinite(min_effect) and min_effect >= 0):
        raise ValueError(f"min_effect must be a finite number >= 0, got {min_effect}")
    band = equivalence_band
    if band is not None and not (math.isfinite(band) and band > 0):
        raise ValueError(f"equivalence_band must be a finite number > 0, got {band}")
    if not 0 < confidence < 1:  # also refuses NaN
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    return looks_mod.per_look_alpha(confidence, looks)


def labelled(c: Comparison, confidence: float) -> Comparison:
    """The ratio labelled with the level its looks hold together (for "equivalent"'s
    interval, two-sided: bands.equivalence_confidence)."""
    if c.ratio.looks <= 1:
        return c
    together = bands.equivalence_confidence(confidence) if c.ratio.one_sided else confidence
    return replace(c, ratio=replace(c.ratio, together=together))


def moses_rank(n: int, m: int, alpha: float) -> int:
    """Largest k with P(U <= k-1) <= alpha/2; 0 when no interval of that level exists.
    The (1-alpha) interval is then [D_(k), D_(nm-k+1)] of the n*m sorted differences."""
    return ranktests.mann_whitney_rank(n, m, alpha)[0]


# ---- one configuration ----


def _order_rank(n: int, alpha: float) -> tuple[int, int]:
    """Largest k with P(Binomial(n, 1/2) <= k-1) <= alpha/2 (0 if none), and the number
    of the 2^n outcomes below k: one walk over the binomial coefficients (10,000 repeats
    stay fast)."""
    total = 2**n
    limit = alpha / 2 * (1 + ranktests.TOLERANCE)
    cum, c, k = 0, 1, 0
    for i in range(n // 2):
        if (cum + c) / total > limit:
            break
        cum += c
        k = i + 1
        c = c * (n - i) // (i + 1)
    return k, cum


def median_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> Interval:
    """The median with a distribution-free order-statistics interval of stated coverage.

    When n is too small for ``confidence`` the interval is the range (min-max) and its
    real coverage (1 - 2/2^n) is recorded instead of pretending."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    xs = sorted(_finite(values))
    n = len(xs)
    if n == 0:
        raise ValueError("no values")
    med = median_of_sorted(xs)
    if n == 1:
        return Interval(med, med, med, "single", 1, None)
    k, below = _order_rank(n, 1 - confidence)
    if k <= 1:
        return Interval(med, xs[0], xs[-1], "min-max", n, 1 - 2 / 2**n)
    coverage = 1 - 2 * below / 2**n
    return Interval(med, xs[k - 1], xs[n - k], "order-statistics", n, coverage)


def relative_spread(values: Sequence[float]) -> float:
    """Standard deviation / mean (0 for fewer than two values)."""
    if len(values) < 2:
        return 0.0
    xs = _finite(values)
    scale = max(abs(x) for x in xs)
    if scale == 0:
        return math.inf
    xs = [x / scale for x in xs]  # the ratio is scale-free; this keeps 1e308 from overflowing
    mean = statistics.fmean(xs)
    return statistics.stdev(xs) / mean if mean else math.inf


# ---- two configurations ----


def log_values(values: Sequence[float]) -> list[float]:
    xs = _finite(values)
    if any(v <= 0 for v in xs):
        raise ValueError("ratios need positive values")
    return [math.log(v) for v in xs]


def _two_sample(
    a: Sequence[float], b: Sequence[float], alpha: float
) -> tuple[float, float | None, float | None, float | None, bool]:
    xs, ys = sorted(a), sorted(b)
    est = ranktests.median_difference(xs, ys)
    k, coverage, exact = ranktests.mann_whitney_rank(len(xs), len(ys), alpha)
    if k < 1:
        return est, None, None, None, exact
    lo = ranktests.kth_difference(xs, ys, k)
    hi = ranktests.kth_difference(xs, ys, len(xs) * len(ys) - k + 1)
    return est, lo, hi, coverage, exact


def shift_interval(
    a: Sequence[float], b: Sequence[float], alpha: float
) -> tuple[float, float | None, float | None, float | None]:
    """Hodges-Lehmann shift of a over b with the inverted Mann-Whitney interval.

    Returns (estimate, lo, hi, coverage); lo/hi/coverage are None when n is too small."""
    return _two_sample(a, b, alpha)[:4]


def smallest_decidable_n(alpha: float, limit: int = 60, *, paired: bool = False) -> int:
    """The smallest n per side (n vs n, or n paired rounds) for which a (1-alpha)
    interval exists."""
    for n in range(2, limit + 1):
        k = ranktests.signed_rank_rank(n, alpha)[0] if paired else moses_rank(n, n, alpha)
        if k >= 1:
            return n
    return limit


@dataclass(frozen=True)
class Estimate:
    """A shift on the log scale with its interval, before the verdict."""

    est: float
    lo: float | None
    hi: float | None
    coverage: float | None
    method: str  # the Interval's method
    n: int
    looks: int
    guess_half: float | None  # a guessed half-width when there is no interval
    min_n: int  # the fewest repeats (or rounds) that give an interval at this level
    too_few: str  # the sentence when there is no interval


def verdict_of(
    e: Estimate, min_effect: float, equivalence_band: float, eq: Estimate | None = None
) -> Comparison:
    """The verdict: "different" when ``e``'s interval lies outside [-log(1+e), log(1+e)]
    (e = ``min_effect``), "equivalent" when ``eq``'s (the two one-sided tests' interval
    of the same estimate, bands.py; default ``e``) lies inside [-log(1+B), log(1+B)]
    (B = ``equivalence_band``). With B > e both may hold: "different" is checked first."""
    effect, equal = math.log1p(min_effect), math.log1p(equivalence_band)
    eq = eq or e
    r = exp_or_inf(e.est)
    cut = (min_effect, equivalence_band)
    if eq.lo is not None and eq.hi is not None and bands.inside(eq.lo, eq.hi, equal):
        if e.lo is None or e.hi is None or not bands.beyond(e.lo, e.hi, effect):
            lo, hi = exp_or_inf(eq.lo), exp_or_inf(eq.hi)
            ratio = Interval(
                r, lo, hi, eq.method, eq.n, eq.coverage, eq.looks, one_sided=eq is not e
            )
            return Comparison(ratio, Verdict.EQUIVALENT, (), None, *cut)
    halves = (_half(e), _half(eq))
    if e.lo is None or e.hi is None:
        ratio = Interval(r, r, r, e.method, e.n, None, e.looks)
        more = bands.more_repeats(e.est, halves, e.n, (effect, equal), e.min_n)
        return Comparison(ratio, Verdict.UNDECIDED, (e.too_few,), more, *cut)
    ratio = Interval(r, exp_or_inf(e.lo), exp_or_inf(e.hi), e.method, e.n, e.coverage, e.looks)
    if bands.beyond(e.lo, e.hi, effect):
        return Comparison(ratio, Verdict.DIFFERENT, (), None, *cut)
    if e.lo > 0 or e.hi < 0:
        why = f"the difference is real but may be smaller than {min_effect:.0%}"
    else:  # with no minimum effect "a difference under 0%" would mean nothing
        under = f"a difference under {min_effect:.0%}" if min_effect else "1 (no difference)"
        why = f"the interval reaches beyond +/-{equivalence_band:.0%} and does not exclude {under}"
    more = bands.more_repeats(e.est, halves, e.n, (effect, equal), e.min_n)
    return Comparison(ratio, Verdict.UNDECIDED, (why,), more, *cut)


def _half(e: Estimate) -> float | None:
    """The interval's half-width on the log scale, or the guessed one without it."""
    return (e.hi - e.lo) / 2 if e.lo is not None and e.hi is not None else e.guess_half


def single(
    la: Sequence[float],
    lb: Sequence[float],
    looks: int,
    min_n: int,
    min_effect: float,
    equivalence_band: float,
) -> Comparison:
    r = exp_or_inf(median_of_sorted(sorted(la)) - median_of_sorted(sorted(lb)))
    n = min(len(la), len(lb))
    return Comparison(
        Interval(r, r, r, "single", n, None, looks),  # no interval: nothing held together
        Verdict.UNDECIDED,
        ("one measurement on a side: no interval, nothing can be decided",),
        min_n - n,
        min_effect,
        equivalence_band,
    )


def two_sample_estimate(
    la: Sequence[float], lb: Sequence[float], alpha: float, looks: int
) -> Estimate:
    """Hodges-Lehmann / Mann-Whitney on log values (two or more per side)."""
    est, lo, hi, coverage, exact = _two_sample(la, lb, alpha)
    n = min(len(la), len(lb))
    min_n = smallest_decidable_n(alpha)
    spread = math.sqrt(
        (statistics.variance(la) * (len(la) - 1) + statistics.variance(lb) * (len(lb) - 1))
        / (len(la) + len(lb) - 2)
    )
    z = statistics.NormalDist().inv_cdf(1 - alpha / 2)
    return Estimate(
        est,
        lo,
        hi,
        coverage,
        "hodges-lehmann" if exact else "hodges-lehmann-approx",
        n,
        looks,
        z * spread * math.sqrt(2 / n) if spread > 0 else None,
        min_n,
        f"{len(la)} vs {len(lb)} repeats are too few for a {percent(1 - alpha)} interval "
        f"(needs {min_n} per side)",
    )


def compare(
    a: Sequence[float],
    b: Sequence[float],
    *,
    min_effect: float = MIN_EFFECT,
    confidence: float = CONFIDENCE,
    looks: Looks = 1,
    equivalence_band: float | None = None,
) -> Comparison:
    """Compare repeats a and b of a lower-is-better quantity (times, costs): a / b.

    Interval and verdict come from the Hodges-Lehmann / Mann-Whitney interval of
    log(a) - log(b) at each look's level (looks.py; ``looks``: K, or the planned repeat
    counts), "equivalent" from its two one-sided tests' interval (bands.py). It assumes
    both sides have the same shape of noise: with very unequal noise (2 % against 50 %)
    it calls identical medians "different" a little more often than its label says, and
    with drift it compares whatever rounds each side ran. Repeats from the same rounds
    should use :func:`tfvariants.analyze.statistics.pairing.compare_rounds` instead.
    ``equivalence_band``: the band "equivalent" is judged against (default: ``min_effect``)."""
    alpha = check_settings(min_effect, confidence, looks, equivalence_band)
    band = min_effect if equivalence_band is None else equivalence_band
    k = looks_mod.count(looks)
    la, lb = log_values(a), log_values(b)
    if not la or not lb:
        raise ValueError("no values")
    if len(la) < 2 or len(lb) < 2:
        return single(la, lb, k, smallest_decidable_n(alpha), min_effect, band)
    e = two_sample_estimate(la, lb, alpha, k)
    eq = two_sample_estimate(la, lb, bands.equivalence_alpha(confidence, looks), k)
    return labelled(verdict_of(e, min_effect, band, eq), confidence)


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
