"""Latency percentiles (stdlib): the same definition for the closed loop and the HTTP
overhead figures, so numbers from different paths compare."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

PERCENTILES = (50.0, 90.0, 95.0, 99.0)


def percentile(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile (the smallest value with at least p % of values at or
    below it), as LoadGen reports: a real observed latency, never an interpolation."""
    if not values:
        raise ValueError("no values")
    if not 0 < p <= 100:
        raise ValueError(f"percentile must be in (0, 100], got {p}")
    xs = sorted(values)
    rank = math.ceil(p / 100 * len(xs))
    return float(xs[max(rank, 1) - 1])


def summary(latencies_s: Sequence[float]) -> dict[str, float | int | None]:
    """count, mean and p50/p90/p95/p99/max in milliseconds."""
    if not latencies_s:
        return {"count": 0, "mean_ms": None, "max_ms": None}
    out: dict[str, float | int | None] = {
        "count": len(latencies_s),
        "mean_ms": statistics.fmean(latencies_s) * 1e3,
        "max_ms": max(latencies_s) * 1e3,
    }
    for p in PERCENTILES:
        out[f"p{p:g}_ms"] = percentile(latencies_s, p) * 1e3
    return out
