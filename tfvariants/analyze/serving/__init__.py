"""Serving's analyze side, one importable name for the stages above (a task's
``tfvariants.analyze.<stem>``, docs/ARCHITECTURE.md "A new task type"): its analysis
(configurations, curves, operating points under the p99 bound, cost per million
predictions and every comparison), its dry run and its part of a report
(``build_serving``, found by the report by the task's stem).

Its names are imported on first use (a command's start-up, e.g. ``tfvariants --help``,
does not pay for the whole analysis).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tfvariants.analyze.shared.lazy import lazy_names

if TYPE_CHECKING:
    from tfvariants.analyze.serving.analysis import analyze_serving, analyze_serving_contents
    from tfvariants.analyze.serving.dryrun import serving_dry_run
    from tfvariants.analyze.serving.part import ServingPart, build_serving

_MODULE = {
    "analyze_serving": "analysis",
    "analyze_serving_contents": "analysis",
    "serving_dry_run": "dryrun",
    "ServingPart": "part",
    "build_serving": "part",
}
__all__ = [
    "ServingPart",
    "analyze_serving",
    "analyze_serving_contents",
    "build_serving",
    "serving_dry_run",
]

__getattr__ = lazy_names(__name__, _MODULE)
