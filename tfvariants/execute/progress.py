"""The matrix's progress on the console: a bar with the cell (or pair) in flight and the
ETA, and a line per finished cell, so logs (CI, non-terminals) show the run too."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tfvariants.errors import one_line
from tfvariants.execute.eta import fmt_s
from tfvariants.plan.cell import config_label
from tfvariants.plan.task import PlannedCell

if TYPE_CHECKING:  # rich.progress is imported only when a bar is shown (start-up time)
    from rich.console import Console
    from rich.progress import Progress, TaskID


class Display:
    """Rich progress: current cell, done/total, ETA learned from finished cells; plus one
    line per finished cell so logs (CI, non-terminals) show the run too."""

    def __init__(self, console: Console | None, total: int, done: int) -> None:
        self.total, self.done = total, done
        self.console = console
        self.progress: Progress | None = None
        self.task: TaskID | None = None

    def __enter__(self) -> Display:
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

    def start(
        self, cell: PlannedCell, remaining_s: float | None, beside: PlannedCell | None = None
    ) -> None:
        """``beside``: the cell running at the same time (a duet's pair)."""
        if self.progress is not None:
            from rich.markup import escape

            text = f"{cell.workload} {config_label(cell.variant, cell.threads)} r{cell.repeat}"
            if beside is not None:
                text += f" + {config_label(beside.variant, beside.threads)}"
            label = escape(text)
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
