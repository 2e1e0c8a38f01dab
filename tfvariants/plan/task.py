"""What a task (training, serving) gives the code that runs and stores it.

Training (:class:`tfvariants.plan.spec.MatrixSpec`, :class:`tfvariants.plan.cell.Cell`)
and serving (:class:`tfvariants.plan.serve.ServeSpec`, :class:`ServeCell`) both
implement these protocols, so the matrix (execute/matrix.py), the runner
(execute/runner.py ``run_request``) and the run store (``prepare_run_dir``) take either,
checked by the type checker rather than by duck typing. What the store looks up by a
stored task's name is plan/tasks.py's ``Task``, with what a cell's worker is asked
(``Task.worker``: a ``WorkerOrder``, e.g. plan/serve.py ``serving_order``; the runner,
execute/runner.py ``run_cell``, sends it). The rest of a task's interface lives in
the stage that owns it: the result type, its
parser and validator (store/training.py ``CellResult``, store/serving.py ``ServeResult``,
each an ``AnyResult``), the
analysis and dry run (analyze/training/ and analyze/serving/, over one loaded folder:
analyze/report/build.py ``build_report``); docs/ARCHITECTURE.md "A new task type".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, TypeVar

from tfvariants.options.declare import RunOptionsBase


class PlannedCell(Protocol):
    """One cell as the matrix, the runner and the store see it."""

    @property
    def variant(self) -> str: ...

    @property
    def threads(self) -> int: ...

    @property
    def workload(self) -> str: ...  # the training workload, or a serving cell's label

    @property
    def repeat(self) -> int: ...  # the round

    @property
    def cell_id(self) -> str: ...  # the file stem in <run>/cells/

    def to_dict(self) -> dict[str, Any]: ...  # echoed into the result's "cell"


CellT = TypeVar("CellT", bound=PlannedCell)
CellT_co = TypeVar("CellT_co", bound=PlannedCell, covariant=True)
# The run options of a plan's task (TrainingOptions, ServingOptions): a reader that
# needs only the shared ones asks for their class (``MatrixPlan[PlannedCell, DecisionOptions]``).
OptionsT_co = TypeVar("OptionsT_co", bound=RunOptionsBase, covariant=True)


class MatrixPlan(Protocol[CellT_co, OptionsT_co]):
    """A matrix definition: its identity (what a resume must not change), its run.json
    record, its run options and its cells in run order (interleaved rounds)."""

    @property
    def variants(self) -> tuple[str, ...]: ...

    @property
    def repeats(self) -> int: ...

    @property
    def options(self) -> OptionsT_co: ...

    @property
    def variant_info(self) -> dict[str, dict[str, Any]]: ...

    def configurations(self) -> list[tuple[str, int]]: ...  # (variant, threads): what is placed

    def identity(self) -> dict[str, Any]: ...

    def to_json(self, started_at: str) -> dict[str, Any]: ...

    def cells(self) -> Sequence[CellT_co]: ...
