"""Formatting values for people: durations, money, intervals and ratios with three
significant digits (plain text, used by the conclusions and by the HTML template)."""

from __future__ import annotations

import math
from collections.abc import Callable

from tfvariants.analyze.statistics import stats
from tfvariants.analyze.statistics.verdict import TIME_WORDS, Verdict


def sig3(x: float | None) -> str:
    """Three significant digits, no exponent for everyday magnitudes: 2.31, 0.412, 1,230."""
    if x is None or not math.isfinite(x):
        return "n/a" if x is None else ("inf" if x > 0 else "-inf")
    if x == 0:
        return "0"
    digits = 2 - int(math.floor(math.log10(abs(x))))
    rounded = round(x, digits)
    if rounded and abs(rounded) >= 10 ** (3 - digits):  # 9.996 rounds up to 10.0, not "10.00"
        digits -= 1
        rounded = round(x, digits)
    return f"{rounded:,.{max(0, digits)}f}"


def _dur_unit(seconds: float) -> tuple[float, str]:
    if seconds < 120:
        return 1.0, "s"
    if seconds < 7200:
        return 60.0, "min"
    return 3600.0, "h"


def dur(seconds: float | None) -> str:
    if seconds is None:
        return "n/a"
    div, unit = _dur_unit(seconds)
    return f"{sig3(seconds / div)} {unit}"


def dur_span(lo: float, hi: float, value: float | None = None) -> str:
    """An interval of durations in one unit (the upper end's): "109-244 min", never
    "109 min-4.07 h"; with ``value``: "2.42 h (1.82-4.07)"."""
    div, unit = _dur_unit(hi)
    span = f"{sig3(lo / div)}-{sig3(hi / div)}"
    return f"{span} {unit}" if value is None else f"{sig3(value / div)} {unit} ({span})"


def money(v: float | None, currency: str = "USD") -> str:
    """An amount in its catalog's currency: "$0.123" for USD, "0.123 EUR" for any other
    (a catalog's currency is a 3-letter code, tfvariants/analyze/cost/catalog.py)."""
    if v is None:
        return "n/a"
    return f"${sig3(v)}" if currency == "USD" else f"{sig3(v)} {currency}"


def money_unit(currency: str = "USD") -> str:
    """The unit for a column heading: "$" or the currency's code."""
    return "$" if currency == "USD" else currency


def interval_text(iv: stats.Interval | None, fmt: Callable[[float], str] = dur) -> str:
    if iv is None:
        return "n/a"
    if not iv.has_interval:
        return fmt(iv.value)
    if fmt is dur:
        return dur_span(iv.lo, iv.hi, iv.value)
    value, lo, hi = fmt(iv.value), fmt(iv.lo), fmt(iv.hi)
    unit = value.rpartition(" ")[2] if " " in value else ""
    if unit and lo.endswith(" " + unit) and hi.endswith(" " + unit):  # "10.0 min (9.70-10.2)"
        return f"{value} ({lo[: -len(unit) - 1]}-{hi[: -len(unit) - 1]})"
    return f"{value} ({lo}-{hi})"


def interval_label(iv: stats.Interval | None) -> str:
    """What an interval is, e.g. "median of 5; range of the repeats = 93.8% interval"."""
    return "" if iv is None else iv.label


def interval_sub(iv: stats.Interval | None, fmt: Callable[[float], str] = dur) -> str:
    """Only the interval part, e.g. "9.70-10.2 min" ("" when there is none)."""
    if iv is None or not iv.has_interval:
        return ""
    if fmt is dur:
        return dur_span(iv.lo, iv.hi)
    lo, hi = fmt(iv.lo), fmt(iv.hi)
    unit = hi.rpartition(" ")[2] if " " in hi else ""
    if unit and lo.endswith(" " + unit):
        lo = lo[: -len(unit) - 1]
    return f"{lo}-{hi}"


def ratio_main(cmp: stats.Comparison | None) -> str:
    if cmp is None:
        return "n/a"
    if cmp.verdict == Verdict.BASELINE:
        return f"1 ({Verdict.BASELINE})"
    return f"{'~' if cmp.verdict == Verdict.UNDECIDED else ''}{sig3(cmp.ratio.value)}x"


def ratio_sub(cmp: stats.Comparison | None) -> str:
    if cmp is None or cmp.verdict == Verdict.BASELINE:
        return ""
    r = cmp.ratio
    word = cmp.verdict.word
    if cmp.verdict == Verdict.DIFFERENT:
        word = f"{'lower' if r.value < 1 else 'higher'}, {word}"
    if cmp.verdict == Verdict.UNDECIDED and cmp.more_repeats:
        word += f", ~{cmp.more_repeats} more repeats"
    if not r.has_interval:
        return f"no interval, {word}"
    return f"{sig3(r.lo)}-{sig3(r.hi)}, {word}"


def ratio_end(x: float) -> str:
    """An interval's end in three significant digits, or as many more (up to 5
    decimals) as it takes not to print as 1.00 when it is not 1: an interval that
    excludes 1 must not read "1.00-1.11x" beside "slower"."""
    said = sig3(x)
    if said != "1.00" or x == 1:
        return said
    for decimals in (3, 4, 5):
        if (more := f"{x:.{decimals}f}") != f"{1:.{decimals}f}":
            return more
    return said


def ratio_interval(cmp: stats.Comparison | None) -> str:
    """The ratio's interval alone, e.g. "0.475-1.50x" ("none" with too few repeats)."""
    if cmp is None or cmp.verdict == Verdict.BASELINE:
        return ""
    r = cmp.ratio
    return f"{ratio_end(r.lo)}-{ratio_end(r.hi)}x" if r.has_interval else "none"


def verdict_word(
    cmp: stats.Comparison | None, lower: str = TIME_WORDS[0], higher: str = TIME_WORDS[1]
) -> str:
    """One word for a verdict table: faster/slower when decided, else equivalent/undecided."""
    if cmp is None:
        return "n/a"
    if cmp.verdict == Verdict.DIFFERENT:
        return lower if cmp.ratio.value < 1 else higher
    return cmp.verdict  # baseline, equivalent, undecided


def repeats_needed(cmp: stats.Comparison | None) -> str:
    """About how many more repeats per side would decide an undecided comparison."""
    if cmp is None or cmp.verdict != Verdict.UNDECIDED or not cmp.more_repeats:
        return ""
    return f"~{cmp.more_repeats}"


def mem(b: int | None) -> str:
    return "n/a" if b is None else f"{b / 2**20:.0f} MiB"


def num_fmt(v: float | None, digits: int = 1) -> str:
    return "n/a" if v is None else f"{v:,.{digits}f}"


def pct(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.0%}"
