"""How long the rest of a run will take, learned from the cells that finished: the
progress display's ETA, the budget's check before each adaptive round, and the one line
that says when the planned rounds will overrun the budget at the pace measured."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from rich.console import Console

from tfvariants.plan.task import PlannedCell


def fmt_s(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    seconds = int(round(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}h{m:02d}m" if h else (f"{m}m{s:02d}s" if m else f"{s}s")


class EtaModel:
    """Learns cell durations as cells finish: per (workload, variant, threads) when seen,
    else per workload, else the overall mean."""

    def __init__(self) -> None:
        self._by_config: dict[tuple, list[float]] = {}
        self._by_workload: dict[str, list[float]] = {}
        self._all: list[float] = []

    def record(self, cell: PlannedCell, seconds: float) -> None:
        self._by_config.setdefault((cell.workload, cell.variant, cell.threads), []).append(seconds)
        self._by_workload.setdefault(cell.workload, []).append(seconds)
        self._all.append(seconds)

    def estimate(self, cell: PlannedCell) -> float | None:
        for samples in (
            self._by_config.get((cell.workload, cell.variant, cell.threads)),
            self._by_workload.get(cell.workload),
            self._all,
        ):
            if samples:
                return statistics.median(samples)
        return None

    def longest(self, cell: PlannedCell) -> float | None:
        """The longest finished cell of the cell's workload (else of the run), or its
        estimate when longer: what the budget holds a cell to before it starts."""
        samples = self._by_workload.get(cell.workload) or self._all
        if not samples:
            return None
        return max(max(samples), self.estimate(cell) or 0.0)

    def remaining(self, cells: Iterable[PlannedCell]) -> float | None:
        estimates = [self.estimate(c) for c in cells]
        known = [e for e in estimates if e is not None]
        if len(known) < len(estimates):
            return None
        return float(sum(known))


# A running cell is never killed, so a cell starts only when it would end inside the
# budget at this many times the longest cell of its workload (or its estimate, when
# longer): a cell may run that much slower than the slowest one before it and the run
# still ends within the budget; one slower still overruns it by its excess alone
# (execute/policy.py cell_fits).
CELL_MARGIN = 1.25


def resume_budget_min(end_s: float, budget_s: float) -> int:
    """Whole minutes of --budget (the whole run's, time spent included) that reach the
    first look estimated to end at ``end_s``; always more than ``budget_s``. The
    estimated end gets the cells' own margin: at the end of the run, the last cells
    start only if they fit at ``CELL_MARGIN`` x their longest (that room also covers
    the resumed command's probes)."""
    return max(math.ceil(end_s * CELL_MARGIN / 60), math.floor(budget_s / 60) + 1)


@dataclass
class PaceWatch:
    """Says once, after the first round of a run with a budget and adaptive rounds,
    that at the pace measured so far the first look will end past the budget. The
    estimate said before the run (rounds/firstlook.py) is a quiet machine's; under a load
    the cells run slower, and nothing can be decided before the first look (issue 26: an
    unprivileged compare under bursts took 9.5 min of an 8 min budget, silently). When
    the budget ``holds`` (the default), the line says the run stops at the budget and
    the ``resume`` command that reaches the first look; else (--at-least-first-look)
    that the run overruns the budget to reach it."""

    budget_s: float
    spent: Callable[[], float]
    after: int  # cells to finish before the pace says anything (one round)
    console: Console | None
    holds: bool = True
    resume: str | None = None  # the command line before its --budget
    finished: int = 0
    said: str | None = None

    @classmethod
    def of_plan(
        cls,
        cells: int,
        repeats: int,
        budget_s: float,
        spent: Callable[[], float],
        console: Console | None,
    ) -> PaceWatch:
        """The watch of ``cells`` planned cells in ``repeats`` rounds: it speaks after the
        first round, when each configuration has a cell time (under bursts one round
        once said 8m48s for a first look that ended at 6m12s: the line says "about")."""
        return cls(budget_s, spent, max(1, cells // max(1, repeats)), console)

    def check(self, remaining_s: float | None) -> None:
        self.finished += 1
        if self.said or self.console is None or self.finished < self.after:
            return
        if remaining_s is None:
            return
        end = self.spent() + remaining_s
        if end <= self.budget_s:
            return
        if self.holds:
            more = resume_budget_min(end, self.budget_s)
            to = f": {self.resume} --budget {more}m" if self.resume else ""
            self.said = (
                f"the first look cannot fit the {fmt_s(self.budget_s)} budget: at this run's "
                f"pace it ends after about {fmt_s(end)} (the machine is busy); the run stops "
                f"at the budget with every cell stored, and a resume reaches it{to}"
            )
        else:
            self.said = (
                f"at this run's pace the first look will end after about {fmt_s(end)}, past the "
                f"{fmt_s(self.budget_s)} budget: the run overruns it to reach the first look "
                "(--at-least-first-look), where the first verdicts come, and no adaptive round "
                "follows (the cells run slower than planned: the machine is busy)"
            )
        self.console.print(f"note: {self.said}", highlight=False, markup=False)
