"""The paired/unpaired choice, equivalence as its own answer, wandering rounds, tails, and
statements across comparisons (tfvariants/analyze/statistics/pairing.py, family.py)."""

import math
import random
import statistics

import pytest

from tfvariants.analyze.statistics import family, pairing, stats, verdicts
from tfvariants.analyze.statistics.decide import Settings
from tfvariants.store.training import ConfigKey


def _logs(values):
    return [math.log(v) for v in values]


def test_method_choice_does_not_see_the_sign_of_the_differences():
    """The audit's leak: the first rule paired exactly when the per-round differences
    shared a sign, i.e. when the paired interval was about to exclude 1. Swapping the two
    values of some rounds flips those rounds' signs and must not change the choice."""
    rng = random.Random(3)
    for _ in range(200):
        base = [10 * math.exp(rng.gauss(0, 0.1)) for _ in range(10)]
        # every round a bit slower on one side: all differences share a sign
        other = [b * math.exp(0.08 + rng.gauss(0, 0.01)) for b in base]
        x, y = _logs(other), _logs(base)
        swapped_x = [b if i % 2 else a for i, (a, b) in enumerate(zip(x, y, strict=True))]
        swapped_y = [a if i % 2 else b for i, (a, b) in enumerate(zip(x, y, strict=True))]
        sx, sy = pairing._mad(swapped_x), pairing._mad(swapped_y)
        if max(sx, sy) > pairing.SPREAD_SWITCH * min(sx, sy):
            continue  # unequal spreads pair on their own account
        assert pairing.choose_method(x, y, 7) == pairing.choose_method(swapped_x, swapped_y, 7)


def test_rounds_that_move_together_are_still_paired():
    rng = random.Random(5)
    rounds = [rng.gauss(0, 0.3) for _ in range(12)]  # a slow round slows both sides
    x = [r + rng.gauss(0, 0.03) for r in rounds]
    y = [r + rng.gauss(0, 0.03) for r in rounds]
    assert pairing.choose_method(x, y, 7) == "paired"
    assert pairing.choose_method(x[:5], y[:5], 7) == "unpaired"  # no paired interval yet


def test_a_drifting_machine_pairs_from_the_trend_of_the_round_sums():
    rng = random.Random(8)
    x = [0.03 * r + rng.gauss(0, 0.1) for r in range(15)]  # both sides 3 %/round slower
    y = [0.03 * r + rng.gauss(0, 0.1) for r in range(15)]
    s = [a + b for a, b in zip(x, y, strict=True)]
    assert pairing.lag1(s) >= pairing.TREND_R
    assert pairing.choose_method(x, y, 7) == "paired"
    flat = [v - 0.03 * r for r, v in enumerate(x)], [v - 0.03 * r for r, v in enumerate(y)]
    assert pairing.choose_method(*flat, 7) == "unpaired"


def test_equivalence_has_its_own_band_and_survives_min_effect_zero():
    rng = random.Random(1)
    base = {r: 10 * math.exp(rng.gauss(0, 0.01)) for r in range(12)}
    other = {r: v * math.exp(rng.gauss(0, 0.01)) for r, v in base.items()}
    # --min-effect 0 used to make "equivalent" impossible (a band of width 0)
    c = pairing.compare_rounds(base, other, min_effect=0.0, equivalence_band=0.05, looks=4)
    assert c.verdict == "equivalent" and c.equivalence_band == 0.05
    c = stats.compare(list(other.values()), list(base.values()), min_effect=0.0)
    assert c.verdict != "equivalent"  # the band defaults to min_effect without rounds
    with pytest.raises(ValueError, match="equivalence_band"):
        pairing.compare_rounds(base, other, equivalence_band=0.0)


def test_different_is_judged_before_equivalent_when_the_bands_overlap():
    a = [1.03, 1.031, 1.029, 1.03, 1.032, 1.028]
    b = [1.0, 1.001, 0.999, 1.0, 1.002, 0.998]
    c = stats.compare(a, b, min_effect=0.01, equivalence_band=0.05)
    assert c.verdict == "different"
    assert stats.compare(a, b, min_effect=0.05, equivalence_band=0.05).verdict == "equivalent"


