"""A task's part of a report: what one task (training, serving) supplies, so the report's
build, its sections, its answer and every output (render/) iterate over the parts and
never name a task. A task's part is ``build_<stem>`` of its analyze side,
``tfvariants.analyze.<stem>``, found by ``build.py parts``; docs/ARCHITECTURE.md "A new
task type" lists the rest.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from tfvariants.analyze.cost.pricing import Pricing
from tfvariants.analyze.report.otherruns import OtherRuns
from tfvariants.analyze.report.provenance import WhereRan
from tfvariants.analyze.shared.frame import RunFrame
from tfvariants.analyze.statistics.stats import Comparison
from tfvariants.options.preset import PresetRecord


class Section(Protocol):
    """A section of the report: an immutable record its template reads
    (``render/templates/sections/<template>``)."""

    template: ClassVar[str]


@dataclass(frozen=True)
class Shared:
    """The facts more than one output reads, computed once per report by the part that
    owns them: the sections, the answer and the terminal read these."""

    compiled: tuple[str, ...] = ()  # a compiled-preset run's answer, () for any other
    other_runs: OtherRuns | None = None


@dataclass(frozen=True)
class Placed:
    """A part's sections by where they go among the report's own (answer, compiled
    answer, other runs, warnings, variant probes, environments, prices)."""

    summary: tuple[Section, ...] = ()  # after the answer, before other runs and warnings
    body: tuple[Section, ...] = ()  # after the warnings
    late: tuple[Section, ...] = ()  # after the variant probes


@dataclass(frozen=True)
class Row:
    """One configuration of one workload (or serving model), as table cells."""

    subject: str  # the workload or the serving model
    config: str
    verdict: str  # faster / slower / cheaper / dearer / equivalent / undecided / baseline
    ratio: str  # against the baseline: time (training) or cost (serving)
    interval: str
    cost: str
    headroom: str  # at most this much faster at the CPU's attainable peak ("" unknown)
    best: str  # fastest / cheapest / both, "?" when not decided against the next
    under_load: bool = False


@dataclass(frozen=True)
class AnswerPart:
    """A part's rows of the answer table and what the answer says of them."""

    rows: tuple[Row, ...]
    compared: tuple[Comparison, ...]  # the comparisons against the baseline the rows show
    keys: tuple[tuple[str, int, str], ...]  # (variant, threads, device) of its configurations
    round_seconds: float | None = None  # one more round's wall time, when the part knows it
    noise: str | None = None  # where its noise comes from, one line (training: decomposition)
    # Its own heading where the table's verdicts cannot say it (serving: no point kept the
    # latency bound, so no row has a verdict), and what the rows cannot show, a line each
    heading: str | None = None
    beyond: tuple[str, ...] = ()


@dataclass(frozen=True)
class CsvTable:
    """A part's CSV: its columns and one row per stored cell."""

    columns: tuple[str, ...]
    rows: tuple[dict[str, Any], ...]


@dataclass(frozen=True)
class Words:
    """How the report names a part: the title's, the table's and the question's words."""

    subject: str  # the answer table's subject column: "workload", "model"
    ratio: str  # what its rows compare: "time", "cost"
    cost: str  # its cost column: "cost per run", "cost"
    command: str  # the command that resumes its run: "compare", "serve"
    question: str  # the page's question when the answer asks none
    scaled: bool = False  # the run's workload scale (the header's) describes its cells


class TaskPart(Protocol):
    """One task's part of a report (``tfvariants.analyze.<stem>``)."""

    name: ClassVar[str]  # the task's name in the report's words ("serving")
    words: ClassVar[Words]

    @property
    def frame(self) -> RunFrame:
        """The header's facts, when this part leads the report."""

    @property
    def pricing(self) -> Pricing | None: ...

    @property
    def shared(self) -> Shared:
        """The facts of this part other outputs read (Shared() for none)."""

    def subjects(self) -> tuple[str, ...]:
        """Its workloads or models, in order (none: the part has nothing to show)."""

    def title(self) -> str:
        """Its words in the page's title."""

    def asks(self, what: str, frame: RunFrame) -> str:
        """The run's question when this part leads (``what``: what the run varied)."""

    def baselines(self, frame: RunFrame) -> tuple[tuple[str, str], ...]:
        """(subject, baseline label) where a subject's baseline is not the run's."""

    def sections(self, shared: Shared) -> Placed: ...

    def where_ran(self) -> tuple[WhereRan, ...]: ...

    def answer(self, currency: str, compiled: PresetRecord | None) -> AnswerPart: ...

    def csv(self) -> CsvTable | None:
        """Its CSV (None: nothing to write)."""

    def said(self, shared: Shared) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """Its conclusions on the terminal: (heading, sentences) per subject."""

    def notes(self, shared: Shared) -> tuple[str, ...]:
        """Its sentences on the terminal after its conclusions."""


def lead(parts: Sequence[TaskPart]) -> TaskPart:
    """The part that asks the report's question: the first with anything to show."""
    return next((p for p in parts if p.subjects()), parts[0])


def shared_of(parts: Sequence[TaskPart]) -> Shared:
    """The report's shared facts: each field from the first part that has it."""
    return Shared(
        compiled=next((p.shared.compiled for p in parts if p.shared.compiled), ()),
        other_runs=next((p.shared.other_runs for p in parts if p.shared.other_runs), None),
    )


@dataclass(frozen=True)
class Headline:
    """The page's head, from its parts: title, question, per-subject baselines."""

    title: str
    question: str  # the page's question when its answer asks none
    baselines: tuple[tuple[str, str], ...] = field(default=())
    scaled: bool = False  # the header's scale describes a part with subjects


def headline_of(frame: RunFrame, parts: Sequence[TaskPart]) -> Headline:
    titles = [t for p in parts if (t := p.title())]
    return Headline(
        ", ".join(titles),
        lead(parts).words.question,
        tuple(b for p in parts for b in p.baselines(frame)),
        any(p.words.scaled and p.subjects() for p in parts),
    )
