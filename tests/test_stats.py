import math
import random
import sys
from pathlib import Path

import pytest

from tfvariants.analyze import adaptive, ranktests, stats
from tfvariants.analyze.decide import choose_baseline

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
    assert looks4.ratio.coverage >= 1 - 0.05 / 4 and looks4.ratio.looks == 4
    with pytest.raises(ValueError):
        stats.compare(a, b, confidence=1.5)


def test_bimodal_repeats_are_named_in_plain_words():
    text = stats.bimodal([2.7, 2.8, 5.0, 5.1, 2.75])
    assert text and "3 repeats near 2.75" in text and "2 near 5.05" in text
    assert stats.bimodal([2.7, 2.8, 2.9, 2.75, 2.85]) is None
    warns = stats.stability_warnings("mnist_cnn local@2", [2.7, 2.8, 5.0, 5.1, 2.75])
    assert [w.kind for w in warns] == ["bimodal"]


def test_resolvable_ratio_grows_with_noise_and_shrinks_with_repeats():
    rng = random.Random(0)
    quiet = [rng.gauss(0, 0.02) for _ in range(40)]
    loud = [rng.gauss(0, 0.2) for _ in range(40)]
    assert stats.resolvable_ratio(quiet, 5) < stats.resolvable_ratio(loud, 5)
    assert stats.resolvable_ratio(loud, 20) < stats.resolvable_ratio(loud, 5)
    assert stats.resolvable_ratio(loud, 3) is None  # 3 vs 3 cannot resolve anything


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
    rule = adaptive.stopping_rule(5, 20, 4)
    assert rule.looks == (5, 10, 15, 20) and rule.k == 4
    assert adaptive.stopping_rule(5, 5).looks == (5,)


def test_simulated_error_rates_with_adaptive_stopping():
    """The benchmark's checks at a modest trial count and fixed seeds."""
    rows = {r["name"]: r for r in decide.run_all(trials=250, seed=7)}
    for name, r in rows.items():
        if name.startswith("A/A"):
            assert r["different"] <= 0.05, (name, r)
        assert r["interval_miss"] <= 0.05 + 0.03, (name, r)  # 250 trials: sampling slack
    assert rows["20% slower, 10% noise"]["slower"] >= 0.90
    assert rows["2x slower, bimodal"]["slower"] >= 0.98
