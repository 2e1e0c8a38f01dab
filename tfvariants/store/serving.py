"""Serving's part of the store: its parsed result (:class:`ServeResult`), its parser
and its result file's validator, found by the task's stem (store/cellresult.py
``parse_result``, store/result.py ``validate_result``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tfvariants.options.interference import DISTURBED_SHARE
from tfvariants.plan.serve import DEFAULT_BATCH_TIMEOUT_MS, ServeCell, ServeKey
from tfvariants.plan.tasks import task_of
from tfvariants.store.cellresult import AnyResult, RunFacts, host_of, int_of, text_of
from tfvariants.store.celltimes import wall_of
from tfvariants.store.disturbance import result_disturbance
from tfvariants.store.rawfields import finite_number, get_path
from tfvariants.store.result import SCHEMA_VERSION, STATUSES, ResultError, check_cpu


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
        concurrency=int_of(c.get("concurrency"), 1),
        round=int_of(c.get("repeat"), 0),
        status=str(result["status"]),
        reason=text_of(result.get("reason")),
        device=device,
        host=host_of(result),
        oversubscribed=get_path(result, "requested", "oversubscribed") is True,
        throughput_per_s=finite_number(m.get("throughput_per_s")),
        percentiles_ms={k: finite_number(m.get(k)) for k in PERCENTILES},
        validity=text_of(m.get("validity")),
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
        max_batch_size=int_of(c.get("max_batch_size"), 1),
        batch_timeout_ms=finite_number(c.get("batch_timeout_ms")) or DEFAULT_BATCH_TIMEOUT_MS,
    )


def parse(result: Mapping[str, Any], facts: RunFacts) -> ServeResult:
    """A validated serving result with its run's facts."""
    return parse_serving(result, device=facts.device, disturbed_share=facts.disturbed_share)


def validate(data: dict[str, Any], source: str = "result") -> dict[str, Any]:
    """A serving cell's result (kind tfvariants.serve_cell, docs/serving.md)."""
    version = data.get("schema_version")
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        raise ResultError(f"{source}: unsupported serving schema_version {version!r}")
    if data.get("status") not in STATUSES:
        raise ResultError(f"{source}: unknown status {data.get('status')!r}")
    cell = data.get("cell")
    need = {"task", "variant", "threads", "model", "scenario", "path", "workload"}
    # its cell is of the task whose results are of this kind (plan/tasks.py)
    if (
        not isinstance(cell, dict)
        or task_of(cell).result_kind != data.get("kind")
        or need - set(cell)
    ):
        raise ResultError(f"{source}: missing or incomplete serving 'cell'")
    if data["status"] == "ok" and not isinstance(data.get("metrics"), dict):
        raise ResultError(f"{source}: status ok but no metrics")
    check_cpu(data, source)
    return data


def serving(results: Iterable[AnyResult]) -> list[ServeResult]:
    return [r for r in results if isinstance(r, ServeResult)]
