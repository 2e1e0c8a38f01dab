"""Result files: one JSON per cell (schema in docs/results.md).

The worker writes successful results; the host writes the ones a worker could not
(crash, timeout, skip). Loading validates kind, version and every field later stages
compute with, so a corrupt, foreign or hostile file gives one error naming the file and
the field instead of a traceback (or a wrong number) three modules later.
"""

from __future__ import annotations

import importlib
import json
import math
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeGuard, cast

from tfvariants.options.limits import MAX_THREADS
from tfvariants.plan.spec import MAX_REPEATS
from tfvariants.plan.tasks import task_of, tasks
from tfvariants.store.inputs import InputError, read_input
from workloads.protocol import SCHEMA_VERSION, STATUSES, write_json_atomic

__all__ = [
    "SCHEMA_VERSION",
    "ResultError",
    "load_result",
    "read_json_file",
    "validate_result",
    "write_json_atomic",
    "host_result",
]

# Tail of the worker's stderr kept in a failed result: enough for a traceback.
STDERR_TAIL_LINES = 40
# A number of seconds no real cell reaches (30 days): larger is a corrupt or forged file.
MAX_SECONDS = 30 * 24 * 3600.0
# Result files are a few hundred kB at most (step times are subsampled).
MAX_FILE_BYTES = 64 * 2**20


class ResultError(ValueError):
    """A result file that is corrupt, foreign, or of an unknown schema version."""


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def read_json_file(path: str | Path) -> Any:
    """Parse a JSON file; any way it can fail (missing, binary, truncated, nested too
    deeply, too large) becomes one ResultError naming the file."""
    path = Path(path)
    try:  # a regular file of bounded size: a FIFO or a device is named, never waited on
        raw = read_input(path, MAX_FILE_BYTES)
    except InputError as exc:
        raise ResultError(f"{path}: {exc.reason}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ResultError(f"{path}: not UTF-8 text (a binary file?)") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ResultError(f"{path}: corrupt JSON at line {exc.lineno}: {exc.msg}") from None
    except RecursionError:
        raise ResultError(f"{path}: JSON nested too deeply") from None
    except ValueError:  # an integer of over 4300 digits (Python's int limit)
        raise ResultError(f"{path}: corrupt JSON: a number too long to read") from None


# Real results nest 5 levels deep; a deeper file is hostile (and would make every
# recursive reader, down to the report's environment table, overflow the stack).
MAX_DEPTH = 32


def _too_deep(data: object) -> bool:
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            return True
        if isinstance(value, dict):
            stack += [(v, depth + 1) for v in value.values()]
        elif isinstance(value, list):
            stack += [(v, depth + 1) for v in value]
    return False


def is_int(v: object) -> TypeGuard[int]:
    return isinstance(v, int) and not isinstance(v, bool)


def check_number(v: object, where: str, *, seconds: bool) -> None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ResultError(f"{where}: expected a number, got {json.dumps(v)[:40]}")
    if abs(v) > 1e300 or not math.isfinite(v) or v < 0:  # a huge int: no float holds it
        raise ResultError(f"{where}: expected a finite number >= 0, got {str(v)[:40]}")
    if seconds and v > MAX_SECONDS:
        raise ResultError(f"{where}: {v:g} s is not a plausible time (over 30 days)")


def _is_duration(key: str) -> bool:
    return key.endswith("_s") and not key.endswith("_per_s")  # seconds, not a rate


def _check_value(value: object, source: str, path: str, duration: bool, in_list: bool) -> None:
    if isinstance(value, dict):
        for key, v in value.items():
            _check_value(v, source, f"{path}.{key}", _is_duration(str(key)), False)
    elif isinstance(value, list):
        for i, x in enumerate(value):
            _check_value(x, source, f"{path}[{i}]", duration, True)
    elif value is None and not (duration and in_list):
        return  # not measured
    elif duration or (isinstance(value, (int, float)) and not isinstance(value, bool)):
        check_number(value, f"{source}: field '{path}'", seconds=duration)


def check_numbers(
    table: object, source: str, name: str, *, required: tuple[str, ...] = ()
) -> dict[str, Any]:
    """Every number in a table, nested ones too: finite and >= 0; a duration (a key
    ending in ``_s``, not a rate ``_per_s``) must be a number (or null when not
    measured) below MAX_SECONDS. Other keys may hold text, which no figure uses."""
    if not isinstance(table, dict):
        raise ResultError(
            f"{source}: field {name!r}: expected an object, got {type(table).__name__}"
        )
    for key in required:
        if key not in table:
            raise ResultError(f"{source}: field '{name}.{key}' is missing")
    _check_value(table, source, name, False, False)
    return table


def check_cell(cell: object, source: str) -> None:
    if not isinstance(cell, dict):
        raise ResultError(f"{source}: field 'cell': expected an object, got {type(cell).__name__}")
    for key in ("variant", "workload"):
        if not isinstance(cell.get(key), str) or not cell[key].strip():
            raise ResultError(
                f"{source}: field 'cell.{key}': expected a name, got {cell.get(key)!r}"
            )
    threads = cell.get("threads")
    if not is_int(threads) or not 1 <= threads <= MAX_THREADS:
        raise ResultError(
            f"{source}: field 'cell.threads': expected a whole number from 1 to {MAX_THREADS}, "
            f"got {json.dumps(threads)[:40]}"
        )
    for key in ("repeat", "attempt"):
        value = cell.get(key, 0)
        # A huge integer would make a cell id of thousands of digits.
        if not is_int(value) or not 0 <= value < MAX_REPEATS:
            raise ResultError(
                f"{source}: field 'cell.{key}': expected a whole number from 0 to "
                f"{MAX_REPEATS - 1}, got {str(value)[:40]}"
            )


def validate_result(data: object, source: str = "result") -> dict[str, Any]:
    """The result if it is one this tfvariants can use, else ResultError naming the field.

    Its kind names the task (plan/tasks.py ``result_kind``); the task's ``validate``
    (store/<stem>.py) checks the rest. There is one schema version so far; when a second
    comes, its migration goes there (asv's update_to_N pattern)."""
    if not isinstance(data, dict):
        raise ResultError(f"{source}: not a tfvariants result (top level is not an object)")
    if _too_deep(data):
        raise ResultError(f"{source}: JSON nested too deeply (over {MAX_DEPTH} levels)")
    task = next((t for t in tasks().values() if t.result_kind == data.get("kind")), None)
    if task is None:
        raise ResultError(
            f"{source}: not a tfvariants result (kind={str(data.get('kind'))[:40]!r})"
        )
    validate = importlib.import_module(f"tfvariants.store.{task.stem}").validate
    return cast("dict[str, Any]", validate(data, source))


# A share of a cell's CPUs that others (or the hypervisor) used: 0 to 1. NaN, -1 or
# 1e308 would each turn a disturbed cell into a clean one (store/disturbance.py).
SHARES = ("others_share", "steal_share")


def check_cpu(data: dict[str, Any], source: str) -> None:
    """The cell's CPU record (``cpu``): every number finite and >= 0, each share <= 1."""
    if data.get("cpu") is None:
        return
    cpu = check_numbers(data["cpu"], source, "cpu")
    for key in SHARES:
        value = cpu.get(key)
        if value is not None and value > 1:
            raise ResultError(
                f"{source}: field 'cpu.{key}': a share of the CPUs, 0 to 1, got {str(value)[:40]}"
            )


def load_result(path: str | Path) -> dict[str, Any]:
    """Read and validate one result file."""
    return validate_result(read_json_file(path), str(path))


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
        "kind": task_of(cell).result_kind,
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
