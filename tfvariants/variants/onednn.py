"""The oneDNN probe's record (workloads.onednn), cached per binary, settings and CPU.

The probe starts the variant's TensorFlow twice (its settings, then this host's
default): about 11 s a variant on a quiet 2-vCPU host, more under a neighbour, paid
before the first cell out of the run's budget. What it measures (the ISA oneDNN
dispatches to, whether its ops run) is fixed by the binary, the variant's environment,
the CPU and the probe itself, so one probe per such key serves every later run. A probe
that failed is never kept; a cached record is checked field by field like any input.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tfvariants.store import cachefiles
from tfvariants.variants.census import cache_dir

if TYPE_CHECKING:
    from tfvariants.variants.peak.theory import Cpu
    from tfvariants.variants.registry import Variant

Probe = Callable[[], dict[str, Any]]

_SETTINGS = ("ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA", "TF_ENABLE_ONEDNN_OPTS")


def _probe_source() -> str:
    """The probe's own code, by content: a changed probe measures again."""
    import workloads.onednn

    return hashlib.sha256(Path(workloads.onednn.__file__).read_bytes()).hexdigest()[:16]


def cache_key(variant: Variant, binary: str, cpu: Cpu) -> dict[str, Any]:
    """Everything that changes what the probe sees (and nothing else: not the thread
    count, which does not change the ISA oneDNN dispatches to)."""
    return {
        "probe": _probe_source(),
        "binary": binary,
        "backend": variant.backend,
        "env": dict(sorted(variant.env.items())),
        # the one passed-through variable that can change which libraries load
        "ld_library_path": os.environ.get("LD_LIBRARY_PATH", ""),
        "cpu": [cpu.vendor, cpu.family, cpu.model, cpu.model_name],
        "flags": hashlib.sha256(" ".join(sorted(cpu.flags)).encode()).hexdigest()[:16],
    }


def _path(key: dict[str, Any]) -> Path | None:
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:32]
    folder = cache_dir()
    return folder / f"onednn-{digest}.json" if folder else None


def probed(variant: Variant, binary: str | None, cpu: Cpu, probe: Probe) -> tuple[dict, bool]:
    """The probe's record for ``variant`` and whether it came from the cache. ``binary``:
    its binary identity (None: nothing is cached, it is probed every time)."""
    path = _path(cache_key(variant, binary, cpu)) if binary else None
    cached = cachefiles.read_entry(path, record_problem)
    if cached is not None:
        return cached, True
    result = probe()
    if record_problem(result) is None:  # a failed or partial probe is probed again next run
        cachefiles.write_entry(path, result)
    return result, False


def _side_problem(side: object) -> str | None:
    """What is wrong with one side's measurement (the variant's or the host default's)."""
    if not isinstance(side, dict):
        return "not an object"
    if "error" in side:
        return "a failed probe"
    primitives = side.get("primitives")
    if not isinstance(primitives, dict) or not all(
        isinstance(k, str) and len(k) <= 64 and cachefiles.number(v, 0, 1e9, whole=True)
        for k, v in primitives.items()
    ):
        return "primitives are not counts"
    backend = side.get("backend")
    if backend is not None and not (
        isinstance(backend, dict) and all(cachefiles.text(v, 80) for v in backend.values())
    ):
        return "backend is not versions"
    return cachefiles.bad_fields(
        side,
        {
            "isa": lambda v: cachefiles.text(v, 200),
            "version": lambda v: cachefiles.text(v, 40),
            "custom_ops_on": lambda v: isinstance(v, bool),
        },
    )


def record_problem(record: dict[str, Any]) -> str | None:
    """Why ``record`` is not a whole, successful probe record, or None."""
    if not isinstance(record.get("backend"), str) or not isinstance(record.get("applies"), bool):
        return "not a probe record"
    if not record["applies"]:
        return None if cachefiles.text(record.get("why"), 400) else "field 'why' is not text"
    settings = record.get("settings")
    if not isinstance(settings, dict) or not all(
        k in _SETTINGS and cachefiles.text(v, 64) and v is not None for k, v in settings.items()
    ):
        return "settings are not oneDNN settings"
    for side in ("variant", "host_default"):
        why = _side_problem(record.get(side))
        if why:
            return f"{side}: {why}"
    return None
