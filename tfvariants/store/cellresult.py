"""Typed results: a validated result dict parsed ONCE into an immutable record, each
task's by its own ``parse`` (store/<stem>.py, the task's stem: training cells become
``store/training.py CellResult``, serving cells ``store/serving.py ServeResult``).

Every fact a later stage needs about a cell (its configuration key, round, device,
host, oversubscription, training time, steady window, whether others disturbed it) is
computed here, from the dict :func:`tfvariants.store.result.validate_result` accepted,
so analysis, the adaptive rounds, the CSV and the estimate never re-derive it (and so
can never derive it differently). ``raw`` keeps the whole dict, for display only.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping
from typing import Any, Generic, NamedTuple, Protocol, TypeVar, cast

from tfvariants.plan.task import PlannedCell
from tfvariants.plan.tasks import task_of
from tfvariants.store.disturbance import (
    limits_of,
)
from tfvariants.store.rawfields import get_path
from tfvariants.store.record import RunRecord


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
    result type subclasses it, in store/<stem>.py beside its ``parse``)."""

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


def text_of(v: object) -> str | None:
    return str(v) if v not in (None, "") else None


def int_of(v: object, default: int) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else default


class RunFacts(NamedTuple):
    """The run-level facts every result of a run is parsed with."""

    device: str  # the variant's
    run_cpus: int | None
    disturbed_share: float
    shielded_share: float


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
    task = importlib.import_module(f"tfvariants.store.{task_of(result['cell']).stem}")
    return cast(AnyResult, task.parse(result, RunFacts(device, run_cpus, limit, shielded)))
