"""Running the matrix: the one round loop (the planned cells, then adaptive rounds while
the policy allows), with progress, ETA, interrupt and resume, over an executor strategy
(execute/executors.py: sequential, duet or Ray waves). The run folder itself belongs to
:mod:`tfvariants.store.rundir`."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from contextlib import closing
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, cast

from tfvariants.errors import one_line
from tfvariants.execute.eta import EtaModel, PaceWatch, fmt_s, resume_budget_min
from tfvariants.execute.executors import Executor, Finished, RunCell, Sequential
from tfvariants.execute.policy import Policy, Retry, budget_stop, cell_fits
from tfvariants.execute.progress import Display
from tfvariants.options.declare import RunOptionsBase
from tfvariants.plan.task import CellT, MatrixPlan, PlannedCell
from tfvariants.store.heldresults import HeldResults
from tfvariants.store.rundir import (
    RunContents,
    check_resume,
    load_run_dir,
    pending_cells,
    prepare_run_dir,
    quarantine_unreadable,
)
from tfvariants.store.runfile import read_run
from tfvariants.store.runfolder import RunFolder

if TYPE_CHECKING:
    from rich.console import Console


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

    def __init__(self, spec: MatrixPlan[CellT, RunOptionsBase], out: Path) -> None:
        self.spec = spec
        self.out = Path(out)
        self.folder = RunFolder(self.out)
        self.allow_mixed_hosts = False  # as prepared: the adaptive rounds load alike
        self._prepared: tuple[RunContents, list[str]] | None = None

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
        self.allow_mixed_hosts = allow_mixed_hosts
        held = folder.holds_lock()
        for line in folder.lock():
            print(f"tfvariants: warning: {line}", file=sys.stderr)
        try:
            folder.check_links()
            contents = load_run_dir(self.out, allow_mixed_hosts=allow_mixed_hosts)
            if resume:
                check_resume(contents, quarantine=quarantine)
            prepare_run_dir(
                self.out, self.spec, resume=resume, hosts=hosts, allow_mixed_hosts=allow_mixed_hosts
            )
        except BaseException:
            if not held:
                folder.unlock()  # refused: leave the folder as it was (or absent)
            raise
        for line in folder.remove_stale_scratch():  # accepted: only now, only its own
            print(f"tfvariants: warning: {line}", file=sys.stderr)
        moved = quarantine_unreadable(contents) if resume and contents.problems else []
        folder.create()
        self._prepared = (contents, moved)
        return moved

    def run(
        self,
        run_cell: RunCell[CellT] | None = None,
        *,
        executor: Executor[CellT] | None = None,
        policy: Policy[CellT] | None = None,
        resume: bool = False,
        console: Console | None = None,
    ) -> MatrixOutcome:
        """Run the pending cells, then the adaptive rounds the ``policy`` allows, on
        ``executor`` (default: ``Sequential(run_cell)``). ``run_cell(cell, folder)``
        returns the record of the result (execute.record.StoredCell) and has already
        stored it as the folder's cells/<cell_id>.json (the runner's contract). Prepares
        the folder first (see ``prepare``) unless the caller already did."""
        if executor is None:
            assert run_cell is not None, "a run_cell or an executor"
            executor = Sequential(run_cell)
        if self._prepared is None:
            self.prepare(resume=resume)
        assert self._prepared is not None
        contents, moved = self._prepared
        stored = contents.results
        cells = list(self.spec.cells())
        todo = pending_cells(cells, stored)
        outcome = MatrixOutcome(planned=len(cells), quarantined=moved)
        for c in cells:
            if c.cell_id in stored and c not in todo:
                outcome.statuses[c.cell_id] = stored[c.cell_id].get("status", "?")
        display = Display(console, total=len(cells), done=len(cells) - len(todo))
        policy = policy or Policy()
        held = None
        if policy.next_round is not None:  # the hook's results: the folder read once
            mixed = self.allow_mixed_hosts or executor.all_hosts
            held = HeldResults(contents, read_run(self.out), allow_mixed_hosts=mixed)
        loop = _Loop(self, executor, policy, outcome, display, held)
        with display, executor:
            loop.planned(todo, len(cells))
            if loop.policy.next_round is not None:
                loop.adaptive_rounds()
        outcome.spent_s = loop.spent()
        return outcome


class _Loop(Generic[CellT]):
    """One run of the round loop: its policy and executor, what it learned (ETA,
    retries) and the outcome it fills."""

    def __init__(
        self,
        matrix: Matrix[CellT],
        executor: Executor[CellT],
        policy: Policy[CellT],
        outcome: MatrixOutcome,
        display: Display,
        held: HeldResults | None = None,
    ) -> None:
        self.matrix, self.executor, self.policy = matrix, executor, policy
        self.outcome, self.display = outcome, display
        # What the next-round hook judges: the stored results, each cell added as it ends.
        self.held = held
        self.eta = EtaModel()
        self.clock = policy.clock
        # From the command's start when it says (its probes count), else from here.
        self.started = self.clock() if policy.began is None else policy.began
        self.retry = Retry(policy.disturbed, self._next_attempt) if policy.disturbed else None

    def spent(self) -> float:  # this run's time so far, an interrupted one's included
        return self.policy.spent_before + self.clock() - self.started

    def _next_attempt(self, cell: CellT) -> CellT | None:
        # Only cells that have attempts (training cells) run again.
        p = self.policy
        attempt = getattr(cell, "attempt", None)
        if not isinstance(attempt, int) or attempt >= p.retries:
            return None
        if p.retry_now is not None and not p.retry_now():
            return None
        if p.budget_s is not None and self.spent() + (self.eta.estimate(cell) or 0.0) > p.budget_s:
            return None
        again: CellT = replace(cast(Any, cell), attempt=attempt + 1)  # a dataclass with attempts
        return again

    def planned(self, todo: list[CellT], planned: int) -> None:
        """The planned cells (the first look's, with a budget): held to the budget when
        it covers the plan, and watched for a pace that would overrun it."""
        p = self.policy
        pace = None
        if p.next_round is not None and p.budget_s is not None and todo:
            repeats = self.matrix.spec.repeats
            console = self.display.console
            pace = PaceWatch.of_plan(planned, repeats, p.budget_s, self.spent, console)
            pace.holds, pace.resume = p.budget_covers_plan, p.resume
        self.cells(todo, p.budget_covers_plan, pace, planned=True)

    def adaptive_rounds(self) -> None:
        """Ask ``next_round`` which cells the next round needs until the answer is none,
        or the budget (``spent()`` so far + the executor's estimate of the round) would
        be exceeded."""
        p, outcome, held = self.policy, self.outcome, self.held
        assert p.next_round is not None and held is not None
        while not outcome.was_interrupted and not outcome.stopped:
            more, why = p.next_round(held.parsed())
            if not more:
                outcome.stopped = why
                break
            estimate = self.executor.estimate(more, self.eta)
            over = budget_stop(self.spent(), estimate, p.budget_s, why)
            if over:
                outcome.stopped = over
                break
            outcome.planned += len(more)
            self.display.add(len(more))
            t0 = self.clock()
            self.cells(more, hold=True)
            outcome.rounds.append({"repeat": more[0].repeat, "cells": len(more),
                                   "seconds": round(self.clock() - t0, 1),
                                   **self.executor.round_fields})  # fmt: skip

    def cells(
        self,
        todo: Sequence[CellT],
        hold: bool = False,
        pace: PaceWatch | None = None,
        planned: bool = False,
    ) -> None:
        """A round's cells, slot by slot; a disturbed cell's next attempt right after.
        ``hold``: no slot starts that the budget cannot hold (policy.cell_fits)."""
        todo, outcome, eta, width = list(todo), self.outcome, self.eta, self.executor.width
        i = 0
        while i < len(todo):
            cell = todo[i]
            slot = self.executor.take(todo, i)
            if hold and not self._fits(slot):
                outcome.stopped = self._held(todo[i:], planned)
                return
            i += 1
            rest = eta.remaining(todo[i - 1 :]) if width else None  # a wave: timed on its nodes
            if rest is not None:
                rest += sum(eta.estimate(c) or 0.0 for c in slot[1:])
            self.display.start(cell, rest, slot[1] if width == 2 and len(slot) > 1 else None)
            agains = self._slot(slot)
            if agains is None:
                return  # interrupted
            if pace is not None:
                pace.check(eta.remaining(todo[i:]))
            for again in reversed(agains):
                if again is not None:
                    # Same round, next attempt, right away: it stays beside its round.
                    todo.insert(i, again)

    def _fits(self, slot: Sequence[CellT]) -> bool:
        """The budget holds the slot: it ends inside it at ``CELL_MARGIN`` x the longest
        cells seen. A duet's pair is charged half its wall per cell (``_finish``): the
        pair takes their sum; a wave's cells run at once on their nodes: the longest."""
        budget = self.policy.budget_s
        each = [self.eta.longest(c) or 0.0 for c in slot]
        need = max(each, default=0.0) if self.executor.width == 0 else sum(each)
        return budget is None or cell_fits(self.spent(), need, budget)

    def _held(self, rest: Sequence[CellT], planned: bool) -> str:
        """Why the loop stopped at the budget with ``rest`` not run; in the planned
        cells (the first look's), the command that reaches the first look."""
        p, spent = self.policy, self.spent()
        budget = p.budget_s or 0.0
        why = f"budget: the next cell would overrun the {fmt_s(budget)} budget ({len(rest)} "
        if not planned:  # an adaptive round's cells were never owed: not missing
            self.outcome.planned -= len(rest)
            return why + "cell(s) of this round not run)"
        why += "planned cell(s) not run)"
        left = self.eta.remaining(rest)
        if left is None or not p.resume:
            return why
        more = resume_budget_min(spent + left, budget)
        return (
            f"{why}; the first look needs about {fmt_s(spent + left)} at this run's pace: "
            f"to reach it, {p.resume} --budget {more}m"
        )

    def _slot(self, slot: list[CellT]) -> list[CellT | None] | None:
        """The slot submitted and each cell finished as it ends; the next attempts of
        its disturbed cells; None when a Ctrl-C stopped it (the cells in flight are not
        recorded: resume reruns them)."""
        t0 = self.clock()
        wall: float | None = None
        agains: list[CellT | None] = []
        ended: set[str] = set()
        try:
            with closing(self.executor.submit(slot, self.matrix.folder)) as results:
                for f in results:
                    if f.wall_s is None and wall is None:
                        wall = self.clock() - t0  # shown per cell; each of a pair charged half
                    ended.add(f.cell.cell_id)
                    agains.append(self._finish(f, wall or 0.0, len(slot)))
        except KeyboardInterrupt:
            self.outcome.was_interrupted = True
            self.outcome.interrupted = next((c for c in slot if c.cell_id not in ended), None)
            return None
        return agains

    def _finish(self, f: Finished[CellT], wall: float, width: int) -> CellT | None:
        """A finished cell counted, shown and judged; its next attempt when it was
        disturbed and may run again (None otherwise)."""
        cell, result, outcome, retry = f.cell, f.stored, self.outcome, self.retry
        status = result.status
        outcome.ran.append(cell)
        outcome.statuses[cell.cell_id] = status
        if self.held is not None:
            self.held.add(cell.cell_id, result.path)
        if status != "ok" and result.reason:
            # A worker's reason is the workload's text: no escape reaches the terminal.
            outcome.reasons[cell.cell_id] = one_line(result.reason)
        if f.wall_s is None and status in ("ok", "failed", "timeout"):
            self.eta.record(cell, wall / width)  # skipped cells take no time: don't learn
        # A plain dict: the raw-field readers (store/rawfields.py) descend dicts only.
        raw = dict(result.raw)
        why = retry.disturbed(raw) if retry is not None and status == "ok" else None
        shown = wall if f.wall_s is None else f.wall_s
        self.display.finish(cell, status, shown, result.reason, disturbed=why)
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
        self.display.add(1)
        return again
