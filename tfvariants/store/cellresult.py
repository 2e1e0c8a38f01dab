"""Typed results: a validated result dict parsed ONCE into an immutable record (training
cells become :class:`CellResult`, serving cells :class:`ServeResult`).

Every fact a later stage needs about a cell (its configuration key, round, device,
host, oversubscription, training time, steady window, whether others disturbed it) is
computed here, from the dict :func:`tfvariants.store.result.validate_result` accepted,
so analysis, the adaptive rounds, the CSV and the estimate never re-derive it (and so
can never derive it differently). ``raw`` keeps the whole dict, for display only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, NamedTuple, Protocol, TypeVar, cast

from tfvariants.options.interference import DISTURBED_SHARE, SHIELDED_SHARE
from tfvariants.plan.cell import Cell, config_label
from tfvariants.plan.serve import DEFAULT_BATCH_TIMEOUT_MS, ServeCell, ServeKey
from tfvariants.plan.task import PlannedCell
from tfvariants.plan.tasks import task_of
from tfvariants.store.celltimes import (
    overhead_split,
    steady_windows,
    training_time_s,
    wall_of,
    warmup_time_s,
)
from tfvariants.store.disturbance import (
    limits_of,
    result_disturbance,
    scaled,
    undisturbed_steps,
)
from tfvariants.store.rawfields import finite_number, first_of, get_path
from tfvariants.store.record import RunRecord


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


def host_of(result: Mapping[str, Any]) -> str | None:
    """The host a cell ran on: the runner's record first (a container's own host_id is
    the container's), else the worker's, unless it ran in a container; None = unknown."""
    runner = result.get("runner")
    if isinstance(runner, dict) and isinstance(runner.get("host_id"), str):
        return str(runner["host_id"])
    env = result.get("environment")
    if isinstance(env, dict) and not env.get("in_container"):
        host = env.get("host_id")
        return host if isinstance(host, str) and host else None
    return None


def _says_gpu(result: Mapping[str, Any]) -> bool:
    """The result ran with a GPU: a CUDA build that saw at least one GPU."""
    gpus = get_path(result, "environment", "tensorflow", "gpus")
    cuda = get_path(result, "environment", "tensorflow", "cuda_build")
    return isinstance(gpus, list) and bool(gpus) and cuda is not False


def variant_devices(run: RunRecord, results: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """cpu or gpu per variant (how its cells are billed and which baseline is preferred):
    run.json's variant_info when it says, else what the variant's results say (GPUs
    visible to a CUDA build), else cpu. Never the variant's name: ``gpu`` is only a
    built-in's name, and a user's variant called so may well be a CPU build."""
    results = list(results)
    out: dict[str, str] = {}
    for variant in dict.fromkeys(str(get_path(r, "cell", "variant")) for r in results):
        info = run.variant_info.get(variant)
        declared = info.device if info is not None else None
        if declared in ("cpu", "gpu"):
            out[variant] = str(declared)
            continue
        mine = [r for r in results if get_path(r, "cell", "variant") == variant]
        probed = [r for r in mine if isinstance(get_path(r, "environment", "tensorflow"), dict)]
        out[variant] = "gpu" if any(_says_gpu(r) for r in probed) else "cpu"
    return out


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


T = TypeVar("T")


class _Keyed(Protocol):
    @property
    def key(self) -> object: ...


class FromKey(Generic[T]):
    """A read-only attribute read through its owner's ``key`` under the same name."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: _Keyed, owner: type | None = None) -> T:
        return cast(T, getattr(obj.key, self.name))


class AnyResult:
    """Any task's parsed result: what every one answers the same way (a new task's
    result type subclasses it and adds a parser to ``_PARSERS``)."""

    __slots__ = ()
    status: str
    variant: str
    threads: int
    round: int
    raw: Mapping[str, Any]  # the validated dict: for display only, never recomputed from

    @property
    def cell(self) -> PlannedCell:
        raise NotImplementedError

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def cell_id(self) -> str:
        return self.cell.cell_id

    @property
    def environment(self) -> Mapping[str, Any] | None:
        env = self.raw.get("environment")
        return env if isinstance(env, dict) else None

    def get(self, *path: str) -> Any:
        """A raw field, for display (e.g. ``get("schedule", "projected_full_ci_s")``)."""
        return get_path(self.raw, *path)


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


@dataclass(frozen=True, slots=True)
class ServeResult(AnyResult):
    """One serving cell's result (kind tfvariants.serve_cell, docs/serving.md)."""

    variant: str
    threads: int
    model: str
    scenario: str
    path: str
    concurrency: int
    round: int
    status: str
    reason: str | None
    device: str
    host: str | None
    oversubscribed: bool
    throughput_per_s: float | None
    percentiles_ms: Mapping[str, float | None]  # p50_ms, p90_ms, p95_ms, p99_ms
    validity: str | None  # LoadGen's VALID / INVALID
    max_qps_under_bound: float | None
    http_overhead_p50_ms: float | None
    shared_cpus: bool  # server and load generator shared CPUs
    server_cpus: tuple[int, ...]
    others_share: float | None
    steal_share: float | None
    disturbed: bool
    wall_s: float | None  # the cell's wall time as the runner measured it
    raw: Mapping[str, Any]
    max_batch_size: int = 1  # batching (a swept axis); 1 = none
    batch_timeout_ms: float = DEFAULT_BATCH_TIMEOUT_MS

    @property
    def cell(self) -> ServeCell:
        config = (self.variant, self.threads, self.model, self.scenario, self.path)
        return ServeCell(
            *config, self.concurrency, self.round, self.max_batch_size, self.batch_timeout_ms
        )

    @property
    def serving_key(self) -> ServeKey:
        """One serving configuration with its batching (plan/serve.py ``ServeKey``)."""
        return self.cell.key

    @property
    def workload(self) -> str:
        return self.cell.workload

    @property
    def config(self) -> tuple[str, int, str, str]:
        """(variant, threads, model, path): one serving configuration."""
        return (self.variant, self.threads, self.model, self.path)


