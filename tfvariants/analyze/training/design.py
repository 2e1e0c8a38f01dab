"""The measurement design a run chooses at its first look from where its noise comes
from (analyze/training/decomposition.py): side by side (the duet, execute/duet.py) where
consecutive cells move together, more processes where processes differ, else as planned
(docs/methods.md, "The noise, decomposed").

A pure rule, with its thresholds stated here:

- side by side when the over-time part is at least TIME_SHARE of a cell's variance and
  at least EVIDENCE_SE standard errors above 0. A side-by-side pair's ratio loses that
  part: its variance is (1 - share) of one measured a cell apart, so at a half it needs
  half the repeats. On a quiet host, where there is nothing to cancel, a duet pair's
  interval was 1.17x as wide as a sequential one's at the same rounds (make bench-duet,
  docs/measurements.md, "Duet"): 1.37x the variance, so the duet breaks even at a share
  of about 0.27; a half leaves room for the estimate's error, which at a first look of 5
  rounds is about a quarter of the variance (hence also the evidence rule: a share that
  is noise must not switch a run's design);
- more processes when the between-process part is at least PROCESS_SHARE: neither a
  longer window nor a partner cancels it, only more repeats average it out; the number
  for +/-10 % is said, and the rounds after the first look measure cheaper processes
  (analyze/training/processcells.py), with the repeats they fit in what is left of the
  budget;
- else as planned: the within-process part is the larger, which the planned steady
  window (analyze/statistics/windows.py) already answers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tfvariants.analyze.training import processcells
from tfvariants.analyze.training.decomposition import (
    TARGET_BAND,
    Cell,
    Decomposition,
)
from tfvariants.analyze.training.processcells import ProcessCells
from tfvariants.store.adaptiveplans import DesignRecord
from tfvariants.store.cellresult import AnyResult
from tfvariants.store.training import CellResult

TIME_SHARE = 0.5
EVIDENCE_SE = 2.0
PROCESS_SHARE = 0.5

SIDE_BY_SIDE = "side by side"
MORE_PROCESSES = "more processes"
AS_PLANNED = "as planned"
KINDS = (SIDE_BY_SIDE, MORE_PROCESSES, AS_PLANNED)


@dataclass(frozen=True)
class Design:
    """What the rounds after the first look measure, and why (run.json
    "adaptive.design"; a resume keeps it)."""

    kind: str  # one of KINDS
    reason: str
    switched: bool = False  # the remaining rounds run side by side (the duet)
    cells: ProcessCells | None = None  # more processes: the cheaper cells after the first look

    def line(self) -> str:
        return f"design: {self.kind}: {self.reason}"

    def to_json(self) -> dict[str, Any]:
        cells = {"cells": self.cells.to_json()} if self.cells is not None else {}
        return {"kind": self.kind, "reason": self.reason, "switched": self.switched, **cells}


def design_of(record: DesignRecord | None) -> Design | None:
    """run.json's record of the design (store/adaptiveplans.py), said by this rule; None:
    none, or not one of KINDS."""
    if record is None or record.kind not in KINDS:
        return None
    return Design(record.kind, record.reason, record.switched, processcells.of_record(record.cells))


def choose(
    d: Decomposition | None,
    side_by_side: str | None = None,
    max_repeats: int | None = None,
    cells: ProcessCells | None = None,
    left: tuple[float, int] | None = None,
) -> Design:
    """The design for the rounds after the first look. ``side_by_side``: why the duet
    cannot run here (None: it can); the rule still says what the noise asks for.
    ``max_repeats``: where the run's rounds stop (said when more processes need more).
    ``cells``: the cheaper processes more processes would measure (None: the run keeps
    its window, e.g. the user's --min-steady-s); ``left``: the budget's seconds left and
    the cells of a round, for the repeats they fit."""
    if d is None:
        return Design(AS_PLANNED, "too few repeats to split the noise")
    time, between = d.share(d.over_time), d.share(d.between)
    split = (
        f"{time:.0%} of a cell's variance over time, {between:.0%} between processes, "
        f"{d.share(d.within):.0%} within"
    )
    evident = math.isfinite(d.over_time_se) and d.over_time >= EVIDENCE_SE * d.over_time_se
    if time >= TIME_SHARE and evident:
        n, paired = d.repeats_for(), d.repeats_for(side_by_side=True)
        gain = f"+/-{TARGET_BAND:.0%} needs about {paired} repeats per side, {n} one after another"
        if side_by_side is None:
            return Design(
                SIDE_BY_SIDE,
                f"{split}: the compared builds now run side by side, so a neighbour's burst "
                f"slows both alike ({gain}); the first look's rounds ran one cell at a time, "
                "each round's sides alike either way",
                switched=True,
            )
        return Design(
            AS_PLANNED,
            f"{split}: side by side would cancel the part over time ({gain}), but {side_by_side}",
        )
    if between >= PROCESS_SHARE:
        n = d.repeats_for()
        beyond = (
            f"; this run stops at {max_repeats}: --max-repeats {n} with the budget it needs "
            "would reach it"
            if max_repeats is not None and n > max_repeats
            else ""
        )
        return Design(
            MORE_PROCESSES,
            f"{split}: only more processes help"
            # without windows the part within a process is in this one
            + ("" if d.windowed else " (or, for what varies inside one, longer windows)")
            + f", about {n} repeats per side for +/-{TARGET_BAND:.0%}"
            + (f"; {_cheaper(cells, left)}" if cells is not None else "")
            + beyond,
            cells=cells,
        )
    return Design(AS_PLANNED, f"{split}: the planned steady window answers the larger part")


def _cheaper(cells: ProcessCells, left: tuple[float, int] | None) -> str:
    """The cheaper cells in words, with the repeats they fit in the budget left."""
    if left is None:
        return cells.words()
    left_s, per_round = left
    now = processcells.rounds_in(left_s, per_round, cells.cell_s)
    was = processcells.rounds_in(left_s, per_round, cells.was_s)
    return (
        f"{cells.words()}: about {now} more repeats in the {left_s / 60:.1f} min left "
        f"({was} at the first look's cells)"
    )


def cells_of_results(stored: Mapping[str, AnyResult]) -> list[Cell]:
    """The decomposition's cells from the stored results, as the first look reads them:
    each configuration's last undisturbed ok attempt per round."""
    last: dict[tuple[str, int], CellResult] = {}
    for r in stored.values():
        if not isinstance(r, CellResult) or not r.ok or r.disturbed:
            continue
        t = r.training_time_s
        if t is None or not t > 0:
            continue
        key = (f"{r.workload} {r.key.label}", r.round)
        if key not in last or r.attempt > last[key].attempt:
            last[key] = r
    return [_cell(config, r) for (config, _), r in last.items()]


def _cell(config: str, r: CellResult) -> Cell:
    assert r.training_time_s is not None
    return Cell(
        config,
        r.round,
        r.started_at or "",
        math.log(r.training_time_s),
        tuple(math.log(w) for w in r.steady_windows_s if w > 0),
    )
