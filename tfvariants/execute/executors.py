"""How a round's cells run: the matrix loop (execute/matrix.py) hands an executor the
cells of a slot and gets their stored records back, in the spirit of
concurrent.futures.Executor. Three strategies: ``Sequential`` (one cell at a time on this
host), execute/duet.py ``Duet`` (two cells of a round at once on disjoint CPUs) and
execute/ray_executor.py ``RayWaves`` (a whole round as one wave of Ray tasks).

The cell runner is injected: ``RunCell`` (cell, run folder) -> the record of the cell's
result, already stored (execute/runner.py run_cell bound to the run's variants and
options, or a simulation in tests and benchmarks)."""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol

from tfvariants.execute.eta import EtaModel
from tfvariants.execute.record import StoredCell
from tfvariants.plan.task import CellT, PlannedCell
from tfvariants.store.result import host_result
from tfvariants.store.runfolder import RunFolder
from workloads.envprobe import host_id

# (cell, run folder) -> the record of the cell's result, already stored (the runner's contract)
RunCell = Callable[[CellT, RunFolder], StoredCell]


@dataclass(frozen=True)
class Finished(Generic[CellT]):
    """One submitted cell, ended and stored. ``wall_s``: its wall time as measured where
    it ran (a Ray node); None: the loop charges it its share of the slot's wall time."""

    cell: CellT
    stored: StoredCell
    wall_s: float | None = None


# What submit gives: each cell's record as it is stored (a generator: closed early, it
# stops what is still in flight).
Results = Generator[Finished[CellT], None, None]


class Executor(Protocol[CellT]):
    """What the matrix loop asks of a strategy. ``width``: the cells of a slot (1: one
    at a time, 2: a duet's pair, 0: the rest of the round at once). Entered once around
    the whole run (a cluster is joined and left there)."""

    width: int
    round_fields: Mapping[str, Any]  # what the run's adaptive record says of its rounds
    all_hosts: bool  # its cells run on hosts declared as they join: all of them count

    def __enter__(self) -> Executor[CellT]: ...

    def __exit__(self, *exc: object) -> None: ...

    def take(self, todo: list[CellT], i: int) -> list[CellT]:
        """The slot that starts with ``todo[i]``: its other cells are taken out of
        ``todo`` (they are not visited again)."""
        ...

    def estimate(self, cells: Sequence[CellT], eta: EtaModel) -> float:
        """A round's wall time, for the budget's check before it starts."""
        ...

    def submit(self, cells: Sequence[CellT], folder: RunFolder) -> Results[CellT]:
        """Run the slot's cells into ``folder``; each one's record as it is stored (a
        runner bug is the cell's failure). A Ctrl-C propagates, with what was in flight
        stopped and not stored (resume runs it again)."""
        ...


def record_crash(cell: PlannedCell, exc: BaseException, folder: RunFolder) -> StoredCell:
    """A runner bug stored as the cell's failure: the matrix goes on."""
    reason = f"runner error: {type(exc).__name__}: {exc}"[:300]
    result = host_result(cell.to_dict(), "failed", reason)
    result["runner"] = {"host_id": host_id()}  # before it is stored, as the runner does
    return StoredCell.written(cell.cell_id, result, folder.write_cell(cell.cell_id, result))


class Sequential(Generic[CellT]):
    """One cell after another on this host, through ``run_cell``."""

    width = 1
    round_fields: Mapping[str, Any] = {}
    all_hosts = False

    def __init__(self, run_cell: RunCell[CellT]) -> None:
        self.run_cell = run_cell

    def __enter__(self) -> Sequential[CellT]:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def take(self, todo: list[CellT], i: int) -> list[CellT]:
        return [todo[i]]

    def estimate(self, cells: Sequence[CellT], eta: EtaModel) -> float:
        return eta.remaining(cells) or 0.0

    def submit(self, cells: Sequence[CellT], folder: RunFolder) -> Results[CellT]:
        for cell in cells:
            try:
                stored = self.run_cell(cell, folder)
            except KeyboardInterrupt:
                raise
            except Exception as exc:  # a runner bug must not stop the matrix
                stored = record_crash(cell, exc, folder)
            yield Finished(cell, stored)


class Switchable(Generic[CellT]):
    """One executor until ``switch()``, another after it: a run whose measurement design
    is chosen at its first look (commands/design.py) starts one cell at a time and runs
    its remaining rounds side by side. The loop reads ``width`` once per round, so a
    switch between rounds takes effect at the next round."""

    all_hosts = False

    def __init__(self, first: Executor[CellT], then: Executor[CellT], switched: bool) -> None:
        self.first, self.then, self.switched = first, then, switched
        self.width, self.round_fields = self.now.width, self.now.round_fields

    @property
    def now(self) -> Executor[CellT]:
        return self.then if self.switched else self.first

    def switch(self) -> None:
        self.switched = True
        self.width, self.round_fields = self.now.width, self.now.round_fields

    def __enter__(self) -> Switchable[CellT]:
        self.first.__enter__()
        self.then.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.then.__exit__(*exc)
        self.first.__exit__(*exc)

    def take(self, todo: list[CellT], i: int) -> list[CellT]:
        return self.now.take(todo, i)

    def estimate(self, cells: Sequence[CellT], eta: EtaModel) -> float:
        return self.now.estimate(cells, eta)

    def submit(self, cells: Sequence[CellT], folder: RunFolder) -> Results[CellT]:
        return self.now.submit(cells, folder)
