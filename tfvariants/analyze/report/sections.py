"""The report's sections: small immutable records, in reading order, that the HTML
template loops over (each names its template, ``render/templates/sections/<name>``).

A new section is one class here, one line in :func:`sections_of` and one template file:
the renderer does not change. What a section holds is analysed data; how it looks
(charts, number formats) is the renderer's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from tfvariants.analyze.cost.pricing import Pricing
from tfvariants.analyze.report.compiled import answer
from tfvariants.analyze.report.otherruns import OtherRuns
from tfvariants.analyze.report.provenance import WhereRan, where_ran
from tfvariants.analyze.serving.configs import ServingAnalysis
from tfvariants.analyze.shared.cautions import StatWarning
from tfvariants.analyze.shared.frame import RunFrame
from tfvariants.analyze.training.analysis import Analysis
from tfvariants.analyze.training.groups import WorkloadReport
from tfvariants.analyze.training.roofline import Roofline as RooflineAnalysis
from tfvariants.analyze.training.roofline import roofline


@dataclass(frozen=True)
class CompiledAnswer:
    """A ``--preset compiled`` run's answer: headline, findings, the study's note."""

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
    variant_info: Mapping[str, Mapping[str, Any]]


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


@dataclass(frozen=True)
class Prices:
    template: ClassVar[str] = "prices.html"
    pricing: Pricing


Section = (
    CompiledAnswer
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
    other: OtherRuns | None = None,
) -> tuple[Section, ...]:
    """The report's sections in reading order; one with nothing to say is left out."""
    workloads = training.workloads if training is not None else []
    out: list[Section | None] = [
        _compiled(training, other),
        TrainingSummary(tuple(workloads)) if workloads else None,
        other,
        Warnings(tuple(frame.warnings)) if frame.warnings else None,
        *(Workload(w, i) for i, w in enumerate(workloads, 1)),
        _roofline(training),
        _variant_probes(frame.run),
        Serving(serving) if serving is not None else None,
        Environments(tuple(where_ran(workloads)), frame.environments, frame.raw_environments),
        Prices(frame.pricing) if frame.pricing is not None else None,
    ]
    return tuple(s for s in out if s is not None)


def _roofline(training: Analysis | None) -> Roofline | None:
    roof = roofline(training.workloads, training.run) if training is not None else None
    return Roofline(roof) if roof is not None else None


def _compiled(training: Analysis | None, other: OtherRuns | None) -> CompiledAnswer | None:
    """The answer box; beside other runs of the same comparisons, their sentence too
    (before the study's note, which stays last): one run's answer to a few-percent
    question is not the host's."""
    if training is None:
        return None
    lines = answer(training.workloads, training.run, training.settings.min_effect)
    if lines and other is not None:
        lines = [*lines[:-1], other.sentence(), lines[-1]]
    return CompiledAnswer(tuple(lines)) if lines else None


def _variant_probes(run: Mapping[str, Any]) -> VariantProbes | None:
    info = run.get("variant_info") or {}
    probed = {v: i for v, i in info.items() if isinstance(i, dict) and "backend" in i}
    return VariantProbes(info) if probed else None
