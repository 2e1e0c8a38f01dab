"""Two cells at once on disjoint CPUs (``compare --duet``), each side busy to the end.

Duet measurement (Bulej et al., 2020) cancels interference only if both sides of a
comparison run under the same conditions. So every cell of a duet run has a neighbour
for its whole life, on the other CPU set (plan/duet.py):

- two cells of the same round share a slot, the same workload's first where it can
  (``partner``): a comparison's two sides then meet the same interference;
- when one side's cell ends first (a faster build, a failure), that side runs *fillers*
  until the other ends: the same cell again (the other side's, where its own cannot
  run), into a throwaway folder, stopped the moment the other side's cell has ended.
  Without them the slower side would finish its window alone, faster than it would
  beside a neighbour, and the ratio would lean towards 1;
- a cell left without a partner (an odd round) runs beside fillers from the start.

The CPU sets swap with the round's parity, so a faster set favours neither side. The
wait for quiet is one per slot, on both sets, from the main thread (the gate keeps one
state); so is the gate's look at the results, the worse cell last. A Ctrl-C reaches the
main thread: it stops both sides' workers (process.interrupt_live) and nothing of the
slot is stored; resume runs it again.
"""

from __future__ import annotations

import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Generic

from tfvariants.execute import process
from tfvariants.execute.eta import EtaModel
from tfvariants.execute.executors import Finished, Results, record_crash
from tfvariants.execute.process import interrupt_live
from tfvariants.execute.quiet import QuietGate, QuietWait, ended_quiet
from tfvariants.execute.record import StoredCell
from tfvariants.plan.duet import DuetPlans
from tfvariants.plan.pinning import PinPlan
from tfvariants.plan.task import CellT, PlannedCell
from tfvariants.store.runfolder import RunFolder

JOIN_S = 0.5  # the main thread's wait step: a Ctrl-C is seen within it


QuietFn = Callable[[Sequence[int]], QuietWait]
# One cell on the given plan, stored in the folder; the quiet wait as the runner's; the
# event, when set, stops the worker (a filler).
RunOn = Callable[[CellT, RunFolder, PinPlan, QuietFn | None, threading.Event | None], StoredCell]


def partner(todo: Sequence[PlannedCell], i: int) -> int | None:
    """The index (after ``i``) of the cell that runs beside ``todo[i]``: the next one of
    the same round and workload, else the next one of the same round; None: fillers."""
    cell = todo[i]
    same_round = [
        j for j in range(i + 1, len(todo)) if getattr(todo[j], "repeat", None) == cell.repeat
    ]
    for j in same_round:
        if todo[j].workload == cell.workload:
            return j
    return same_round[0] if same_round else None


@dataclass
class SlotResult:
    """What one slot gave: per real cell its stored record or the error it raised."""

    stored: dict[str, StoredCell | BaseException] = field(default_factory=dict)
    fillers: int = 0  # filler workers started


@dataclass
class _Side(Generic[CellT]):
    cell: CellT | None  # None: this side only runs fillers beside the other's cell
    plan: PinPlan
    done: threading.Event = field(default_factory=threading.Event)  # its cell has ended
    over: threading.Event = field(default_factory=threading.Event)  # its fillers too
    result: StoredCell | BaseException | None = None
    fillers: int = 0


