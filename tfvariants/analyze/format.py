"""Formatting values for people: durations, money, intervals and ratios (plain text,
used by the conclusions and by the HTML template's filters)."""

from __future__ import annotations

import math
from typing import Any

from tfvariants.analyze import stats


def dur(seconds: float | None) -> str:
    if seconds is None:
        return "n/a"
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.2f} h"


def money(v: float | None) -> str:
    if v is None:
        return "n/a"
    return f"${v:.4f}" if v < 1 else f"${v:.2f}"


def interval_text(iv: stats.Interval | None, fmt: Any = dur) -> str:
    if iv is None:
        return "n/a"
    if iv.method in ("none", "exact") or iv.lo == iv.hi:
        return fmt(iv.value)
    value, lo, hi = fmt(iv.value), fmt(iv.lo), fmt(iv.hi)
    unit = value.rpartition(" ")[2] if " " in value else ""
    if unit and lo.endswith(" " + unit) and hi.endswith(" " + unit):  # "10.0 min (9.7-10.2)"
        return f"{value} ({lo[: -len(unit) - 1]}-{hi[: -len(unit) - 1]})"
    return f"{value} ({lo}-{hi})"


def interval_sub(iv: stats.Interval | None, fmt: Any = dur) -> str:
    """Only the interval part, e.g. "9.7-10.2 min" ("" when there is none)."""
    if iv is None or iv.method in ("none", "exact") or iv.lo == iv.hi:
        return ""
    lo, hi = fmt(iv.lo), fmt(iv.hi)
    unit = hi.rpartition(" ")[2] if " " in hi else ""
    if unit and lo.endswith(" " + unit):
        lo = lo[: -len(unit) - 1]
    return f"{lo}-{hi}"


def ratio_main(cmp: stats.Comparison | None) -> str:
    if cmp is None:
        return "n/a"
    if cmp.verdict == "baseline":
        return "1 (baseline)"
    return f"{'' if cmp.significant else '~'}{cmp.ratio.value:.2f}x"


def ratio_sub(cmp: stats.Comparison | None) -> str:
    if cmp is None or cmp.verdict == "baseline":
        return ""
    r = cmp.ratio
    word = {"faster": "lower", "slower": "higher"}.get(cmp.verdict, "n.s.")
    if r.lo == r.hi:
        return word
    hi = f"{r.hi:.2f}" if math.isfinite(r.hi) else "inf"
    return f"{r.lo:.2f}-{hi}, {word}"


def mem(b: int | None) -> str:
    return "n/a" if b is None else f"{b / 2**20:.0f} MiB"


def num_fmt(v: float | None, digits: int = 1) -> str:
    return "n/a" if v is None else f"{v:,.{digits}f}"
