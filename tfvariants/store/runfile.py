"""run.json: the run's definition (the matrix) and the hosts it may use. The one
reader (validated, migrated) and writer of the file."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeGuard

from tfvariants import __version__
from tfvariants.errors import UserError
from tfvariants.options.declare import RunOptionsBase, stored_problems
from tfvariants.options.limits import MAX_THREADS
from tfvariants.plan.spec import MAX_REPEATS, logical_cpus
from tfvariants.plan.task import MatrixPlan, PlannedCell
from tfvariants.plan.tasks import task_of
from tfvariants.store import stamp, workloadfiles
from tfvariants.store.record import RunRecord, run_record
from tfvariants.store.result import ResultError, read_json_file
from tfvariants.store.runfolder import RunFolder

RUN_FILE = "run.json"
RUN_KIND = "tfvariants.run"
RUN_SCHEMA_VERSION = 3


def local_host() -> dict[str, Any]:
    """This machine as a run.json host entry."""
    from workloads.envprobe import host_id

    return {"host_id": host_id(), "kind": "local", "label": f"local ({logical_cpus()} CPUs)"}


def _run_v1_to_v2(data: dict[str, Any]) -> dict[str, Any]:
    # Version 1 declared no hosts: [] means "undeclared", and readers take the host
    # most cells ran on as the run's host.
    return {**data, "schema_version": 2, "hosts": []}


def _run_v2_to_v3(data: dict[str, Any]) -> dict[str, Any]:
    # Version 3 names cells by encoded, collision-free ids (tfvariants.plan.cell). The
    # record is unchanged; the files are renamed by rundir.migrate_cell_ids when a run
    # is resumed, and read under either name until then.
    return {**data, "schema_version": 3}


# The one place run.json migrations live: version N -> N+1.
_RUN_MIGRATIONS = {1: _run_v1_to_v2, 2: _run_v2_to_v3}


def _field_error(source: str, name: str, expected: str, got: object) -> UserError:
    return UserError(f"{source}: field {name!r}: expected {expected}, got {str(got)[:60]!r}")


def _is_int(v: object) -> TypeGuard[int]:
    return isinstance(v, int) and not isinstance(v, bool)


def validate_run(data: object, source: str) -> dict[str, Any]:
    """A run.json record, migrated to RUN_SCHEMA_VERSION; UserError names file and field."""
    if not isinstance(data, dict) or data.get("kind") != RUN_KIND:
        kind = data.get("kind") if isinstance(data, dict) else type(data).__name__
        raise UserError(f"{source}: not a tfvariants run definition (kind={str(kind)[:40]!r})")
    version = data.get("schema_version")
    if not _is_int(version) or version < 1:
        raise _field_error(source, "schema_version", "a whole number", version)
    if version > RUN_SCHEMA_VERSION:
        raise UserError(
            f"{source}: schema_version {version} is newer than this tfvariants understands "
            f"({RUN_SCHEMA_VERSION}); upgrade tfvariants"
        )
    while data["schema_version"] < RUN_SCHEMA_VERSION:
        data = _RUN_MIGRATIONS[data["schema_version"]](data)
    for name in ("variants", "workloads"):
        value = data.get(name)
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise _field_error(source, name, "a list of names", value)
    threads = data.get("threads")
    if not isinstance(threads, list) or not all(
        _is_int(t) and 1 <= t <= MAX_THREADS for t in threads
    ):
        raise _field_error(source, "threads", f"a list of whole numbers 1..{MAX_THREADS}", threads)
    fixed = data.get("fixed_threads", {})
    if not isinstance(fixed, dict) or not all(
        isinstance(v, str) and _is_int(t) and 1 <= t <= MAX_THREADS for v, t in fixed.items()
    ):
        raise _field_error(source, "fixed_threads", f"{{variant: 1..{MAX_THREADS}}}", fixed)
    repeats = data.get("repeats")
    if not _is_int(repeats) or not 1 <= repeats <= MAX_REPEATS:
        raise _field_error(source, "repeats", f"a whole number 1..{MAX_REPEATS}", repeats)
    for name in ("options", "variant_info"):
        if not isinstance(data.get(name, {}), dict):
            raise _field_error(source, name, "an object", data.get(name))
    for name, info in (data.get("variant_info") or {}).items():
        if not isinstance(info, dict) or info.get("device", "cpu") not in ("cpu", "gpu"):
            raise _field_error(source, f"variant_info.{name}", "{kind, device: cpu|gpu}", info)
    # Every stored option within its declared bound (the command line's), the run's
    # task's options (training: cell, decision and training options; serving: decision
    # and serving options): refused here, naming the field, so that a resume refuses it
    # before any cell runs and a report never judges with a silently replaced value.
    options = data.get("options") or {}
    for name, problem, v in stored_problems(task_of(data).options, options):
        raise _field_error(source, f"options.{name}", problem, v)
    made_by = data.get(stamp.RUN_FIELD)
    if made_by is not None and not (isinstance(made_by, str) and 0 < len(made_by) <= 40):
        raise _field_error(source, stamp.RUN_FIELD, "a version like 0.1.0", made_by)
    cpus = data.get("logical_cpus")
    if cpus is not None and (not _is_int(cpus) or cpus < 1):
        raise _field_error(source, "logical_cpus", "a whole number >= 1", cpus)
    hosts = data.get("hosts")
    if not isinstance(hosts, list):
        raise _field_error(source, "hosts", "a list of {host_id, kind, label}", hosts)
    for i, host in enumerate(hosts):
        # Open for other kinds (e.g. a cluster's nodes); host_id and kind are required.
        if not isinstance(host, dict) or not all(
            isinstance(host.get(k), str) and host[k] for k in ("host_id", "kind")
        ):
            raise _field_error(source, f"hosts[{i}]", "{host_id, kind, ...}", host)
    return data


def load_run(results_dir: Path) -> dict[str, Any]:
    """The run's definition (run.json), validated and migrated; {} when there is none."""
    path = Path(results_dir) / RUN_FILE
    if not path.exists():
        return {}
    try:
        data = read_json_file(path)
    except ResultError as exc:
        raise UserError(str(exc)) from None
    return validate_run(data, str(path))


