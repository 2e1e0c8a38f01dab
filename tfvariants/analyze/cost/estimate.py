"""Before a run: which instance type runs each cell, how long the cells take, and the
estimated bill (``compare --dry-run``).

Times come from an earlier run (``--estimate-from RUN``: the median stored cell time per
configuration) or, failing that, from rough figures: the step time implied by the 2017
study's full-schedule training times (Keras 2 / TensorFlow 1.2 on GCE Skylake
n1-highcpu and a K80; the study's logs, github.com/minimaxir/deep-learning-cpu-gpu-benchmark,
logs/*/*.csv, sum of per-epoch ``elapsed``) times the steps a cell trains, always
labelled as rough.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tfvariants.analyze.cost.catalog import Instance
from tfvariants.analyze.cost.pricing import Pricing
from tfvariants.errors import UserError
from tfvariants.store.training import ConfigKey, training

# Full-schedule training seconds in the 2017 study: (pip x 8/16/32/64, compiled x
# 8/16/32/64, K80 GPU). imdb_bilstm = imdb_bidirectional_lstm, text_generation =
# lstm_text_generation there.
STUDY_2017_THREADS = (8, 16, 32, 64)
STUDY_2017: dict[str, tuple[tuple[float, ...], tuple[float, ...], float]] = {
    "mnist_mlp": ((138.5, 95.2, 91.4, 91.8), (87.8, 70.0, 97.3, 85.3), 65.1),
    "mnist_cnn": ((1116.2, 616.0, 408.2, 497.4), (634.1, 426.5, 397.6, 504.9), 172.7),
    "cifar10_cnn": ((3151.5, 1971.3, 1373.5, 1449.1), (2088.4, 1357.6, 1163.6, 1279.4), 763.2),
    "imdb_fasttext": ((1756.3, 1043.3, 1021.3, 1269.1), (1325.2, 1035.6, 1130.5, 1219.2), 331.5),
    "imdb_bilstm": ((627.1, 560.5, 509.7, 545.1), (577.3, 516.3, 549.2, 565.8), 1229.4),
    "text_generation": ((1877.9, 1776.2, 1273.0, 1421.1), (1325.5, 1245.2, 1414.4, 1346.5), 957.4),
}
STUDY_2017_SOURCE = (
    "the 2017 study's training times (Keras 2, TensorFlow 1.2, GCE n1-highcpu Skylake and a "
    "K80; github.com/minimaxir/deep-learning-cpu-gpu-benchmark logs)"
)
# Per cell on a node: interpreter + TensorFlow import, probe, model build (DESIGN: ~4 s
# here) plus the warm-up (tracing, first steps); rough.
CELL_OVERHEAD_S = 15.0
# Per node: boot + setup before the first cell, and the idle time before it stops
# (docs/cluster/*.yaml: idle_timeout_minutes = 5). Rough.
NODE_BOOT_S = 180.0
NODE_IDLE_S = 300.0


def place_cells(
    configurations: list[tuple[str, int]], devices: dict[str, str], pricing: Pricing
) -> dict[tuple[str, int], tuple[Instance, str]]:
    """(variant, threads) -> (the catalog instance whose nodes run and bill those cells,
    why that one). The same rule as a run's billing (``Pricing.instance_for``): an
    ``--instance`` mapping; a GPU variant on the catalog's default GPU instance; a CPU
    configuration on the instance with exactly its vCPUs, else the smallest priced one
    with more (said so). Refused, in one line, only when nothing fits."""
    placed: dict[tuple[str, int], tuple[Instance, str]] = {}
    for variant, threads in configurations:
        device = devices.get(variant, "cpu")
        found = pricing.instance_for(variant, threads, device)
        if found is None:
            if device == "gpu":
                raise UserError(
                    f"catalog {pricing.catalog.name} has no GPU instance for {variant}: "
                    f"name one with --instance {variant}=INSTANCE"
                )
            sizes = ", ".join(
                str(v)
                for v in sorted({i.vcpus for i in pricing.catalog.instances if not i.gpu_type})
            )
            raise UserError(
                f"--threads {threads}: catalog {pricing.catalog.name} has no priced instance with "
                f"{threads} or more vCPUs (it has {sizes}); "
                f"map it with --instance {threads}=INSTANCE"
            )
        placed[(variant, threads)] = found
    return placed


@dataclass(frozen=True)
class CellEstimate:
    workload: str
    variant: str
    threads: int
    instance: str
    seconds: float
    source: str  # "run" or "rough"


def _study_seconds(workload: str, variant: str, threads: int, device: str) -> float | None:
    row = STUDY_2017.get(workload)
    if row is None:
        return None
    pip, compiled, gpu = row
    if device == "gpu":
        return gpu
    # the study's compiled build: the `compiled` image, or a compiled wheel (intel-*)
    column = compiled if variant.startswith(("compiled", "intel")) else pip
    nearest = min(range(4), key=lambda i: abs(STUDY_2017_THREADS[i] - threads))
    return column[nearest]


@dataclass(frozen=True)
class CellShape:
    """What a cell trains, for rough times: the workload's full schedule (SPEC) and the
    run's options. Without ``epochs`` a cell stops after its steady window."""

    epochs_full: int = 1
    steps_per_epoch_full: int = 1
    epochs: int | None = None  # --epochs: whole epochs instead of a steady window
    steps_per_epoch: int | None = None  # of the run's sample (or --steps-per-epoch)
    min_steady_s: float = 10.0
    min_steady_steps: int = 100


