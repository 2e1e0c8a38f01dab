"""The report's sections: small immutable records, in reading order, that the HTML
template loops over (each names its template, ``render/templates/sections/<name>``).

A new section is one class here, one line in :func:`sections_of` and one template file:
the renderer does not change. What a section holds is analysed data; how it looks
(charts, number formats) is the renderer's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from tfvariants.analyze.cost.preemption import run_preemptions
from tfvariants.analyze.cost.pricing import Pricing
from tfvariants.analyze.report.answer import Answer, answer_of, notes_below
from tfvariants.analyze.report.otherruns import OtherRuns
from tfvariants.analyze.report.probes import VariantProbe, probes_of
from tfvariants.analyze.report.provenance import WhereRan, where_ran
from tfvariants.analyze.serving.configs import ServingAnalysis
from tfvariants.analyze.shared.cautions import StatWarning
from tfvariants.analyze.shared.frame import RunFrame
from tfvariants.analyze.training.analysis import Analysis
from tfvariants.analyze.training.groups import WorkloadReport
from tfvariants.analyze.training.roofline import Roofline as RooflineAnalysis
from tfvariants.store.record import RunRecord


@dataclass(frozen=True)
class CompiledAnswer:
    """A ``--preset compiled`` run's notes below the answer table: the builds not run,
    the band and why, the study's note."""

    template: ClassVar[str] = "compiled.html"
    lines: tuple[str, ...]


@dataclass(frozen=True)
class TrainingSummary:
    """Each workload's sentences and its fastest / cheapest, the method, the noise."""

    template: ClassVar[str] = "summary.html"
    workloads: tuple[WorkloadReport, ...]


@dataclass(frozen=True)
class Warnings:
    template: ClassVar[str] = "warnings.html"
    warnings: tuple[StatWarning, ...]


@dataclass(frozen=True)
class Workload:
    """One workload: charts, the verdict table, measurements, accuracy parity."""

    template: ClassVar[str] = "workload.html"
    workload: WorkloadReport
    index: int  # 1-based, for the section's anchor


@dataclass(frozen=True)
class Roofline:
    """How close to the hardware: the peaks and each configuration's share of them."""

    template: ClassVar[str] = "roofline.html"
    roofline: RooflineAnalysis


@dataclass(frozen=True)
class VariantProbes:
    """What each variant's probe found on this host (backend, oneDNN, no-op settings)."""

    template: ClassVar[str] = "variants.html"
    probes: tuple[VariantProbe, ...]


@dataclass(frozen=True)
class Serving:
    template: ClassVar[str] = "serving.html"
    serving: ServingAnalysis


@dataclass(frozen=True)
class Environments:
    """Where each configuration ran (Ray) and the environment per variant."""

    template: ClassVar[str] = "environments.html"
    where_ran: tuple[WhereRan, ...]
    environments: Mapping[str, Mapping[str, str]]
    raw_environments: Mapping[str, list[tuple[str, str]]]
    preemptions: tuple[str, ...] = ()  # per node type, priced (analyze/cost/preemption.py)


@dataclass(frozen=True)
class Prices:
    template: ClassVar[str] = "prices.html"
    pricing: Pricing


@dataclass(frozen=True)
class Shared:
    """The facts more than one output reads, computed once per report
    (analyze/report/build.py): the sections, the CSV and the terminal read these."""

    roofline: RooflineAnalysis | None = None
    compiled: tuple[str, ...] = ()  # a compiled-preset run's answer, () for any other
    other_runs: OtherRuns | None = None


Section = (
    Answer
    | CompiledAnswer
    | TrainingSummary
    | Warnings
    | Workload
    | Roofline
    | VariantProbes
    | Serving
    | Environments
    | Prices
    | OtherRuns
)


def sections_of(
    frame: RunFrame,
    training: Analysis | None,
    serving: ServingAnalysis | None,
    shared: Shared,
) -> tuple[Section, ...]:
    """The report's sections in reading order, from the facts computed once
    (``shared``); one with nothing to say is left out."""
    workloads = training.workloads if training is not None else []
    out: list[Section | None] = [
        answer_of(frame, training, serving, shared.roofline, shared.other_runs),
        _compiled(shared.compiled, frame.run),
        TrainingSummary(tuple(workloads)) if workloads else None,
        shared.other_runs,
        Warnings(tuple(frame.warnings)) if frame.warnings else None,
        *(Workload(w, i) for i, w in enumerate(workloads, 1)),
        Roofline(shared.roofline) if shared.roofline is not None else None,
        _variant_probes(frame.run),
        Serving(serving) if serving is not None else None,
        Environments(
            tuple(where_ran(workloads)),
            frame.environments,
            frame.raw_environments,
            tuple(
                run_preemptions(frame.store.results.values() if frame.store else (), frame.pricing)
            ),
        ),
        Prices(frame.pricing) if frame.pricing is not None else None,
    ]
    return tuple(s for s in out if s is not None)


def _compiled(lines: tuple[str, ...], run: RunRecord) -> CompiledAnswer | None:
    """The answer box below the table: what the table does not say (the band, builds
    not run or without a verdict, the study's note)."""
    kept = notes_below(list(lines), run) if lines else []
    return CompiledAnswer(tuple(kept)) if kept else None


def _variant_probes(run: RunRecord) -> VariantProbes | None:
    probes = probes_of(run.variant_info)
    return VariantProbes(probes) if probes else None