def read_run(results_dir: Path) -> RunRecord:
    """The run's definition, typed once here for every reader (store/record.py); the
    empty record when there is none."""
    return run_record(load_run(results_dir))


def new_run(
    spec: MatrixPlan[PlannedCell, RunOptionsBase], hosts: list[dict[str, Any]]
) -> dict[str, Any]:
    """The run.json record for a new run of ``spec`` on ``hosts``."""
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    matrix = spec.to_json(started)
    files = workloadfiles.record(matrix)  # what a resume must match
    return {
        "schema_version": RUN_SCHEMA_VERSION,
        "kind": RUN_KIND,
        stamp.RUN_FIELD: __version__,  # a resume by another version is refused
        **matrix,
        "hosts": hosts,
        **({workloadfiles.FIELD: files} if files else {}),
    }


def write_run(results_dir: Path, record: dict[str, Any]) -> None:
    validate_run(record, RUN_FILE)  # never write what we could not read back
    RunFolder(results_dir).write_run(record)


def store_peaks(results_dir: Path, peaks: dict[str, dict[str, Any]]) -> None:
    """Into run.json's ``variant_info[variant]["peak"][threads]`` (variants/peak: a
    resume adds the thread counts it measured now and keeps the others)."""
    record = load_run(results_dir)
    info = {k: dict(v) for k, v in (record.get("variant_info") or {}).items()}
    for name, by_threads in peaks.items():
        entry = info.setdefault(name, {})
        entry["peak"] = {**(entry.get("peak") or {}), **by_threads}
    write_run(results_dir, {**record, "variant_info": info})
