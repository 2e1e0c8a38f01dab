"""What the run folder holds against what the run planned: the results to analyse, the
files left out (by name), the planned cells with no file yet, and the counts."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tfvariants.analyze.shared import cautions
from tfvariants.errors import UserError
from tfvariants.options.training import TrainingOptions
from tfvariants.plan.cell import cell_id
from tfvariants.store.cellresult import AnyResult
from tfvariants.store.record import RunRecord
from tfvariants.store.rundir import RunContents


def usable_results(contents: RunContents) -> list[dict[str, Any]]:
    """The results to analyse, in cell-id order; one line when there are none."""
    d = contents.results_dir
    if contents.results:
        return [r for _, r in sorted(contents.results.items())]
    skipped = contents.problems + contents.duplicates
    if skipped or contents.foreign:
        first = str(skipped[0]) if skipped else contents.notices()[0].message
        raise UserError(
            f"{d}: no usable results ({len(contents.problems)} unreadable, "
            f"{len(contents.duplicates)} duplicate, {len(contents.foreign)} from another "
            f"host; first: {first})"
        )
    raise UserError(f"{d}: no result files in {d / 'cells'}")


def planned_ids(run: RunRecord) -> list[str]:
    """Cell ids the run's matrix (run.json) planned; empty without run.json. A variant
    fixed to one thread count (``--variants twin@2``: run.json "fixed_threads") was
    planned at that count only; a ``--later`` one (options.later) was not planned at all
    (the adaptive rounds start it: plan/spec.py plan_cells)."""
    fixed = run.fixed_threads
    later = (run.options.later if isinstance(run.options, TrainingOptions) else None) or ()
    return [
        cell_id(v, t, w, r)
        for v in run.variants
        if v not in later
        for t in ((fixed[v],) if v in fixed else run.threads)
        for w in run.workloads
        for r in range(run.repeats)
    ]


def missing_cells(contents: RunContents) -> list[str]:
    """Planned cells with no file at all (an unreadable or foreign file is not missing:
    it is reported as what it is, and a resume must not overwrite it)."""
    present = set(contents.results) | set(contents.foreign) | contents.unreadable_ids
    return [cid for cid in planned_ids(contents.run) if cid not in present]


def folder_warnings(contents: RunContents) -> list[cautions.StatWarning]:
    """The store's named problems first (they change what every figure means), then the
    planned cells that have no file yet."""
    out = [cautions.StatWarning(n.kind, n.message, n.hint) for n in contents.notices()]
    missing = missing_cells(contents)
    if missing:
        planned = len(set(planned_ids(contents.run)))
        out.append(
            cautions.StatWarning(
                "incomplete",
                f"{len(missing)} of {planned} planned cells have no result "
                f"(e.g. {', '.join(missing[:3])}): the run was interrupted or is still going",
                f"finish it with: tfvariants compare --resume --out {Path(contents.results_dir)}",
            )
        )
    return out


def cell_counts(cells: Sequence[AnyResult], contents: RunContents) -> dict[str, int]:
    """Results per status, and the files left out next to them, so the header adds up."""
    counts: dict[str, int] = {}
    for r in cells:
        counts[r.status] = counts.get(r.status, 0) + 1
    foreign = "from another host" + (" (included)" if contents.mixed_allowed else "")
    for label, n in (
        ("unreadable", len(contents.problems)),
        ("duplicate", len(contents.duplicates)),
        (foreign, len(contents.foreign)),
    ):
        if n:
            counts[label] = n
    return counts


def first_cell_id(results: Sequence[AnyResult], status: str) -> str:
    """The id (file stem) of the first result with this status."""
    return next(r for r in results if r.status == status).cell_id
