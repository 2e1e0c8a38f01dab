"""Result files: one JSON per cell (schema in docs/ARCHITECTURE.md and docs/results.md).

The worker writes successful results; the host writes the ones a worker could not
(crash, timeout, skip). Loading validates the kind and version so that a corrupt or
foreign file gives one clear error instead of a KeyError three modules later.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from workloads.protocol import RESULT_KIND, SCHEMA_VERSION, STATUSES, write_json_atomic
from workloads.serving.request import SERVE_RESULT_KIND

__all__ = [
    "SCHEMA_VERSION",
    "ResultError",
    "load_result",
    "validate_result",
    "write_json_atomic",
    "host_result",
    "load_cells",
]

# Tail of the worker's stderr kept in a failed result: enough for a traceback.
STDERR_TAIL_LINES = 40


class ResultError(ValueError):
    """A result file that is corrupt, foreign, or of an unknown schema version."""


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def migrate(data: dict[str, Any]) -> dict[str, Any]:
    """Bring an older result up to SCHEMA_VERSION (asv's update_to_N pattern).
    Version 1 is the first: nothing to migrate yet."""
    return data


def validate_result(data: Any, source: str = "result") -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ResultError(f"{source}: not a tfvariants result (top level is not an object)")
    if data.get("kind") == SERVE_RESULT_KIND:
        return validate_serve_result(data, source)
    if data.get("kind") != RESULT_KIND:
        raise ResultError(f"{source}: not a tfvariants result (kind={data.get('kind')!r})")
    version = data.get("schema_version")
    if not isinstance(version, int):
        raise ResultError(f"{source}: missing schema_version")
    if version > SCHEMA_VERSION:
        raise ResultError(
            f"{source}: schema_version {version} is newer than this tfvariants "
            f"understands ({SCHEMA_VERSION}); upgrade tfvariants"
        )
    data = migrate(data)
    if data.get("status") not in STATUSES:
        raise ResultError(f"{source}: unknown status {data.get('status')!r}")
    cell = data.get("cell")
    if not isinstance(cell, dict) or not {"variant", "threads", "workload"} <= set(cell):
        raise ResultError(f"{source}: missing or incomplete 'cell'")
    if data["status"] == "ok":
        timing = data.get("timing")
        if not isinstance(timing, dict) or not isinstance(timing.get("epoch_times_s"), list):
            raise ResultError(f"{source}: status ok but no timing.epoch_times_s")
    return data


def validate_serve_result(data: dict[str, Any], source: str = "result") -> dict[str, Any]:
    """A serving cell's result (kind tfvariants.serve_cell, docs/serving.md)."""
    version = data.get("schema_version")
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        raise ResultError(f"{source}: unsupported serving schema_version {version!r}")
    if data.get("status") not in STATUSES:
        raise ResultError(f"{source}: unknown status {data.get('status')!r}")
    cell = data.get("cell")
    need = {"task", "variant", "threads", "model", "scenario", "path", "workload"}
    if not isinstance(cell, dict) or cell.get("task") != "serve" or not need <= set(cell):
        raise ResultError(f"{source}: missing or incomplete serving 'cell'")
    if data["status"] == "ok" and not isinstance(data.get("metrics"), dict):
        raise ResultError(f"{source}: status ok but no metrics")
    return data


def load_result(path: str | Path) -> dict[str, Any]:
    """Read and validate one result file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ResultError(f"{path}: cannot read ({exc.strerror})") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ResultError(f"{path}: corrupt JSON at line {exc.lineno}: {exc.msg}") from exc
    return validate_result(data, str(path))


def load_cells(cells_dir: str | Path) -> list[dict[str, Any]]:
    """All valid results in a run's cells/ folder (temp files are ignored)."""
    return [load_result(p) for p in sorted(Path(cells_dir).glob("*.json"))]


def stderr_tail(text: str, lines: int = STDERR_TAIL_LINES) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


def host_result(
    cell: dict[str, Any],
    status: str,
    reason: str,
    *,
    stderr: str = "",
    config: dict[str, Any] | None = None,
    requested: dict[str, Any] | None = None,
    environment: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A result the host writes for a cell whose worker produced none (a serving
    cell's has the serving kind, so it is analysed with its own kind)."""
    assert status in STATUSES
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": SERVE_RESULT_KIND if cell.get("task") == "serve" else RESULT_KIND,
        "cell": cell,
        "status": status,
        "reason": reason,
        "stderr_tail": stderr_tail(stderr) if stderr else None,
        "config": config or {},
        "requested": requested or {},
        "environment": environment or {},
        "started_at": _now(),
        "finished_at": _now(),
    }
