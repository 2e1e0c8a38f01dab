"""Training's part of the store: its parsed result (:class:`CellResult`), its parser
and its result file's validator, found by the task's stem (store/cellresult.py
``parse_result``, store/result.py ``validate_result``)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from tfvariants.options.interference import DISTURBED_SHARE, SHIELDED_SHARE
from tfvariants.plan.cell import Cell, config_label
from tfvariants.store.cellresult import AnyResult, FromKey, RunFacts, host_of, int_of, text_of
from tfvariants.store.celltimes import (
    overhead_split,
    steady_windows,
    training_time_s,
    wall_of,
    warmup_time_s,
)
from tfvariants.store.disturbance import result_disturbance, scaled, undisturbed_steps
from tfvariants.store.rawfields import finite_number, first_of, get_path
from tfvariants.store.result import (
    SCHEMA_VERSION,
    STATUSES,
    ResultError,
    check_cell,
    check_cpu,
    check_number,
    check_numbers,
    is_int,
)


class ConfigKey(NamedTuple):
    """What repeats of one configuration share: the unit of grouping and comparison."""

    workload: str
    variant: str
    threads: int

    @property
    def label(self) -> str:
        return config_label(self.variant, self.threads)


class OfConfig:
    """A record about one configuration (fields ``workload``, ``variant``, ``threads``):
    its key and label, said once for every such record."""

    workload: str
    variant: str
    threads: int

    @property
    def key(self) -> ConfigKey:
        return ConfigKey(self.workload, self.variant, self.threads)

    @property
    def label(self) -> str:
        return self.key.label


def _machine_cpus(result: Mapping[str, Any]) -> int | None:
    """The logical CPUs of the machine that ran the cell, as its worker probed them."""
    cpus = get_path(result, "environment", "cpu", "logical_cpus")
    return cpus if isinstance(cpus, int) and not isinstance(cpus, bool) and cpus > 0 else None


def _oversubscription(
    result: Mapping[str, Any], threads: int, device: str, run_cpus: int | None
) -> tuple[bool, float]:
    """As the worker's pinning plan recorded it (a cluster node's own CPU count counts,
    not the driver's); for results without that record, threads against the CPUs of the
    machine that ran the cell (else of the run's host)."""
    said = get_path(result, "requested", "oversubscribed")
    ratio = finite_number(get_path(result, "requested", "oversubscription_ratio"))
    if isinstance(said, bool):
        return said, (ratio or 1.0) if said else 1.0
    cpus = _machine_cpus(result) or run_cpus
    if device == "cpu" and cpus and threads > cpus:
        return True, threads / cpus
    return False, 1.0


@dataclass(frozen=True, slots=True)
class CellResult(AnyResult):
    """One training cell's result, as every later stage sees it."""

    key: ConfigKey
    round: int  # the repeat index: cells of one round ran together (interleaved)
    attempt: int  # > 0: the round's cell again, after a disturbed attempt
    status: str  # ok | failed | timeout | skipped
    reason: str | None
    device: str  # cpu | gpu: how the variant is billed
    host: str | None
    machine_cpus: int | None  # logical CPUs of the machine that ran it (its probe)
    oversubscribed: bool
    oversubscription_ratio: float  # threads / CPUs when oversubscribed, else 1.0
    training_time_s: float | None  # (projected) full schedule; ok results only
    steady_epoch_s: float | None
    steady_step_s: float | None
    warmup_s: float | None
    samples_per_s: float | None
    gflops_per_s: float | None
    accuracy: float | None
    loss: float | None
    has_metrics: bool  # the result reports final metrics at all
    chance_accuracy: float | None
    peak_rss_bytes: float | None
    utilisation: float | None
    others_share: float | None  # other processes' share of the pinned CPUs
    steal_share: float | None
    disturbed: bool  # others/steal above DISTURBED_SHARE: out of verdicts by default
    wall_s: float | None  # the cell's wall time as the runner measured it
    overhead: Mapping[str, float]
    steady_windows_s: tuple[float, ...]  # mean step time of each steady window (ok only)
    raw: Mapping[str, Any]  # the validated dict: for display only, never recomputed from
    undisturbed_only: str | None = None  # why its times are its clean steps' (disturbance.py)
    # When its worker started (ISO 8601, seconds): the cells' order in time, for the noise
    # that moves consecutive cells together (analyze/training/decomposition.py)
    started_at: str | None = None
    workload = FromKey[str]()
    variant = FromKey[str]()
    threads = FromKey[int]()

    @property
    def cell(self) -> Cell:
        return Cell(self.variant, self.threads, self.workload, self.round, self.attempt)


def parse_training(
    result: Mapping[str, Any],
    *,
    device: str = "cpu",
    run_cpus: int | None = None,
    disturbed_share: float = DISTURBED_SHARE,
    shielded_share: float = SHIELDED_SHARE,
) -> CellResult:
    """A validated training result as a CellResult (``device``: the variant's, see
    :func:`variant_devices`; ``run_cpus``: the run host's CPUs, for old results;
    ``disturbed_share``, ``shielded_share``: the run's limits, see
    :func:`tfvariants.store.disturbance.limits_of`)."""
    c = result["cell"]
    key = ConfigKey(str(c["workload"]), str(c["variant"]), int(c["threads"]))
    status = str(result["status"])
    ok = status == "ok"
    over, ratio = _oversubscription(result, key.threads, device, run_cpus)
    clean = undisturbed_steps(result, disturbed_share) if ok else None  # its times: clean steps'
    time_s = clean.projected_full_s if clean else training_time_s(result)

    def timing(name: str, power: int = 0) -> float | None:  # power: see scaled()
        return scaled(clean, finite_number(get_path(result, "timing", name)), power) if ok else None

    acc = first_of(result, ("metrics", "val_accuracy"), ("metrics", "accuracy"))
    return CellResult(
        key=key,
        round=int_of(c.get("repeat"), 0),
        attempt=int_of(c.get("attempt"), 0),
        status=status,
        reason=text_of(result.get("reason")),
        device=device,
        host=host_of(result),
        machine_cpus=_machine_cpus(result),
        oversubscribed=over,
        oversubscription_ratio=ratio,
        training_time_s=time_s if ok else None,
        steady_epoch_s=timing("steady_epoch_s", 1),
        steady_step_s=timing("steady_step_s", 1),
        warmup_s=warmup_time_s(result) if ok else None,
        samples_per_s=timing("samples_per_s", -1),
        gflops_per_s=scaled(clean, finite_number(result.get("gflops_per_s")), -1) if ok else None,
        accuracy=finite_number(acc) if ok else None,
        loss=finite_number(get_path(result, "metrics", "loss")) if ok else None,
        has_metrics=ok and result.get("metrics") is not None,
        chance_accuracy=finite_number(result.get("chance_accuracy")),
        peak_rss_bytes=finite_number(get_path(result, "memory", "peak_rss_bytes")),
        utilisation=finite_number(get_path(result, "cpu", "utilisation")),
        others_share=finite_number(get_path(result, "cpu", "others_share")),
        steal_share=finite_number(get_path(result, "cpu", "steal_share")),
        disturbed=ok and result_disturbance(result, disturbed_share, shielded_share) is not None,
        wall_s=wall_of(result),
        overhead=overhead_split(result) if ok else {},
        steady_windows_s=steady_windows(result) if ok and not clean else (),  # not: mixed
        raw=result,
        undisturbed_only=clean.note(disturbed_share) if clean else None,
        started_at=text_of(result.get("started_at")),
    )


def parse(result: Mapping[str, Any], facts: RunFacts) -> CellResult:
    """A validated training result with its run's facts."""
    return parse_training(
        result,
        device=facts.device,
        run_cpus=facts.run_cpus,
        disturbed_share=facts.disturbed_share,
        shielded_share=facts.shielded_share,
    )


def validate(data: dict[str, Any], source: str = "result") -> dict[str, Any]:
    """A training cell's result (kind tfvariants.cell, docs/results.md), else
    ResultError naming the field."""
    version = data.get("schema_version")
    if not is_int(version) or version < 1:
        raise ResultError(f"{source}: missing or invalid schema_version")
    if version > SCHEMA_VERSION:
        raise ResultError(
            f"{source}: schema_version {version} is newer than this tfvariants "
            f"understands ({SCHEMA_VERSION}); upgrade tfvariants"
        )
    if data.get("status") not in STATUSES:
        raise ResultError(f"{source}: unknown status {str(data.get('status'))[:40]!r}")
    check_cell(data.get("cell"), source)
    check_cpu(data, source)
    _check_metrics(data, source)
    for key in ("environment", "runner", "requested", "config"):
        if data.get(key) is not None and not isinstance(data[key], dict):
            raise ResultError(f"{source}: field {key!r}: expected an object")
    if data["status"] == "ok":
        timing = check_numbers(data.get("timing"), source, "timing", required=("epoch_times_s",))
        epochs = timing["epoch_times_s"]
        if not isinstance(epochs, list) or not epochs:
            raise ResultError(f"{source}: field 'timing.epoch_times_s': expected a non-empty list")
        if data.get("schedule") is not None:
            check_numbers(data["schedule"], source, "schedule")
        _check_measured(data, source)
        if data.get("memory") is not None:
            check_numbers(data["memory"], source, "memory")
        for key in ("gflops_per_s", "flops_per_step"):
            if data.get(key) is not None:
                check_number(data[key], f"{source}: field {key!r}", seconds=False)
    return data


# The times every figure of an ok cell is made of: none of them can be 0 s (a 0-second
# cell would cost nothing and divide by zero in every ratio); refused like a negative one.
MEASURED_TIMES = (
    ("timing", "epoch_times_s"),
    ("timing", "steady_epoch_s"),
    ("timing", "steady_step_s"),
    ("schedule", "projected_full_s"),
)


def _check_measured(data: dict[str, Any], source: str) -> None:
    for table, key in MEASURED_TIMES:
        value = (data.get(table) or {}).get(key)
        values = value if isinstance(value, list) else [value]
        for i, v in enumerate(values):
            if v is not None and v <= 0:
                where = f"{table}.{key}" + (f"[{i}]" if isinstance(value, list) else "")
                raise ResultError(
                    f"{source}: field '{where}': a measured time must be greater than 0, got {v}"
                )


def _check_metrics(data: dict[str, Any], source: str) -> None:
    """The final metrics: finite numbers; an accuracy 0 to 1 (one is checked against
    chance, and a NaN one would pass every check)."""
    metrics = data.get("metrics")
    if not isinstance(metrics, dict):
        return
    for key, value in metrics.items():
        if value is None or isinstance(value, str):
            continue
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not number or not math.isfinite(value) or ("accuracy" in key and not 0 <= value <= 1):
            raise ResultError(
                f"{source}: field 'metrics.{key}': expected a finite number"
                + (" from 0 to 1" if "accuracy" in key else "")
                + f", got {str(value)[:40]}"
            )


def training(results: Iterable[AnyResult]) -> list[CellResult]:
    return [r for r in results if isinstance(r, CellResult)]
