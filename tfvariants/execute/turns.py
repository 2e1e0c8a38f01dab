"""A round's cells of one workload taking turns on the same CPUs (``compare --turns``,
and the compiled preset's design "taking turns").

A neighbour whose load comes and goes over seconds slows whichever cell runs then, so
cells run one after another differ by when they ran. The duet (execute/duet.py) cancels
that by running two cells at once on disjoint CPUs, which needs twice a cell's CPUs; at
2 threads on 2 CPUs it would measure another question. Here every cell of the slot runs
on the usual plan, all started together, and the CPUs are handed from one to the next
every ``turn_s`` seconds of steps (the worker's half: workloads/turns.py): each lives
through the same bursts, a few seconds apart at most, and their per-round ratio loses
what moved over time.

- Between its turns a cell's process group is stopped (SIGSTOP; SIGCONT before its
  next): its threads that would keep running while it waits (an input pipeline's
  prefetch, an OpenMP pool spinning for its block time: the oneDNN builds spent about
  8 % of the wait busy) would otherwise take from the cell whose turn it is, and more
  from one build than another.
- A slot is the round's cells of one workload at one thread count (``take``): a
  comparison's sides, and the other configurations its baseline is compared with.
- Nobody's steps run while another cell is still setting up: the first turn is given
  once every cell has said it is ready (its model built) or has ended.
- The order rotates with the round, so no configuration always goes first. A cell that
  has ended (done, failed, skipped) leaves the rotation; the last one left runs alone.
- The wait for quiet is one per slot, and the gate sees the slot as one cell, as a
  duet's (execute/duet.py).
"""

from __future__ import annotations

import os
import select
import signal
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Generic

from tfvariants.execute import process
from tfvariants.execute.duet import QuietFn, observe_slot, start_and_wait
from tfvariants.execute.eta import EtaModel
from tfvariants.execute.executors import Finished, Results, record_crash
from tfvariants.execute.quiet import QuietGate
from tfvariants.execute.record import StoredCell
from tfvariants.plan.pinning import PinPlan
from tfvariants.plan.task import CellT, PlannedCell
from tfvariants.store.runfolder import RunFolder
from workloads.turns import DONE, END, FREE, GO, PGID, READY

# A turn's seconds of steps: a few steps of the slowest workload at 2 threads (0.1-0.3 s
# a step), short beside a neighbour's bursts (seconds), long beside a hand-over (a pipe
# write and a read: tens of microseconds) and the caches a turn starts without.
TURN_S = 1.0
POLL_S = 0.2  # how often the baton looks whether a cell has ended without a word


@dataclass(frozen=True)
class Seat:
    """One cell's place in a slot (runner.Conditions.turns): the request's ``turns``
    object (workloads/turns.py) and how many cells share the CPUs (its wall time holds
    their turns too: its timeout is that many times its own)."""

    fields: Mapping[str, Any]
    sides: int


# One cell on the slot's plan, stored in the folder; the quiet wait as the runner's; its
# seat in the slot.
TurnOn = Callable[[CellT, RunFolder, QuietFn | None, Seat], StoredCell]


def partners(todo: Sequence[PlannedCell], i: int) -> list[int]:
    """The indexes (after ``i``) of the cells that take turns with ``todo[i]``: the rest
    of its round's cells of the same workload and thread count."""
    cell = todo[i]
    return [
        j
        for j in range(i + 1, len(todo))
        if getattr(todo[j], "repeat", None) == cell.repeat
        and todo[j].workload == cell.workload
        and todo[j].threads == cell.threads
    ]