def test_settings_band_defaults_to_five_percent_or_the_larger_min_effect():
    assert Settings().band == 0.05
    assert Settings(min_effect=0.0).band == 0.05
    assert Settings(min_effect=0.1).band == 0.1  # no gap between the two answers
    assert Settings(min_effect=0.1, equivalence_band=0.03).band == 0.03
    assert "typical runs" in Settings().describe() and "on its own" in Settings().describe()


def test_an_undecided_comparison_counts_repeats_towards_the_nearer_answer():
    base = [10.0, 10.4, 9.6, 10.2, 9.8]
    other = [10.1, 10.5, 9.5, 10.3, 9.7]
    c = stats.compare(other, base, min_effect=0.0, equivalence_band=0.05, looks=4)
    # the estimate sits near 1: "equivalent" is the nearer answer, and needs a narrower
    # interval (the old count measured from the edge at 0 said "not practical")
    assert c.verdict == "undecided" and c.more_repeats is not None and c.more_repeats >= 1


def _wandering_rounds(n: int = 20) -> tuple[dict[int, float], dict[int, float]]:
    rng = random.Random(9)
    w, base, other = 0.0, {}, {}
    for r in range(n):
        w = 0.9 * w + rng.gauss(0, 0.05)
        base[r] = 10 * math.exp(rng.gauss(0, 0.01))
        other[r] = 10 * math.exp(w + rng.gauss(0, 0.01))
    return base, other


def test_a_wandering_configuration_is_named_and_its_interval_widened(monkeypatch):
    base, other = _wandering_rounds()
    d = [math.log(other[r] / base[r]) for r in range(20)]
    assert pairing.lag1(d) >= pairing.WANDER_R
    c = pairing.compare_rounds(base, other, looks=4, min_effect=0.0)
    assert c.warnings and c.warnings[0].startswith(pairing.WANDERING)
    assert c.ratio.method.endswith("-widened") and "wander" in c.ratio.label
    monkeypatch.setattr(pairing, "WANDER_R", 2.0)  # never: the interval as it was
    plain = pairing.compare_rounds(base, other, looks=4, min_effect=0.0)
    assert not any(w.startswith(pairing.WANDERING) for w in plain.warnings)
    assert c.ratio.lo < plain.ratio.lo <= plain.ratio.hi < c.ratio.hi
    assert c.ratio.value == plain.ratio.value


def test_independent_rounds_are_not_called_wandering():
    rng = random.Random(4)
    flagged = 0
    for _ in range(200):
        base = {r: 10 * math.exp(rng.gauss(0, 0.1)) for r in range(20)}
        other = {r: 10 * math.exp(rng.gauss(0, 0.1)) for r in range(20)}
        flagged += bool(pairing.compare_rounds(base, other, looks=4).warnings)
    assert flagged / 200 < 0.15  # lag-1 >= 0.3 by chance at 20 rounds: a few percent
    assert pairing.lag1([1.0, 2.0, 3.0]) is None  # too few rounds to say


def test_a_tail_is_named_and_the_verdict_says_it_is_about_typical_runs():
    rng = random.Random(6)
    base = {r: 10 * math.exp(rng.gauss(0, 0.02)) for r in range(20)}
    other = {
        r: 10 * math.exp(rng.gauss(0, 0.02)) * (2.0 if r in (3, 11) else 1.0) for r in range(20)
    }
    c = pairing.compare_rounds(base, other, looks=4)
    assert c.verdict == "equivalent"  # typical runs: the medians agree
    assert any(w.startswith(pairing.TAIL) for w in c.warnings)
    assert pairing.tail_warning(base, base, 0.05) is None


def _rounds(values):
    return dict(enumerate(values))


