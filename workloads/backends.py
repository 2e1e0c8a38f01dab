"""Keras backends in the worker: thread settings before the import, the import, and what
was applied, read back afterwards. Standard library only until a backend is imported.

- ``tensorflow``: intra-/inter-op pool sizes through ``tf.config.threading`` between the
  import and the first op (they raise afterwards), read back from the same API.
- ``jax``: XLA's CPU client sizes its thread pool from the CPU affinity it starts with,
  so the affinity is narrowed to ``intra_op`` CPUs *before* the import. XLA_FLAGS are
  never set: an XLA flag the installed jaxlib does not know aborts the process, and the
  thread-count flags had no effect in practice.
- ``torch``: ``torch.set_num_threads`` / ``set_num_interop_threads`` right after the
  import (interop can be set only before the first parallel op).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

from workloads import envprobe

BACKENDS = ("tensorflow", "jax", "torch")


@dataclass
class Loaded:
    """An imported backend: its Keras, what was applied, and where it ran."""

    name: str
    keras: Any
    applied: dict[str, Any]
    environment: dict[str, Any]
    import_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


def choose(requested: str | None) -> str:
    """The request's backend, else $KERAS_BACKEND, else tensorflow."""
    name = requested or os.environ.get("KERAS_BACKEND") or "tensorflow"
    if name not in BACKENDS:
        raise ValueError(f"unknown Keras backend {name!r} (known: {', '.join(BACKENDS)})")
    return name


def _affinity() -> list[int] | None:
    return sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None


def prepare(backend: str, cpus: tuple[int, ...], intra_op: int, inter_op: int) -> None:
    """Everything that must happen before the backend is imported."""
    if cpus and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, cpus)
    if backend == "jax" and intra_op and hasattr(os, "sched_setaffinity"):
        # XLA:CPU's pool is as large as the affinity: narrow it to intra_op CPUs.
        current = sorted(os.sched_getaffinity(0))
        if intra_op < len(current):
            os.sched_setaffinity(0, current[:intra_op])
    # The host already set these; setting them again keeps a hand-run worker honest.
    os.environ.setdefault("TF_NUM_INTRAOP_THREADS", str(intra_op))
    os.environ.setdefault("TF_NUM_INTEROP_THREADS", str(inter_op))
    os.environ.setdefault("OMP_NUM_THREADS", str(intra_op))
    os.environ["KERAS_BACKEND"] = backend


def load(backend: str, intra_op: int, inter_op: int) -> Loaded:
    """Import the backend and Keras on it; apply and read back the thread settings."""
    t0 = time.perf_counter()
    if backend == "tensorflow":
        loaded = _load_tensorflow(intra_op, inter_op)
    elif backend == "jax":
        loaded = _load_jax()
    else:
        loaded = _load_torch(intra_op, inter_op)
    import keras  # after the backend, so Keras picks the configured runtime

    if keras.backend.backend() != backend:
        raise RuntimeError(f"Keras runs on {keras.backend.backend()}, not {backend}")
    loaded.keras = keras
    loaded.import_s = time.perf_counter() - t0
    loaded.applied["affinity"] = _affinity()
    loaded.applied["backend"] = backend
    loaded.applied["env"] = envprobe.probe_env()
    loaded.environment["backend"] = envprobe.probe_backend(backend, loaded.extra.get("module"))
    return loaded


def _load_tensorflow(intra_op: int, inter_op: int) -> Loaded:
    def configure(tf: Any) -> None:
        tf.config.threading.set_intra_op_parallelism_threads(intra_op)
        tf.config.threading.set_inter_op_parallelism_threads(inter_op)

    tf, log_text = envprobe.import_tensorflow(configure)
    applied = {
        "intra_op": tf.config.threading.get_intra_op_parallelism_threads(),
        "inter_op": tf.config.threading.get_inter_op_parallelism_threads(),
    }
    return Loaded("tensorflow", None, applied, envprobe.probe(tf, log_text), extra={"module": tf})


def _load_jax() -> Loaded:
    def _import() -> Any:
        import jax

        jax.devices()  # creates the CPU client: its pool is sized now
        return jax

    jax, _log = envprobe.capture_fd2(_import)
    # XLA's pool follows the affinity; there is no inter-op pool to report.
    affinity = _affinity()
    applied = {
        "intra_op": len(affinity) if affinity else os.cpu_count(),
        "inter_op": None,
        "threads_via": "cpu affinity",
    }
    return Loaded("jax", None, applied, envprobe.probe(), extra={"module": jax})


def _load_torch(intra_op: int, inter_op: int) -> Loaded:
    import torch

    torch.set_num_threads(intra_op)
    try:
        torch.set_num_interop_threads(max(inter_op, 1))
    except RuntimeError:  # already started (e.g. by an import-time op): report what it is
        pass
    applied = {"intra_op": torch.get_num_threads(), "inter_op": torch.get_num_interop_threads()}
    return Loaded("torch", None, applied, envprobe.probe(), extra={"module": torch})