class Baton:
    """The host's half of the protocol: a pair of named pipes per cell in ``folder``,
    both ends held open here (opening them never blocks a worker, and a worker whose
    host died reads the end of turns)."""

    def __init__(self, folder: Path, count: int, turn_s: float = TURN_S) -> None:
        self.turn_s = turn_s
        self.paths: list[tuple[Path, Path]] = []
        self._go: list[int] = []
        self._done: list[int] = []
        self._groups: dict[int, int] = {}  # side -> its worker's process group (once ready)
        for i in range(count):
            go, done = folder / f"go-{i}", folder / f"done-{i}"
            os.mkfifo(go, 0o600)
            os.mkfifo(done, 0o600)
            self.paths.append((go, done))
            self._go.append(os.open(go, os.O_RDWR))
            self._done.append(os.open(done, os.O_RDWR | os.O_NONBLOCK))

    def seat(self, i: int) -> Seat:
        go, done = self.paths[i]
        return Seat({"go": str(go), "done": str(done), "turn_s": self.turn_s}, len(self.paths))

    def release(self, sides: Sequence[int]) -> None:
        """FREE to ``sides``: each runs to its end alone (a worker gone or already free
        never reads it)."""
        for i in sides:
            self._signal(i, signal.SIGCONT)
            os.write(self._go[i], FREE)

    def _ready(self, i: int) -> None:
        """Side ``i`` said READY: its process group, stopped until its first turn."""
        try:
            self._groups[i] = int(Path(f"{self.paths[i][1]}{PGID}").read_text(encoding="ascii"))
        except (OSError, ValueError):
            return  # not stopped between turns: its busy wait is then recorded only
        self._signal(i, signal.SIGSTOP)

    def _signal(self, i: int, sig: signal.Signals) -> None:
        group = self._groups.get(i)
        # Never our own group (a worker that did not lead its own session).
        if group is not None and group > 1 and group != os.getpgrp():
            try:
                os.killpg(group, sig)
            except (ProcessLookupError, PermissionError):
                self._groups.pop(i, None)  # gone: nothing to stop or wake

    def close(self) -> None:
        for fd in (*self._go, *self._done):
            os.close(fd)

    def drive(self, order: Sequence[int], ended: Sequence[threading.Event]) -> int:
        """Hand the turns round ``order`` until every cell has ended (its word, or its
        thread's ``ended``); the turns given."""
        ready: set[int] = set()
        gone: set[int] = set()

        def live() -> list[int]:
            return [i for i in order if i not in gone and not ended[i].is_set()]

        while live() and not set(live()) <= ready:  # the first turn once all are ready
            for i, word in self._heard(live()):
                if word == READY:
                    ready.add(i)
                    self._ready(i)
                elif word == END:
                    gone.add(i)
        given, at = 0, len(order) - 1  # a place in ``order``: the last turn's
        while len(left := live()) > 1:
            at = next(k for k in [*range(at + 1, len(order)), *range(at + 1)] if order[k] in left)
            side = order[at]
            self._signal(side, signal.SIGCONT)
            os.write(self._go[side], GO)
            given += 1
            while side in live():
                words = [w for _, w in self._heard([side])]
                if END in words:
                    gone.add(side)
                    break
                if DONE in words:
                    self._signal(side, signal.SIGSTOP)
                    break
        self.release(left)  # alone from here: no more hand-overs
        return given

    def _heard(self, sides: Sequence[int]) -> list[tuple[int, bytes]]:
        """What the cells said within POLL_S, one byte a word, in order per cell."""
        fds = {self._done[i]: i for i in sides}
        readable, _, _ = select.select(list(fds), [], [], POLL_S)
        out: list[tuple[int, bytes]] = []
        for fd in readable:
            try:
                data = os.read(fd, 64)
            except BlockingIOError:
                continue
            out.extend((fds[fd], data[k : k + 1]) for k in range(len(data)))
        return out


@dataclass
class _Side(Generic[CellT]):
    cell: CellT
    done: threading.Event = field(default_factory=threading.Event)  # its cell has ended
    over: threading.Event = field(default_factory=threading.Event)  # its thread too
    result: StoredCell | BaseException | None = None


