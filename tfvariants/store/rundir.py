"""Reading a run folder, and preparing one for a run: ``run.json`` (see
:mod:`tfvariants.store.runfile`) and ``cells/*.json`` (one result per cell). The
layout and every write belong to :mod:`tfvariants.store.runfolder`; execution and
analysis go through this module and that one, nothing else.

A load returns the good results *and* named problems: a file that cannot be read, a
copy of a cell, a cell from a host the run did not declare. Nothing is dropped without
a word, a copy never counts as an extra repeat, and a resume never overwrites a file it
could not read.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from tfvariants import __version__
from tfvariants.errors import UserError, one_line
from tfvariants.options.cell import CellOptions
from tfvariants.options.declare import REJUDGED, RunOptionsBase, declared, defaults
from tfvariants.plan.task import CellT, MatrixPlan, PlannedCell
from tfvariants.plan.tasks import task_of
from tfvariants.store import stamp
from tfvariants.store.cellresult import AnyResult, host_of, parse_results
from tfvariants.store.record import RunRecord, run_record
from tfvariants.store.result import ResultError, load_result, read_json_file
from tfvariants.store.runfile import (
    RUN_FILE,
    RUN_SCHEMA_VERSION,
    load_run,
    local_host,
    new_run,
    write_run,
)
from tfvariants.store.runfolder import (
    CELLS_DIR,
    DONE_STATUSES,
    LOGS_DIR,
    QUARANTINE_DIR,
    RunFolder,
)

# ---- cells/ ----


def cell_ids(c: dict[str, Any]) -> tuple[str, str]:
    """A stored cell dict's id, and the legacy id older folders named its file by."""
    return task_of(c).stored_ids(c)


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
    run: RunRecord  # run.json, typed (EMPTY_RUN without one)
    results: dict[str, dict[str, Any]]  # cell_id -> result: what analysis and resume use
    problems: list[Problem] = field(default_factory=list)  # unreadable or invalid files
    duplicates: list[Problem] = field(default_factory=list)  # copies, misnamed files
    foreign: dict[str, dict[str, Any]] = field(default_factory=dict)  # undeclared host
    foreign_hosts: dict[str, list[str]] = field(default_factory=dict)  # host_id -> cell ids
    run_hosts: list[str] = field(default_factory=list)
    hosts_inferred: bool = False  # run.json declares none: the most common host is taken
    mixed_allowed: bool = False
    run_missing: bool = False  # cells without a run.json: the matrix is unknown

    @cached_property
    def parsed(self) -> dict[str, AnyResult]:
        """``results`` as typed records (store/cellresult.py), parsed once per load."""
        return parse_results(self.run, self.results)

    @property
    def unreadable_ids(self) -> set[str]:
        return {Path(p.file).stem for p in self.problems}

    def notices(self) -> list[Notice]:
        out: list[Notice] = []
        if self.run_missing:
            what = (
                f"{RUN_FILE} is missing: the run's matrix, settings and hosts are unknown, "
                "so its cells are read as they are and none is known to be missing"
            )
            out.append(Notice("incomplete", what, f"restore {RUN_FILE} from where it was made"))
        for p in self.problems:
            out.append(
                Notice(
                    "unreadable",
                    f"{p}: left out",
                    "fix or move the file; compare --resume refuses to run over it "
                    "(--quarantine moves it aside)",
                )
            )
        for p in self.duplicates:
            out.append(Notice("duplicate", str(p), "delete or move the copy"))
        declared = ", ".join(self.run_hosts) or "none"
        for host, ids in sorted(self.foreign_hosts.items()):
            what = f"{len(ids)} cell(s) (e.g. {', '.join(ids[:3])}) ran on host {host}"
            if self.hosts_inferred:
                what += (
                    "; run.json declares no hosts, so the run's host is taken to be "
                    f"{declared} (most cells)"
                )
            else:
                what += f", which run.json does not declare (declared: {declared})"
            if self.mixed_allowed:
                out.append(
                    Notice(
                        "mixed_hosts",
                        f"{what}: included (--allow-mixed-hosts), "
                        "so timings from different machines are compared",
                    )
                )
            else:
                out.append(
                    Notice(
                        "foreign_host",
                        f"{what}: kept apart, not analysed",
                        "add --allow-mixed-hosts to include them, or move them to "
                        "their own results folder",
                    )
                )
        return out