def test_the_fastest_needs_a_decided_lead_over_every_other_at_the_family_level():
    rng = random.Random(7)
    fast = _rounds(10 * math.exp(rng.gauss(0, 0.02)) for _ in range(12))
    slow = _rounds(13 * math.exp(rng.gauss(0, 0.02)) for _ in range(12))
    slower = _rounds(15 * math.exp(rng.gauss(0, 0.02)) for _ in range(12))
    tie = _rounds(10 * math.exp(rng.gauss(0, 0.02)) for _ in range(12))
    s = Settings()
    won = family.lead(fast, {"slow": slow, "slower": slower}, s)
    assert won.decided and won.settings.confidence == pytest.approx(0.975)
    assert "whole ranking" in won.covers() and "97.5%" in won.covers()
    # beating the next best alone is not enough: every rival counts
    assert not family.lead(fast, {"slow": slow, "tie": tie}, s).decided
    assert not family.lead(fast, {}, s).decided
    with pytest.raises(ValueError):
        family.family_settings(s, 0)


def test_a_lead_decided_pair_by_pair_can_stay_undecided_for_the_family():
    """5 vs 5 repeats at 95 %: the 96.8 % interval (3rd largest pairwise ratio 1.07/1.14)
    decides; split over 4 rivals (98.75 % each) it is the full range, whose largest ratio
    1.07/1.10 reaches into the band."""
    best = _rounds([1.00, 1.01, 1.02, 1.03, 1.07])
    rival = _rounds([1.10, 1.12, 1.14, 1.16, 1.18])
    one = pairing.compare_rounds(rival, best, method="unpaired")
    assert one.verdict == "different"
    lead = family.lead(best, {f"r{i}": rival for i in range(4)}, Settings())
    assert not lead.decided


def test_the_ranking_stays_open_only_on_rivals_more_rounds_can_put_behind_the_leader():
    """The leader of five rounds against rivals it beats pair by pair: at the family's
    split the comparisons stay undecided, so its sides run on; once decided, or with a
    tied (equivalent) rival that no number of rounds makes slower, nothing stays open."""
    best = _rounds([1.00, 1.01, 1.02, 1.03, 1.07])
    rival = _rounds([1.10, 1.12, 1.14, 1.16, 1.18])
    rivals = {f"r{i}": rival for i in range(4)}
    assert family.open_rivals(best, rivals, Settings()) == ["r0", "r1", "r2", "r3"]
    rng = random.Random(3)
    fast = _rounds(10 * math.exp(rng.gauss(0, 0.01)) for _ in range(12))
    slow = {f"s{i}": _rounds(13 * math.exp(rng.gauss(0, 0.01)) for _ in range(12)) for i in (1, 2)}
    assert family.lead(fast, slow, Settings()).decided
    assert family.open_rivals(fast, slow, Settings()) == []
    tie = _rounds(10 * math.exp(rng.gauss(0, 0.01)) for _ in range(12))
    with_tie = {"s1": slow["s1"], "tie": tie}
    assert family.lead(fast, with_tie, Settings()).comparisons["tie"].verdict == "equivalent"
    assert family.open_rivals(fast, with_tie, Settings()) == []
    # one rival: the baseline comparison is the whole ranking
    assert family.open_rivals(best, {"r0": rival}, Settings()) == []


def test_the_comparisons_named_warnings_reach_the_reports_warnings():
    from types import SimpleNamespace

    from tfvariants.analyze.training import noise

    base, other = _wandering_rounds()
    wander = pairing.compare_rounds(base, other, looks=4)
    plain = stats.Comparison(wander.ratio, "undecided")
    groups = [
        SimpleNamespace(workload="mnist_cnn", label="local@2", time_cmp=wander, cost_cmp=wander),
        SimpleNamespace(workload="mnist_cnn", label="local@1", time_cmp=plain, cost_cmp=None),
    ]
    found = {w.kind: w for w in noise.comparison_warnings(groups)}
    assert pairing.WANDERING in found
    assert "mnist_cnn local@2 (time)" in found[pairing.WANDERING].message
    assert "(cost)" in found[pairing.WANDERING].message and found[pairing.WANDERING].hint
    assert "local@1" not in found[pairing.WANDERING].message


def test_the_equivalence_band_option_is_checked_like_the_other_settings(tmp_path, capsys):
    import argparse

    from tfvariants.cli import main
    from tfvariants.options import argtypes

    assert argtypes.equivalence_band("10%") == pytest.approx(0.1)
    for bad in ("0", "100%", "-5%", "nan", "x"):
        with pytest.raises(argparse.ArgumentTypeError):
            argtypes.equivalence_band(bad)
    out = tmp_path / "x"
    argv = ["compare", "--workloads", "mnist_mlp", "--out", str(out), "--equivalence-band", "0"]
    assert main(argv) == 2
    assert capsys.readouterr().err.count("\n") == 1 and not out.exists()


