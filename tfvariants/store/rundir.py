"""The run folder: ``run.json`` (the matrix definition) and ``cells/*.json`` (one result
per cell). Execution writes into it; analysis reads from it; nothing else touches it.

Every finished cell is already on disk (written atomically) before the next starts, so
an interrupt loses at most the cell in flight, and a resume runs only what is missing,
failed or timed out.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from tfvariants.errors import UserError
from tfvariants.plan.cell import Cell
from tfvariants.plan.spec import MatrixSpec
from tfvariants.store.result import ResultError, load_result, write_json_atomic

RUN_FILE = "run.json"
CELLS_DIR = "cells"
DONE_STATUSES = ("ok", "skipped")  # skipped = cannot run here (e.g. no GPU): rerunning won't help


def _read_json(path: Path) -> dict | None:
    try:
        return load_result(path)
    except ResultError:  # a corrupt or foreign file counts as missing: the cell reruns
        return None


def read_run(results_dir: Path) -> dict[str, Any]:
    """The run's definition (run.json), or {} when the folder has none."""
    run_path = Path(results_dir) / RUN_FILE
    if not run_path.is_file():
        return {}
    try:
        return json.loads(run_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UserError(f"{run_path}: unreadable ({exc})") from None


def stored_results(results_dir: Path) -> dict[str, dict]:
    """cell_id -> result for every readable cell file under results_dir/cells."""
    out: dict[str, dict] = {}
    cells = Path(results_dir) / CELLS_DIR
    for path in sorted(cells.glob("*.json")) if cells.is_dir() else []:
        data = _read_json(path)
        if data is not None and isinstance(data.get("cell"), dict):
            out[path.stem] = data
    return out


def prepare_run_dir(out: Path, spec: MatrixSpec, *, resume: bool) -> dict:
    """Create (or, with resume, check) results/<run>/run.json; returns the run record.

    Refuses to mix matrices: a fresh run into a folder that already holds one, or a
    resume whose arguments differ from the stored definition."""
    run_file = Path(out) / RUN_FILE
    if run_file.exists():
        try:
            stored = json.loads(run_file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise UserError(f"{run_file}: unreadable run definition ({exc})") from None
        if not resume:
            raise UserError(
                f"{out} already holds a run: add --resume to continue it, or choose another --out"
            )
        wanted = spec.identity()
        # Compare exactly what the spec calls its identity (training and serving differ).
        have = {k: stored.get(k) for k in wanted if k != "options"}
        have["options"] = {k: (stored.get("options") or {}).get(k) for k in wanted["options"]}
        diffs = []
        for key, value in wanted.items():
            if key == "options":
                diffs += [
                    f"--{k.replace('_', '-')} {have['options'][k]} vs {value[k]}"
                    for k in value
                    if value[k] != have["options"][k]
                ]
            elif have[key] != value:
                diffs.append(f"{key} {have[key]} vs {value}")
        if diffs:
            raise UserError(
                f"--resume: {out} holds a different matrix (stored vs given: {'; '.join(diffs)})"
            )
        return stored
    if resume:
        raise UserError(f"--resume: {run_file} not found (nothing to resume)")
    Path(out, CELLS_DIR).mkdir(parents=True, exist_ok=True)
    record = spec.to_json(datetime.now(timezone.utc).isoformat(timespec="seconds"))
    write_json_atomic(run_file, record)
    return record


def pending_cells(cells: Iterable[Cell], results: dict[str, dict]) -> list[Cell]:
    """Cells with no stored result, or whose stored status is failed/timeout."""
    return [c for c in cells if results.get(c.cell_id, {}).get("status") not in DONE_STATUSES]