class Turns(Generic[CellT]):
    """Runs slots of a round's cells of one workload taking turns on ``plan`` (``run_on``
    runs one cell): the matrix loop's executor for the design "taking turns"."""

    width = 2  # a slot's cells share its wall time, as a duet's pair does (matrix.py)
    round_fields: Mapping[str, Any] = {}
    all_hosts = False

    def __init__(
        self,
        plan: Callable[[CellT], PinPlan],
        run_on: TurnOn[CellT],
        gate: QuietGate | None = None,
        disturbed: Callable[[Mapping[str, Any]], str | None] | None = None,
        turn_s: float = TURN_S,
    ) -> None:
        self.plan, self.run_on, self.gate, self.disturbed = plan, run_on, gate, disturbed
        self.turn_s = turn_s
        self.turns_given = 0

    def __enter__(self) -> Turns[CellT]:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def take(self, todo: list[CellT], i: int) -> list[CellT]:
        """``todo[i]`` and its partners of the round (taken out of ``todo``)."""
        taken = [todo.pop(j) for j in reversed(partners(todo, i))]
        return [todo[i], *reversed(taken)]

    def estimate(self, cells: Sequence[CellT], eta: EtaModel) -> float:
        return eta.remaining(cells) or 0.0

    def submit(self, cells: Sequence[CellT], folder: RunFolder) -> Results[CellT]:
        """The slot's cells taking turns; their records once all have ended (a runner
        bug is the cell's failure; a Ctrl-C propagates, nothing stored)."""
        got = self.run(cells, folder)
        out = []
        for c in cells:
            r = got.get(c.cell_id)
            if isinstance(r, KeyboardInterrupt):
                raise KeyboardInterrupt
            if not isinstance(r, StoredCell):
                crash = r if isinstance(r, Exception) else RuntimeError("no result")
                r = record_crash(c, crash, folder)
            out.append(Finished(c, r))
        yield from out

    def order(self, cells: Sequence[CellT]) -> list[int]:
        """The rotation: in cell-id order, started one further each round."""
        ids = sorted(range(len(cells)), key=lambda k: str(cells[k].cell_id))
        first = int(getattr(cells[0], "repeat", 0) or 0) % len(ids)
        return ids[first:] + ids[:first]

    def run(
        self, cells: Sequence[CellT], folder: RunFolder
    ) -> dict[str, StoredCell | BaseException]:
        """Every cell at once, taking turns; a KeyboardInterrupt propagates once all
        their workers are gone."""
        process.clear_interrupt()
        plan = self.plan(cells[0])
        sides = [_Side(c) for c in cells]
        waited = self.gate(plan.cpus) if self.gate is not None else None
        # Each cell records what the slot's one wait found; the seconds go to the first
        # only, so the report's "waited ... in all" counts the wait once.
        given: list[QuietFn | None] = [None] * len(cells)
        if waited is not None:
            again = replace(waited, waited_s=0.0)
            first: QuietFn = lambda cpus: waited  # noqa: E731
            rest: QuietFn = lambda cpus: again  # noqa: E731
            given = [first, *[rest] * (len(cells) - 1)]
        with tempfile.TemporaryDirectory(prefix="tfv-turns-") as scratch:
            baton = Baton(Path(scratch), len(cells), self.turn_s)
            driver: threading.Thread | None = None
            try:
                threads = [
                    threading.Thread(
                        target=self._side, args=(s, folder, g, baton.seat(k)), daemon=True
                    )
                    for k, (s, g) in enumerate(zip(sides, given, strict=True))
                ]
                driver = threading.Thread(
                    target=self._drive, args=(baton, self.order(cells), sides), daemon=True
                )
                driver.start()
                start_and_wait(threads, sides)
            finally:
                if driver is not None:  # it sees the cells' ends within POLL_S
                    driver.join()
                baton.close()
        out = {s.cell.cell_id: s.result for s in sides if s.result is not None}
        observe_slot(
            self.gate, self.disturbed, [r for r in out.values() if isinstance(r, StoredCell)]
        )
        return out

    def _drive(self, baton: Baton, order: list[int], sides: Sequence[_Side[CellT]]) -> None:
        try:
            self.turns_given += baton.drive(order, [s.done for s in sides])
        finally:  # whatever stopped the baton, no worker waits for a turn after it
            baton.release(order)

    def _side(self, me: _Side[CellT], folder: RunFolder, given: QuietFn | None, seat: Seat) -> None:
        try:
            me.result = self.run_on(me.cell, folder, given, seat)
        except BaseException as exc:  # noqa: BLE001 (handed to the main thread)
            me.result = exc
        finally:
            me.done.set()
            me.over.set()
