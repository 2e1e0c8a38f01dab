"""The report's header facts and the adaptive record's summary, typed from run.json once
here, so that the renderer and its templates read no raw run record."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


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


def _dict(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def scale_of(options: Mapping[str, Any]) -> Scale | None:
    if not options:
        return None
    per = _dict(options.get("per_workload"))
    return Scale(
        epochs=options.get("epochs"),
        samples=options.get("samples"),
        quick=bool(options.get("quick")),
        per_workload=tuple(
            (str(w), _dict(sc).get("epochs"), _dict(sc).get("samples")) for w, sc in per.items()
        ),
        data=options.get("data"),
    )


def adaptive_of(record: Mapping[str, Any]) -> AdaptiveSummary | None:
    if not record:
        return None
    return AdaptiveSummary(
        looks=tuple(record.get("looks") or ()),
        budget_s=record.get("budget_s"),
        rounds=len(record.get("rounds") or ()),
        stopped=record.get("stopped"),
    )


def header_of(run: Mapping[str, Any]) -> Header:
    """The header's facts of a run record."""
    started = run.get("started_at")
    return Header(
        started_at=str(started) if started else None,
        scale=scale_of(_dict(run.get("options"))),
        adaptive=adaptive_of(_dict(run.get("adaptive"))),
    )
