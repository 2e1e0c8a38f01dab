"""Reading a raw result dict (JSON from a worker or the run folder) without trusting its
shape: a missing level or a value of the wrong type reads as None."""

from __future__ import annotations

import math
from typing import Any


def get_path(d: Any, *path: str) -> Any:
    """d[path[0]][path[1]]..., or None where a level is missing or not an object."""
    for key in path:
        if not isinstance(d, dict):
            return None
        d = d.get(key)
    return d


def finite_number(v: object) -> float | None:
    """v as a float if it is a finite number (not a bool), else None."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v) if abs(v) <= 1e300 and math.isfinite(v) else None  # a huge int: no float


def first_of(d: Any, *paths: tuple[str, ...]) -> Any:
    for path in paths:
        v = get_path(d, *path)
        if v not in (None, "", [], {}):
            return v
    return None
