"""The cells of the more-processes design (analyze/training/design.py): cheaper processes,
so more of them in the budget.

Where the first look finds most of a cell's variance between processes, only more
processes average it out, yet each process spends most of its time outside what
varies: start-up, warm-up, and a steady window whose windows carry the small
within-process part. So the rounds after the first look measure each process for less:

- a steady window of PROCESS_WINDOWS of the first look's windows (in seconds, and in
  steps: workloads/steady.py ends the window when both are met), at most the window
  the run had;
- the warm-up cut at the longest one MSER-5 found in that workload's first-look cells
  (--warmup-max per workload): no first-look process needed more, and without the cap
  MSER may cut up to half of a short window's steps and make it wait as long again.

What is compared does not change: one value per process, the mean of all its steady
steps (workloads/steady.py), so repeats stay independent; a shorter window adds only
its within-process share, which the first look measured as the smaller part. The
window rule's per-workload check (rounds/training.py check_plan: variance x seconds per
cell against the first look's) still sends a workload back to its first window when
the cheaper cells do not pay.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tfvariants.store.adaptiveplans import CellsRecord, WindowPlan
from tfvariants.store.rawfields import finite_number
from tfvariants.store.training import CellResult

PROCESS_WINDOWS = 2  # of the first look's windows
MIN_WINDOW_S = 1.0
# The cell's own interval uses 10 batch means (workloads/steady.py CI_BATCHES): at least
# two steps each.
MIN_STEPS = 20


@dataclass(frozen=True)
class ProcessCells(CellsRecord):
    """The cheaper cells (their record, run.json's, is store/adaptiveplans.py's), in words
    and as the window rule's plan."""

    def words(self) -> str:
        caps = sorted(self.warmup_max_s.values())
        cap = f"{caps[0]:.1f} s" if caps[0] == caps[-1] else f"{caps[0]:.1f}-{caps[-1]:.1f} s"
        return (
            f"from repeat {self.from_repeat} each process measures {PROCESS_WINDOWS} of the "
            f"first look's windows ({self.min_steady_s:g} s and {self.min_steady_steps} "
            f"steady steps, was {self.previous_s:g} s) after a warm-up of at most {cap} "
            f"(the longest MSER-5 found): about {self.cell_s:.0f} s a cell, was "
            f"{self.was_s:.0f} s"
        )

    def window_plan(self, plan: WindowPlan | None) -> WindowPlan:
        """The window rule's plan (run.json "adaptive.window_plan") with these cells: the
        rule's per-workload check (``back``) kept."""
        reason = f"the more-processes design: {self.words()}" + (
            f"; the window rule: {plan.reason}" if plan is not None and plan.reason else ""
        )
        return dataclasses.replace(
            plan or WindowPlan(self.min_steady_s, self.previous_s, self.from_repeat, reason),
            from_repeat=self.from_repeat,
            min_steady_s=self.min_steady_s,
            previous_s=self.previous_s,
            min_steady_steps=self.min_steady_steps,
            warmup_max_s=dict(self.warmup_max_s),
            reason=reason,
        )


def of_record(record: CellsRecord | None) -> ProcessCells | None:
    """The stored record of the cheaper cells, with their words."""
    if record is None:
        return None
    return ProcessCells(**{f.name: getattr(record, f.name) for f in dataclasses.fields(record)})


def plan(
    first: Sequence[CellResult], from_repeat: int, steady_s: float, steady_steps: int
) -> ProcessCells | None:
    """The cheaper cells from the first look's undisturbed ok cells with windows (None:
    none has them); ``steady_s``/``steady_steps``: the window they measured."""
    cells = [r for r in first if _usable(r)]
    if not cells:
        return None
    windows = [_steady(r) / len(r.steady_windows_s) for r in cells]
    window_steps = [_steps(r) / len(r.steady_windows_s) for r in cells]
    seconds = round(max(MIN_WINDOW_S, PROCESS_WINDOWS * statistics.median(windows)), 1)
    steps = max(MIN_STEPS, math.ceil(PROCESS_WINDOWS * statistics.median(window_steps)))
    seconds, steps = min(seconds, steady_s), min(steps, steady_steps)
    caps: dict[str, float] = {}
    for r in cells:
        caps[r.workload] = max(caps.get(r.workload, 0.0), round(r.warmup_s or 0.0, 1) or 0.1)
    walls = [r.wall_s or 0.0 for r in cells]
    # Outside the window a cell costs what it did; inside, the longer of the two limits.
    after = [
        w - _steady(r) + max(seconds, steps * _steady(r) / _steps(r))
        for w, r in zip(walls, cells, strict=True)
    ]
    return ProcessCells(
        from_repeat,
        seconds,
        steps,
        caps,
        round(statistics.median(after), 1),
        round(statistics.median(walls), 1),
        steady_s,
    )


def rounds_in(left_s: float, cells_per_round: int, cell_s: float) -> int:
    """Whole rounds of ``cells_per_round`` cells of ``cell_s`` in ``left_s`` seconds."""
    if cells_per_round <= 0 or cell_s <= 0 or left_s <= 0:
        return 0
    return int(left_s // (cells_per_round * cell_s))


def _usable(r: CellResult) -> bool:
    return (
        r.ok
        and not r.disturbed
        and len(r.steady_windows_s) >= 2
        and (r.wall_s or 0) > _steady(r) > 0
        and _steps(r) > 0
        and r.warmup_s is not None
    )


def _steady(r: CellResult) -> float:
    return r.overhead.get("steady") or 0.0


def _steps(r: CellResult) -> float:
    timing = r.raw.get("timing")
    n = finite_number(timing.get("steady_steps")) if isinstance(timing, Mapping) else None
    return n or 0.0
