"""A report, built: the run folder loaded once, each task's analysis run over the loaded
records, and the list of sections the renderer lays out (render/ only formats)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tfvariants.analyze.report.compiled import answer, with_preset_baseline
from tfvariants.analyze.report.otherruns import OtherRuns, other_runs
from tfvariants.analyze.report.sections import Section, Shared, sections_of
from tfvariants.analyze.serving.analysis import analyze_serving_contents
from tfvariants.analyze.serving.configs import ServingAnalysis
from tfvariants.analyze.shared import cautions
from tfvariants.analyze.shared.frame import RunFrame, environments_of
from tfvariants.analyze.shared.header import header_of
from tfvariants.analyze.shared.settings import ReportSettings
from tfvariants.analyze.statistics.decide import run_settings
from tfvariants.analyze.training.analysis import Analysis, analyze_contents
from tfvariants.analyze.training.roofline import Roofline, roofline
from tfvariants.store.rundir import load_run_dir


@dataclass(frozen=True)
class Report:
    """Everything one report shows. ``frame`` is the header's facts: the training
    analysis itself, or for a run with serving cells only a plain RunFrame; ``shared``
    the facts more than one output reads (roofline, compiled answer, other runs),
    computed once here: the HTML, the CSV and the terminal read them."""

    frame: RunFrame
    training: Analysis | None
    serving: ServingAnalysis | None
    sections: tuple[Section, ...]
    shared: Shared = Shared()

    @property
    def other_runs(self) -> OtherRuns | None:
        """This run beside the other runs of its comparisons."""
        return self.shared.other_runs

    @property
    def roofline(self) -> Roofline | None:
        return self.shared.roofline

    @property
    def compiled(self) -> tuple[str, ...]:
        """A compiled-preset run's answer, as the HTML and the terminal show it."""
        return self.shared.compiled


def build_report(results_dir: Path, report: ReportSettings | None = None) -> Report:
    """Load ``results_dir`` once, read its decision settings once (the one reader,
    options/decision.py), and analyse its training and serving cells with them (the
    baseline: the report's, else a compiled-preset run's stock wheel, else the rule's)."""
    report = report or ReportSettings()
    contents = load_run_dir(Path(results_dir), allow_mixed_hosts=report.allow_mixed_hosts)
    report = with_preset_baseline(report, contents.run)
    settings = run_settings(contents.run, report.decision)
    serving = analyze_serving_contents(contents, report, settings)
    training = None
    if serving is None or not serving.only_serving:
        training = analyze_contents(contents, report, settings)
    other = other_runs(training, report) if training is not None else None
    return assemble(training, serving, other)


def assemble(
    training: Analysis | None,
    serving: ServingAnalysis | None = None,
    other: OtherRuns | None = None,
) -> Report:
    """The report of analyses already made (one of them at least); ``other``: this run
    beside the other runs of its comparisons (analyze/report/otherruns.py)."""
    frame: RunFrame
    if training is not None:
        frame = training
    elif serving is not None:
        frame = serving_frame(serving)
    else:
        raise ValueError("a report needs a training or a serving analysis")
    shared = shared_facts(training, other)
    return Report(frame, training, serving, sections_of(frame, training, serving, shared), shared)


def shared_facts(training: Analysis | None, other: OtherRuns | None) -> Shared:
    """The roofline (once: the section, the CSV and the compiled answer's headroom read
    it) and the compiled answer: beside other runs of the same comparisons, their
    sentence too (before the study's note, which stays last): one run's answer to a
    few-percent question is not the host's."""
    if training is None:
        return Shared(other_runs=other)
    roof = roofline(training.workloads, training.run)
    lines = answer(training.workloads, training.run, training.settings.min_effect, roof) or []
    if lines and other is not None:
        lines = [*lines[:-1], other.sentence(), lines[-1]]
    return Shared(roof, tuple(lines), other)


def serving_frame(sa: ServingAnalysis) -> RunFrame:
    """The report's frame (header, warnings, environments) for a run with no training
    cells: a RunFrame, not a training analysis with nothing in it."""
    envs, raw = environments_of(sa.cells, dict.fromkeys(r.variant for r in sa.cells), ok_only=True)
    base = next((m.baseline.label for m in sa.models if m.baseline), "n/a")
    notices = sa.store.notices() if sa.store is not None else []
    return RunFrame(
        results_dir=sa.results_dir,
        run=sa.run,
        baseline_label=base,
        pricing=sa.pricing,
        environments=envs,
        raw_environments=raw,
        warnings=[cautions.StatWarning(n.kind, n.message, n.hint) for n in notices],
        counts=dict(sa.counts),
        logical_cpus=sa.run.logical_cpus,
        variants=list(dict.fromkeys(r.variant for r in sa.cells)),
        store=sa.store,
        header=header_of(sa.run),
    )
