"""What a cell records of the run that measured it, and when it may be pooled with the
run's other cells.

Each cell (``measured_by``) and run.json (``tfvariants_version``) record the version of
tfvariants; the cell also records the run's options that decide what a cell measures
(declared ``same`` or ``kept``: --samples, --epochs, --seed, --priority, ...). A load
pools a cell only when both agree with its run.json: a cell copied in from another run,
a run.json edited after its cells ran, or a cell of another version of the tool is not
pooled but named (a resume then refuses, or --quarantine moves it aside). Cells written
before cells recorded this are read as before.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tfvariants import __version__
from tfvariants.errors import one_line
from tfvariants.options.declare import KEPT, SAME, declared
from tfvariants.plan.tasks import task_of

FIELD = "measured_by"  # in a cell: {"tfvariants": version, "options": {...}}
RUN_FIELD = "tfvariants_version"  # in run.json


def pooled_options(run: Mapping[str, Any]) -> dict[str, Any]:
    """The run's stored options that every one of its cells must share."""
    options = run.get("options")
    options = options if isinstance(options, dict) else {}
    fixed = {n for n, o in declared(task_of(run).options).items() if o.resume in (SAME, KEPT)}
    return {n: v for n, v in options.items() if n in fixed}


def stamp(run: Mapping[str, Any]) -> dict[str, Any]:
    """A new cell's record of its run (``run``: its run.json, already written)."""
    return {FIELD: {"tfvariants": __version__, "options": pooled_options(run)}}


def stamped(result: dict[str, Any], run_file: Path) -> dict[str, Any]:
    """``result`` with its record of the run whose run.json is ``run_file`` (as it is
    when there is no readable run.json: the cell is then read as an older one)."""
    from tfvariants.store.result import ResultError, read_json_file

    try:
        run = read_json_file(run_file) if os.path.lexists(run_file) else None
    except ResultError:
        run = None
    return {**result, **stamp(run)} if isinstance(run, dict) and run else result


def _flag(run: Mapping[str, Any], name: str) -> str:
    option = declared(task_of(run).options).get(name)
    return (option.flag if option else None) or name


def disagreement(result: Mapping[str, Any], run: Mapping[str, Any]) -> str | None:
    """Why a cell may not be pooled with its run's cells, or None."""
    mine = result.get(FIELD)
    if mine is None or not run:
        return None  # written before cells recorded this, or a folder with no run.json
    if not isinstance(mine, dict) or not isinstance(mine.get("options"), dict):
        return f"its {FIELD!r} record is not an object with 'options': not pooled"
    version = run.get(RUN_FIELD)
    if version is not None and mine.get("tfvariants") != version:
        made = one_line(mine.get("tfvariants"))[:40]
        return f"measured by tfvariants {made}, this run by {version}: not pooled"
    want = pooled_options(run)
    for name in sorted(set(want) | set(mine["options"])):
        if name in declared(task_of(run).options) and want.get(name) != mine["options"].get(name):
            had = one_line(mine["options"].get(name))[:40]
            return (
                f"measured with {_flag(run, name)} {had}, this run's run.json has "
                f"{one_line(want.get(name))[:40]}: not pooled"
            )
    return None
