"""The report's header facts and the adaptive record's summary, typed from run.json once
here, so that the renderer and its templates read no raw run record."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tfvariants.options.training import TrainingOptions
from tfvariants.store.record import AdaptiveRecord, RunRecord


@dataclass(frozen=True)
class Scale:
    """The workload scale a training run measured (its options)."""

    epochs: int | None
    samples: int | None
    quick: bool
    per_workload: tuple[tuple[str, int | None, int | None], ...]  # (workload, epochs, samples)
    data: str | None


@dataclass(frozen=True)
class AdaptiveSummary:
    """What the adaptive repeats did: the looks planned, the budget, the extra rounds."""

    looks: tuple[int, ...]
    budget_s: float | None
    rounds: int  # extra rounds run
    stopped: str | None


@dataclass(frozen=True)
class Header:
    started_at: str | None = None
    scale: Scale | None = None  # None: the run stored no options
    adaptive: AdaptiveSummary | None = None  # None: no adaptive repeats


def scale_of(run: RunRecord) -> Scale | None:
    options = run.options
    if options is None:
        return None
    if not isinstance(options, TrainingOptions):  # a serving run: no training scale
        return Scale(epochs=None, samples=None, quick=False, per_workload=(), data=None)
    per = options.per_workload if isinstance(options.per_workload, dict) else {}
    return Scale(
        epochs=options.epochs,
        samples=options.samples,
        quick=bool(options.quick),
        per_workload=tuple(
            (str(w), _dict(sc).get("epochs"), _dict(sc).get("samples")) for w, sc in per.items()
        ),
        data=options.data if "data" in run.stored_options else None,  # as an old run said
    )


def _dict(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def adaptive_of(record: AdaptiveRecord | None) -> AdaptiveSummary | None:
    if record is None:
        return None
    return AdaptiveSummary(
        looks=record.looks or (),
        budget_s=record.budget_s,
        rounds=len(record.rounds),
        stopped=record.stopped,
    )


def header_of(run: RunRecord) -> Header:
    """The header's facts of a run record."""
    return Header(
        started_at=run.started_at,
        scale=scale_of(run),
        adaptive=adaptive_of(run.adaptive),
    )
