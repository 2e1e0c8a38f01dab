"""How one report is made, as given on the command line of ``report`` (or passed by
``compare`` and ``serve``, which end with a report): built once by commands/report.py
``write_report`` and handed whole to analyze/report/build.py, which hands it to each
task's analysis. Not a run option: nothing of it is stored in run.json."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from tfvariants.analyze.cost.pricing import Pricing
from tfvariants.options.decision import Override


@dataclass(frozen=True)
class ReportSettings:
    """A report's settings (None or False: not given on the command line)."""

    pricing: Pricing | None = None  # no prices: no cost columns
    baseline: str | None = None  # VARIANT[@THREADS]; None: the one baseline rule's
    # The decision settings given here win over the run's (options/decision.py reads them).
    decision: Override = field(default_factory=Override)
    allow_mixed_hosts: bool = False
    p99_bound_ms: float | None = None  # serving's latency bound; None: the run's
    disturbed: str | None = None  # the policy for disturbed cells; None: the run's
    # --beside: the run folders to set this run beside (analyze/report/otherruns.py);
    # none named, no other run is read
    beside: tuple[Path, ...] = ()
