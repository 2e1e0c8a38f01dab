import math
import random
import sys
from pathlib import Path

import pytest

from tfvariants.analyze.shared import cautions
from tfvariants.analyze.statistics import adaptive, pairing, ranktests, stats
from tfvariants.analyze.statistics.decide import choose_baseline
from tfvariants.analyze.statistics.looks import per_look_alpha
from tfvariants.analyze.training import noise

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import decide  # noqa: E402  (the benchmark's fake runner, run here with fixed seeds)


def test_median_interval_states_its_real_coverage():
    iv = stats.median_interval([3.0, 1.0, 2.0, 5.0, 4.0])
    assert (iv.value, iv.lo, iv.hi, iv.method) == (3.0, 1.0, 5.0, "min-max")
    assert iv.coverage == pytest.approx(1 - 2 / 32)  # 93.75 %, not a claimed 95 %
    assert "93.8% interval" in iv.label and "median of 5" in iv.label
    big = stats.median_interval(list(range(1, 21)))
    assert big.method == "order-statistics" and big.coverage >= 0.95
    assert 1 < big.lo < big.value < big.hi < 20
    # never a nonsense lower bound: the interval is made of observed values
    two = stats.median_interval([1.0, 100.0])
    assert (two.lo, two.hi) == (1.0, 100.0) and two.coverage == 0.5


def test_single_value_is_one_measurement_without_interval():
    iv = stats.median_interval([4.0])
    assert (iv.value, iv.method, iv.coverage, iv.has_interval) == (4.0, "single", None, False)
    cmp = stats.compare([1.0], [2.0, 2.1, 2.2, 2.0])
    assert cmp.verdict == "undecided" and not cmp.significant
    assert not cmp.ratio.has_interval and "one measurement" in cmp.reasons[0]


def test_u_null_distribution_and_smallest_decidable_n():
    counts = ranktests.u_counts(3, 3)
    assert sum(counts) == math.comb(6, 3) and counts[0] == counts[-1] == 1
    assert stats.moses_rank(3, 3, 0.05) == 0  # 3 vs 3 can never give a 95 % interval
    assert stats.moses_rank(4, 4, 0.05) == 1  # 2/70 = 0.029 two-sided
    assert stats.smallest_decidable_n(0.05) == stats.MIN_REPEATS == 4
    assert stats.smallest_decidable_n(0.05 / 4) == stats.DEFAULT_REPEATS == 5


def test_verdict_and_interval_agree_by_construction():
    rng = random.Random(3)
    band = math.log1p(stats.MIN_EFFECT)
    for _ in range(300):
        n = rng.randint(2, 9)
        shift = rng.choice([1.0, 1.03, 1.1, 1.3])
        a = [shift * math.exp(rng.gauss(0, 0.08)) for _ in range(n)]
        b = [math.exp(rng.gauss(0, 0.08)) for _ in range(rng.randint(2, 9))]
        cmp = stats.compare(a, b)
        r = cmp.ratio
        if not r.has_interval:
            assert cmp.verdict == "undecided"
            continue
        lo, hi = math.log(r.lo), math.log(r.hi)
        outside = lo > band or hi < -band
        inside = -band <= lo and hi <= band
        expected = "different" if outside else "equivalent" if inside else "undecided"
        assert cmp.verdict == expected
        assert r.lo <= r.value <= r.hi


def test_clear_difference_is_decided_at_four_repeats_and_says_so():
    cmp = stats.compare([2.0, 2.1, 1.95, 2.05], [1.0, 1.02, 0.98, 1.01])
    assert cmp.verdict == "different" and cmp.direction == "higher"
    assert cmp.ratio.coverage == pytest.approx(1 - 2 / 70)
    assert "Mann-Whitney" in cmp.ratio.label
    # the same data at 3 vs 3 cannot decide, and says how many repeats would
    few = stats.compare([2.0, 2.1, 1.95], [1.0, 1.02, 0.98])
    assert few.verdict == "undecided" and "too few" in few.reasons[0] and few.more_repeats >= 1


