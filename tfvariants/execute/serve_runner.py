"""Running one serving cell: a fresh pinned worker (``workloads.serving.worker``) in its
variant, exactly one result file, and the cell's LoadGen logs kept in the run folder.

The worker writes LoadGen's logs next to its result (the scratch folder, mounted into a
container variant); they are copied to ``<run>/artifacts/<cell_id>/`` before the scratch
folder is removed, and the result says where.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from tfvariants.execute.runner import _execute, worker_env
from tfvariants.plan.pinning import plan_pinning
from tfvariants.plan.serve import ServeCell
from tfvariants.plan.topology import Topology, read_topology
from tfvariants.store.result import host_result, write_json_atomic
from tfvariants.variants import Variant, skip_reason
from workloads.envprobe import host_id
from workloads.serving.models import is_file as model_is_file
from workloads.serving.request import ServeRequest, ServeWorkerRequest

ARTIFACTS_DIR = "artifacts"
SERVING_MODULE = "workloads.serving.worker"


def serve_request(cell: ServeCell, options: dict[str, Any]) -> ServeRequest:
    """The worker's request: the cell's coordinates + the run's shared settings."""
    shared = {k: v for k, v in options.items() if k in ServeRequest.__dataclass_fields__}
    req = ServeRequest(model=cell.model, scenario=cell.scenario, path=cell.path,
                       concurrency=cell.concurrency, **shared)  # fmt: skip
    req.check()
    return req


def run_serve_cell(
    cell: ServeCell,
    variant: Variant,
    options: dict[str, Any],
    cells_dir: str | Path,
    topology: Topology | None = None,
) -> dict[str, Any]:
    cells_dir = Path(cells_dir)
    run_dir = cells_dir.parent
    (run_dir / "logs").mkdir(parents=True, exist_ok=True)
    final_path = cells_dir / f"{cell.cell_id}.json"
    plan = plan_pinning(cell.threads, topology or read_topology())
    req = serve_request(cell, options)
    timeout_s = float(options.get("timeout_s", 1800.0))
    config = req.to_dict()

    reason = skip_reason(variant)
    if reason:
        result = host_result(cell.to_dict(), "skipped", reason, config=config,
                             requested=plan.to_dict())  # fmt: skip
        result["runner"] = {"variant_kind": variant.kind, "command": None, "exit_code": None,
                            "host_id": host_id()}  # fmt: skip
        write_json_atomic(final_path, result)
        return result

    scratch = Path(tempfile.mkdtemp(prefix=f".{cell.cell_id}.", dir=run_dir))
    os.chmod(scratch, 0o777)  # a container's user may differ from ours
    log_path = run_dir / "logs" / f"{cell.cell_id}.log"
    # A model file goes by its absolute path: a container launcher mounts it from there.
    model = str(Path(cell.model).resolve()) if model_is_file(cell.model) else cell.model
    request = ServeWorkerRequest(
        workload=model, cell=cell.to_dict(), result=str(scratch / "result.json"),
        intra_op=plan.intra_op, serve=req.to_dict(), inter_op=plan.inter_op,
        cpus=tuple(plan.cpus), requested=plan.to_dict(),
    )  # fmt: skip
    try:
        command, env = variant.launch(request, worker_env(variant, plan), plan.cpus, scratch,  # type: ignore[arg-type]
                                      module=SERVING_MODULE)  # fmt: skip
        result = _execute(cell, variant, _Timeout(timeout_s), plan, command, env, scratch,
                          log_path, config)  # type: ignore[arg-type]  # fmt: skip
        result["runner"] = {
            "host_id": host_id(),  # the worker's own may be a container's
            "variant_kind": variant.kind,
            "image": variant.image,
            "command": command,
            "exit_code": result.pop("_exit_code", None),
            "wall_s": result.pop("_wall_s", None),
            "log": str(log_path),
        }
        kept = _keep_artifacts(scratch, run_dir / ARTIFACTS_DIR / cell.cell_id)
        if kept:
            result["artifacts"] = f"{ARTIFACTS_DIR}/{cell.cell_id}"
        write_json_atomic(final_path, result)
        return result
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


class _Timeout:
    """The one field of RunOptions the shared executor reads."""

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s


def _keep_artifacts(scratch: Path, dest: Path) -> bool:
    """Copy the worker's artifacts (LoadGen logs) and the model server's log."""
    src = scratch / ARTIFACTS_DIR
    server_log = scratch / "server.log"
    if not src.is_dir() and not server_log.is_file():
        return False
    if dest.exists():  # a rerun (resume) replaces the failed attempt's files
        shutil.rmtree(dest)
    if src.is_dir():
        shutil.copytree(src, dest)
    dest.mkdir(parents=True, exist_ok=True)
    if server_log.is_file():
        shutil.copy2(server_log, dest / "server.log")
    return True
