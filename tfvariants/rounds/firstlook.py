"""How long the first look of a run with a budget takes, estimated before any cell runs.

Nothing can be decided before the first look (``--repeats`` rounds of every
configuration), and the adaptive rounds that follow need room in the budget too. A run
whose first look alone overruns its budget spends the budget before it can answer
anything (issue 25: a compiled preset's 60 planned cells of 10-12 s took 736 s of a
600 s budget, so no adaptive round ever ran). So before starting: estimate, and either
plan fewer configurations (the preset drops its explanatory ones) or say in one line how
long the first look will take and why.

A cell's time is taken from an earlier run's cells when there are any (a resume, or the
folder ``--estimate-from`` names), else from a conservative default: the fixed cost a
cell pays outside its steady window plus the window itself.
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from tfvariants.plan.spec import MatrixSpec

# What a quick cell paid outside its steady window on a quiet 2-core host (issue 25:
# import 1.6-1.8 s, build 0.1 s, warm-up 0.9-1.2 s, between epochs 0.6 s, plus the
# interpreter, the host's wait for quiet and writing the result): 10-12 s cells with a
# 6 s window. Rounded up: an estimate that is too short breaks the budget.
CELL_FIXED_S = 6.5
# The first look may take at most this share of the budget: the adaptive rounds after it
# (the looks after 7 and 10 repeats) need the rest.
FIRST_LOOK_SHARE = 0.5


@dataclass(frozen=True)
class CellTimes:
    """Seconds per cell of each workload, and where they came from."""

    per_workload: Mapping[str, float]
    source: str  # "an earlier run's cells" | "a default of ..."

    def round_s(self, workloads: Sequence[str], configurations: int) -> float:
        """One round: every configuration once per workload."""
        return configurations * sum(self.per_workload[w] for w in workloads)


def default_times(workloads: Sequence[str], steady_s: float) -> CellTimes:
    """The conservative default: a cell's fixed cost plus its steady window."""
    per = {w: CELL_FIXED_S + steady_s for w in workloads}
    return CellTimes(per, f"{CELL_FIXED_S:g} s outside a {steady_s:g} s steady window per cell")


def stored_times(
    workloads: Sequence[str], walls: Mapping[str, Sequence[float]]
) -> CellTimes | None:
    """Median wall time per workload of an earlier run's successful cells (None unless
    every workload has some)."""
    if not all(walls.get(w) for w in workloads):
        return None
    per = {w: float(statistics.median(walls[w])) for w in workloads}
    return CellTimes(per, "the median wall time of this run's earlier cells")


def walls_of(folder: Path) -> tuple[dict[str, list[float]], int]:
    """Successful cells' wall times per workload in a results folder, and the rounds it
    holds (empty and 0 when it has none or cannot be read: the estimate then falls back
    to the default)."""
    from tfvariants.errors import UserError
    from tfvariants.store.rundir import load_run_dir
    from tfvariants.store.training import training

    if not (folder / "cells").is_dir():
        return {}, 0
    try:
        parsed = load_run_dir(folder, allow_mixed_hosts=True).parsed
    except (UserError, OSError):
        return {}, 0
    out: dict[str, list[float]] = {}
    rounds = 0
    for r in training(parsed.values()):
        rounds = max(rounds, r.round + 1)
        if r.ok and r.wall_s is not None and r.wall_s > 0:
            out.setdefault(r.workload, []).append(r.wall_s)
    return out, rounds


@dataclass(frozen=True)
class FirstLook:
    """The first look's cost against the budget."""

    rounds: int  # rounds still to run before the first look
    cells: int  # cells in those rounds
    seconds: float
    budget_s: float
    times: CellTimes
    holds: bool = True  # the budget holds the planned cells (no --at-least-first-look)

    @property
    def fits(self) -> bool:
        return self.seconds <= FIRST_LOOK_SHARE * self.budget_s

    def line(self) -> str:
        """One line: how long the first look will take, and why."""
        if self.seconds > self.budget_s and self.holds:
            left = (
                "past the budget: the run stops at the budget before it, with the resume "
                "command that reaches it (--at-least-first-look runs on instead)"
            )
        elif self.seconds > self.budget_s:
            left = "past the budget: the run overruns it to reach it, and no adaptive round follows"
        elif self.fits:
            left = "leaving half of it or more for the adaptive rounds"
        else:
            left = "leaving less than half of it for the adaptive rounds"
        return (
            f"the first look (after {self.rounds} more round(s), {self.cells} cells) will take "
            f"about {_minutes(self.seconds)} of the {_minutes(self.budget_s)} budget, {left} "
            f"(estimated from {self.times.source})"
        )


def first_look(
    times: CellTimes,
    workloads: Sequence[str],
    configurations: int,
    *,
    rounds: int,
    budget_s: float,
) -> FirstLook:
    """The cost of ``rounds`` rounds of ``configurations`` per workload."""
    seconds = rounds * times.round_s(workloads, configurations)
    cells = rounds * configurations * len(workloads)
    return FirstLook(rounds, cells, seconds, budget_s, times)


def most_that_fit(
    times: CellTimes,
    workloads: Sequence[str],
    main: int,
    optional: Sequence[str],
    *,
    rounds: int,
    budget_s: float,
) -> list[str]:
    """The longest prefix of ``optional`` configurations (per workload) whose first look,
    beside the ``main`` ones, fits its share of the budget."""
    kept: list[str] = []
    for name in optional:
        look = first_look(times, workloads, main + len(kept) + 1, rounds=rounds, budget_s=budget_s)
        if not look.fits:
            break
        kept.append(name)
    return kept


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min" if seconds >= 60 else f"{seconds:.0f} s"


def announce(spec: MatrixSpec, out: Path | None, estimate_from: Path | None) -> str | None:
    """One line when the first look of a run with a budget will not fit its share of
    the budget (None when it fits, there is no budget, or nothing says how long a cell
    takes). ``out``: the folder of a resumed run (its cells time the rest), or None."""
    o = spec.options
    if not o.budget_s:
        return None
    walls, stored_rounds = walls_of(out) if out is not None else ({}, 0)
    rounds = spec.repeats - stored_rounds
    if rounds <= 0:
        return None  # the first look is reached: the adaptive rounds hold to the budget
    times = stored_times(spec.workloads, walls)
    if times is None and estimate_from is not None:
        times = stored_times(spec.workloads, walls_of(estimate_from)[0])
    if times is None and o.epochs is None:  # whole epochs: no default says how long
        times = default_times(spec.workloads, o.min_steady_s)
    if times is None:
        return None
    later = set(o.later or ())  # not in the first look: they start once it is settled
    configs = len([v for v, _ in spec.configurations() if v not in later])
    # A duet runs a round's cells two at a time: its slots take about a cell each.
    slots = -(-configs // 2) if o.duet else configs
    look = first_look(times, spec.workloads, slots, rounds=rounds, budget_s=o.budget_s)
    cells = rounds * configs * len(spec.workloads)
    look = replace(look, cells=cells, holds=not o.at_least_first_look)
    return None if look.fits else look.line()


def say(spec: MatrixSpec, out: Path | None, estimate_from: Path | None) -> None:
    """:func:`announce`'s line on stderr, before any cell (a dry run's too)."""
    said = announce(spec, out, estimate_from)
    if said:
        print(f"compare: {said}", file=sys.stderr)
