import math

import pytest

from tfvariants.analyze import stats


def test_median_interval_small_n_uses_t_interval_around_the_median():
    iv = stats.median_interval([10.0, 11.0, 12.0])
    assert iv.method == "t"
    assert iv.value == 11.0
    # mean 11, sd 1, t(2)=4.303 -> 11 +- 4.303/sqrt(3)
    assert iv.lo == pytest.approx(11 - 4.303 / math.sqrt(3))
    assert iv.hi == pytest.approx(11 + 4.303 / math.sqrt(3))


def test_median_interval_large_n_uses_order_statistics():
    xs = [float(x) for x in range(1, 11)]  # n=10: k=2 -> [x_(2), x_(9)], coverage 97.9 %
    iv = stats.median_interval(xs)
    assert iv.method == "order-statistics"
    assert (iv.lo, iv.value, iv.hi) == (2.0, 5.5, 9.0)
    assert stats.median_interval([1.0, 2, 3, 4, 5, 6]).lo == 1.0  # n=6: [min, max]


def test_median_interval_single_value_has_no_interval():
    iv = stats.median_interval([4.0])
    assert (iv.lo, iv.value, iv.hi, iv.method) == (4.0, 4.0, 4.0, "none")


def test_mann_whitney_exact_small_samples():
    # 3 vs 3 completely separated: the most extreme split, 2 of C(6,3)=20 -> p = 0.1
    assert stats.mann_whitney_p([1, 2, 3], [4, 5, 6]) == pytest.approx(0.1)
    assert stats.mann_whitney_p([1, 4, 5], [2, 3, 6]) > 0.5
    # 10 vs 10 separated: exact p = 2 / C(20,10)
    p = stats.mann_whitney_p(list(range(10)), list(range(10, 20)))
    assert p == pytest.approx(2 / math.comb(20, 10))


def test_mann_whitney_normal_approximation_for_large_samples():
    a = [float(x) for x in range(40)]
    b = [x + 100.0 for x in a]
    assert stats.mann_whitney_p(a, b) < 1e-10
    assert stats.mann_whitney_p(a, list(a)) > 0.9


def test_three_vs_three_separated_is_called_by_interval_non_overlap():
    # the U test alone can never get below p=0.1 here; the interval rule decides
    cmp = stats.compare([5.0, 5.05, 5.1], [10.0, 10.1, 10.2])
    assert cmp.p_value == pytest.approx(0.1)
    assert cmp.ci_overlap is False
    assert cmp.verdict == "faster"
    assert cmp.ratio.value == pytest.approx(5.05 / 10.1)
    assert cmp.ratio.lo < cmp.ratio.value < cmp.ratio.hi
    assert stats.compare([10.0, 10.1, 10.2], [5.0, 5.05, 5.1]).verdict == "slower"


def test_small_effect_is_not_significant_even_when_separated():
    cmp = stats.compare([9.7, 9.71, 9.72], [10.0, 10.01, 10.02])  # 3 % apart, tight
    assert cmp.ci_overlap is False
    assert cmp.verdict == "not significant"
    assert any("minimum effect" in r for r in cmp.reasons)
    # a 2 % minimum effect would call it
    assert (
        stats.compare([9.7, 9.71, 9.72], [10.0, 10.01, 10.02], min_effect=0.02).verdict == "faster"
    )


def test_noisy_overlapping_samples_are_not_significant():
    cmp = stats.compare([8.0, 10.0, 12.0], [9.0, 11.0, 13.0])
    assert cmp.verdict == "not significant"
    assert not cmp.significant


def test_single_repeat_is_never_significant():
    assert stats.compare([1.0], [10.0]).verdict == "not significant"


def test_ratio_interval_propagates_both_widths():
    a = stats.Interval(2.0, 1.8, 2.2, "t", 3)
    b = stats.Interval(1.0, 0.9, 1.1, "t", 3)
    r = stats.ratio_interval(a, b)
    assert r.value == 2.0
    wider = stats.ratio_interval(a, stats.Interval(1.0, 0.5, 2.0, "t", 3))
    assert r.lo < 2.0 < r.hi
    assert wider.hi - wider.lo > r.hi - r.lo


def test_warnings_in_plain_words():
    kinds = {w.kind for w in stats.stability_warnings("x", [1.0, 1.5, 1.0])}
    assert kinds == {"unstable"}
    w = stats.stability_warnings("x", [1.0, 1.01])
    assert [x.kind for x in w] == ["few_repeats"]
    assert "--repeats" in w[0].hint
    assert stats.stability_warnings("x", [1.0, 1.01, 1.02]) == []
    over = stats.oversubscribed_warning("pip@16", 16, 2)
    assert "emulates 16 vCPUs on 2 CPUs: not representative" in over.message