PERCENTILES = ("p50_ms", "p90_ms", "p95_ms", "p99_ms")


def _text(v: object) -> str | None:
    return str(v) if v not in (None, "") else None


def _int(v: object, default: int) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else default


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
        round=_int(c.get("repeat"), 0),
        attempt=_int(c.get("attempt"), 0),
        status=status,
        reason=_text(result.get("reason")),
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
        started_at=_text(result.get("started_at")),
    )


def parse_serving(
    result: Mapping[str, Any], *, device: str = "cpu", disturbed_share: float = DISTURBED_SHARE
) -> ServeResult:
    """A validated serving result as a ServeResult."""
    c = result["cell"]
    metrics = result.get("metrics")
    m: Mapping[str, Any] = metrics if isinstance(metrics, dict) else {}
    cpus = get_path(result, "placement", "server_cpus")
    return ServeResult(
        variant=str(c["variant"]),
        threads=int(c["threads"]),
        model=str(c["model"]),
        scenario=str(c["scenario"]),
        path=str(c["path"]),
        concurrency=_int(c.get("concurrency"), 1),
        round=_int(c.get("repeat"), 0),
        status=str(result["status"]),
        reason=_text(result.get("reason")),
        device=device,
        host=host_of(result),
        oversubscribed=get_path(result, "requested", "oversubscribed") is True,
        throughput_per_s=finite_number(m.get("throughput_per_s")),
        percentiles_ms={k: finite_number(m.get(k)) for k in PERCENTILES},
        validity=_text(m.get("validity")),
        max_qps_under_bound=finite_number(m.get("max_qps_under_bound")),
        http_overhead_p50_ms=finite_number(get_path(result, "http_overhead", "p50_ms")),
        shared_cpus=bool(get_path(result, "placement", "shared")),
        server_cpus=tuple(x for x in cpus if isinstance(x, int)) if isinstance(cpus, list) else (),
        others_share=finite_number(get_path(result, "cpu", "others_share")),
        steal_share=finite_number(get_path(result, "cpu", "steal_share")),
        disturbed=result.get("status") == "ok"
        and result_disturbance(result, disturbed_share) is not None,
        wall_s=wall_of(result),
        raw=result,
        max_batch_size=_int(c.get("max_batch_size"), 1),
        batch_timeout_ms=finite_number(c.get("batch_timeout_ms")) or DEFAULT_BATCH_TIMEOUT_MS,
    )


class _RunFacts(NamedTuple):
    """The run-level facts every result of a run is parsed with."""

    device: str  # the variant's
    run_cpus: int | None
    disturbed_share: float
    shielded_share: float


# Each task's parser (the tasks by name: plan/tasks.py), given the run-level facts.
_PARSERS: dict[str, Callable[[Mapping[str, Any], _RunFacts], AnyResult]] = {
    "train": lambda r, f: parse_training(
        r,
        device=f.device,
        run_cpus=f.run_cpus,
        disturbed_share=f.disturbed_share,
        shielded_share=f.shielded_share,
    ),
    "serve": lambda r, f: parse_serving(r, device=f.device, disturbed_share=f.disturbed_share),
}


def parse_results(run: RunRecord, results: Mapping[str, Mapping[str, Any]]) -> dict[str, AnyResult]:
    """Every validated result of a run folder (cell id -> dict), parsed once, with the
    run-level facts (each variant's device, the run host's CPUs) applied the same way."""
    devices = variant_devices(run, results.values())
    return {cid: parse_result(run, r, devices) for cid, r in results.items()}


def parse_result(
    run: RunRecord, result: Mapping[str, Any], devices: Mapping[str, str]
) -> AnyResult:
    """One validated result of a run folder, with the run-level facts (``devices``: of
    every variant, :func:`variant_devices` over the whole folder's results)."""
    run_cpus = run.logical_cpus if run.logical_cpus and run.logical_cpus > 0 else None
    limit, shielded = limits_of(run.options)
    device = devices.get(str(get_path(result, "cell", "variant")), "cpu")
    parse = _PARSERS[task_of(result["cell"]).name]
    return parse(result, _RunFacts(device, run_cpus, limit, shielded))


def training(results: Iterable[AnyResult]) -> list[CellResult]:
    return [r for r in results if isinstance(r, CellResult)]


def serving(results: Iterable[AnyResult]) -> list[ServeResult]:
    return [r for r in results if isinstance(r, ServeResult)]