def load_run_dir(results_dir: Path, *, allow_mixed_hosts: bool = False) -> RunContents:
    """Everything in a run folder: good results plus every file not used, and why."""
    results_dir = Path(results_dir)
    run = load_run(results_dir)
    contents = RunContents(results_dir, run_record(run), {}, mixed_allowed=allow_mixed_hosts)
    cells = results_dir / CELLS_DIR
    misnamed: list[tuple[str, str]] = []
    legacy_named: list[tuple[str, str, dict[str, Any]]] = []
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
        why = stamp.disagreement(result, run)
        if why is not None:
            contents.problems.append(Problem(rel, why))
            continue
        cid, legacy = cell_ids(result["cell"])
        if path.stem == cid:
            contents.results[cid] = result
        elif path.stem == legacy:
            legacy_named.append((rel, cid, result))
        else:
            misnamed.append((rel, cid))
    # A folder written before ids were encoded names cells by the legacy id: still read
    # (compare --resume renames them, see migrate_cell_ids), unless the cell's file
    # under its own id is there too.
    for rel, cid, result in legacy_named:
        if cid in contents.results:
            misnamed.append((rel, cid))
        else:
            contents.results[cid] = result
    for rel, cid in misnamed:
        if cid in contents.results:
            reason = f"a copy of cell {cid} ({CELLS_DIR}/{cid}.json): not counted again"
        else:
            reason = f"holds cell {cid} but is not named {cid}.json: not counted"
        contents.duplicates.append(Problem(rel, reason, "duplicate"))
    contents.run_missing = not run and bool(contents.results or contents.problems)
    count_results(contents)
    return contents


def count_results(contents: RunContents) -> None:
    """A load's rules over the cells it read (``contents.results``): an edited copy of
    another cell's measurement is not counted again, and a cell from a host the run
    does not declare is kept apart (unless mixed hosts are allowed)."""
    for cid, original in _copies(contents.results):
        del contents.results[cid]
        reason = (
            f"the same measurement as cell {original} ({CELLS_DIR}/{original}.json), to the "
            "last digit: an edited copy, not counted again"
        )
        contents.duplicates.append(Problem(f"{CELLS_DIR}/{cid}.json", reason, "duplicate"))
    _split_hosts(contents)


def _measurement(result: dict[str, Any]) -> str | None:
    """A training cell's timing, when it is a real measurement: at least 3 distinct step
    times (two runs never repeat those to the last digit; a copy does)."""
    timing = result.get("timing")
    if result.get("status") != "ok" or not isinstance(timing, dict):
        return None
    steps = timing.get("step_times_s")
    if not isinstance(steps, list) or len({t for t in steps if isinstance(t, float)}) < 3:
        return None
    return json.dumps(timing, sort_keys=True, default=str)


def _copies(results: dict[str, dict[str, Any]]) -> list[tuple[str, str]]:
    """(copy, original) for cells whose measurement another cell already holds (an
    edited copy of a cell file would otherwise count as one more repeat)."""
    seen: dict[str, str] = {}
    out = []
    for cid in sorted(results):
        key = _measurement(results[cid])
        if key is None:
            continue
        if key in seen:
            out.append((cid, seen[key]))
        else:
            seen[key] = cid
    return out


def _split_hosts(contents: RunContents) -> None:
    declared = [h.host_id for h in contents.run.hosts]
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


