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
from tfvariants.execute.eta import EtaModel, PaceWatch, fmt_s
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

if TYPE_CHECKING:  # rich.progress is imported only when a bar is shown (start-up time)
    from rich.console import Console
    from rich.progress import Progress, TaskID

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
        starts whose estimated time would overrun it (the rest stay pending for --resume)."""
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
        display = _Display(console, total=len(cells), done=len(cells) - len(todo))
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
        display: _Display,
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
        display: _Display,
        clock: Callable[[], float],
        retry: _Retry | None = None,
        deadline: tuple[float, float] | None = None,  # (clock time, budget_s)
        pace: PaceWatch | None = None,
    ) -> None:
        todo = list(todo)
        i = 0
        while i < len(todo):
            cell = todo[i]
            if deadline is not None and clock() + (eta.estimate(cell) or 0.0) > deadline[0]:
                outcome.stopped = (f"budget: the next cell would overrun the {fmt_s(deadline[1])} "
                                   f"budget ({len(todo) - i} planned cell(s) not run)")  # fmt: skip
                return
            i += 1
            display.start(cell, eta.remaining(todo[i - 1 :]))
            t0 = clock()
            try:
                result = run_cell(cell, self.folder)
            except KeyboardInterrupt:
                # The cell in flight is not recorded: resume reruns it.
                outcome.was_interrupted = True
                outcome.interrupted = cell
                return
            except Exception as exc:  # a runner bug must not stop the matrix
                result = self._record_crash(cell, exc)
            elapsed = clock() - t0
            status = result.status
            outcome.ran.append(cell)
            outcome.statuses[cell.cell_id] = status
            if status != "ok" and result.reason:
                # A worker's reason is the workload's text: no escape reaches the terminal.
                outcome.reasons[cell.cell_id] = one_line(result.reason)
            if status in ("ok", "failed", "timeout"):
                eta.record(cell, elapsed)  # skipped cells take no time: don't learn from them
            # A plain dict: the raw-field readers (store/rawfields.py) descend dicts only.
            raw = dict(result.raw)
            why = retry.disturbed(raw) if retry is not None and status == "ok" else None
            display.finish(cell, status, elapsed, result.reason, disturbed=why)
            if pace is not None:
                pace.check(eta.remaining(todo[i:]))
            if retry is not None and status == "ok":
                retry.observe(cell, why)
            if why:
                outcome.disturbed[cell.cell_id] = why
                again = retry.again(cell) if retry is not None else None
                if again is not None and retry is not None and retry.given_up:
                    again = None
                    outcome.retries_stopped += 1
                if again is not None:
                    # Same round, next attempt, right away: it stays beside its round.
                    todo.insert(i, again)
                    outcome.retried += 1
                    outcome.planned += 1
                    display.add(1)
                else:
                    outcome.retries_left_out += 1

    def _record_crash(self, cell: PlannedCell, exc: Exception) -> StoredCell:
        reason = f"runner error: {type(exc).__name__}: {exc}"[:300]
        result = host_result(cell.to_dict(), "failed", reason)
        result["runner"] = {"host_id": host_id()}  # before it is stored, as the runner does
        return StoredCell.of(cell.cell_id, result, self.folder.write_cell(cell.cell_id, result))


class _Display:
    """Rich progress: current cell, done/total, ETA learned from finished cells; plus one
    line per finished cell so logs (CI, non-terminals) show the run too."""

    def __init__(self, console: Console | None, total: int, done: int) -> None:
        self.total, self.done = total, done
        self.console = console
        self.progress: Progress | None = None
        self.task: TaskID | None = None

    def __enter__(self) -> _Display:
        if self.console is None:
            return self
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("ETA {task.fields[eta]}"),
            console=self.console,
            transient=True,
            # The host shares the CPUs being measured: redraw rarely (rich's default of
            # 10/s cost a visible share of a core), and not at all without a terminal.
            refresh_per_second=1,
            auto_refresh=bool(getattr(self.console, "is_terminal", False)),
        )
        self.progress.__enter__()
        self.task = self.progress.add_task(
            "starting", total=self.total, completed=self.done, eta="?"
        )
        return self

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None:
            self.progress.__exit__(None, None, None)

    def _update(self, **fields: Any) -> None:
        if self.progress is not None and self.task is not None:
            self.progress.update(self.task, **fields)

    def add(self, cells: int) -> None:
        self.total += cells
        self._update(total=self.total)

    def start(self, cell: PlannedCell, remaining_s: float | None) -> None:
        if self.progress is not None:
            from rich.markup import escape

            label = escape(f"{cell.workload} {cell.variant}@{cell.threads} r{cell.repeat}")
            self._update(description=label, eta=fmt_s(remaining_s))
            self.progress.refresh()

    def finish(
        self,
        cell: PlannedCell,
        status: str,
        elapsed: float,
        reason: object,
        disturbed: str | None = None,
    ) -> None:
        self.done += 1
        if self.progress is None:
            return
        mark = {"ok": "[green]ok[/]", "skipped": "[yellow]skipped[/]"}.get(
            status, f"[red]{status}[/]"
        )
        if disturbed:
            mark, reason = "[yellow]disturbed[/]", disturbed
        why = f" - {one_line(reason)}" if (status != "ok" or disturbed) and reason else ""
        from rich.markup import escape

        self.progress.console.print(
            f"{mark} {escape(cell.cell_id)} [dim]{elapsed:.1f}s[/]{escape(why)}", highlight=False
        )
        self._update(completed=self.done)
        self.progress.refresh()
