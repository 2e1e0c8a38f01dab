"""The matrix loop's knobs, made once by the command (``Policy``), and the rules the loop
applies with them whatever executor runs the cells: the budget's stop before a round,
and re-running disturbed cells while it pays."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic

from tfvariants.execute.eta import CELL_MARGIN, fmt_s
from tfvariants.plan.task import CellT, PlannedCell
from tfvariants.store.cellresult import AnyResult

# stored results (cell id -> typed result) -> the next round's cells, and why
NextRound = Callable[[Mapping[str, AnyResult]], tuple[list[CellT], str]]
Disturbed = Callable[[dict], str | None]  # a result -> why it is disturbed, or None
RETRY_MISSES = 2  # disturbed retries in a row after which disturbed cells are not re-run


@dataclass(frozen=True)
class Policy(Generic[CellT]):
    """How the loop goes on after the planned cells and when it stops.

    ``next_round(stored results)`` (adaptive repeats: the stopping rule and order seed
    live in the hook, rounds/) returns the cells of one more round and why, or no cells
    and why it stops; ``budget_s`` caps the whole run's time (``spent_before``: the time
    an interrupted run already used; ``began``: the clock time the command began its
    work, so the probes before the first cell count). Every adaptive round's cells are
    held to the budget (:func:`cell_fits`), and with ``budget_covers_plan`` the planned
    cells too (the rest stay pending for --resume, the command that reaches the first
    look said with ``resume``: the command line before its ``--budget``).

    ``disturbed(result)`` says why a finished cell was disturbed (or None): such a cell
    is kept and run again at once as its next attempt, at most ``retries`` times, only
    while the budget allows and ``retry_now()`` (e.g. not under a sustained load, where
    the next attempt would be disturbed too). ``clock``: the loop's time (tests)."""

    next_round: NextRound[CellT] | None = None
    budget_s: float | None = None
    spent_before: float = 0.0
    budget_covers_plan: bool = False
    began: float | None = None
    resume: str | None = None  # e.g. "tfvariants compare --resume --out DIR"
    disturbed: Disturbed | None = None
    retries: int = 0
    retry_now: Callable[[], bool] | None = None
    clock: Callable[[], float] = time.monotonic


def run_clock() -> float:
    """The clock a command's budget is counted on, from the command's start (tests give
    the commands a fake one here)."""
    return time.monotonic()


def cell_fits(spent_s: float, longest_s: float, budget_s: float) -> bool:
    """Whether a cell whose longest expected time is ``longest_s`` may start."""
    return spent_s + CELL_MARGIN * longest_s <= budget_s


def budget_stop(spent_s: float, next_s: float, budget_s: float | None, why: str) -> str | None:
    """Why the next adaptive round may not start (it would overrun the budget), or None;
    every executor's rounds stop on this one rule."""
    if budget_s is None or spent_s + next_s <= budget_s:
        return None
    return (
        f"budget: {fmt_s(spent_s)} spent, the next round needs about "
        f"{fmt_s(next_s)} of the {fmt_s(budget_s)} budget ({why})"
    )


@dataclass
class Retry:
    """Re-running disturbed cells, until retries stop paying: after ``RETRY_MISSES``
    retries in a row came out disturbed again, interference outlasts a cell (random
    bursts leave quiet gaps, so the quiet gate never finds the load sustained, yet
    every 10-30 s cell overlaps one): retrying only multiplies the cost. Any cell that
    runs undisturbed turns retries back on."""

    disturbed: Disturbed  # result -> why it is disturbed, or None
    again: Callable[[Any], Any]  # a disturbed cell -> its next attempt, or None (not now)
    misses: int = 0  # retries in a row that were disturbed again

    def observe(self, cell: PlannedCell, why: str | None) -> None:
        if not why:
            self.misses = 0
        elif (getattr(cell, "attempt", 0) or 0) > 0:
            self.misses += 1

    @property
    def given_up(self) -> bool:
        return self.misses >= RETRY_MISSES
