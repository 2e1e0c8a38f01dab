"""Running one serving cell: a fresh pinned worker (``workloads.serving.worker``) in its
variant, exactly one result file, and the cell's LoadGen logs kept in the run folder.

The worker writes LoadGen's logs next to its result (the scratch folder, mounted into a
container variant); the run folder copies them to ``<run>/artifacts/<cell_id>/`` before
the scratch folder is removed (a rerun replaces a failed attempt's copy whole), and the
result says where.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tfvariants.execute.launchable import Launchable
from tfvariants.execute.record import StoredCell
from tfvariants.execute.runner import WorkerJob, run_request
from tfvariants.options.serving import ServingOptions
from tfvariants.plan.pinning import for_serving, plan_pinning
from tfvariants.plan.serve import ServeCell
from tfvariants.plan.topology import Topology, read_topology
from tfvariants.store.runfolder import ARTIFACTS_DIR, RunFolder
from workloads.protocol import WorkerRequest
from workloads.serving.models import is_file as model_is_file
from workloads.serving.request import MIN_QUERIES, ServeRequest

SERVING_MODULE = "workloads.serving.worker"


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


def run_serve_cell(
    cell: ServeCell,
    variant: Launchable,
    options: ServingOptions,
    folder: RunFolder,
    topology: Topology | None = None,
) -> StoredCell:
    plan = for_serving(plan_pinning(cell.threads, topology or read_topology()))
    req = serve_request(cell, options)
    # A model file goes by its absolute path: a container launcher mounts it from there.
    model = str(Path(cell.model).resolve()) if model_is_file(cell.model) else cell.model

    def make_request(result_path: Path) -> WorkerRequest:
        return WorkerRequest(
            task="serve",
            workload=model,
            cell=cell.to_dict(),
            result=str(result_path),
            intra_op=plan.intra_op,
            inter_op=plan.inter_op,
            cpus=tuple(plan.cpus),
            requested=plan.to_dict(),
            payload=req.to_dict(),
        )

    def keep(scratch: Path, result: dict[str, Any]) -> None:
        kept = folder.keep_artifacts(cell.cell_id, _artifacts(scratch))
        if kept:
            result["artifacts"] = kept

    job = WorkerJob(make_request, req.to_dict(), options.timeout_s, SERVING_MODULE, keep)
    return run_request(cell, variant, plan, job, folder=folder)


def _artifacts(scratch: Path) -> dict[str, Path]:
    """What a serving worker leaves worth keeping: its artifacts (LoadGen logs) and the
    model server's log, by the name they get in <run>/artifacts/<cell_id>/."""
    src = scratch / ARTIFACTS_DIR
    found = {p.name: p for p in sorted(src.iterdir())} if src.is_dir() else {}
    found["server.log"] = scratch / "server.log"
    return found
