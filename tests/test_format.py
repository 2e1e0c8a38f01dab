"""Numbers for people: three significant digits, also where rounding carries a digit."""

import pytest

from tfvariants.analyze.shared.format import dur, money, sig3


@pytest.mark.parametrize(
    ("x", "text"),
    [
        (9.996, "10.0"),  # rounding up must not add a fourth digit ("10.00")
        (9.9949, "9.99"),
        (0.09996, "0.100"),
        (999.6, "1,000"),
        (0.5, "0.500"),
        (1234.5, "1,230"),
        (-9.996, "-10.0"),
        (0.0123, "0.0123"),
    ],
)
def test_sig3(x, text):
    assert sig3(x) == text


def test_units_keep_three_digits_after_carry():
    assert dur(599.8) == "10.0 min"  # was "10.00 min" in a real report
    assert money(0.09997) == "$0.100"


def test_duration_intervals_keep_one_unit():
    from tfvariants.analyze.shared.format import interval_sub, interval_text
    from tfvariants.analyze.statistics import stats

    # a real report read "2.42 h" over "109 min-4.07 h"
    iv = stats.Interval(8712.0, 6540.0, 14652.0, "min-max", 3, 0.75)
    assert interval_sub(iv) == "1.82-4.07 h"
    assert interval_text(iv) == "2.42 h (1.82-4.07)"
    short = stats.Interval(100.0, 90.0, 130.0, "min-max", 3, 0.75)
    assert interval_sub(short) == "1.50-2.17 min" and "s-" not in interval_text(short)
