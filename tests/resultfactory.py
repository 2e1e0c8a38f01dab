"""Builds realistic cell result dicts (schema v1, docs/ARCHITECTURE.md) for tests."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from tfvariants.plan.cell import cell_id_of

WORKLOAD_SPECS = {
    "mnist_mlp": {"epochs": 20, "train_samples": 60000, "chance": 0.1, "flops": 1.1e8},
    "mnist_cnn": {"epochs": 12, "train_samples": 60000, "chance": 0.1, "flops": 1.6e9},
}


def environment(variant: str, *, gpu: bool = False) -> dict:
    """The shape of workloads.envprobe.probe() output (abridged)."""
    return {
        "cpu": {
            "model": "Intel(R) Xeon(R) CPU @ 2.20GHz",
            "logical_cpus": 2,
            "isa_flags": ["avx", "avx2", "fma"],
        },
        "python": {"version": "3.11.7"},
        "tensorflow": {
            "version": "2.21.0",
            "compiler_version": "gcc 12 -march=native" if variant == "compiled" else "Clang 18.1.8",
            "missing_instructions": [] if variant == "compiled" else ["AVX2", "FMA"],
            "gpus": ["/physical_device:GPU:0 Tesla K80"] if gpu else [],
            "onednn": {"state": "off" if variant == "pip" else "on"},
        },
    }


def make_result(
    variant: str = "local",
    threads: int = 2,
    workload: str = "mnist_mlp",
    repeat: int = 0,
    *,
    status: str = "ok",
    steady_epoch_s: float = 2.0,
    noise: float = 0.0,
    seed: int = 0,
    reason: str | None = None,
    logical_cpus: int = 2,
    gpu: bool = False,
    ran_epochs: int = 2,
    ran_samples: int = 6000,
) -> dict:
    """One result dict. ``noise`` jitters the steady epoch time (relative, seeded)."""
    spec = WORKLOAD_SPECS.get(
        workload, {"epochs": 10, "train_samples": 50000, "chance": 0.1, "flops": 1e9}
    )
    rng = random.Random(f"{variant}{threads}{workload}{repeat}{seed}")
    steady = steady_epoch_s * (1 + rng.uniform(-noise, noise))
    warm = steady * 1.5
    epochs = [warm] + [steady] * (ran_epochs - 1)
    over = threads > logical_cpus
    batch = 128
    steps = max(1, ran_samples // batch)
    full_scale = spec["train_samples"] / ran_samples
    projected = warm + steady * full_scale * spec["epochs"] - steady
    base = {
        "schema_version": 1,
        "kind": "tfvariants.cell",
        "cell": {"variant": variant, "threads": threads, "workload": workload, "repeat": repeat},
        "status": status,
        "reason": reason if status != "ok" else None,
        "stderr_tail": "Traceback ...\nRuntimeError: boom" if status == "failed" else None,
        "config": {
            "data": "synthetic",
            "epochs": ran_epochs,
            "samples": ran_samples,
            "steps_per_epoch": None,
            "batch_size": batch,
            "seed": 0,
            "keras_options": {},
        },
        "requested": {
            "threads": threads,
            "cpus": list(range(min(threads, logical_cpus))),
            "intra_op": threads,
            "inter_op": 1,
            "oversubscribed": over,
            "oversubscription_ratio": threads / logical_cpus if over else 1.0,
        },
        "runner": {
            "variant_kind": "local",
            "command": ["python", "-m", "workloads.worker"],
            "exit_code": 0 if status == "ok" else 1,
            "wall_s": sum(epochs) + 3,
        },
        "started_at": "2026-11-21T23:00:00+00:00",
        "finished_at": "2026-11-21T23:00:10+00:00",
    }
    if status != "ok":
        if status == "skipped" and not reason:
            base["reason"] = "no GPU on this host"
        elif not reason:
            base["reason"] = "worker exited with code 1"
        return base
    base.update(
        {
            "applied": {
                "affinity": list(range(min(threads, logical_cpus))),
                "intra_op": threads,
                "inter_op": 1,
                "env": {"TF_NUM_INTRAOP_THREADS": str(threads)},
            },
            "timing": {
                "epoch_times_s": epochs,
                "warmup_epochs": 1,
                "steady_epoch_s": steady,
                "step_times_s": [steady / steps] * 5,
                "steps_per_epoch": steps,
                "samples_per_epoch": ran_samples,
                "samples_per_s": ran_samples / steady,
                "import_tf_s": 2.5,
                "data_s": 0.1,
                "build_s": 0.2,
                "total_s": sum(epochs) + 3,
            },
            "schedule": {
                "full_epochs": spec["epochs"],
                "full_samples": spec["train_samples"],
                "ran_epochs": ran_epochs,
                "ran_samples": ran_samples,
                "projected_full_s": projected,
            },
            "flops_per_step": spec["flops"],
            "gflops_per_s": spec["flops"] * steps / steady / 1e9,
            "metrics": {"loss": 0.3, "accuracy": 0.91, "val_loss": 0.31, "val_accuracy": 0.9},
            "chance_accuracy": spec["chance"],
            "memory": {"peak_rss_bytes": 800_000_000 + threads * 1_000_000},
            "environment": environment(variant, gpu=gpu),
        }
    )
    return base


def cell_id(result: dict) -> str:
    return cell_id_of(result["cell"])


def write_results(results_dir: Path, results: list[dict], run: dict | None = None) -> Path:
    cells = Path(results_dir) / "cells"
    cells.mkdir(parents=True, exist_ok=True)
    for r in results:
        (cells / f"{cell_id(r)}.json").write_text(json.dumps(r), encoding="utf-8")
    if run is not None:
        (Path(results_dir) / "run.json").write_text(json.dumps(run), encoding="utf-8")
    return Path(results_dir)


def pip_vs_compiled(
    folder: Path,
    *,
    options: dict[str, Any],
    speed: float = 0.7,
    repeats: int = 8,
    noise: float = 0.02,
    seed: int = 0,
    workload: str = "mnist_cnn",
    host: str = "h1",
    **run_fields: Any,
) -> Path:
    """A stored run of "compiled" at ``speed`` x the stock "pip" (2 threads, one
    workload, ``repeats`` interleaved rounds), its run.json holding ``options`` and any
    other ``run_fields`` (e.g. started_at; schema_version 1 unless given)."""
    results = [
        make_result(v, 2, workload, r, steady_epoch_s=2.0 * s, noise=noise, seed=seed)
        for r in range(repeats)
        for v, s in (("pip", 1.0), ("compiled", speed))
    ]
    run = {
        "schema_version": 1,
        "kind": "tfvariants.run",
        "variants": ["pip", "compiled"],
        "threads": [2],
        "workloads": [workload],
        "repeats": repeats,
        "options": options,
        "variant_info": {"pip": {"kind": "venv"}, "compiled": {"kind": "venv"}},
        "logical_cpus": 2,
        "hosts": [{"host_id": host, "kind": "local", "label": "local (2 CPUs)"}],
        **run_fields,
    }
    return write_results(folder, results, run)


def study_like_results(repeats: int = 3) -> tuple[list[dict], dict]:
    """pip/compiled at 8 and 16 threads (oversubscribed on 2 CPUs), a gpu variant (ok
    and skipped), one failed cell; two workloads. Returns (results, run.json dict)."""
    results = []
    speed = {
        ("pip", 8): 4.0,
        ("pip", 16): 3.0,
        ("compiled", 8): 3.2,
        ("compiled", 16): 2.4,
        ("gpu", 8): 1.0,
        ("gpu", 16): 1.0,
    }
    for w in ("mnist_mlp", "mnist_cnn"):
        for r in range(repeats):
            for (v, t), s in speed.items():
                scale = 1.0 if w == "mnist_mlp" else 3.0
                status = "ok"
                reason = None
                if v == "gpu" and w == "mnist_cnn":
                    status = "skipped"
                if v == "compiled" and t == 8 and w == "mnist_cnn" and r == 1:
                    status, reason = "failed", "worker exited with code 1: OOM"
                results.append(
                    make_result(
                        v,
                        t,
                        w,
                        r,
                        status=status,
                        reason=reason,
                        steady_epoch_s=s * scale,
                        noise=0.03,
                        gpu=v == "gpu",
                    )
                )
    run = {
        "schema_version": 1,
        "kind": "tfvariants.run",
        "variants": ["pip", "compiled", "gpu"],
        "threads": [8, 16],
        "workloads": ["mnist_mlp", "mnist_cnn"],
        "repeats": repeats,
        "options": {
            "epochs": 2,
            "samples": 6000,
            "steps_per_epoch": None,
            "data": "synthetic",
            "seed": 0,
            "timeout_s": 600,
        },
        "variant_info": {
            "pip": {"kind": "image", "device": "cpu"},
            "compiled": {"kind": "image", "device": "cpu"},
            "gpu": {"kind": "image", "device": "gpu"},
        },
        "started_at": "2026-11-21T23:00:00+00:00",
        "logical_cpus": 2,
    }
    return results, run


def typed(stored: dict[str, dict], run: dict | None = None) -> dict:
    """Result dicts (cell id -> dict) as the store hands them on: parsed once."""
    from tfvariants.store.cellresult import parse_results
    from tfvariants.store.record import run_record

    return parse_results(run_record(run or {}), stored)
