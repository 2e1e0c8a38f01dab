"""Running the matrix: planned cells one after another, with progress, ETA, interrupt
and resume (the run folder itself belongs to :mod:`tfvariants.store.rundir`)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic

from tfvariants.errors import one_line
from tfvariants.execute.duet import Duet, partner
from tfvariants.execute.eta import EtaModel, PaceWatch, fmt_s
from tfvariants.execute.progress import Display
from tfvariants.execute.record import StoredCell
from tfvariants.plan.task import CellT, MatrixPlan, PlannedCell
from tfvariants.store.cellresult import AnyResult
from tfvariants.store.result import host_result
from tfvariants.store.rundir import (
    check_resume,
    load_run_dir,
    pending_cells,
    prepare_run_dir,
    quarantine_unreadable,
)
from tfvariants.store.runfolder import RunFolder
from workloads.envprobe import host_id

if TYPE_CHECKING:
    from rich.console import Console

# (cell, run folder) -> the record of the cell's result, already stored (the runner's contract)
RunCell = Callable[[CellT, RunFolder], StoredCell]
# stored results (cell id -> typed result) -> the next round's cells, and why
NextRound = Callable[[Mapping[str, AnyResult]], tuple[list[CellT], str]]
Disturbed = Callable[[dict], str | None]  # a result -> why it is disturbed, or None
RETRY_MISSES = 2  # disturbed retries in a row after which disturbed cells are not re-run


@dataclass
class _Retry:
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


def budget_stop(spent_s: float, next_s: float, budget_s: float | None, why: str) -> str | None:
    """Why the next adaptive round may not start (it would overrun the budget), or None;
    the local matrix and the Ray executor stop on the same rule."""
    if budget_s is None or spent_s + next_s <= budget_s:
        return None
    return (
        f"budget: {fmt_s(spent_s)} spent, the next round needs about "
        f"{fmt_s(next_s)} of the {fmt_s(budget_s)} budget ({why})"
    )


@dataclass
class MatrixOutcome:
    planned: int
    ran: list[PlannedCell] = field(default_factory=list)
    statuses: dict[str, str] = field(default_factory=dict)  # cell_id -> status, whole matrix
    reasons: dict[str, str] = field(default_factory=dict)
    interrupted: PlannedCell | None = None
    was_interrupted: bool = False
    quarantined: list[str] = field(default_factory=list)  # "file -> where (why)"
    rounds: list[dict] = field(default_factory=list)  # adaptive rounds run now
    stopped: str = ""  # why adaptive rounds stopped
    spent_s: float = 0.0
    disturbed: dict[str, str] = field(default_factory=dict)  # cell_id -> why, run now
    retried: int = 0  # attempts run because an earlier one was disturbed
    retries_left_out: int = 0  # disturbed cells not run again (retries or budget used up)
    retries_stopped: int = 0  # of those: left out because retries kept coming out disturbed

    def count(self, status: str) -> int:
        return sum(1 for s in self.statuses.values() if s == status)

    @property
    def problems(self) -> list[str]:
        return sorted(cid for cid, s in self.statuses.items() if s in ("failed", "timeout"))

    @property
    def missing(self) -> int:
        return self.planned - len(self.statuses)

    def exit_code(self) -> int:
        if self.was_interrupted:
            return 130
        return 1 if self.problems or self.missing else 0


class Matrix(Generic[CellT]):
    """Runs a matrix (training or serving: any MatrixPlan) into results/<run>/ with
    progress, interrupt and resume."""

    def __init__(self, spec: MatrixPlan[CellT], out: Path) -> None:
        self.spec = spec
        self.out = Path(out)
        self.folder = RunFolder(self.out)
        self._duet: Duet[CellT] | None = None  # set by run(duet=...)
        self._prepared: tuple[dict[str, dict], list[str]] | None = None

    def prepare(
        self,
        *,
        resume: bool = False,
        allow_mixed_hosts: bool = False,
        quarantine: bool = False,
        hosts: list[dict[str, Any]] | None = None,
    ) -> list[str]:
        """Check the folder and write run.json; returns the quarantine moves (one line
        each). A resume stops (UserError, nothing written) on a file it cannot read,
        unless ``quarantine`` moves such files aside first.

        Takes the folder's lock first (held until the command ends, see
        tfvariants.store.lock): a second run on it is refused before anything is read."""
        folder = RunFolder(self.out)
        held = folder.holds_lock()
        for line in folder.lock():
            print(f"tfvariants: warning: {line}", file=sys.stderr)
        try:
            folder.check_links()
            contents = load_run_dir(self.out, allow_mixed_hosts=allow_mixed_hosts)
            if resume:
                check_resume(contents, quarantine=quarantine)
            prepare_run_dir(self.out, self.spec, resume=resume, hosts=hosts,
                            allow_mixed_hosts=allow_mixed_hosts)  # fmt: skip
        except BaseException:
            if not held:
                folder.unlock()  # refused: leave the folder as it was (or absent)
            raise
        for line in folder.remove_stale_scratch():  # accepted: only now, only its own
            print(f"tfvariants: warning: {line}", file=sys.stderr)
        moved = quarantine_unreadable(contents) if resume and contents.problems else []
        folder.create()
        self._prepared = (contents.results, moved)
        return moved

    def run(
        self,
        *,
        run_cell: RunCell[CellT],
        resume: bool = False,
        console: Console | None = None,
        clock: Callable[[], float] = time.monotonic,
        allow_mixed_hosts: bool = False,
        quarantine: bool = False,
        hosts: list[dict[str, Any]] | None = None,
        next_round: NextRound[CellT] | None = None,
        budget_s: float | None = None,
        spent_before: float = 0.0,
        disturbed: Disturbed | None = None,
        retries: int = 0,
        retry_now: Callable[[], bool] | None = None,
        budget_covers_plan: bool = False,
        duet: Duet[CellT] | None = None,
    ) -> MatrixOutcome:
        """Run pending cells. ``run_cell(cell, folder)`` returns the record of the result
        (execute.record.StoredCell) and has already stored it as the folder's
        cells/<cell_id>.json (the runner's contract). Prepares the folder first (see
        ``prepare``) unless the caller already did.

        ``next_round(stored results)`` (adaptive repeats) returns the cells of one more
        round and why, or no cells and why it stops; ``budget_s`` caps the whole run's
        time (``spent_before``: time an interrupted run already used).

        ``disturbed(result)`` says why a finished cell was disturbed (or None): such a
        cell is kept and run again at once as its next attempt, at most ``retries``
        times, only while the budget allows and ``retry_now()`` (e.g. not under a
        sustained load, where the next attempt would be disturbed too).
        With ``budget_covers_plan`` the planned cells are held to the budget too: no cell
        starts whose estimated time would overrun it (the rest stay pending for --resume).
        ``duet`` runs two cells of a round at once (execute/duet.py, ``compare --duet``)."""
        self._duet = duet
        if self._prepared is None:
            self.prepare(resume=resume, allow_mixed_hosts=allow_mixed_hosts,
                         quarantine=quarantine, hosts=hosts)  # fmt: skip
        assert self._prepared is not None
        stored, moved = self._prepared
        cells = list(self.spec.cells())
        todo = pending_cells(cells, stored)
        outcome = MatrixOutcome(planned=len(cells), quarantined=moved)
        for c in cells:
            if c.cell_id in stored and c not in todo:
                outcome.statuses[c.cell_id] = stored[c.cell_id].get("status", "?")
        eta = EtaModel()
        started = clock()

        def spent() -> float:  # this run's time so far, an interrupted one's included
            return spent_before + clock() - started

        def next_attempt(cell: Any) -> Any:
            # Only cells that have attempts (training cells) run again.
            attempt = getattr(cell, "attempt", None)
            if not isinstance(attempt, int) or attempt >= retries:
                return None
            if retry_now is not None and not retry_now():
                return None
            if budget_s is not None and spent() + (eta.estimate(cell) or 0.0) > budget_s:
                return None
            return replace(cell, attempt=attempt + 1)

        retry = _Retry(disturbed, next_attempt) if disturbed is not None else None
        display = Display(console, total=len(cells), done=len(cells) - len(todo))
        deadline = None
        if budget_covers_plan and budget_s is not None:
            deadline = (started + budget_s - spent_before, budget_s)
        with display:
            pace = None
            if next_round is not None and budget_s is not None and deadline is None and todo:
                pace = PaceWatch.of_plan(len(cells), self.spec.repeats, budget_s, spent, console)
            self._run_cells(todo, run_cell, outcome, eta, display, clock, retry, deadline, pace)
            if next_round is not None:
                rounds = (next_round, spent, budget_s, allow_mixed_hosts)
                self._adaptive_rounds(rounds, run_cell, outcome, eta, display, clock, retry)
        outcome.spent_s = spent()
        return outcome

    def _adaptive_rounds(
        self,
        rounds: tuple[NextRound[CellT], Callable[[], float], float | None, bool],
        run_cell: RunCell[CellT],
        outcome: MatrixOutcome,
        eta: EtaModel,
        display: Display,
        clock: Callable[[], float],
        retry: _Retry | None,
    ) -> None:
        """Ask ``next_round`` which cells the next round needs until the answer is none,
        or the budget (``spent()`` so far + the round's estimate) would be exceeded.
        ``rounds``: (next_round, spent, budget_s, allow_mixed_hosts)."""
        next_round, spent, budget_s, allow_mixed_hosts = rounds
        while not outcome.was_interrupted and not outcome.stopped:
            more, why = next_round(
                load_run_dir(self.out, allow_mixed_hosts=allow_mixed_hosts).parsed
            )
            if not more:
                outcome.stopped = why
                break
            over = budget_stop(spent(), eta.remaining(more) or 0.0, budget_s, why)
            if over:
                outcome.stopped = over
                break
            outcome.planned += len(more)
            display.add(len(more))
            t0 = clock()
            self._run_cells(more, run_cell, outcome, eta, display, clock, retry)
            outcome.rounds.append({"repeat": more[0].repeat, "cells": len(more),
                                   "seconds": round(clock() - t0, 1)})  # fmt: skip

    def _run_cells(
        self,
        todo: Sequence[CellT],
        run_cell: RunCell[CellT],
        outcome: MatrixOutcome,
        eta: EtaModel,
        display: Display,
        clock: Callable[[], float],
        retry: _Retry | None = None,
        deadline: tuple[float, float] | None = None,  # (clock time, budget_s)
        pace: PaceWatch | None = None,
    ) -> None:
        todo = list(todo)
        i = 0
        while i < len(todo):
            cell = todo[i]
            # A duet runs a partner of the same round beside it (execute/duet.py).
            j = partner(todo, i) if self._duet is not None else None
            slot = [cell] if j is None else [cell, todo.pop(j)]
            need = sum(eta.estimate(c) or 0.0 for c in slot)
            if deadline is not None and clock() + need > deadline[0]:
                outcome.stopped = (f"budget: the next cell would overrun the {fmt_s(deadline[1])} "
                                   f"budget ({len(todo) - i} planned cell(s) not run)")  # fmt: skip
                return
            i += 1
            beside = slot[1] if len(slot) > 1 else None
            rest = eta.remaining(todo[i - 1 :])
            if rest is not None and beside is not None:
                rest += eta.estimate(beside) or 0.0
            display.start(cell, rest, beside)
            t0 = clock()
            try:
                results = self._run_slot(slot, run_cell)
            except KeyboardInterrupt:
                # The cells in flight are not recorded: resume reruns them.
                outcome.was_interrupted = True
                outcome.interrupted = cell
                return
            wall = clock() - t0  # shown per cell; each of a pair is charged half to the ETA
            agains = [self._finish(c, r, (wall, wall / len(slot)), outcome, eta, display, retry)
                      for c, r in zip(slot, results, strict=True)]  # fmt: skip
            if pace is not None:
                pace.check(eta.remaining(todo[i:]))
            for again in reversed(agains):
                if again is not None:
                    # Same round, next attempt, right away: it stays beside its round.
                    todo.insert(i, again)

    def _run_slot(self, slot: list[CellT], run_cell: RunCell[CellT]) -> list[StoredCell]:
        """The slot's cells run (one, or a duet's two at once): their stored records (a
        runner bug is recorded as the cell's failure; a Ctrl-C propagates)."""
        if self._duet is None:
            try:
                return [run_cell(slot[0], self.folder)]
            except KeyboardInterrupt:
                raise
            except Exception as exc:  # a runner bug must not stop the matrix
                return [self._record_crash(slot[0], exc)]
        got = self._duet.run(slot[0], slot[1] if len(slot) > 1 else None, self.folder)
        out = []
        for c in slot:
            r = got.stored.get(c.cell_id)
            if isinstance(r, KeyboardInterrupt):
                raise KeyboardInterrupt
            if not isinstance(r, StoredCell):
                r = self._record_crash(
                    c, r if isinstance(r, Exception) else RuntimeError("no result")
                )
            out.append(r)
        return out

    def _finish(
        self,
        cell: CellT,
        result: StoredCell,
        elapsed: tuple[float, float],  # the slot's wall time, the cell's share of it
        outcome: MatrixOutcome,
        eta: EtaModel,
        display: Display,
        retry: _Retry | None,
    ) -> CellT | None:
        """A finished cell counted, shown and judged; its next attempt when it was
        disturbed and may run again (None otherwise)."""
        status = result.status
        outcome.ran.append(cell)
        outcome.statuses[cell.cell_id] = status
        if status != "ok" and result.reason:
            # A worker's reason is the workload's text: no escape reaches the terminal.
            outcome.reasons[cell.cell_id] = one_line(result.reason)
        if status in ("ok", "failed", "timeout"):
            eta.record(cell, elapsed[1])  # skipped cells take no time: don't learn from them
        # A plain dict: the raw-field readers (store/rawfields.py) descend dicts only.
        raw = dict(result.raw)
        why = retry.disturbed(raw) if retry is not None and status == "ok" else None
        display.finish(cell, status, elapsed[0], result.reason, disturbed=why)
        if retry is not None and status == "ok":
            retry.observe(cell, why)
        if not why:
            return None
        outcome.disturbed[cell.cell_id] = why
        again = retry.again(cell) if retry is not None else None
        if again is not None and retry is not None and retry.given_up:
            again = None
            outcome.retries_stopped += 1
        if again is None:
            outcome.retries_left_out += 1
            return None
        outcome.retried += 1
        outcome.planned += 1
        display.add(1)
        return again

    def _record_crash(self, cell: PlannedCell, exc: Exception) -> StoredCell:
        reason = f"runner error: {type(exc).__name__}: {exc}"[:300]
        result = host_result(cell.to_dict(), "failed", reason)
        result["runner"] = {"host_id": host_id()}  # before it is stored, as the runner does
        return StoredCell.of(cell.cell_id, result, self.folder.write_cell(cell.cell_id, result))