def study_training_seconds(workload: str, variant: str, threads: int, device: str) -> float:
    """The study's full-schedule training time for the nearest configuration (the median
    over its workloads when the workload is not one of the study's)."""
    s = _study_seconds(workload, variant, threads, device)
    if s is None:
        s = statistics.median(
            _study_seconds(w, variant, threads, device) or 0.0 for w in STUDY_2017
        )
    return s


def rough_seconds(
    workload: str, variant: str, threads: int, device: str, shape: CellShape
) -> float:
    """A rough cell time: the study's step time for the nearest configuration, times the
    steps the cell trains (its steady window, or --epochs), plus the per-cell overhead."""
    full = study_training_seconds(workload, variant, threads, device)
    step_s = full / max(1, shape.epochs_full * shape.steps_per_epoch_full)
    if shape.epochs:
        steps = shape.epochs * (shape.steps_per_epoch or shape.steps_per_epoch_full)
        return CELL_OVERHEAD_S + steps * step_s
    return CELL_OVERHEAD_S + max(shape.min_steady_s, shape.min_steady_steps * step_s)


def times_from_run(run_dir: Path) -> dict[tuple[str, ...] | ConfigKey, list[float]]:
    """Cell wall times of an earlier run, keyed by configuration and (workload,) for
    fallbacks."""
    from tfvariants.store.rundir import load_run_dir

    if not Path(run_dir, "cells").is_dir():
        raise UserError(f"--estimate-from {run_dir}: not a results folder (no cells/)")
    out: dict[tuple[str, ...] | ConfigKey, list[float]] = {}
    for r in training(load_run_dir(Path(run_dir), allow_mixed_hosts=True).parsed.values()):
        if not r.ok or r.wall_s is None or r.wall_s <= 0:
            continue
        out.setdefault(r.key, []).append(r.wall_s)
        out.setdefault((r.workload,), []).append(r.wall_s)
    if not out:
        raise UserError(f"--estimate-from {run_dir}: no successful cells with timings")
    return out


@dataclass(frozen=True)
class NodeTypeBill:
    instance: Instance
    cells: int
    cell_seconds: float
    per_hour: float | None
    tier: str | None
    as_of: str | None
    cells_cost: float | None
    node_overhead_cost: float | None


def bill(
    estimates: list[CellEstimate], placed: dict[str, Instance], pricing: Pricing
) -> list[NodeTypeBill]:
    """Per node type: cells, cell-seconds, and cost = price x billed cell time, plus
    one node's boot and idle time at the same price (rough)."""
    by_inst: dict[str, list[CellEstimate]] = {}
    for e in estimates:
        by_inst.setdefault(e.instance, []).append(e)
    rows = []
    billing = pricing.catalog.billing
    for name, items in sorted(by_inst.items(), key=lambda kv: placed[kv[0]].vcpus):
        inst = placed[name]
        sel = pricing.catalog.price(inst, as_of=pricing.as_of, tier=pricing.tier)
        seconds = sum(e.seconds for e in items)
        if sel is None:
            rows.append(NodeTypeBill(inst, len(items), seconds, None, None, None, None, None))
            continue
        cells_cost = sel.per_hour * billing.billed_seconds(seconds) / 3600
        overhead = sel.per_hour * (NODE_BOOT_S + NODE_IDLE_S) / 3600
        rows.append(
            NodeTypeBill(
                inst, len(items), seconds, sel.per_hour, sel.tier, sel.as_of, cells_cost, overhead
            )
        )
    return rows


def estimate_cells(
    cells: list[Any],
    placement: dict[tuple[str, int], tuple[Instance, str]],
    devices: dict[str, str],
    *,
    run_times: dict[tuple[str, ...] | ConfigKey, list[float]] | None,
    shape_for: Callable[[str], CellShape],
    study: bool = False,
) -> list[CellEstimate]:
    """One estimate per planned cell; ``shape_for(workload)`` gives its CellShape.
    ``study``: not cells but the 2017 study's full-schedule training times as they were,
    for "2017 speeds at today's prices"."""
    out = []
    for c in cells:
        inst = placement[(c.variant, c.threads)][0].name
        times = None
        if run_times is not None:
            times = run_times.get(ConfigKey(c.workload, c.variant, c.threads)) or run_times.get(
                (c.workload,)
            )
        if times:
            out.append(
                CellEstimate(
                    c.workload, c.variant, c.threads, inst, statistics.median(times), "run"
                )
            )
        elif study and c.workload in STUDY_2017:
            seconds = study_training_seconds(c.workload, c.variant, c.threads, devices[c.variant])
            out.append(CellEstimate(c.workload, c.variant, c.threads, inst, seconds, "study-2017"))
        else:
            seconds = rough_seconds(
                c.workload, c.variant, c.threads, devices[c.variant], shape_for(c.workload)
            )
            out.append(CellEstimate(c.workload, c.variant, c.threads, inst, seconds, "rough"))
    return out
