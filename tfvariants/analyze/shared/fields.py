"""The environment table: reading a result's environment (as the worker probed it)
into the fields a reader compares, failing soft (a missing or odd key is just "n/a").
Figures are read from typed results (store/cellresult.py), never from here."""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from typing import Any

from tfvariants.store.rawfields import finite_number, first_of, get_path

__all__ = ["environment_summary", "finite_number", "first_of", "flatten", "get_path", "median_of"]


def median_of(values: Iterable[Any]) -> float | None:
    xs = [x for x in (finite_number(v) for v in values) if x is not None]
    return statistics.median(xs) if xs else None


def environment_summary(env: dict[str, Any]) -> dict[str, str]:
    """The fields a reader compares across variants, from workloads.envprobe output."""

    def text(v: object) -> str:
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


def flatten(d: object, prefix: str = "") -> list[tuple[str, str]]:
    if isinstance(d, dict):
        out: list[tuple[str, str]] = []
        for k, v in d.items():
            out += flatten(v, f"{prefix}.{k}" if prefix else str(k))
        return out
    if isinstance(d, list) and len(d) > 12:
        return [(prefix, ", ".join(str(x) for x in d[:12]) + f", ... ({len(d)} items)")]
    return [(prefix, str(d))]