def test_bench_decide_scores_the_new_scenarios():
    """The benchmark's wander, tail and false-equivalence scenarios at a small trial count
    (the full run is `make bench-decide`)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import decide

    names = ("A/A wander AR(1) 0.8", "A/A tail 2x in 10%", "1.1x, 4% noise")
    rows = {r["name"]: r for r in decide.run_all(trials=60, seed=2, only=names)}
    assert rows["A/A wander AR(1) 0.8"]["warned"] > 0.05  # the widening's warning fires
    # the column of false alarms counts the same warning, in every scenario
    assert rows["A/A wander AR(1) 0.8"]["wandering"] == rows["A/A wander AR(1) 0.8"]["warned"]
    assert 0 <= rows["1.1x, 4% noise"]["wandering"] < 0.2
    assert rows["A/A tail 2x in 10%"]["warned"] > 0.3  # the tail shows in most runs
    assert rows["1.1x, 4% noise"]["false_equivalent"] == 0
    table = {
        (name, what): ok for name, what, _, _, ok in decide.checks(list(rows.values()), "auto")
    }
    assert ("1.1x, 4% noise", "false 'equivalent'") in table
    assert table[("A/A tail 2x in 10%", "false 'different' (typical runs)")]


def test_serving_throughput_keeps_the_band_and_the_warnings_of_its_verdict():
    from tfvariants.analyze.serving.configs import as_throughput

    iv = stats.Interval(0.8, 0.7, 0.9, "paired", 10, 0.984, 5, 0.95)
    cmp = stats.Comparison(iv, "different", (), None, 0.1, 0.1, ("tail: slow repeats",))
    out = as_throughput(cmp)
    assert out is not None and out.verdict == "different"
    assert out.ratio.value == pytest.approx(1.25) and out.ratio.lo == pytest.approx(1 / 0.9)
    assert out.equivalence_band == 0.1 and out.min_effect == 0.1
    assert out.warnings == ("tail: slow repeats",)


def test_the_host_noise_says_from_how_many_repeats_an_equal_pair_is_equivalent():
    from tfvariants.analyze.training import noise

    rng = random.Random(12)
    quiet = [rng.gauss(0, 0.03) for _ in range(60)]
    loud = [rng.gauss(0, 0.10) for _ in range(60)]
    at = {}
    for name, residuals in (("quiet", quiet), ("loud", loud)):
        r = noise.resolvable_ratio(residuals, 5, looks=4)
        at[name] = noise.equivalent_from(r, 5, 0.05, 0.05)
    assert at["quiet"] is not None and at["loud"] is not None
    assert 5 <= at["quiet"] < at["loud"]  # more noise, more repeats
    assert noise.equivalent_from(None, 5, 0.05, 0.05) is None
    text = noise.HostNoise(0.03, 5, 1.2, equivalent_from=14).sentence()
    assert "equivalent within +/-5% from about 14 repeats per side" in text


def test_the_host_noise_names_each_workloads_repeats_when_their_noise_differs():
    from types import SimpleNamespace

    from tfvariants.analyze.training import noise

    rng = random.Random(3)
    settings = Settings(confidence=0.95, min_effect=0.05, equivalence_band=0.05, looks=4)

    def groups(sd: float) -> list:
        return [SimpleNamespace(times=[math.exp(rng.gauss(0, sd)) for _ in range(7)])] * 2

    quiet = noise._equivalent_from_groups(groups(0.015), settings)
    loud = noise._equivalent_from_groups(groups(0.05), settings)
    assert quiet is not None and (loud is None or loud > quiet)
    by = {"mnist_cnn": 12, "cifar10_cnn": 31, "lstm": None}
    text = noise.HostNoise(0.03, 7, 1.2, equivalent_from=12, equivalent_by_workload=by)
    said = text.sentence()
    assert "from about 12 for mnist_cnn, 31 for cifar10_cnn, more than" in said
    assert "for lstm repeats per side (from each workload's own noise)" in said
    same = noise.HostNoise(
        0.03, 7, 1.2, equivalent_from=12, equivalent_by_workload={"a": 12, "b": 12}
    )
    assert "from about 12 repeats per side." in same.sentence()


def test_the_tail_warning_is_rare_on_identical_heavy_tailed_configurations():
    """Two noisy point estimates (means against medians) disagreed on identical Student-t 3
    configurations in about a fifth of comparisons; runs far from the typical one on one
    side only stay rare there, and a 2x run at 4 % noise is named."""
    rng = random.Random(11)

    def t3(rng: random.Random) -> float:  # Student-t 3 log noise at scale 0.1
        chi2 = sum(rng.gauss(0, 1) ** 2 for _ in range(3))
        return 10 * math.exp(0.1 * rng.gauss(0, 1) / math.sqrt(chi2 / 3))

    fired = 0
    for _ in range(400):
        base = {r: t3(rng) for r in range(10)}
        other = {r: t3(rng) for r in range(10)}
        fired += pairing.tail_warning(base, other, 0.05) is not None
    assert fired / 400 <= 0.06
    base = {r: 10 * math.exp(rng.gauss(0, 0.04)) for r in range(10)}
    other = {r: 10 * math.exp(rng.gauss(0, 0.04)) * (2.0 if r == 4 else 1.0) for r in range(10)}
    assert (pairing.tail_warning(base, other, 0.05) or "").startswith(pairing.TAIL)


def _ar1(rng: random.Random, n: int, phi: float) -> list[float]:
    w, out = rng.gauss(0, 1), []
    for _ in range(n):
        out.append(w)
        w = phi * w + rng.gauss(0, math.sqrt(1 - phi * phi))
    return out


def test_the_dependence_is_corrected_for_its_bias_and_pooled_over_series():
    """The raw lag-1 of AR(1) 0.5 averages about 0.2 at 10 rounds, under the 0.3 that
    widens; corrected, about 0.5; pooled over a workload's series, closer and surer."""
    rng = random.Random(5)
    raw = [pairing.lag1(_ar1(rng, 10, 0.5)) or 0.0 for _ in range(2000)]
    one = [pairing.dependence([_ar1(rng, 10, 0.5)]) or 0.0 for _ in range(2000)]
    four = [pairing.dependence([_ar1(rng, 10, 0.5) for _ in range(4)]) or 0.0 for _ in range(500)]
    assert statistics.fmean(raw) < 0.3 < statistics.fmean(one)
    assert sum(r >= pairing.WANDER_R for r in four) / 500 > sum(r >= 0.3 for r in one) / 2000
    assert statistics.pstdev(four) < statistics.pstdev(one)
    assert pairing.dependence([[1.0, 2.0, 3.0]]) is None  # too few rounds to say


