"""The run folder: ``run.json`` (the matrix definition and the hosts it may use) and
``cells/*.json`` (one result per cell). Execution writes into it; analysis reads from
it; both go through this module and nothing else.

A load returns the good results *and* named problems: a file that cannot be read, a
copy of a cell, a cell from a host the run did not declare. Nothing is dropped without
a word, a copy never counts as an extra repeat, and a resume never overwrites a file it
could not read.
"""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from tfvariants.errors import UserError
from tfvariants.plan.cell import MAX_THREADS, Cell, cell_id
from tfvariants.plan.spec import IDENTITY_OPTIONS, MAX_REPEATS, MatrixSpec, logical_cpus
from tfvariants.store.result import (
    ResultError,
    load_result,
    read_json_file,
    write_json_atomic,
)

RUN_FILE = "run.json"
CELLS_DIR = "cells"
QUARANTINE_DIR = "quarantine"
RUN_KIND = "tfvariants.run"
RUN_SCHEMA_VERSION = 2
DONE_STATUSES = ("ok", "skipped")  # skipped = cannot run here (e.g. no GPU): rerunning won't help


# ---- run.json ----


def local_host() -> dict[str, Any]:
    """This machine as a run.json host entry."""
    from workloads.envprobe import host_id

    return {"host_id": host_id(), "kind": "local", "label": f"local ({logical_cpus()} CPUs)"}


def _run_v1_to_v2(data: dict[str, Any]) -> dict[str, Any]:
    # Version 1 declared no hosts: [] means "undeclared", and readers take the host
    # most cells ran on as the run's host.
    return {**data, "schema_version": 2, "hosts": []}


# The one place run.json migrations live: version N -> N+1.
_RUN_MIGRATIONS = {1: _run_v1_to_v2}


def _field_error(source: str, name: str, expected: str, got: Any) -> UserError:
    return UserError(f"{source}: field {name!r}: expected {expected}, got {str(got)[:60]!r}")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def validate_run(data: Any, source: str) -> dict[str, Any]:
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
    repeats = data.get("repeats")
    if not _is_int(repeats) or not 1 <= repeats <= MAX_REPEATS:
        raise _field_error(source, "repeats", f"a whole number 1..{MAX_REPEATS}", repeats)
    for name in ("options", "variant_info"):
        if not isinstance(data.get(name, {}), dict):
            raise _field_error(source, name, "an object", data.get(name))
    for name, info in (data.get("variant_info") or {}).items():
        if not isinstance(info, dict) or info.get("device", "cpu") not in ("cpu", "gpu"):
            raise _field_error(source, f"variant_info.{name}", "{kind, device: cpu|gpu}", info)
    options = data.get("options") or {}
    for name in ("epochs", "samples", "steps_per_epoch"):
        v = options.get(name)
        if v is not None and (not _is_int(v) or v < 1):
            raise _field_error(source, f"options.{name}", "a whole number >= 1 or null", v)
    seed = options.get("seed", 0)
    if seed is not None and (not _is_int(seed) or seed < 0):
        raise _field_error(source, "options.seed", "a whole number >= 0", seed)
    if options.get("data", "synthetic") not in ("synthetic", "real", None):
        raise _field_error(source, "options.data", "synthetic or real", options.get("data"))
    timeout = options.get("timeout_s")
    if timeout is not None and not (
        isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and 0 < timeout < 1e9
    ):
        raise _field_error(source, "options.timeout_s", "seconds > 0", timeout)
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


def new_run(spec: MatrixSpec, hosts: list[dict[str, Any]]) -> dict[str, Any]:
    """The run.json record for a new run of ``spec`` on ``hosts``."""
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    return {
        "schema_version": RUN_SCHEMA_VERSION,
        "kind": RUN_KIND,
        **spec.to_json(started),
        "hosts": hosts,
    }


def write_run(results_dir: Path, record: dict[str, Any]) -> None:
    validate_run(record, RUN_FILE)  # never write what we could not read back
    write_json_atomic(Path(results_dir) / RUN_FILE, record)


# ---- cells/ ----


def host_of(result: dict[str, Any]) -> str | None:
    """The host a cell ran on: the runner's record first (a container's own host_id is
    the container's), else the worker's, unless it ran in a container; None = unknown."""
    runner = result.get("runner")
    if isinstance(runner, dict) and isinstance(runner.get("host_id"), str):
        return runner["host_id"]
    env = result.get("environment")
    if isinstance(env, dict) and not env.get("in_container"):
        host = env.get("host_id")
        return host if isinstance(host, str) and host else None
    return None


@dataclass(frozen=True)
class Problem:
    """A file in the run folder that is not used, and why."""

    file: str  # relative to the results folder, e.g. cells/x.json
    reason: str
    kind: str = "unreadable"  # unreadable | duplicate

    def __str__(self) -> str:
        return f"{self.file}: {self.reason}"


