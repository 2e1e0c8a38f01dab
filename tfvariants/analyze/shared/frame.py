"""The frame of a report: what every run folder has, whatever its cells measured (the
header, the run folder's warnings, the environments per variant).

A training analysis (:class:`tfvariants.analyze.training.analysis.Analysis`) extends it
with its workloads; a serving-only run is reported in a plain ``RunFrame`` beside its
serving analysis (analyze/report/build.py ``Report``), so nothing pretends to be a
training analysis with no workloads.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from tfvariants.analyze.cost.pricing import Pricing
from tfvariants.analyze.shared import cautions
from tfvariants.analyze.shared.fields import environment_summary, flatten
from tfvariants.analyze.shared.header import Header
from tfvariants.plan.serve import ServeKey
from tfvariants.store.cellresult import AnyResult
from tfvariants.store.record import RunRecord
from tfvariants.store.rundir import RunContents
from tfvariants.store.training import ConfigKey


@dataclass(frozen=True, kw_only=True)
class RunFrame:
    results_dir: str
    run: RunRecord  # run.json, typed at the store (store/record.py)
    # the run's baseline configuration (None: none was chosen), in words only in render
    baseline: ConfigKey | ServeKey | None
    pricing: Pricing | None
    environments: dict[str, dict[str, str]]
    raw_environments: dict[str, list[tuple[str, str]]]
    warnings: list[cautions.StatWarning]
    counts: dict[str, int]
    logical_cpus: int | None
    generated_at: str = field(
        default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds")
    )
    variants: list[str] = field(default_factory=list)  # in display order
    store: RunContents | None = None  # the run folder as loaded, with its named problems
    header: Header = field(default_factory=Header)  # typed from ``run`` (header_of)


def environments_of(
    results: Iterable[AnyResult], variants: Iterable[str], *, ok_only: bool = False
) -> tuple[dict[str, dict[str, str]], dict[str, list[tuple[str, str]]]]:
    """Per variant, the first recorded environment: the comparison table and every field."""
    results = list(results)
    envs: dict[str, dict[str, str]] = {}
    raw: dict[str, list[tuple[str, str]]] = {}
    for v in variants:
        env: Mapping[str, Any] | None = next(
            (
                r.environment
                for r in results
                if r.variant == v and r.environment and (r.ok or not ok_only)
            ),
            None,
        )
        if env:
            envs[v], raw[v] = environment_summary(dict(env)), flatten(dict(env))
    return envs, raw
