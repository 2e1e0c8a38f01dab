"""Training's analyze side, one importable name for the stages above (a task's
``tfvariants.analyze.<stem>``, docs/ARCHITECTURE.md "A new task type"): its analysis
(stored training cells grouped by workload, variant and threads, with statistics, costs
and comparisons to each workload's baseline; the machine's noise across them, the labels
of verdicts measured under load and the report's sentences), its dry run and its part of
a report (``build_training``, found by the report by the task's stem).

Its names are imported on first use (a command's start-up, e.g. ``tfvariants --help``,
does not pay for the whole analysis).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tfvariants.analyze.shared.lazy import lazy_names

if TYPE_CHECKING:
    from tfvariants.analyze.training.analysis import Analysis, analyze, analyze_contents
    from tfvariants.analyze.training.dryrun import training_dry_run
    from tfvariants.analyze.training.part import TrainingPart, build_training, training_part

_MODULE = {
    "Analysis": "analysis",
    "analyze": "analysis",
    "analyze_contents": "analysis",
    "training_dry_run": "dryrun",
    "TrainingPart": "part",
    "build_training": "part",
    "training_part": "part",
}
__all__ = [
    "Analysis",
    "TrainingPart",
    "analyze",
    "analyze_contents",
    "build_training",
    "training_dry_run",
    "training_part",
]

__getattr__ = lazy_names(__name__, _MODULE)