def test_an_interval_too_short_to_show_a_wander_is_widened_and_says_so():
    rng = random.Random(2)
    base = {r: 10 * math.exp(rng.gauss(0, 0.05)) for r in range(5)}
    other = {r: 11 * math.exp(rng.gauss(0, 0.05)) for r in range(5)}
    c = pairing.compare_rounds(base, other, looks=(5, 7, 10, 15, 20))
    assert c.ratio.method.endswith("-widened-" + pairing.UNCHECKED)
    assert "widened for rounds too few to show whether they wander" in c.ratio.label
    plain = stats.compare(list(other.values()), list(base.values()), looks=(5, 7, 10, 15, 20))
    assert c.ratio.lo < plain.ratio.lo and plain.ratio.hi < c.ratio.hi


def test_the_workloads_dependence_is_pooled_into_each_comparison():
    rng = random.Random(8)
    keys = [ConfigKey("w", v, 1) for v in "BAC"]
    values = {k: dict(enumerate(math.exp(0.1 * x) for x in _ar1(rng, 10, 0.6))) for k in keys}
    settings = Settings(looks=(5, 7, 10, 15, 20))
    pooled = verdicts.dependence(values, keys[0])
    judged = verdicts.compare_with(values, keys[0], keys, settings)
    for k in keys[1:]:
        own = verdicts.statistic(values[keys[0]], values[k], settings, pooled)
        assert judged[k].comparison == own
