"""Training's analyze side, one importable name for the stages above (a task's
``tfvariants.analyze.<stem>``, docs/ARCHITECTURE.md "A new task type"): its analysis
(stored training cells grouped by workload, variant and threads, with statistics, costs
and comparisons to each workload's baseline; the machine's noise across them, the labels
of verdicts measured under load and the report's sentences), its dry run and its part of
a report (``build_training``, found by the report by the task's stem)."""

from tfvariants.analyze.training.analysis import Analysis, analyze, analyze_contents
from tfvariants.analyze.training.dryrun import training_dry_run
from tfvariants.analyze.training.part import TrainingPart, build_training, training_part

__all__ = [
    "Analysis",
    "TrainingPart",
    "analyze",
    "analyze_contents",
    "build_training",
    "training_dry_run",
    "training_part",
]