def test_equivalence_is_a_decision_and_min_effect_is_symmetric():
    a = [1.000, 1.002, 0.999, 1.001, 1.003, 0.998, 1.0, 1.001]
    b = [1.001, 0.999, 1.002, 1.0, 0.998, 1.003, 1.001, 1.0]
    assert stats.compare(a, b).verdict == "equivalent"
    # a 4 % difference: below a 5 % floor it can never be "different", above 3 % it is
    slow = [x * 1.04 for x in b]
    assert stats.compare(slow, b, min_effect=0.05).verdict != "different"
    assert stats.compare(slow, b, min_effect=0.01).verdict == "different"
    # symmetric on the log scale: a/b and b/a decide alike
    for x, y in ((slow, b), (b, slow)):
        assert stats.compare(x, y, min_effect=0.03).verdict == "different"


def test_confidence_and_looks_change_the_interval():
    a = [1.3, 1.25, 1.4, 1.35, 1.28, 1.33]
    b = [1.0, 1.05, 0.97, 1.02, 1.01, 0.99]
    wide = stats.compare(a, b, confidence=0.99)
    narrow = stats.compare(a, b, confidence=0.80)
    looks4 = stats.compare(a, b, looks=4)
    assert narrow.ratio.lo >= wide.ratio.lo and narrow.ratio.hi <= wide.ratio.hi
    assert looks4.ratio.coverage >= 1 - 0.0182 and looks4.ratio.looks == 4
    assert "per look (95.0% over all 4 looks together)" in looks4.ratio.label
    assert looks4.ratio.lo >= wide.ratio.lo  # between one look at 95 % and Bonferroni's
    with pytest.raises(ValueError):
        stats.compare(a, b, confidence=1.5)
    with pytest.raises(ValueError):
        stats.compare(a, b, looks=(10, 5))  # looks are increasing repeat counts


@pytest.mark.parametrize(("k", "c"), [(2, 2.178), (3, 2.289), (4, 2.361), (5, 2.413)])
def test_per_look_level_matches_pococks_published_constants(k, c):
    """Pocock (1977), two-sided 5 %, K equally spaced looks; the default rule's looks
    after 5, 10, 15, 20 repeats are such looks."""
    from statistics import NormalDist

    from tfvariants.analyze.statistics import looks

    alpha = looks.per_look_alpha(0.95, k)
    assert NormalDist().inv_cdf(1 - alpha / 2) == pytest.approx(c, abs=0.0015)
    assert looks.per_look_alpha(0.95, tuple(5 * (i + 1) for i in range(k))) == alpha
    assert 0.05 / k < alpha < 0.05  # less strict than Bonferroni, stricter than one look


def test_per_look_level_holds_all_looks_together_by_simulation():
    """The claim itself, on the Brownian motion the computation assumes: with unequal
    spacing, K looks at the computed level miss together in about alpha of the runs."""
    import random
    from statistics import NormalDist

    from tfvariants.analyze.statistics import looks

    planned = (3, 9, 14, 20)
    c = NormalDist().inv_cdf(1 - looks.per_look_alpha(0.95, planned) / 2)
    rng, runs, crossed = random.Random(7), 20000, 0
    for _ in range(runs):
        w, n = 0.0, 0
        for m in planned:
            w += sum(rng.gauss(0, 1) for _ in range(m - n))
            n = m
            if abs(w) / n**0.5 > c:
                crossed += 1
                break
    assert 0.045 < crossed / runs < 0.055


def test_bimodal_repeats_are_named_in_plain_words():
    text = cautions.bimodal([2.7, 2.8, 5.0, 5.1, 2.75])
    assert text and "3 repeats near 2.75" in text and "2 near 5.05" in text
    assert cautions.bimodal([2.7, 2.8, 2.9, 2.75, 2.85]) is None
    warns = cautions.stability_warnings("mnist_cnn local@2", [2.7, 2.8, 5.0, 5.1, 2.75])
    assert [w.kind for w in warns] == ["bimodal"]