def _identity_diffs(
    stored: dict[str, Any], spec: MatrixPlan[PlannedCell, RunOptionsBase]
) -> list[str]:
    wanted = spec.identity()
    # Compare exactly what the spec calls its identity (training and serving differ).
    have: dict[str, Any] = {k: stored.get(k) for k in wanted if k != "options"}
    raw, opts = stored.get("options") or {}, declared(type(spec.options))
    have["options"] = {k: opts[k].as_written(raw.get(k)) for k in wanted["options"]}
    diffs = []
    flags = {n: o.flag for n, o in declared(CellOptions).items() if o.flag}  # as declared
    for key, value in wanted.items():
        if key == "options":
            diffs += [
                f"{flags.get(k) or '--' + k.replace('_', '-')} {have['options'][k]} vs {value[k]}"
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
    folder = RunFolder(contents.results_dir)
    moved = []
    for p in contents.problems:
        dest = folder.quarantine(p.file)
        moved.append(f"{p.file} -> {dest} ({p.reason})")
        log = f"{LOGS_DIR}/{Path(p.file).stem}.log"  # goes with its cell: a re-run writes anew
        if p.file.startswith(f"{CELLS_DIR}/") and (contents.results_dir / log).is_file():
            moved.append(f"{log} -> {folder.quarantine(log)} (the log of {p.file})")
    contents.problems = []
    return moved


def migrate_cell_ids(out: Path) -> list[str]:
    """The folder's part of run.json version 2 -> 3: cells (and their logs) named by
    the legacy id get their encoded id. Idempotent; one line per rename."""
    folder = RunFolder(out)
    lines = []
    cells = folder.cells_dir
    for path in sorted(cells.glob("*.json")) if cells.is_dir() else []:
        try:
            cid, legacy = cell_ids(load_result(path)["cell"])
        except (ResultError, KeyError, TypeError, ValueError):
            continue  # unreadable files are the loader's problems, named there
        if path.stem == legacy and cid != legacy:
            if folder.rename_cell(legacy, cid):
                lines.append(
                    f"renamed {CELLS_DIR}/{legacy}.json -> {CELLS_DIR}/{cid}.json "
                    "(cell ids are encoded since run.json version 3)"
                )
    return lines


def prepare_run_dir(
    out: Path,
    spec: MatrixPlan[PlannedCell, RunOptionsBase],
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
        made_by = stored.get(stamp.RUN_FIELD)
        if made_by is not None and made_by != __version__:
            raise UserError(
                f"--resume: {out} was started by tfvariants {made_by}, this is {__version__}: "
                "its cells would be pooled with another version's; start a new run"
            )
        stored = _rejudged(out, stored, spec)
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
        for line in migrate_cell_ids(out):
            print(f"tfvariants: {line}", file=sys.stderr)
        on_disk = read_json_file(run_file).get("schema_version")
        if new or entries != stored["hosts"] or on_disk != RUN_SCHEMA_VERSION:
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
    RunFolder(out).create()
    write_run(out, record)
    return record


def _rejudged(
    out: Path, stored: dict[str, Any], spec: MatrixPlan[PlannedCell, RunOptionsBase]
) -> dict[str, Any]:
    """A resume's new value of an option declared ``rejudged`` (--confidence,
    --min-effect, --disturbed, ...) replaces the stored one in run.json, so the whole
    report is judged with it; said, one line per option."""
    cls = type(spec.options)
    old = dict(stored.get("options") or {})
    new = spec.options.record()
    changed = {}
    for name, o in declared(cls).items():
        before = old.get(name, defaults(cls)[name])
        if o.resume == REJUDGED and new.get(name) != before:
            changed[name] = new.get(name)
            print(
                f"tfvariants: --resume: {o.flag} {one_line(new.get(name))} replaces the run's "
                f"{one_line(before)}: every cell of the report is judged with it",
                file=sys.stderr,
            )
    if not changed:
        return stored
    options = {k: v for k, v in {**old, **changed}.items() if v is not None}
    stored = {**stored, "options": options}
    write_run(out, stored)
    return stored


def update_run(out: Path, **fields: object) -> dict[str, Any]:
    """Add or replace top-level fields of run.json (atomically), e.g. the adaptive
    rounds run so far, so that a resume and the report see them."""
    record = load_run(out)
    record.update(fields)
    write_run(out, record)
    return record


def pending_cells(cells: Iterable[CellT], results: dict[str, dict[str, Any]]) -> list[CellT]:
    """Cells with no stored result, or whose stored status is failed/timeout."""
    return [c for c in cells if results.get(c.cell_id, {}).get("status") not in DONE_STATUSES]
