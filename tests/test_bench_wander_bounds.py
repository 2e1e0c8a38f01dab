"""benchmarks/wander_bounds.py: the widening floor really widens (and only inside its
block), the detectors' thresholds hold their false-alarm level, the tables print."""

from __future__ import annotations

import math
import random
import sys
from pathlib import Path

import pytest

from tfvariants.analyze.statistics import pairing

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import wander_bounds  # noqa: E402


@pytest.mark.parametrize("factor", [1.25, 1.5, 2.0, 3.0])
def test_floor_r_is_the_lag1_whose_ar1_inflation_is_the_factor(factor):
    r = wander_bounds.floor_r(factor)
    assert math.sqrt((1 + r) / (1 - r)) == pytest.approx(factor)


def _rounds(seed: int, scale: float) -> tuple[dict[int, float], dict[int, float]]:
    rng = random.Random(seed)
    base = {r: 10 * math.exp(rng.gauss(0, 0.05)) for r in range(10)}
    other = {r: scale * 10 * math.exp(rng.gauss(0, 0.05)) for r in range(10)}
    return base, other


def _log_width(c) -> tuple[float, float]:
    iv = c.ratio
    return math.log(iv.value) - math.log(iv.lo), math.log(iv.hi) - math.log(iv.value)


def test_widened_at_least_stretches_every_interval_and_restores_the_rule():
    base, other = _rounds(3, 1.08)
    kw = {"min_effect": 0.05, "confidence": 0.95, "looks": (5, 7, 10, 15, 20)}
    plain = pairing.compare_rounds(base, other, **kw)
    assert not plain.warnings  # independent rounds: today's rule does not widen them
    with wander_bounds.widened_at_least(2.0):
        wide = pairing.compare_rounds(base, other, **kw)
    lo0, hi0 = _log_width(plain)
    lo1, hi1 = _log_width(wide)
    assert lo1 == pytest.approx(2 * lo0, rel=1e-6) and hi1 == pytest.approx(2 * hi0, rel=1e-6)
    assert wide.ratio.value == pytest.approx(plain.ratio.value)
    # outside the block the project's rule is back, unchanged
    again = pairing.compare_rounds(base, other, **kw)
    assert _log_width(again) == pytest.approx((lo0, hi0))
    with wander_bounds.widened_at_least(1.0):  # no floor: the rule itself
        assert _log_width(pairing.compare_rounds(base, other, **kw)) == pytest.approx((lo0, hi0))


def test_the_widening_does_not_change_the_paired_unpaired_choice():
    """The floor feeds the lag-1 of the ratios only: the choice, made first with the real
    lag1, must read the same, so a wider interval is the only difference."""
    base, other = _rounds(5, 1.0)
    kw = {"min_effect": 0.05, "confidence": 0.95, "looks": (5, 7, 10, 15, 20)}
    plain = pairing.compare_rounds(base, other, **kw)
    with wander_bounds.widened_at_least(1.5):
        wide = pairing.compare_rounds(base, other, **kw)
    assert wide.ratio.method.startswith(plain.ratio.method.split("-")[0])


def test_thresholds_give_their_false_alarm_level_on_independent_series():
    thr = wander_bounds.thresholds([10, 20], 0.10, seed=2)
    rng = random.Random(99)
    for n, t in thr.items():
        above = sum(
            wander_bounds.lag1([rng.gauss(0, 1) for _ in range(n)]) > t for _ in range(4000)
        )
        assert 0.08 <= above / 4000 <= 0.12  # 10 %, with this draw's margin


def test_an_ar1_series_is_flagged_and_a_flat_one_is_not():
    thr = wander_bounds.thresholds([20], 0.10, seed=2)
    rng, w, wander = random.Random(4), 0.0, {}
    for r in range(20):
        w = 0.95 * w + rng.gauss(0, 0.1)
        wander[r] = math.exp(w)
    assert wander_bounds.flags(wander, thr)
    assert not wander_bounds.flags({r: 1.0 for r in range(20)}, thr)  # no spread
    assert not wander_bounds.flags({r: 1.0 for r in range(9)}, thr)  # no such length


def test_main_prints_both_tables_and_rejects_bad_settings(capsys):
    assert wander_bounds.main(["--factors", "0.5"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert wander_bounds.main(["--trials", "2", "--factors", "1,2"]) == 0
    out = capsys.readouterr().out
    assert "      1.00 " in out and "      2.00 " in out
    assert "oracle" in out and "realizable" in out and "A/A drift 1%/round" in out
