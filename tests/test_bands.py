"""'equivalent' is judged by two one-sided tests (analyze/statistics/bands.py): on the
(2 * confidence - 1) interval of the same estimate, each end holding with the run's
confidence; 'different' keeps its two-sided interval."""

from __future__ import annotations

import math

import pytest

from tfvariants.analyze.statistics import bands, pairing, stats
from tfvariants.analyze.statistics.decide import Settings

LOOKS = (5, 7, 10, 15, 20)
# Ten paired rounds of an A/A pair that move together: the 98.4 % paired interval of
# other/base is 0.990-1.056 (beyond +5 %), the two one-sided tests' one 0.991-1.050.
BASE = {0: 9.725, 1: 8.81, 2: 10.366, 3: 11.937, 4: 10.362}
BASE |= {5: 10.717, 6: 10.207, 7: 10.414, 8: 10.45, 9: 10.43}
OTHER = {0: 9.617, 1: 9.546, 2: 11.079, 3: 11.971, 4: 10.327}
OTHER |= {5: 10.621, 6: 10.647, 7: 10.629, 8: 10.274, 9: 10.605}
FIVE = math.log(1.05)


def estimate(lo: float, hi: float, n: int = 10) -> stats.Estimate:
    """A log-scale estimate in the middle of [lo, hi]."""
    return stats.Estimate((lo + hi) / 2, lo, hi, 0.98, "paired", n, 5, None, 7, "too few")


def test_the_equivalence_level_is_two_one_sided_tests_at_the_runs_confidence() -> None:
    assert bands.equivalence_confidence(0.95) == pytest.approx(0.90)
    assert bands.equivalence_alpha(0.95) == pytest.approx(0.10)
    # Below 50 % no such interval exists: "different"'s is used.
    assert bands.equivalence_confidence(0.4) == 0.4
    # Across looks Pocock's level for 90 %: narrower than "different"'s 98.4 % each.
    per_look = 1 - bands.equivalence_alpha(0.95, LOOKS)
    assert 0.95 < per_look < 1 - stats.check_settings(0.05, 0.95, LOOKS)
    assert bands.equivalence_narrowing(0.95) == pytest.approx(1.6449 / 1.9600, abs=1e-3)
    assert 0.85 < bands.equivalence_narrowing(0.95, LOOKS) < 0.92


def test_a_pair_inside_the_band_only_by_the_one_sided_interval_is_equivalent() -> None:
    c = pairing.compare_rounds(BASE, OTHER, looks=LOOKS)
    d = [math.log(OTHER[r]) - math.log(BASE[r]) for r in BASE]
    wide = pairing._paired_estimate(d, stats.check_settings(0.05, 0.95, LOOKS), 5, 7)
    assert wide.hi is not None and wide.hi > FIVE  # the old rule: undecided
    assert c.verdict == "equivalent" and c.ratio.method == "paired"
    assert c.ratio.one_sided and math.log(c.ratio.hi) <= FIVE
    assert math.exp(wide.lo) <= c.ratio.lo and c.ratio.hi <= math.exp(wide.hi)  # nested
    assert c.ratio.together == pytest.approx(0.90)
    label = c.ratio.label
    assert "90.0% over all 5 looks together; each end alone 95.0%" in label
    assert "two one-sided tests of 'equivalent'" in label


def test_the_old_rule_is_kept_when_no_second_interval_is_given() -> None:
    e = estimate(math.log(0.94), math.log(1.06))
    assert stats.verdict_of(e, 0.05, 0.05).verdict == "undecided"
    c = stats.verdict_of(e, 0.05, 0.05, estimate(math.log(0.97), math.log(1.03)))
    assert c.verdict == "equivalent" and c.ratio.one_sided
    assert c.ratio.lo == pytest.approx(0.97) and c.ratio.hi == pytest.approx(1.03)


def test_different_wins_where_the_band_is_wider_than_the_min_effect() -> None:
    # min effect 0 (the compiled preset) and a band of 10 %: 1.05-1.07 is both a real
    # difference and inside the band; the verdict is "different", as it always was.
    e = estimate(math.log(1.04), math.log(1.08))
    c = stats.verdict_of(e, 0.0, 0.10, estimate(math.log(1.05), math.log(1.07)))
    assert c.verdict == "different" and not c.ratio.one_sided


def test_an_interval_only_the_one_sided_tests_have_still_says_equivalent() -> None:
    # Too few rounds for "different"'s interval, enough for the narrower one.
    e = stats.Estimate(0.0, None, None, None, "paired", 6, 5, 0.08, 7, "6 rounds are too few")
    c = stats.verdict_of(e, 0.05, 0.05, estimate(math.log(0.98), math.log(1.02), 6))
    assert c.verdict == "equivalent"


def test_more_repeats_counts_equivalence_with_its_own_narrower_interval() -> None:
    # An equal pair at 10 repeats: half-widths 0.10 ("different") and 0.08 (equivalent).
    assert bands.more_repeats(0.0, (0.10, 0.08), 10, (FIVE, FIVE), 7) == 17
    assert bands.more_repeats(0.0, (0.10, 0.10), 10, (FIVE, FIVE), 7) == 33
    # A clear difference: the nearer decision is "different"'s.
    assert bands.more_repeats(0.09, (0.06, 0.05), 10, (FIVE, FIVE), 7) == 12
    assert bands.more_repeats(0.0, (None, None), 3, (FIVE, FIVE), 7) == 4
    assert bands.more_repeats(FIVE, (0.10, 0.08), 10, (FIVE, FIVE), 7) is None


def test_the_settings_line_states_the_equivalence_level() -> None:
    words = Settings(looks=LOOKS).describe()
    level = stats.percent(Settings(looks=LOOKS).eq_level)
    assert f"two one-sided tests, each at 95%: a {level} interval each look" in words
    assert "98.4% each" in words


def test_undecided_with_no_minimum_effect_says_the_interval_includes_1() -> None:
    # The compiled preset (min effect 0): "does not exclude a difference under 0%" said
    # nothing; the interval includes 1.
    e = estimate(math.log(0.85), math.log(1.07))
    c = stats.verdict_of(e, 0.0, 0.10, estimate(math.log(0.88), math.log(1.05)))
    assert c.verdict == "undecided"
    assert c.reasons == (
        "the interval reaches beyond +/-10% and does not exclude 1 (no difference)",
    )
    assert "does not exclude a difference under 5%" in stats.verdict_of(e, 0.05, 0.10).reasons[0]


def test_the_noise_paragraphs_equivalence_estimate_uses_the_narrower_interval() -> None:
    from tfvariants.analyze.training import noise

    settings = Settings(looks=LOOKS)
    old = noise.equivalent_from(1.12, 5, 0.05, 0.05)
    new = noise.equivalent_from(1.12, 5, 0.05, 0.05, settings.narrowing)
    assert old is not None and new is not None
    # The width ratio squared: about 0.77 of the repeats at the default looks.
    assert new < old and new == pytest.approx(old * settings.narrowing**2, rel=0.1)
