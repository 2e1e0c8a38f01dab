"""A ``--preset compiled`` run's record, as every report of its folder reads it: its
stock wheel is the report's baseline unless --baseline says otherwise, and its answer
(analyze/training/compiled.py) opens the report. A serving run's preset is a name only
(no stock wheel, no builds), so it is never this one."""

from __future__ import annotations

from dataclasses import replace

from tfvariants.analyze.shared.settings import ReportSettings
from tfvariants.options.preset import PresetRecord
from tfvariants.store.record import RunRecord

PRESET = "compiled"


def preset_stock(run: RunRecord) -> str | None:
    """The stock wheel a ``--preset compiled`` run compares against: its report's
    baseline unless --baseline says otherwise."""
    return run.preset.stock if run.preset is not None else None


def compiled_preset(run: RunRecord) -> PresetRecord | None:
    """A ``--preset compiled`` run's preset record (None for any other run)."""
    preset = run.preset
    ok = preset is not None and preset.name == PRESET and preset.stock is not None
    return preset if ok else None


def with_preset_baseline(report: ReportSettings, run: RunRecord) -> ReportSettings:
    """``report`` with its baseline: the one given, else a compiled-preset run's stock
    wheel (the one rule every report of a run folder reads it by)."""
    if not report.baseline and (stock := preset_stock(run)):
        return replace(report, baseline=stock)
    return report