@dataclass(frozen=True)
class Notice:
    """A named warning about the run folder (shown by the CLI and in the report)."""

    kind: str
    message: str
    hint: str = ""


@dataclass
class RunContents:
    results_dir: Path
    run: dict[str, Any]
    results: dict[str, dict[str, Any]]  # cell_id -> result: what analysis and resume use
    problems: list[Problem] = field(default_factory=list)  # unreadable or invalid files
    duplicates: list[Problem] = field(default_factory=list)  # copies, misnamed files
    foreign: dict[str, dict[str, Any]] = field(default_factory=dict)  # undeclared host
    foreign_hosts: dict[str, list[str]] = field(default_factory=dict)  # host_id -> cell ids
    run_hosts: list[str] = field(default_factory=list)
    hosts_inferred: bool = False  # run.json declares none: the most common host is taken
    mixed_allowed: bool = False

    @property
    def unreadable_ids(self) -> set[str]:
        return {Path(p.file).stem for p in self.problems}

    def notices(self) -> list[Notice]:
        out: list[Notice] = []
        for p in self.problems:
            out.append(Notice("unreadable", f"{p}: left out",
                              "fix or move the file; compare --resume refuses to run over it "
                              "(--quarantine moves it aside)"))  # fmt: skip
        for p in self.duplicates:
            out.append(Notice("duplicate", str(p), "delete or move the copy"))
        declared = ", ".join(self.run_hosts) or "none"
        for host, ids in sorted(self.foreign_hosts.items()):
            what = f"{len(ids)} cell(s) (e.g. {', '.join(ids[:3])}) ran on host {host}"
            if self.hosts_inferred:
                what += f"; run.json declares no hosts, so the run's host is taken to be {declared} (most cells)"
            else:
                what += f", which run.json does not declare (declared: {declared})"
            if self.mixed_allowed:
                out.append(Notice("mixed_hosts", f"{what}: included (--allow-mixed-hosts), "
                                  "so timings from different machines are compared"))  # fmt: skip
            else:
                out.append(Notice("foreign_host", f"{what}: kept apart, not analysed",
                                  "add --allow-mixed-hosts to include them, or move them to "
                                  "their own results folder"))  # fmt: skip
        return out


def load_run_dir(results_dir: Path, *, allow_mixed_hosts: bool = False) -> RunContents:
    """Everything in a run folder: good results plus every file not used, and why."""
    results_dir = Path(results_dir)
    run = load_run(results_dir)
    contents = RunContents(results_dir, run, {}, mixed_allowed=allow_mixed_hosts)
    cells = results_dir / CELLS_DIR
    misnamed: list[tuple[str, str]] = []
    for path in sorted(cells.glob("*.json")) if cells.is_dir() else []:
        rel = f"{CELLS_DIR}/{path.name}"
        if not path.is_file():
            contents.problems.append(Problem(rel, "not a regular file"))
            continue
        try:
            result = load_result(path)
        except ResultError as exc:
            contents.problems.append(Problem(rel, str(exc).removeprefix(f"{path}: ")))
            continue
        c = result["cell"]
        cid = cell_id(c["variant"], c["threads"], c["workload"], c.get("repeat", 0))
        if path.stem == cid:
            contents.results[cid] = result
        else:
            misnamed.append((rel, cid))
    for rel, cid in misnamed:
        if cid in contents.results:
            reason = f"a copy of cell {cid} ({CELLS_DIR}/{cid}.json): not counted again"
        else:
            reason = f"holds cell {cid} but is not named {cid}.json: not counted"
        contents.duplicates.append(Problem(rel, reason, "duplicate"))
    _split_hosts(contents)
    return contents


def _split_hosts(contents: RunContents) -> None:
    declared = [h["host_id"] for h in contents.run.get("hosts") or []]
    hosts = {cid: host_of(r) for cid, r in contents.results.items()}
    if declared:
        contents.run_hosts = declared
    else:
        known = Counter(h for h in hosts.values() if h)
        if len(known) > 1:
            contents.run_hosts, contents.hosts_inferred = [known.most_common(1)[0][0]], True
        else:
            contents.run_hosts = list(known)
    for cid, host in hosts.items():
        if host and host not in contents.run_hosts:
            contents.foreign[cid] = contents.results[cid]
            contents.foreign_hosts.setdefault(host, []).append(cid)
    if not contents.mixed_allowed:
        for cid in contents.foreign:
            del contents.results[cid]


# ---- execution's side: creating, resuming ----


