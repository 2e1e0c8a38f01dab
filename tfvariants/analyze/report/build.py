"""A report, built: the run folder loaded once, each task's part (analyze/report/part.py)
made over the loaded records, and the list of sections the renderer lays out (render/
only formats). Nothing here names a task: each task's builder is found by its name
(:func:`parts`)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from tfvariants.analyze.report.otherruns import OtherRuns
from tfvariants.analyze.report.part import (
    Headline,
    Section,
    Shared,
    TaskPart,
    headline_of,
    shared_of,
)
from tfvariants.analyze.report.preset import with_preset_baseline
from tfvariants.analyze.report.sections import sections_of
from tfvariants.analyze.shared.frame import RunFrame
from tfvariants.analyze.shared.settings import ReportSettings
from tfvariants.analyze.statistics.decide import Settings, run_settings
from tfvariants.plan.tasks import tasks
from tfvariants.store.rundir import RunContents, load_run_dir

Builder = Callable[[RunContents, ReportSettings, Settings], TaskPart | None]


def parts() -> tuple[Builder, ...]:
    """Each task's part builder, in the tasks' order (the first leads: its frame is the
    header's): ``build_<stem>`` of ``tfvariants.analyze.<stem>`` (a task's analyze side,
    a module or a package), by the task's stem. A builder gives None when the folder
    holds none of its task's cells."""
    return tuple(
        getattr(importlib.import_module(f"tfvariants.analyze.{t.stem}"), f"build_{t.stem}")
        for t in tasks().values()
    )


P = TypeVar("P")


@dataclass(frozen=True)
class Report:
    """Everything one report shows. ``frame`` is the header's facts (the leading
    part's); ``parts`` each task's part; ``shared`` the facts more than one output reads
    (compiled answer, other runs), computed once: the HTML, the CSV and the
    terminal read them."""

    frame: RunFrame
    parts: tuple[TaskPart, ...]
    sections: tuple[Section, ...]
    headline: Headline
    shared: Shared = Shared()

    def part(self, kind: type[P]) -> P | None:
        """The report's part of that class (None: the run has no such cells)."""
        return next((p for p in self.parts if isinstance(p, kind)), None)

    @property
    def other_runs(self) -> OtherRuns | None:
        """This run beside the other runs of its comparisons."""
        return self.shared.other_runs

    @property
    def compiled(self) -> tuple[str, ...]:
        """A compiled-preset run's answer, as the HTML and the terminal show it."""
        return self.shared.compiled


def build_report(results_dir: Path, report: ReportSettings | None = None) -> Report:
    """Load ``results_dir`` once, read its decision settings once (the one reader,
    options/decision.py), and make each task's part with them (the baseline: the
    report's, else a compiled-preset run's stock wheel, else the rule's)."""
    report = report or ReportSettings()
    contents = load_run_dir(Path(results_dir), allow_mixed_hosts=report.allow_mixed_hosts)
    report = with_preset_baseline(report, contents.run)
    settings = run_settings(contents.run, report.decision)
    built = [build(contents, report, settings) for build in parts()]
    return assemble(*(p for p in built if p is not None))


def assemble(*parts: TaskPart) -> Report:
    """The report of parts already made (one at least), the first leading."""
    if not parts:
        raise ValueError("a report needs a part of at least one task")
    frame = parts[0].frame
    shared = shared_of(parts)
    sections = sections_of(frame, parts, shared)
    return Report(frame, parts, sections, headline_of(frame, parts), shared)
