"""The report's sections: small immutable records, in reading order, that the HTML
template loops over (each names its template, ``render/templates/sections/<name>``).

A section of every run is one class here, one line in :func:`sections_of` and one
template file; a task's sections are its part's (``tfvariants.analyze.<stem>``, placed by
``TaskPart.sections``): the renderer does not change. What a section holds is analysed
data; how it looks (charts, number formats) is the renderer's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from tfvariants.analyze.cost.preemption import run_preemptions
from tfvariants.analyze.cost.pricing import Pricing
from tfvariants.analyze.report.answer import answer_of, notes_below
from tfvariants.analyze.report.part import Section, Shared, TaskPart
from tfvariants.analyze.report.probes import VariantProbe, probes_of
from tfvariants.analyze.report.provenance import WhereRan
from tfvariants.analyze.shared.cautions import StatWarning
from tfvariants.analyze.shared.frame import RunFrame
from tfvariants.store.record import RunRecord


@dataclass(frozen=True)
class CompiledAnswer:
    """A ``--preset compiled`` run's notes below the answer table: the builds not run,
    the band and why, the study's note."""

    template: ClassVar[str] = "compiled.html"
    lines: tuple[str, ...]


@dataclass(frozen=True)
class Warnings:
    template: ClassVar[str] = "warnings.html"
    warnings: tuple[StatWarning, ...]


@dataclass(frozen=True)
class VariantProbes:
    """What each variant's probe found on this host (backend, oneDNN, no-op settings)."""

    template: ClassVar[str] = "variants.html"
    probes: tuple[VariantProbe, ...]


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


def sections_of(frame: RunFrame, parts: Sequence[TaskPart], shared: Shared) -> tuple[Section, ...]:
    """The report's sections in reading order, from the facts computed once
    (``shared``) and each task's part; one with nothing to say is left out."""
    placed = [p.sections(shared) for p in parts]
    out: list[Section | None] = [
        answer_of(frame, parts, shared.other_runs),
        _compiled(shared.compiled, frame.run),
        *(s for p in placed for s in p.summary),
        shared.other_runs,
        Warnings(tuple(frame.warnings)) if frame.warnings else None,
        *(s for p in placed for s in p.body),
        _variant_probes(frame.run),
        *(s for p in placed for s in p.late),
        Environments(
            tuple(w for p in parts for w in p.where_ran()),
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