def test_resolvable_ratio_grows_with_noise_and_shrinks_with_repeats():
    rng = random.Random(0)
    quiet = [rng.gauss(0, 0.02) for _ in range(40)]
    loud = [rng.gauss(0, 0.2) for _ in range(40)]
    assert noise.resolvable_ratio(quiet, 5) < noise.resolvable_ratio(loud, 5)
    assert noise.resolvable_ratio(loud, 20) < noise.resolvable_ratio(loud, 5)
    assert noise.resolvable_ratio(loud, 3) is None  # 3 vs 3 cannot resolve anything


def test_default_baseline_rules():
    dev = {"pip": "cpu", "gpu": "gpu", "x": "cpu"}
    assert choose_baseline({("pip", 2): 5, ("gpu", 8): 3, ("gpu", 16): 3}, dev) == ("gpu", 16)
    assert choose_baseline({("pip", 2): 5, ("gpu", 8): 0}, dev) == ("pip", 2)
    assert choose_baseline({("pip", 2): 2, ("x", 2): 5, ("pip", 1): 9}, dev, ["pip", "x"]) == (
        "x",
        2,
    )
    assert choose_baseline({("pip", 2): 0}, dev) is None
    # An oversubscribed configuration is no yardstick while one that fits has results...
    counts = {("pip", 2): 5, ("pip", 8): 5}
    assert choose_baseline(counts, dev, oversubscribed={("pip", 8)}) == ("pip", 2)
    # ...but it is still better than none, and a GPU still comes first.
    assert choose_baseline({("pip", 8): 5}, dev, oversubscribed={("pip", 8)}) == ("pip", 8)
    gpu = {("pip", 2): 5, ("gpu", 8): 3}
    assert choose_baseline(gpu, dev, oversubscribed={("gpu", 8)}) == ("gpu", 8)


def test_stopping_rule_has_a_few_fixed_looks():
    # Evenly spaced, plus the first count with a paired interval at the rule's level.
    rule = adaptive.stopping_rule(5, 20, 4)
    assert rule.looks == (5, 7, 10, 15, 20) and rule.k == 5
    assert adaptive.stopping_rule(5, 5).looks == (5,)
    assert adaptive.stopping_rule(5, 8).looks == (5, 6, 7, 8)  # already a look there
    assert adaptive.stopping_rule(10, 20).looks == (10, 13, 17, 20)  # paired exists at 10
    # At 99 % a paired interval needs more rounds than the second look: nothing added.
    assert adaptive.stopping_rule(5, 20, confidence=0.99).looks == (5, 10, 15, 20)
    # The added look keeps 5 vs 5 decidable and the paired interval at 7 rounds.
    alpha = per_look_alpha(0.95, rule.looks)
    assert stats.moses_rank(5, 5, alpha) == 2
    assert stats.smallest_decidable_n(alpha, paired=True) == 7


def test_simulated_error_rates_with_adaptive_stopping():
    """The benchmark's checks at a modest trial count and fixed seeds (the full run is
    `make bench-decide`; these limits carry the slack of 150 trials)."""
    names = ("A/A log-normal 10%", "A/A noise 2% vs 50%", "A/A drift 1%/round",
             "1.2x, drift", "1.3x, drift", "2x, bimodal")  # fmt: skip
    rows = {r["name"]: r for r in decide.run_all(trials=150, seed=7, only=names)}
    assert set(rows) == set(names)
    for name, r in rows.items():
        if r["aa"]:
            assert r["different"] <= 0.05, (name, r)
        # a stopped interval is covered by the together level: 95 % over all looks
        assert r["interval_miss"] <= 0.05, (name, r)
    assert rows["1.2x, drift"]["found"] >= 0.85
    assert rows["2x, bimodal"]["found"] >= 0.98


