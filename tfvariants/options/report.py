"""How one report is made, as given on the command line of ``report`` (or passed by
``compare`` and ``serve``, which end with a report): built once by the command and
handed whole to analyze/report/build.py, which hands it to each task's analysis."""

from __future__ import annotations

from dataclasses import dataclass, field

from tfvariants.analyze.cost.pricing import Pricing
from tfvariants.options.decision import Override


@dataclass(frozen=True)
class ReportSettings:
    """A report's settings; every field's None (or False) means "the run's, else the
    default"."""

    pricing: Pricing | None = None  # no prices: no cost columns
    baseline: str | None = None  # VARIANT[@THREADS]; else the one baseline rule
    # The decision settings given here win over the run's (options/decision.py reads them).
    decision: Override = field(default_factory=Override)
    allow_mixed_hosts: bool = False
    p99_bound_ms: float | None = None  # serving: the latency bound
    disturbed: str | None = None  # training: the policy for disturbed cells
