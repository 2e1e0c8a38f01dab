"""Serving cells: variant x threads x model x scenario (x concurrency) x path x repeat,
in interleaved rounds like training cells, with their own id and matrix definition.

A serving cell's ``workload`` is its label (``model/scenario[/cN]/path``), so the
matrix's progress, ETA and resume treat it like any other cell.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from tfvariants.options.serving import RESUMABLE, ServingOptions
from tfvariants.plan.cell import config_label, encode_part, make_id, name_part
from tfvariants.plan.pinning import for_serving
from tfvariants.plan.spec import logical_cpus, round_order
from tfvariants.plan.tasks import Task, WorkerOrder
from workloads.serving.models import is_file as model_is_file
from workloads.serving.request import MIN_QUERIES, SERVE_RESULT_KIND, ServeRequest

SERVING_MODULE = "workloads.serving.worker"

DEFAULT_BATCH_TIMEOUT_MS = 2.0


def model_label(model: str) -> str:
    return Path(model).stem if model.endswith((".py", ".keras")) else model


class ServeKey(NamedTuple):
    """One serving configuration (what its scenarios, concurrencies and repeats share):
    the one definition, used by the store, the analysis and the adaptive rounds."""

    variant: str
    threads: int
    model: str
    path: str
    max_batch_size: int
    batch_timeout_ms: float  # 0 without batching, where the timeout means nothing


def serve_label(key: ServeKey) -> str:
    """A serving configuration as people read it, ``VARIANT@THREADS PATH`` and its
    batching: the one place it is formatted (beside plan/cell.py ``config_label``)."""
    batching = batching_words(key)
    return f"{config_label(key.variant, key.threads)} {key.path}" + (
        f" {batching}" if batching else ""
    )


def batching_words(key: ServeKey) -> str:
    """A configuration's batching as people read it: "" without, else "batch 8/2 ms"
    (at most 8 instances a model call, waiting up to 2 ms for more)."""
    if key.max_batch_size <= 1:
        return ""
    return f"batch {key.max_batch_size}/{key.batch_timeout_ms:g} ms"


@dataclass(frozen=True)
class ServeCell:
    variant: str
    threads: int
    model: str
    scenario: str  # single_stream | offline | server | server_search | concurrency
    path: str  # inprocess | http | target
    concurrency: int = 1  # closed loop only (1 for LoadGen scenarios)
    repeat: int = 0
    # Batching (a swept axis): at most this many instances per model call, waiting at
    # most batch_timeout_ms for more. 1 = no batching (the timeout is then meaningless).
    max_batch_size: int = 1
    batch_timeout_ms: float = DEFAULT_BATCH_TIMEOUT_MS
    task: str = field(default="serve", init=False)

    @property
    def key(self) -> ServeKey:
        wait = self.batch_timeout_ms if self.max_batch_size > 1 else 0.0
        return ServeKey(
            self.variant, self.threads, self.model, self.path, self.max_batch_size, wait
        )

    @property
    def batching(self) -> str:
        """ "" without batching, else "b8-w2" (8 instances, waiting up to 2 ms)."""
        if self.max_batch_size <= 1:
            return ""
        return f"b{self.max_batch_size}-w{self.batch_timeout_ms:g}"

    @property
    def workload(self) -> str:
        c = f"/c{self.concurrency}" if self.scenario == "concurrency" else ""
        b = f"/{self.batching}" if self.batching else ""
        return f"{model_label(self.model)}/{self.scenario}{c}{b}/{self.path}"

    @property
    def cell_id(self) -> str:
        c = f"-c{self.concurrency}" if self.scenario == "concurrency" else ""
        b = f"-{self.batching}" if self.batching else ""
        return make_id(
            "serve",
            name_part(self.model),
            encode_part(f"{self.scenario}{c}{b}"),
            encode_part(self.path),
            encode_part(self.variant),
            f"t{self.threads}",
            f"r{self.repeat}",
        )

    @property
    def legacy_cell_id(self) -> str:
        """The id before ids were encoded (see tfvariants.plan.cell.legacy_cell_id)."""
        c = f"-c{self.concurrency}" if self.scenario == "concurrency" else ""
        b = f"-{self.batching}" if self.batching else ""
        return (
            f"serve__{model_label(self.model)}__{self.scenario}{c}{b}__{self.path}"
            f"__{self.variant}__t{self.threads}__r{self.repeat}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "workload": self.workload}


@dataclass(frozen=True)
class ServeSpec:
    """What ``tfvariants serve`` runs. ``options``: the run's options, frozen (the
    ServeRequest settings every cell shares, the timeout, the decision options)."""

    variants: tuple[str, ...]
    threads: tuple[int, ...]
    models: tuple[str, ...]
    scenarios: tuple[str, ...]
    concurrency: tuple[int, ...]
    paths: tuple[str, ...]
    repeats: int
    options: ServingOptions = field(default_factory=ServingOptions)
    variant_info: dict[str, dict[str, Any]] = field(default_factory=dict)
    # (max batch size, batch timeout ms) settings swept; (1, timeout) = no batching
    batching: tuple[tuple[int, float], ...] = ((1, DEFAULT_BATCH_TIMEOUT_MS),)

    @property
    def workloads(self) -> list[str]:
        seen = dict.fromkeys(c.workload for c in plan_serve_cells(self))
        return list(seen)

    def configurations(self) -> list[tuple[str, int]]:
        """Every (variant, threads), as :meth:`MatrixSpec.configurations` (the placement
        of both tasks' dry runs reads them)."""
        return [(v, t) for v in self.variants for t in self.threads]

    def cells(self) -> list[ServeCell]:
        """The cells in run order (:func:`plan_serve_cells`)."""
        return plan_serve_cells(self)

    def identity(self) -> dict[str, Any]:
        """What a resume must not change (everything but the timeout)."""
        return {
            "variants": list(self.variants),
            "threads": list(self.threads),
            "workloads": self.workloads,
            "repeats": self.repeats,
            "batching": [list(b) for b in self.batching],
            # a resume may change the timeout and the adaptive budget, nothing else
            "options": {
                k: v for k, v in sorted(self.options.record().items()) if k not in RESUMABLE
            },
        }

    def to_json(self, started_at: str) -> dict[str, Any]:
        """The matrix part of run.json (the run store adds kind, version and hosts);
        ``task: serve`` says the workloads are serving cell labels."""
        return {
            "task": "serve",
            **self.identity(),
            "models": list(self.models),
            "scenarios": list(self.scenarios),
            "concurrency": list(self.concurrency),
            "paths": list(self.paths),
            "options": self.options.record(),
            "variant_info": self.variant_info,
            "started_at": started_at,
            "logical_cpus": logical_cpus(),
        }


def plan_serve_cells(spec: ServeSpec, repeats: range | None = None) -> list[ServeCell]:
    """Round by round (repeat); in a round every configuration once, in the round's own
    seeded random order (``options.order_seed``, as compare's), so no configuration
    always runs first or always right after another."""
    cells: list[ServeCell] = []
    seed = spec.options.order_seed
    for r in repeats if repeats is not None else range(spec.repeats):
        cells += round_order(_round_cells(spec, r), seed, r)
    return cells


def _round_cells(spec: ServeSpec, r: int) -> list[ServeCell]:
    return [
        ServeCell(v, t, m, s, p, c, r, b, w)
        for m in spec.models
        for s in spec.scenarios
        for c in (spec.concurrency if s == "concurrency" else (1,))
        for b, w in spec.batching
        for p in spec.paths
        for v in spec.variants
        for t in spec.threads
    ]


def serve_cell_id(cell: dict[str, Any]) -> str:
    """The id (file stem) of a stored serving cell dict."""
    return serve_cell(cell).cell_id


def serve_cell(cell: dict[str, Any]) -> ServeCell:
    """A stored serving cell dict as a ServeCell (older cells have no batching fields)."""
    return ServeCell(
        str(cell["variant"]),
        int(cell["threads"]),
        str(cell["model"]),
        str(cell["scenario"]),
        str(cell["path"]),
        int(cell.get("concurrency", 1)),
        int(cell.get("repeat", 0)),
        int(cell.get("max_batch_size", 1)),
        float(cell.get("batch_timeout_ms", DEFAULT_BATCH_TIMEOUT_MS)),
    )


def _serving_ids(c: Mapping[str, Any]) -> tuple[str, str]:
    cell = serve_cell(dict(c))
    return cell.cell_id, cell.legacy_cell_id


def serve_request(cell: ServeCell, options: ServingOptions) -> ServeRequest:
    """The worker's request: the cell's coordinates + the run's shared settings. A
    minimum query count left to the scale (None) is the scenario's own
    (``MIN_QUERIES``: what LoadGen's early-stopping estimate needs)."""
    wanted = ServeRequest.__dataclass_fields__
    shared = {k: v for k, v in options.record().items() if k in wanted}
    if shared.get("min_queries") is None:
        shared["min_queries"] = MIN_QUERIES[cell.scenario]
        shared["max_queries"] = max(shared.get("max_queries") or 0, shared["min_queries"])
    shared.update(max_batch_size=cell.max_batch_size, batch_timeout_ms=cell.batch_timeout_ms)
    req = ServeRequest(
        model=cell.model,
        scenario=cell.scenario,
        path=cell.path,
        concurrency=cell.concurrency,
        **shared,
    )
    req.check()
    return req


def serving_order(
    cell: ServeCell, options: ServingOptions, keras: Mapping[str, Any], backend: str
) -> WorkerOrder:
    """A serving cell's worker order: its ServeRequest as the payload; kept beside the
    LoadGen logs, the model server's log."""
    req = serve_request(cell, options)
    # A model file goes by its absolute path: a container launcher mounts it from there.
    model = str(Path(cell.model).resolve()) if model_is_file(cell.model) else cell.model
    return WorkerOrder(
        SERVING_MODULE,
        model,
        req.to_dict(),
        options.timeout_s,
        payload=req.to_dict(),
        keep=("server.log",),
    )


# Serving's record among the tasks (plan/tasks.py finds it).
TASK = Task(
    "serve",
    "serving",
    1,
    ServingOptions,
    SERVE_RESULT_KIND,
    _serving_ids,
    serving_order,
    pinning=for_serving,
)
