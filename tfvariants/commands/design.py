"""The compiled preset's measurement design, chosen at its first look (the rule:
analyze/training/design.py): where consecutive cells move together, the remaining
rounds run the compared builds side by side (the duet, execute/duet.py, each side on
half the CPUs); where processes differ, the remaining rounds measure cheaper processes
(analyze/training/processcells.py), so more of them fit the budget. One line on the
console at the first look and in the report; run.json's "adaptive.design" keeps it for
a resume. A user's own --duet or a run without a budget
(no first look) is never changed."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from tfvariants.analyze.report.preset import PRESET
from tfvariants.analyze.training import processcells
from tfvariants.analyze.training.decomposition import decompose
from tfvariants.analyze.training.design import Design, cells_of_results, choose, design_of
from tfvariants.store.cellresult import AnyResult
from tfvariants.store.training import training

if TYPE_CHECKING:
    from rich.console import Console

    from tfvariants.execute.executors import Executor, Switchable
    from tfvariants.plan.cell import Cell
    from tfvariants.plan.duet import DuetPlans
    from tfvariants.plan.spec import MatrixSpec
    from tfvariants.plan.topology import Topology
    from tfvariants.rounds.training import NextRoundHook
    from tfvariants.store.record import RunRecord


def chooses(spec: MatrixSpec, executor: str, hook: NextRoundHook | None) -> bool:
    """Whether this run chooses its design at the first look: a compiled-preset run on
    this host with a budget (adaptive rounds) whose user did not ask for --duet."""
    preset = spec.options.preset
    return (
        preset is not None
        and preset.name == PRESET
        and executor == "local"
        and not spec.options.duet
        and hook is not None
    )


def side_by_side(
    spec: MatrixSpec, pinned: Mapping[str, bool], topology: Topology
) -> DuetPlans | str:
    """The duet's two plans at the run's thread count, or why it cannot run here (in
    words for the design's line: what would let it)."""
    from tfvariants.plan.duet import duet_fit, duet_plans

    configs = spec.configurations()
    threads = [t for _, t in configs]
    fit = duet_fit(threads, len(configs), pinned, topology)
    if not isinstance(fit, str):
        return fit
    why = fit.removeprefix("--duet: ")
    half = max(threads) // 2
    if half >= 1 and not isinstance(duet_plans(half, topology), str):
        why += f" (a run with --threads {half} would fit side by side)"
    return why


class DesignChoice:
    """The adaptive rounds' hook with the design chosen at the first look: the hook's
    answer, unchanged; at the first look the rule's design, said in one line and, when
    it is side by side, the executor switched for the rounds that follow; when it is
    more processes, the hook's window plan (what the cells after the first look
    measure) made the design's cheaper cells, after every look (the hook plans anew)."""

    def __init__(
        self,
        hook: NextRoundHook,
        executor: Switchable[Cell],
        fits: str | None,
        console: Console,
        before: Design | None = None,
    ) -> None:
        self.hook, self.executor, self.fits, self.console = hook, executor, fits, console
        self.design = before  # a resumed run's: kept, never chosen again

    def __call__(self, stored: Mapping[str, AnyResult]) -> tuple[list[Cell], str]:
        more, why = self.hook(stored)
        at = self.hook.last
        if self.design is None and at is not None and at.look is not None:
            found = decompose(cells_of_results(stored))
            self.design = choose(
                found,
                self.fits,
                self.hook.rule.max_repeats,
                self._cheaper(stored, at.look),
                (self._left_s(), len(more)),
            )
            if self.design.switched:
                self.executor.switch()
            self.console.print(self.design.line(), highlight=False, markup=False)
        if self.design is not None and self.design.cells is not None:
            self.hook.window_plan = self.design.cells.window_plan(self.hook.window_plan)
        return more, why

    def _cheaper(
        self, stored: Mapping[str, AnyResult], look: int
    ) -> processcells.ProcessCells | None:
        """The cheaper processes, planned from the first look's cells (None where the
        user chose the window: --min-steady-s)."""
        o = self.hook.spec.options
        if not o.plan_window:
            return None
        first = [r for r in training(stored.values()) if r.round < look]
        return processcells.plan(first, look, o.min_steady_s, o.min_steady_steps)

    def _left_s(self) -> float:
        hook = self.hook
        spent = hook.spent_before + hook.clock() - hook.started
        return max((hook.spec.options.budget_s or 0.0) - spent, 0.0)


def stored_design(record: RunRecord) -> Design | None:
    """The design a resumed run chose at its first look (None: not chosen yet)."""
    return design_of(record.adaptive.design if record.adaptive is not None else None)


def kept_line(design: Design, fits: str | None) -> str:
    """What a resume says of the design it keeps."""
    if design.switched and fits is not None:
        return f"design: kept from this run's first look, but side by side cannot run here: {fits}"
    return f"{design.line()} (kept from this run's first look)"


def choosing(
    spec: MatrixSpec,
    pinned: Mapping[str, bool],
    executors: tuple[Executor[Cell], Callable[[DuetPlans], Executor[Cell]]],
    hook: NextRoundHook,
    stored: RunRecord,
    console: Console,
) -> DesignChoice:
    """The hook that chooses the design at the first look, with its switchable executor
    (``executors``: the sequential one, and the duet's on given plans); a resume starts
    with the design its first look chose."""
    from tfvariants.execute.executors import Switchable
    from tfvariants.plan.topology import read_topology

    sequential, duet = executors
    fit = side_by_side(spec, pinned, read_topology())
    fits = fit if isinstance(fit, str) else None
    then = sequential if isinstance(fit, str) else duet(fit)
    kept = stored_design(stored)
    if kept is not None:
        console.print(kept_line(kept, fits), highlight=False, markup=False)
    switched = kept is not None and kept.switched and fits is None
    return DesignChoice(hook, Switchable(sequential, then, switched), fits, console, kept)