def test_one_look_ceiling_is_above_the_stopping_rule_and_falls_with_the_level():
    """bench-decide's ceiling: one look after 20 repeats at the full confidence finds a
    20 % slowdown at least as often as the five-look rule (150 trials, fixed seed), and
    the same draws at a stricter level can never find more (nested intervals)."""
    (scn,) = [s for s in decide.scenarios() if s.name == "1.2x, 5% outliers"]
    (rule_row,) = decide.run_all(trials=150, seed=5, only=(scn.name,))
    full = decide.one_look(scn, "auto", 150, 5, 20)
    strict = decide.one_look(scn, "auto", 150, 5, 20, confidence=0.9838)
    assert strict <= full
    assert full >= rule_row["found"] - 0.03  # 150 trials of slack
    assert full > 0.8 and strict < full  # not a constant: the level matters here


def test_pooled_repeats_under_drift_are_biased_common_rounds_are_not():
    """The audit's bias: with drift and adaptive stopping, all repeats pooled give a
    biased ratio; the same runs compared on their common rounds do not."""
    rows = {
        r["method"]: r
        for r in decide.run_all(
            trials=120, seed=3, methods=("auto", "pooled"), only=("1.3x, drift",)
        )  # fmt: skip
    }
    assert rows["auto"]["interval_miss"] <= 0.05
    assert abs(rows["auto"]["median_ratio"] / 1.3 - 1) < 0.02
    assert rows["pooled"]["median_ratio"] / 1.3 - 1 < -0.04  # later, slower baseline repeats


# ---- the audit's fixes ----


def test_order_statistics_of_differences_match_listing_them_all(monkeypatch):
    rng = random.Random(11)
    monkeypatch.setattr(ranktests, "LIST_MAX", 0)  # force the bisection path
    for _ in range(60):
        coarse = rng.random() < 0.3  # many ties
        xs = sorted(round(rng.gauss(0, 1), 1 if coarse else 12) for _ in range(rng.randint(1, 30)))
        ys = sorted(
            round(rng.gauss(0.3, 2), 1 if coarse else 12) for _ in range(rng.randint(1, 30))
        )
        diffs = sorted(x - y for x in xs for y in ys)
        for k in {1, len(diffs), rng.randint(1, len(diffs))}:
            assert ranktests.kth_difference(xs, ys, k) == diffs[k - 1]
        walsh = sorted(x / 2 + y / 2 for i, x in enumerate(xs) for y in xs[i:])
        for k in {1, len(walsh), rng.randint(1, len(walsh))}:
            assert ranktests.kth_walsh(xs, k) == walsh[k - 1]


def test_normal_approximation_is_never_narrower_than_the_exact_interval():
    """Where both can be computed (beyond the exact limits), the approximate k is never
    larger than the exact one, and its stated coverage is within 0.2 % of the truth."""
    for alpha in (0.05, 0.0125, 0.2):
        for n, m in ((40, 70), (51, 60), (60, 60)):
            counts, total = ranktests.u_counts(n, m), math.comb(n + m, n)
            k_exact, _ = ranktests._exact_rank(counts, total, alpha)
            k, cov, exact = ranktests.mann_whitney_rank(n, m, alpha)
            assert not exact and 1 <= k <= k_exact
            true_cov = 1 - 2 * sum(counts[:k]) / total
            assert true_cov >= 1 - alpha and abs(true_cov - cov) < 0.002
        for n in (101, 130):
            counts = ranktests.signed_rank_counts(n)
            k_exact, _ = ranktests._exact_rank(counts, 2**n, alpha)
            k, cov, exact = ranktests.signed_rank_rank(n, alpha)
            assert not exact and 1 <= k <= k_exact
            true_cov = 1 - 2 * sum(counts[:k]) / 2**n
            assert true_cov >= 1 - alpha and abs(true_cov - cov) < 0.002


