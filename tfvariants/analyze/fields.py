"""Reading values out of result dicts: fail soft, a missing or odd key is just "n/a"."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from typing import Any


def get_path(d: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(d, dict):
            return None
        d = d.get(key)
    return d


def first_of(d: Any, *paths: tuple[str, ...]) -> Any:
    for path in paths:
        v = get_path(d, *path)
        if v not in (None, "", [], {}):
            return v
    return None


def training_time_s(result: dict) -> float | None:
    """The (projected) full-schedule training time of a cell: what a user would pay for."""
    v = get_path(result, "schedule", "projected_full_s")
    if isinstance(v, (int, float)) and v > 0:
        return float(v)
    epochs = get_path(result, "timing", "epoch_times_s")
    if isinstance(epochs, list) and epochs:
        return float(sum(epochs))
    return None


def finite_number(v: Any) -> float | None:
    return (
        float(v)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
        else None
    )


def median_of(values: Iterable[Any]) -> float | None:
    xs = [x for x in (finite_number(v) for v in values) if x is not None]
    return statistics.median(xs) if xs else None


def warmup_time_s(result: dict) -> float | None:
    """The detected warm-up (workloads.steady), else the first epoch(s) of old results."""
    detected = finite_number(get_path(result, "timing", "warmup_s"))
    if detected is not None:
        return detected
    epochs = get_path(result, "timing", "epoch_times_s")
    n = get_path(result, "timing", "warmup_epochs") or 0
    if isinstance(epochs, list) and isinstance(n, int) and n > 0 and len(epochs) >= n:
        return float(sum(epochs[:n]))
    return None


def accuracy_of(result: dict) -> float | None:
    return finite_number(first_of(result, ("metrics", "val_accuracy"), ("metrics", "accuracy")))


def environment_summary(env: dict) -> dict[str, str]:
    """The fields a reader compares across variants, from workloads.envprobe output."""

    def text(v: Any) -> str:
        if v is None:
            return "n/a"
        if isinstance(v, bool):
            return "on" if v else "off"
        if isinstance(v, list):
            return ", ".join(str(x) for x in v) if v else "none"
        if isinstance(v, dict):
            return ", ".join(f"{k}={text(x)}" for k, x in v.items()) or "none"
        return str(v)

    missing = first_of(
        env,
        ("tensorflow", "missing_instructions"),
        ("tensorflow", "missing_isa"),
        ("missing_isa",),
    )
    if missing is None:  # an empty list is an answer: the binary lacks nothing
        missing = get_path(env, "tensorflow", "missing_instructions")
    gpu = first_of(env, ("tensorflow", "gpus"), ("gpu", "devices"), ("gpu", "name"), ("gpu",))
    if gpu is None and isinstance(get_path(env, "tensorflow", "gpus"), list):
        gpu = "none"
    backend = get_path(env, "backend", "name")
    return {
        "Backend": text(f"{backend} {get_path(env, 'backend', 'version') or ''}".strip())
        if backend
        else "tensorflow",
        "Keras": text(first_of(env, ("backend", "keras_version"), ("tensorflow", "keras_version"))),
        "TensorFlow": text(first_of(env, ("tensorflow", "version"), ("tf_version",))),
        "Compiler": text(
            first_of(env, ("tensorflow", "compiler_version"), ("tensorflow", "compiler"))
        ),
        "Instructions the binary lacks": text(missing),
        "oneDNN": text(
            first_of(
                env,
                ("tensorflow", "onednn", "state"),
                ("onednn", "state"),
                ("onednn", "enabled"),
                ("onednn",),
            )
        ),
        "GPU": text(gpu),
        "CPU": text(first_of(env, ("cpu", "model"), ("cpu", "model_name"))),
    }


def flatten(d: Any, prefix: str = "") -> list[tuple[str, str]]:
    if isinstance(d, dict):
        out: list[tuple[str, str]] = []
        for k, v in d.items():
            out += flatten(v, f"{prefix}.{k}" if prefix else str(k))
        return out
    if isinstance(d, list) and len(d) > 12:
        return [(prefix, ", ".join(str(x) for x in d[:12]) + f", ... ({len(d)} items)")]
    return [(prefix, str(d))]
