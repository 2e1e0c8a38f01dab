"""Reading a raw result dict (JSON from a worker or the run folder) without trusting its
shape: a missing level or a value of the wrong type reads as None."""

from __future__ import annotations

import math
from typing import Any


def get_path(d: object, *path: str) -> Any:
    """d[path[0]][path[1]]..., or None where a level is missing or not an object. The
    value is JSON of any shape (Any): the caller checks the type it needs."""
    value: Any = d
    for key in path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def finite_number(v: object) -> float | None:
    """v as a float if it is a finite number (not a bool), else None."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v) if abs(v) <= 1e300 and math.isfinite(v) else None  # a huge int: no float


def whole_number(v: object) -> int | None:
    """v if it is an int (not a bool), else None."""
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def first_of(d: object, *paths: tuple[str, ...]) -> Any:
    for path in paths:
        v = get_path(d, *path)
        if v not in (None, "", [], {}):
            return v
    return None
