"""The times a stored result records, each read one way: the (projected) training
time, the warm-up, the runner's wall time, where that wall time went, and the steady
windows' step times. :mod:`tfvariants.store.cellresult` parses results with these."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tfvariants.store.rawfields import finite_number, get_path
from workloads.steady import window_means  # stdlib only: the worker's own cut


def training_time_s(result: Mapping[str, Any]) -> float | None:
    """The (projected) full-schedule training time: what a user would pay for."""
    v = finite_number(get_path(result, "schedule", "projected_full_s"))
    if v is not None and v > 0:
        return v
    epochs = get_path(result, "timing", "epoch_times_s")
    if isinstance(epochs, list) and epochs:
        total = sum(x for x in (finite_number(e) for e in epochs) if x is not None)
        return total if total > 0 else None
    return None


def warmup_time_s(result: Mapping[str, Any]) -> float | None:
    """The detected warm-up (workloads.steady), else the first epoch(s) of old results."""
    detected = finite_number(get_path(result, "timing", "warmup_s"))
    if detected is not None:
        return detected
    epochs = get_path(result, "timing", "epoch_times_s")
    n = get_path(result, "timing", "warmup_epochs") or 0
    if isinstance(epochs, list) and isinstance(n, int) and n > 0 and len(epochs) >= n:
        return float(sum(epochs[:n]))
    return None


def wall_of(result: Mapping[str, Any]) -> float | None:
    """The cell's wall time as the runner measured it (the one reader of the stored field)."""
    return finite_number(get_path(result, "runner", "wall_s"))


def _sum_known(*values: object) -> float | None:
    known = [x for x in (finite_number(v) for v in values) if x is not None]
    return sum(known) if known else None


def overhead_split(result: Mapping[str, Any]) -> dict[str, float]:
    """Where one cell's wall time went: TensorFlow import, data + model build, warm-up
    steps, steady steps, time between epochs (start-up, validation), and the rest
    (process start, probing, writing), which makes the parts add up to the cell."""
    t = result.get("timing") or {}
    parts = {
        "import": finite_number(t.get("import_tf_s")),
        "build": _sum_known(t.get("build_s"), t.get("data_s")),
        "warm-up": finite_number(t.get("warmup_s")),
        "steady": finite_number(t.get("steady_s")),
    }
    fit = finite_number(t.get("fit_s"))
    if fit is not None and parts["warm-up"] is not None and parts["steady"] is not None:
        parts["between epochs"] = max(fit - parts["warm-up"] - parts["steady"], 0.0)
    wall = wall_of(result)
    if wall is not None and fit is not None and parts["import"] is not None:
        parts["other"] = max(wall - parts["import"] - (parts["build"] or 0.0) - fit, 0.0)
    return {k: v for k, v in parts.items() if v is not None}


def steady_windows(result: Mapping[str, Any]) -> tuple[float, ...]:
    """Per-window mean steady step times (workloads.steady): as the worker recorded them,
    or cut the same way from an older result's step times when every step was kept."""
    recorded = get_path(result, "timing", "steady_windows_s")
    if isinstance(recorded, list):
        values = (finite_number(v) for v in recorded)
        return tuple(v for v in values if v is not None and v > 0)
    steps = get_path(result, "timing", "step_times_s")
    warmup = get_path(result, "timing", "warmup_steps")
    if not isinstance(steps, list) or get_path(result, "timing", "step_sample_stride") != 1:
        return ()
    if not isinstance(warmup, int) or isinstance(warmup, bool):
        return ()
    steady = [x for x in (finite_number(v) for v in steps[warmup:]) if x is not None and x > 0]
    return tuple(window_means(steady))
