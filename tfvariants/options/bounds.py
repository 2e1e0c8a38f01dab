"""The stored bounds of the declared options that have none of their own in
options/limits.py (or in their ``choices``): each ``Option.problem`` says what a value in
run.json must be (what the command line's parser gives), so that the run.json loader
refuses every stored option out of bounds the same way: one line naming the field.

Each factory returns a check: the value -> what was expected (for the message) when it
is out of bounds, else None. A stored None means "not set" and is never checked.
"""

from __future__ import annotations

import math
from collections.abc import Callable

Problem = Callable[[object], "str | None"]


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or abs(value) > 1e300:
        return None
    return float(value) if math.isfinite(value) else None


def whole(lo: int, hi: int, *, null: bool = False) -> Problem:
    """A whole number in [lo, hi] (not a bool); ``null``: the message adds "or null"."""
    words = f"a whole number {lo}..{hi}" + (" or null" if null else "")

    def problem(value: object) -> str | None:
        ok = isinstance(value, int) and not isinstance(value, bool) and lo <= value <= hi
        return None if ok else words

    return problem


def number(lo: float, hi: float, *, above_lo: bool = False, below_hi: bool = False) -> Problem:
    """A finite number from ``lo`` to ``hi`` (``above_lo``/``below_hi``: the end left out)."""
    low, high = "above" if above_lo else "from", "below" if below_hi else "at most"
    words = f"a number {low} {lo:g} and {high} {hi:g}"

    def problem(value: object) -> str | None:
        v = _number(value)
        if v is None or v < lo or v > hi or (above_lo and v == lo) or (below_hi and v == hi):
            return words
        return None

    return problem


def flag(value: object) -> str | None:
    return None if isinstance(value, bool) else "true or false"


def text(value: object) -> str | None:
    return None if isinstance(value, str) and value else "a non-empty text"


def record(value: object) -> str | None:
    """A JSON object (a preset's or a scale's record, written by tfvariants)."""
    return None if isinstance(value, dict) else "an object"


def shape(value: object) -> str | None:
    """One instance's shape: a list of whole numbers 1..65536."""
    ok = isinstance(value, list) and all(whole(1, 1 << 16)(d) is None for d in value)
    return None if ok and value else "a list of whole numbers 1..65536"