def _identity_diffs(stored: dict[str, Any], spec: MatrixSpec) -> list[str]:
    have = {k: stored.get(k) for k in ("variants", "threads", "workloads", "repeats")}
    have["options"] = {k: (stored.get("options") or {}).get(k) for k in IDENTITY_OPTIONS}
    diffs = []
    for key, value in spec.identity().items():
        if key == "options":
            diffs += [
                f"--{k.replace('_', '-')} {have['options'][k]} vs {value[k]}"
                for k in value
                if value[k] != have["options"][k]
            ]
        elif have[key] != value:
            diffs.append(f"{key} {have[key]} vs {value}")
    return diffs


def check_resume(contents: RunContents, *, quarantine: bool) -> None:
    """Refuse (one line, nothing written) a resume that could overwrite a file it could
    not read, or a cell from a host the run did not declare."""
    out = contents.results_dir
    if contents.problems and not quarantine:
        names = ", ".join(p.file for p in contents.problems[:5])
        more = f" and {len(contents.problems) - 5} more" if len(contents.problems) > 5 else ""
        raise UserError(
            f"--resume: {len(contents.problems)} file(s) in {out} cannot be read ({names}{more}; "
            f"first: {contents.problems[0].reason}): fix or move them, or add --quarantine to "
            f"move them to {out / QUARANTINE_DIR}; nothing was run or written"
        )
    if contents.foreign and not contents.mixed_allowed:
        hosts = ", ".join(sorted(contents.foreign_hosts))
        raise UserError(
            f"--resume: {len(contents.foreign)} cell(s) in {out} ran on host(s) {hosts} that "
            f"run.json does not declare: move them out, or add --allow-mixed-hosts; "
            f"nothing was run or written"
        )


def quarantine_unreadable(contents: RunContents) -> list[str]:
    """Move every unreadable file to <run>/quarantine/ (bytes unchanged, never over an
    existing file); returns one line per move."""
    target = contents.results_dir / QUARANTINE_DIR
    moved = []
    for p in contents.problems:
        src = contents.results_dir / p.file
        target.mkdir(exist_ok=True)
        dest = target / src.name
        n = 1
        while dest.exists():
            dest = target / f"{src.stem}.{n}{src.suffix}"
            n += 1
        shutil.move(str(src), str(dest))
        moved.append(f"{p.file} -> {dest} ({p.reason})")
    contents.problems = []
    return moved


def prepare_run_dir(
    out: Path,
    spec: MatrixSpec,
    *,
    resume: bool,
    hosts: list[dict[str, Any]] | None = None,
    allow_mixed_hosts: bool = False,
) -> dict[str, Any]:
    """Create (or, with resume, check) results/<run>/run.json; returns the run record.

    Refuses to mix matrices (a fresh run into a folder that already holds results, a
    resume whose arguments differ from the stored definition) and, unless
    ``allow_mixed_hosts``, machines (a resume from a host the run does not declare)."""
    out = Path(out)
    hosts = hosts if hosts is not None else [local_host()]
    run_file = out / RUN_FILE
    if run_file.exists():
        stored = load_run(out)
        if not resume:
            raise UserError(
                f"{out} already holds a run: add --resume to continue it, or choose another --out"
            )
        diffs = _identity_diffs(stored, spec)
        if diffs:
            raise UserError(
                f"--resume: {out} holds a different matrix (stored vs given: {'; '.join(diffs)})"
            )
        entries = list(stored["hosts"])
        if not entries:  # a version-1 run: declare the host(s) its cells say they ran on
            inferred = load_run_dir(out, allow_mixed_hosts=True).run_hosts
            entries = [{"host_id": h, "kind": "local", "label": "from its cells"} for h in inferred]
        known = {e["host_id"] for e in entries}
        new = [h for h in hosts if h["host_id"] not in known]
        if new and entries and not allow_mixed_hosts:
            raise UserError(
                f"--resume: {out} was run on host(s) {', '.join(sorted(known))}, this is "
                f"{', '.join(h['host_id'] for h in new)}: resume there, or add "
                "--allow-mixed-hosts to compare timings across machines"
            )
        if new or entries != stored["hosts"]:
            stored = {**stored, "hosts": [*entries, *new]}
            write_run(out, stored)
        return stored
    if resume:
        raise UserError(f"--resume: {run_file} not found (nothing to resume)")
    cells = out / CELLS_DIR
    if cells.is_dir() and any(cells.glob("*.json")):
        raise UserError(
            f"{out} holds results without a {RUN_FILE}: choose another --out (they would be "
            "overwritten)"
        )
    record = new_run(spec, hosts)
    cells.mkdir(parents=True, exist_ok=True)
    write_run(out, record)
    return record


def pending_cells(cells: Iterable[Cell], results: dict[str, dict]) -> list[Cell]:
    """Cells with no stored result, or whose stored status is failed/timeout."""
    return [c for c in cells if results.get(c.cell_id, {}).get("status") not in DONE_STATUSES]