def test_thousands_of_repeats_per_side_are_compared():
    rng = random.Random(2)
    a = [1.2 * math.exp(rng.gauss(0, 0.1)) for _ in range(2000)]
    b = [math.exp(rng.gauss(0, 0.1)) for _ in range(2000)]
    cmp = stats.compare(a, b, looks=4)
    assert cmp.verdict == "different" and 1.18 < cmp.ratio.lo < cmp.ratio.hi < 1.22
    assert cmp.ratio.method == "hodges-lehmann-approx" and "normal approximation" in cmp.ratio.label
    paired = pairing.compare_rounds(dict(enumerate(b)), dict(enumerate(a)))
    assert paired.verdict == "different" and 1.18 < paired.ratio.lo < paired.ratio.hi < 1.22
    assert stats.median_interval(a * 5).method == "order-statistics"  # 10,000 repeats


@pytest.mark.parametrize(
    "kwargs",
    [{"min_effect": math.nan}, {"min_effect": math.inf}, {"min_effect": -0.1},
     {"confidence": math.nan}, {"confidence": 1.0}, {"looks": 0}, {"looks": 1.5}],
)  # fmt: skip
def test_bad_settings_are_refused(kwargs):
    with pytest.raises(ValueError):
        stats.compare([1.0, 2.0, 3.0], [1.0, 2.0, 3.0], **kwargs)
    with pytest.raises(ValueError):
        pairing.compare_rounds({0: 1.0, 1: 2.0}, {0: 1.0, 1: 2.0}, **kwargs)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_values_are_refused(bad):
    with pytest.raises(ValueError, match="finite"):
        stats.compare([1.0, bad, 3.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="finite"):
        stats.median_interval([1.0, bad])
    with pytest.raises(ValueError, match="finite"):
        pairing.compare_rounds({0: 1.0, 1: 2.0}, {0: bad, 1: 2.0})


def test_ties_on_the_band_edge_decide_alike():
    # both are exactly 1.05 against a 5 % band; in floating point one was a hair above
    assert math.log(63) - math.log(60) != math.log(105) - math.log(100)
    assert stats.compare([63.0] * 5, [60.0] * 5).verdict == "equivalent"
    assert stats.compare([105.0] * 5, [100.0] * 5).verdict == "equivalent"
    assert stats.compare([60.0] * 5, [63.0] * 5).verdict == "equivalent"
    assert stats.compare([64.0] * 5, [60.0] * 5).verdict == "different"


def test_ninety_percent_at_three_vs_three_exists():
    # 1 - 0.9 is 0.09999999999999998; the smallest two-sided p of 3 vs 3 is exactly 0.1
    cmp = stats.compare([2.0, 2.1, 1.95], [1.0, 1.02, 0.98], confidence=0.9)
    assert cmp.verdict == "different" and cmp.ratio.coverage == pytest.approx(0.9)
    assert stats.median_interval([1.0, 2.0, 3.0, 4.0, 5.0], confidence=1 - 1 / 16).method == (
        "min-max"
    )


def test_labels_never_round_up_to_certainty():
    assert stats.percent(0.99975) != "100.0%" and float(stats.percent(0.99975)[:-1]) < 100
    assert stats.percent(0.9375) == "93.8%"
    assert stats.percent(1 - 1e-12).startswith("99.9")
    iv = stats.Interval(1.1, 1.0, 1.2, "hodges-lehmann", 40, 0.99975, 1)
    assert "100" not in iv.label


def test_per_look_label_states_what_holds_together():
    a = [1.3, 1.25, 1.4, 1.35, 1.28, 1.33]
    b = [1.0, 1.05, 0.97, 1.02, 1.01, 0.99]
    label = stats.compare(a, b, looks=4).ratio.label
    assert "per look" in label and "over all 4 looks" in label
    assert "per look" not in stats.compare(a, b).ratio.label


def test_extreme_magnitudes_do_not_overflow():
    cmp = stats.compare([1e300] * 5, [1e-300] * 5)
    assert cmp.verdict == "different" and cmp.ratio.value == math.inf
    assert stats.median_interval([1e308, 1.5e308]).value == pytest.approx(1.25e308)
    assert stats.relative_spread([1e308, 1.5e308]) == pytest.approx(0.2828, rel=1e-3)
    assert stats.compare([1e-320, 2e-320, 3e-320, 4e-320], [1.0, 2.0, 3.0, 4.0]).verdict == (
        "different"
    )
    assert "inf" in (cautions.bimodal([1e308, 1.1e308, 1e-308, 1.1e-308]) or "")


def test_compare_rounds_uses_only_common_rounds_and_cancels_drift():
    # 10 %/round drift: the baseline ran 20 rounds, the other config stopped after 8
    base = {r: 10 * 1.1**r * (1.01 if r % 2 else 0.99) for r in range(20)}
    other = {r: 13 * 1.1**r * (0.99 if r % 3 else 1.01) for r in range(8)}
    pooled = stats.compare(list(other.values()), list(base.values()))
    assert pooled.ratio.value < 1  # the later, drifted baseline repeats dominate
    cmp = pairing.compare_rounds(base, other, looks=4)
    assert cmp.verdict == "different" and cmp.ratio.lo < 1.3 < cmp.ratio.hi
    assert cmp.ratio.n == 8 and cmp.ratio.method == "paired"  # drift: pairing pays
    assert "8 paired rounds" in cmp.ratio.label and "Wilcoxon" in cmp.ratio.label
    with pytest.raises(ValueError, match="no round in common"):
        pairing.compare_rounds({0: 1.0}, {1: 1.0})
    with pytest.raises(ValueError, match="method"):
        pairing.compare_rounds(base, other, method="magic")


def test_compare_rounds_pairs_when_noise_differs_and_says_when_too_few():
    rng = random.Random(4)
    base = {r: 10 * math.exp(rng.gauss(0, 0.5)) for r in range(12)}
    other = {r: 10 * math.exp(rng.gauss(0, 0.02)) for r in range(12)}
    assert pairing.compare_rounds(base, other).ratio.method == "paired"
    quiet = {r: 10 * math.exp(rng.gauss(0, 0.1)) for r in range(12)}
    assert pairing.compare_rounds(quiet, other, method="unpaired").ratio.method == "hodges-lehmann"
    few = pairing.compare_rounds(dict(list(base.items())[:5]), other, looks=4, method="paired")
    assert few.verdict == "undecided" and "too few" in few.reasons[0] and few.more_repeats >= 1
    assert stats.smallest_decidable_n(0.05, paired=True) == 6  # 2/64 <= 0.05 < 2/32


def test_auto_keeps_first_look_decisions_when_pairing_cannot_decide_yet():
    """5 rounds at 98.75 % have no paired interval: auto pairs there only for clearly
    unequal noise, so a clear 2x difference at 2 % noise is still decided at once."""
    rng = random.Random(8)
    decided = 0
    for _ in range(200):
        base = {r: 2.0 * math.exp(rng.gauss(0, 0.02)) for r in range(5)}
        other = {r: 4.0 * math.exp(rng.gauss(0, 0.02)) for r in range(5)}
        decided += pairing.compare_rounds(base, other, looks=4).verdict == "different"
    assert decided >= 180
    wild = {r: 10 * math.exp(g) for r, g in enumerate((-0.6, 0.5, 0.1, -0.3, 0.7))}
    calm = {r: 10 * math.exp(g) for r, g in enumerate((-0.02, 0.01, 0.0, 0.02, -0.01))}
    assert pairing.compare_rounds(wild, calm, looks=4).ratio.method == "paired"
