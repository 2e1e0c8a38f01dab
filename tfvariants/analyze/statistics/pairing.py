"""Two configurations compared on the rounds both ran (``compare_rounds``): paired by
round or not, chosen without looking at the answer, and widened when a configuration
wanders from round to round.

**The choice between paired and unpaired** must not depend on the difference it is
about to judge. The first rule compared the spread of the per-round differences around
*their median* with the sides' spreads: small exactly when the differences share a
sign, so it picked the paired interval when that interval excluded 1 (an independent
audit: some look's interval missed in 5.71 % of A/A runs, against 4.20 % paired alone
and 4.88 % unpaired alone, at a label of 95 % over all looks). Now "the rounds move both
sides together" is read from statistics that swapping a round's two values leaves
unchanged: the sizes of the per-round differences |d_r| (around 0, not around their
median), and the spread and the trend (lag-1 autocorrelation) of the per-round sums
s_r. Under "no difference" with exchangeable sides the signs of d_r are fair coins
whatever these are, so the signed-rank interval keeps its level when chosen this way.
Unequal noise (one side's spread 3x the other's) still pairs: Mann-Whitney assumes equal
shapes. Measured the audit's way (benchmarks/decide.py, 2,000 runs): 5.35 %, against
4.35 % paired alone and 4.85 % unpaired alone; the rest comes from changing statistic
between looks (Mann-Whitney at 5 rounds, signed-rank later), which Pocock's boundary,
computed for one statistic, does not describe exactly.

**Wandering** (a configuration whose speed drifts in its own rounds: AR(1)-like): rank
intervals assume independent rounds. With every configuration wandering at AR(1) 0.5
the first rule (one pair's raw lag-1 >= 0.3) gave false "different" 7.9 % and intervals
missing 14.7 % at a 95 % label (an independent audit): half of the false calls came at
the first look, where 5 rounds show no lag-1, and at 10 rounds the raw lag-1 of AR(1)
0.5 averages 0.2. Now the dependence r is the lag-1 of the per-round log ratios in round
order, pooled over every comparison of the workload (verdicts.dependence) and corrected
for its bias (:func:`dependence`); from 7 rounds on, r >= WANDER_R widens the interval
around its estimate by the variance inflation of an AR(1) mean, sqrt((1 + r) / (1 - r)),
with the named warning ``wandering``; below 7 rounds, where no dependence can be seen,
the interval is widened as for r = WANDER_R, the most the later looks let pass
unwidened (labelled so). Why the ratios and not each side's own series: a test that
must ignore what moves both sides (a drifting machine, which the ratio cancels) can use
only the ratios (each side's own lag-1 flags 54 % of runs on a drifting machine).

**Tails**: verdicts are about typical runs (Hodges-Lehmann: medians of log ratios), and
a bill sums every run. A configuration that takes 2x in 10 % of its runs is +10 % on the
mean with an equal median; "equivalent" is then true of typical runs only. Such a tail
cannot be bounded from 5-20 repeats (none shows in 20 runs 12 % of the time), so the
verdict says what it is about and the named warning ``tail`` appears when one side's
repeats show runs far from its typical one and the other side's none (``tail_warning``):
a test of "one law for both sides" that holds its level only under a bound on that law's
far runs (Student-t 3 puts 0.15 % of its runs beyond TAIL_SPREADS). Without one no test
can warn on a single far run: given the pooled runs it lies on either side about equally
often (a permutation test's p-value near n_a / (n_a + n_b)).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import replace

from tfvariants.analyze.statistics import bands, ranktests, stats
from tfvariants.analyze.statistics import looks as looks_mod
from tfvariants.analyze.statistics.looks import Looks

# Pair by round when one side's log spread is this many times the other's: Mann-Whitney
# assumes equal shapes (2 % vs 50 % noise gave 6.4-7 % false "different").
SPREAD_SWITCH = 3.0
SPREAD_SWITCH_FEW = 8.0  # the same, while too few rounds for a paired interval
PAIRED_GAIN = 0.7  # pair when round effects are about as large as the noise (drift, bursts)
ROUND_METHODS = ("auto", "paired", "unpaired")
# ... or when the per-round sums trend (lag-1 autocorrelation >= this): a machine that
# drifts shows in the sums long before their spread outgrows the differences' (1.2x at
# 10 % noise with 1 %/round drift: found in 91-92 % with it, 88.6 % without).
TREND_R = 0.3
WANDER_R = 0.3  # lag-1 autocorrelation of the round log ratios that counts as wandering
WANDER_MIN_ROUNDS = 7  # below this the autocorrelation says nothing
WANDER_MAX_R = 0.9  # the widening's cap (r -> 1 would make it infinite)
# The label of an interval widened because its rounds are too few for a lag-1 (the first look)
UNCHECKED = "rounds too few to show whether they wander"
WANDERING = "wandering"  # the named warnings (Comparison.warnings start with them)
TAIL = "tail"
# A tail: runs this many robust standard deviations from their side's median (Student-t 3,
# the heaviest noise simulated, reaches it in about 3 % of 40-run comparisons; a 2x run at
# 4 % noise is 17), in at most this share of a side's runs.
TAIL_SPREADS = 10.0
TAIL_SHARE = 0.2


def _mad(xs: Sequence[float]) -> float:
    """Median absolute deviation: a spread that one outlier cannot inflate."""
    med = statistics.median(xs)
    return statistics.median(abs(x - med) for x in xs)


def choose_method(x: Sequence[float], y: Sequence[float], paired_min_n: int) -> str:
    """ "paired" or "unpaired" for the log values x, y of the same rounds (see the module).

    Below ``paired_min_n`` rounds a paired interval does not exist yet, so pairing means
    "undecided at this look": only clearly unequal noise (SPREAD_SWITCH_FEW, which equal
    noise reaches in about 5 % of 5-round samples) pays that price there."""
    if len(x) < 3:
        return "unpaired"
    sx, sy = _mad(x), _mad(y)
    if len(x) < paired_min_n:
        return "paired" if max(sx, sy) > SPREAD_SWITCH_FEW * min(sx, sy) else "unpaired"
    if max(sx, sy) > SPREAD_SWITCH * min(sx, sy):
        return "paired"
    # Swap-invariant: |d_r| and s_r do not change when a round's two values trade places.
    size = statistics.median(abs(a - b) for a, b in zip(x, y, strict=True))
    s = [a + b for a, b in zip(x, y, strict=True)]
    if size < PAIRED_GAIN * _mad(s):
        return "paired"
    trend = lag1(s)
    return "paired" if trend is not None and trend >= TREND_R else "unpaired"


def dependence(series: Sequence[Sequence[float]]) -> float | None:
    """The between-round dependence of one or more series (a workload's per-round log
    ratios, one series a comparison): their lag-1 autocorrelation pooled (each series
    around its own mean), corrected for its bias towards -(1 + 4 rho)/n (Marriott & Pope
    1954: the raw lag-1 of an AR(1) 0.5 series averages 0.2 at 10 rounds, under any
    useful trigger). Series shorter than WANDER_MIN_ROUNDS are left out; None when none
    is left or they have no spread."""
    num = den = 0.0
    used = [d for d in series if len(d) >= WANDER_MIN_ROUNDS]
    for d in used:
        mean = statistics.fmean(d)
        dev = [v - mean for v in d]
        num += sum(a * b for a, b in zip(dev, dev[1:], strict=False))
        den += sum(v * v for v in dev)
    if den <= 0:
        return None
    r = num / den
    n = statistics.fmean(len(d) for d in used)
    return r + (1 + 4 * r) / n


def lag1(d: Sequence[float]) -> float | None:
    """Lag-1 autocorrelation of a series (None below WANDER_MIN_ROUNDS or without spread)."""
    if len(d) < WANDER_MIN_ROUNDS:
        return None
    mean = statistics.fmean(d)
    dev = [v - mean for v in d]
    ss = sum(v * v for v in dev)
    if ss <= 0:
        return None
    # Not corrected for its bias towards -1/n: the first-order correction (Marriott &
    # Pope 1954) widened enough A/A intervals to cost 4 points of power under drift.
    return sum(a * b for a, b in zip(dev, dev[1:], strict=False)) / ss


def _paired(
    d: Sequence[float], alpha: float
) -> tuple[float, float | None, float | None, float | None, bool]:
    ds = sorted(d)
    est = ranktests.median_walsh(ds)
    k, coverage, exact = ranktests.signed_rank_rank(len(ds), alpha)
    if k < 1:
        return est, None, None, None, exact
    total = len(ds) * (len(ds) + 1) // 2
    return est, ranktests.kth_walsh(ds, k), ranktests.kth_walsh(ds, total - k + 1), coverage, exact


def _paired_estimate(d: Sequence[float], alpha: float, k: int, min_n: int) -> stats.Estimate:
    est, lo, hi, coverage, exact = _paired(d, alpha)
    n = len(d)
    z = statistics.NormalDist().inv_cdf(1 - alpha / 2)
    sd = statistics.stdev(d)
    return stats.Estimate(
        est,
        lo,
        hi,
        coverage,
        "paired" if exact else "paired-approx",
        n,
        k,
        z * sd / math.sqrt(n) if sd > 0 else None,
        min_n,
        f"{n} rounds in common are too few for a {stats.percent(1 - alpha)} paired interval "
        f"(needs {min_n})",
    )


def _widened(e: stats.Estimate, r: float, why: str = "") -> stats.Estimate:
    """The interval stretched around its estimate by the AR(1) variance inflation
    (``why``: what the label says it was widened for, default: rounds that wander)."""
    f = math.sqrt((1 + min(r, WANDER_MAX_R)) / (1 - min(r, WANDER_MAX_R)))
    if e.lo is None or e.hi is None:
        return e
    return replace(
        e,
        lo=e.est - f * (e.est - e.lo),
        hi=e.est + f * (e.hi - e.est),
        method=e.method + "-widened" + (f"-{why}" if why else ""),
    )


def compare_rounds(
    base: Mapping[int, float],
    other: Mapping[int, float],
    *,
    min_effect: float = stats.MIN_EFFECT,
    confidence: float = stats.CONFIDENCE,
    looks: Looks = 1,
    method: str = "auto",
    equivalence_band: float | None = None,
    dependence_r: float | None = None,
) -> stats.Comparison:
    """Compare two configurations on the rounds both ran: other / base.

    ``base`` and ``other`` map a round index to that round's value (lower is better).
    Only rounds present in both count, so drift of the machine and adaptive stopping
    (one configuration decided early stops while the baseline goes on) cannot bias the
    ratio. ``paired``: Hodges-Lehmann on the per-round log ratios with the Wilcoxon
    signed-rank interval (it assumes only that a round's log ratio is symmetric about
    the true one); ``unpaired``: :func:`stats.compare` on the common rounds; ``auto``
    (the default): :func:`choose_method`. Use this whenever repeats carry their round;
    :func:`stats.compare` is for values without rounds. ``equivalence_band``: the band
    "equivalent" is judged against (default: ``min_effect``). ``dependence_r``: the
    between-round dependence estimated from more than this pair (:func:`dependence` over a
    workload's comparisons); default: this pair's own."""
    alpha = stats.check_settings(min_effect, confidence, looks, equivalence_band)
    band = min_effect if equivalence_band is None else equivalence_band
    k = looks_mod.count(looks)
    if method not in ROUND_METHODS:
        raise ValueError(f"method must be one of {', '.join(ROUND_METHODS)}, got {method!r}")
    rounds = sorted(set(base) & set(other))
    if not rounds:
        raise ValueError("no round in common")
    lo_other = stats.log_values([other[r] for r in rounds])
    lo_base = stats.log_values([base[r] for r in rounds])
    min_n = stats.smallest_decidable_n(alpha, paired=True)
    if method == "auto":
        method = choose_method(lo_other, lo_base, min_n)
    d = [x - y for x, y in zip(lo_other, lo_base, strict=True)]
    if len(rounds) < 2:
        return stats.single(lo_other, lo_base, k, min_n, min_effect, band)

    def estimate(a: float) -> stats.Estimate:
        if method == "unpaired":
            return stats.two_sample_estimate(lo_other, lo_base, a, k)
        return _paired_estimate(d, a, k, stats.smallest_decidable_n(a, paired=True))

    # "different"'s interval, and the two one-sided tests' one for "equivalent" (bands.py)
    e, eq = estimate(alpha), estimate(bands.equivalence_alpha(confidence, looks))
    r = dependence([d]) if dependence_r is None else dependence_r
    wander = r is not None and r >= WANDER_R
    if r is None:
        # Too few rounds to see a wander (the first look): widened as for the dependence
        # the later looks flag, the most they let pass unwidened.
        e, eq = _widened(e, WANDER_R, UNCHECKED), _widened(eq, WANDER_R, UNCHECKED)
    elif wander:
        e, eq = _widened(e, r), _widened(eq, r)
    c = stats.labelled(stats.verdict_of(e, min_effect, band, eq), confidence)
    warnings = [w for w in (tail_warning(base, other, band),) if w]
    if wander:
        warnings.insert(
            0,
            f"{WANDERING}: the per-round ratios move in runs from round to "
            f"round (lag-1 autocorrelation {r:.2f}), so the rounds are not "
            "independent: the interval is widened for it",
        )
    return replace(c, warnings=tuple(warnings)) if warnings else c


def tail_warning(base: Mapping[int, float], other: Mapping[int, float], band: float) -> str | None:
    """ "tail: ..." when ``other`` shows runs far from its typical one and ``base`` none:
    a value more than TAIL_SPREADS robust standard deviations (1.4826 MAD of both sides'
    log values around their own medians) from its side's median, in at most TAIL_SHARE
    of the side's runs (more is a second mode, not a tail), e.g. a configuration that
    takes 2x in 10 % of its runs at 4 % noise (17 of them). Two noisy point estimates
    (the ratio of the means against that of the medians, the first rule) disagreed on
    identical configurations in 21 % (Student-t 3) and 47 % (30 % noise) of runs; far
    values on one side only do in 2-4 % (benchmarks/decide.py). None with fewer than
    3 values a side. Unseen tails cannot be flagged: in 20 runs a 10 % tail is missed
    12 % of the time; ``band`` is the equivalence band the message is read against."""
    a, b = list(other.values()), list(base.values())
    if len(a) < 3 or len(b) < 3:
        return None
    la, lb = stats.log_values(a), stats.log_values(b)
    ma, mb = statistics.median(la), statistics.median(lb)
    s = 1.4826 * statistics.median([abs(x - ma) for x in la] + [abs(x - mb) for x in lb])
    if s <= 0:
        return None
    far_a = [x for x in la if abs(x - ma) > TAIL_SPREADS * s]
    if not far_a or any(abs(x - mb) > TAIL_SPREADS * s for x in lb):
        return None
    if len(far_a) > max(1, TAIL_SHARE * len(a)):
        return None
    means = statistics.fmean(a) / statistics.fmean(b)
    typical = statistics.median(a) / statistics.median(b)
    gap = "outside" if not 1 / (1 + band) <= means / typical <= 1 + band else "inside"
    return (
        f"{TAIL}: {len(far_a)} of {len(a)} runs lie far from its typical run (beyond "
        f"{TAIL_SPREADS:.0f} robust standard deviations), so the ratio of the means is "
        f"{means:.3g} against {typical:.3g} for typical runs (medians; {gap} the "
        f"+/-{band:.0%} band): the verdict is about typical runs, a bill over many runs "
        "sums the mean"
    )