class Duet(Generic[CellT]):
    """Runs slots of two cells on a run's two plans (``run_on`` runs one cell): the
    matrix loop's duet executor (execute/executors.py)."""

    width = 2
    round_fields: Mapping[str, Any] = {}
    all_hosts = False

    def __init__(
        self,
        plans: DuetPlans,
        run_on: RunOn[CellT],
        gate: QuietGate | None = None,
        disturbed: Callable[[Mapping[str, Any]], str | None] | None = None,
    ) -> None:
        self.plans, self.run_on, self.gate, self.disturbed = plans, run_on, gate, disturbed

    def __enter__(self) -> Duet[CellT]:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def take(self, todo: list[CellT], i: int) -> list[CellT]:
        """``todo[i]`` and its partner of the same round (taken out of ``todo``), or
        ``todo[i]`` alone beside fillers."""
        j = partner(todo, i)
        return [todo[i]] if j is None else [todo[i], todo.pop(j)]

    def estimate(self, cells: Sequence[CellT], eta: EtaModel) -> float:
        return eta.remaining(cells) or 0.0

    def submit(self, cells: Sequence[CellT], folder: RunFolder) -> Results[CellT]:
        """The slot's one or two cells at once; their records once both have ended (a
        runner bug is the cell's failure; a Ctrl-C propagates, nothing stored)."""
        got = self.run(cells[0], cells[1] if len(cells) > 1 else None, folder)
        out = []
        for c in cells:
            r = got.stored.get(c.cell_id)
            if isinstance(r, KeyboardInterrupt):
                raise KeyboardInterrupt
            if not isinstance(r, StoredCell):
                crash = r if isinstance(r, Exception) else RuntimeError("no result")
                r = record_crash(c, crash, folder)
            out.append(Finished(c, r))
        yield from out

    def sides(self, first: CellT, second: CellT | None) -> tuple[_Side[CellT], _Side[CellT]]:
        """The two sides: in cell-id order (a comparison's two configurations always in
        the same order), on the plans swapped by the round's parity."""
        a, b = self.plans.both()
        if int(getattr(first, "repeat", 0) or 0) % 2:
            a, b = b, a
        if second is None:
            return _Side(first, a), _Side(None, b)
        one, two = sorted((first, second), key=lambda c: str(c.cell_id))
        return _Side(one, a), _Side(two, b)

    def run(self, first: CellT, second: CellT | None, folder: RunFolder) -> SlotResult:
        """Both cells at once (``second`` None: ``first`` beside fillers); a
        KeyboardInterrupt propagates once both sides' workers are gone."""
        process.clear_interrupt()
        sides = self.sides(first, second)
        waited = self.gate(self.plans.cpus()) if self.gate is not None else None
        # Each cell records what the slot's one wait found; the seconds go to the first
        # only, so the report's "waited ... in all" counts the wait once.
        given: list[QuietFn | None] = [None, None]
        if waited is not None:
            again = replace(waited, waited_s=0.0)
            given = [lambda cpus: waited, lambda cpus: again]
        with tempfile.TemporaryDirectory(prefix="tfv-duet-") as scratch:
            fillers = Path(scratch)
            threads = [
                threading.Thread(
                    target=self._side, args=(me, other, folder, fillers, wait), daemon=True
                )
                for (me, other), wait in zip((sides, sides[::-1]), given, strict=True)
            ]
            self._start_and_wait(threads, sides)
        out = SlotResult(fillers=sum(s.fillers for s in sides))
        for side in sides:
            if side.cell is not None and side.result is not None:
                out.stored[side.cell.cell_id] = side.result
        self._observe([r for r in out.stored.values() if isinstance(r, StoredCell)])
        return out

    def _side(
        self,
        me: _Side[CellT],
        other: _Side[CellT],
        folder: RunFolder,
        fillers: Path,
        given: QuietFn | None,
    ) -> None:
        """One side's thread: its cell (if any), then fillers until the other's ends."""
        try:
            self._own_cell(me, folder, given)
            self._fill(me, other, fillers)
        finally:
            me.over.set()  # what the main thread waits for (see _start_and_wait)

    def _own_cell(self, me: _Side[CellT], folder: RunFolder, given: QuietFn | None) -> None:
        try:
            if me.cell is not None:
                me.result = self.run_on(me.cell, folder, me.plan, given, None)
        except BaseException as exc:  # noqa: BLE001 (handed to the main thread)
            me.result = exc
        finally:
            me.done.set()

    def _fill(self, me: _Side[CellT], other: _Side[CellT], fillers: Path) -> None:
        """Keep this side's CPUs as busy as a cell keeps them until the other ends: with
        its own cell again, or, where that cannot run (skipped, failed), the other's."""
        ran = isinstance(me.result, StoredCell) and me.result.status == "ok"
        fills = [c for c in (me.cell if ran else None, other.cell) if c is not None]
        while fills and not other.done.is_set() and not process.interrupted():
            me.fillers += 1
            # A folder each: a finished result is never written over.
            where = RunFolder(fillers / f"{id(me)}-{me.fillers}")
            try:
                got = self.run_on(fills[0], where, me.plan, None, other.done)
            except BaseException:  # noqa: BLE001 (a filler's result is never used)
                break
            if got.status != "ok" and not other.done.is_set():
                fills.pop(0)  # it failed on its own: so would it again

    @staticmethod
    def _start_and_wait(threads: list[threading.Thread], sides: Sequence[_Side[CellT]]) -> None:
        """Start the sides and wait for both; a Ctrl-C meanwhile (even between the two
        starts) stops what runs and waits for the sides to end before it propagates.
        The wait is on each side's own event, not Thread.join: a join that a Ctrl-C
        interrupted can later return while its thread still runs (CPython 3.11)."""

        def ended(wait_s: float) -> bool:
            deadline = time.monotonic() + wait_s
            for side, t in zip(sides, threads, strict=True):
                if t.ident is not None:  # started
                    side.over.wait(max(0.0, deadline - time.monotonic()))
            return all(s.over.is_set() for s, t in zip(sides, threads, strict=True) if t.ident)

        try:
            for t in threads:
                t.start()
            while not ended(JOIN_S):
                pass
        except KeyboardInterrupt:
            from tfvariants.execute.runner import stop_groups

            stop_groups(interrupt_live(), ended)
            while not ended(JOIN_S):
                pass
            raise

    def _observe(self, results: list[StoredCell]) -> None:
        """The gate sees the slot as one cell: a disturbed one alone (the wait did not
        pay), else both, the one whose end was not quiet last (the next wait is then
        not skipped on a quiet end of one set only)."""
        gate = self.gate
        if gate is None or not results:
            return
        raws: list[Mapping[str, Any]] = [dict(r.raw) for r in results]
        rule = self.disturbed
        bad = [r for r in raws if rule is not None and r.get("status") == "ok" and rule(r)]
        if bad:
            gate.observe(bad[0])
            return
        for raw in sorted(raws, key=lambda r: ended_quiet(r, gate.limit) is not None, reverse=True):
            gate.observe(raw)
