"""Training's part of a report (analyze/report/part.py ``TaskPart``): its analysis, its
roofline and the facts others read (compiled answer, other runs), each computed once
here, its sections, its rows of the answer table, its CSV and its sentences on the
terminal."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from tfvariants.analyze.cost.pricing import Pricing
from tfvariants.analyze.report.answer import against_baseline, best
from tfvariants.analyze.report.otherruns import Compared, Key, OtherRuns, other_runs
from tfvariants.analyze.report.part import AnswerPart, CsvTable, Placed, Row, Shared, Words
from tfvariants.analyze.report.provenance import WhereRan, where_ran
from tfvariants.analyze.shared.format import money, sig3
from tfvariants.analyze.shared.frame import RunFrame
from tfvariants.analyze.shared.settings import ReportSettings
from tfvariants.analyze.statistics.decide import Settings
from tfvariants.analyze.statistics.stats import Comparison
from tfvariants.analyze.training import loadlabel
from tfvariants.analyze.training.analysis import Analysis, analyze_contents
from tfvariants.analyze.training.compiled import answer, round_seconds
from tfvariants.analyze.training.groups import Group, WorkloadReport
from tfvariants.analyze.training.roofline import CSV_COLUMNS as PEAK_COLUMNS
from tfvariants.analyze.training.roofline import Roofline, csv_columns, roofline
from tfvariants.options.interference import DISTURBED_SHARE
from tfvariants.options.preset import PresetRecord
from tfvariants.store.rundir import RunContents
from tfvariants.store.training import CellResult, ConfigKey


@dataclass(frozen=True)
class TrainingSummary:
    """Each workload's sentences and its fastest / cheapest, the method, the noise."""

    template: ClassVar[str] = "summary.html"
    workloads: tuple[WorkloadReport, ...]
    disturbed_share: float = DISTURBED_SHARE  # the run's limit (its interference summary)


@dataclass(frozen=True)
class Workload:
    """One workload: charts, the verdict table, measurements, accuracy parity."""

    template: ClassVar[str] = "workload.html"
    workload: WorkloadReport
    index: int  # 1-based, for the section's anchor


@dataclass(frozen=True)
class RooflineSection:
    """How close to the hardware: the peaks and each configuration's share of them."""

    template: ClassVar[str] = "roofline.html"
    roofline: Roofline


CSV_COLUMNS = [
    *("cell_id", "workload", "variant", "threads", "repeat", "status", "reason"),
    *("steady_epoch_s", "warmup_s", "training_time_s", "projected", "samples_per_s"),
    *("gflops_per_s", "accuracy", "chance_accuracy", "peak_rss_bytes", "oversubscribed"),
    *("instance", "price_per_hour", "price_tier", "billed_seconds", "cost", "currency"),
    *("warmup_steps", "steady_steps", "steady_step_s", "projected_lo_s", "projected_hi_s"),
    *("cpu_utilisation", "others_share", "disturbed"),
    # the configuration's statistics, repeated on each of its cells
    *("config_time_s", "config_time_lo_s", "config_time_hi_s", "config_time_interval"),
    *("time_ratio", "time_ratio_lo", "time_ratio_hi", "time_verdict", "ratio_interval"),
    *("time_more_repeats", "time_rounds", "cost_ratio", "cost_ratio_lo", "cost_ratio_hi"),
    "cost_verdict",
    *PEAK_COLUMNS,  # the configuration's share of the peaks
]


@dataclass(frozen=True)
class TrainingPart:
    name: ClassVar[str] = "training"
    words: ClassVar[Words] = Words(
        "workload",
        "time",
        "cost per run",
        "compare",
        "Which TensorFlow build trains fastest and cheapest?",
        scaled=True,
    )
    analysis: Analysis
    shared: Shared = Shared()
    roofline: Roofline | None = None  # once: its section, CSV and headroom read it

    @property
    def frame(self) -> RunFrame:
        return self.analysis

    @property
    def pricing(self) -> Pricing | None:
        return self.analysis.pricing

    def subjects(self) -> tuple[str, ...]:
        return tuple(w.name for w in self.analysis.workloads)

    def title(self) -> str:
        return ", ".join(self.subjects())

    def asks(self, what: str, frame: RunFrame) -> str:
        goal = "fastest and cheapest" if frame.pricing is not None else "fastest"
        return f"Which {what} trains {', '.join(self.subjects())} {goal}?"

    def baselines(self, frame: RunFrame) -> tuple[tuple[str, str], ...]:
        return tuple(
            (w.name, w.baseline.label)
            for w in self.analysis.workloads
            if w.baseline and w.baseline.key._replace(workload="") != frame.baseline
        )

    def sections(self, shared: Shared) -> Placed:
        workloads = self.analysis.workloads
        quiet = self.analysis.interference
        summary = TrainingSummary(
            tuple(workloads), quiet.limit if quiet is not None else DISTURBED_SHARE
        )
        return Placed(
            summary=(summary,) if workloads else (),
            body=(
                *(Workload(w, i) for i, w in enumerate(workloads, 1)),
                *((RooflineSection(self.roofline),) if self.roofline is not None else ()),
            ),
        )

    def where_ran(self) -> tuple[WhereRan, ...]:
        workloads = self.analysis.workloads
        cells = (
            (g.variant, g.threads, r.raw) for w in workloads for g in w.groups for r in g.results
        )
        return tuple(where_ran(cells))

    def answer(self, currency: str, compiled: PresetRecord | None) -> AnswerPart:
        rows: list[Row] = []
        cmps = []
        room = _headroom(self.roofline)
        for wr in self.analysis.workloads:
            for g in _groups(wr, compiled):
                rows.append(_row(wr, g, room, currency))
                if g.time_cmp is not None and not g.is_baseline and wr.baseline is not None:
                    cmps.append(g.time_cmp)
        workloads = self.analysis.workloads
        keys = tuple((g.variant, g.threads, g.device) for w in workloads for g in w.groups)
        names = sorted({g.variant for w in workloads for g in w.groups})
        if compiled is not None:
            names = [str(compiled.stock), *compiled.builds]
        seconds = round_seconds(workloads, names) if workloads else None
        noise = self.analysis.noise
        said = noise.decomposition.sentence() if noise and noise.decomposition else None
        return AnswerPart(tuple(rows), tuple(cmps), keys, seconds, said)

    def csv(self) -> CsvTable | None:
        if not self.analysis.workloads:
            return None
        return CsvTable(tuple(CSV_COLUMNS), tuple(csv_rows(self.analysis, self.roofline)))

    def said(self, shared: Shared) -> tuple[tuple[str, tuple[str, ...]], ...]:
        return tuple((w.name, tuple(w.conclusions)) for w in self.analysis.workloads)

    def notes(self, shared: Shared) -> tuple[str, ...]:
        out = []
        if shared.other_runs is not None and not shared.compiled:  # else in the answer
            out.append(shared.other_runs.sentence())
        quiet = self.analysis.interference
        if quiet is not None and (quiet.disturbed or quiet.clean):
            out.append(quiet.sentence())
        return tuple(out)


def training_part(analysis: Analysis, other: OtherRuns | None = None) -> TrainingPart:
    """Training's part with its roofline (once: the section, the CSV and the compiled
    answer's headroom read it) and its shared facts: the compiled answer; beside other runs
    of the same comparisons, their sentence too (before the study's note, which stays
    last): one run's answer to a few-percent question is not the host's."""
    roof = roofline(analysis.workloads, analysis.run)
    min_effect = analysis.settings.min_effect
    lines = answer(analysis.workloads, analysis.run, min_effect, roof) or []
    if lines and other is not None:
        lines = [*lines[:-1], other.sentence(), lines[-1]]
    return TrainingPart(analysis, Shared(tuple(lines), other), roof)


def build_training(
    contents: RunContents, report: ReportSettings, settings: Settings
) -> TrainingPart | None:
    """Training's part of a loaded folder; None when its cells are all another task's."""
    parsed = contents.parsed.values()
    if contents.results and not any(isinstance(r, CellResult) for r in parsed):
        return None
    analysis = analyze_contents(contents, report, settings)
    return training_part(analysis, other_runs(contents, compared(analysis), report, _read))


def compared(analysis: Analysis) -> dict[Key, Comparison]:
    """Each workload's comparisons against its baseline, as other runs are set beside
    this one by them (analyze/report/otherruns.py)."""
    out = {}
    for w in analysis.workloads:
        if w.baseline is None:
            continue
        for g in w.groups:
            cmp = g.verdict.comparison if g.verdict is not None else None
            if not g.is_baseline and cmp is not None:
                out[(w.name, g.label, w.baseline.label)] = cmp
    return out


def _read(contents: RunContents, report: ReportSettings, settings: Settings) -> Compared:
    """A named run's comparisons, as its own report judges them."""
    return compared(analyze_contents(contents, report, settings))


def _groups(wr: WorkloadReport, compiled: PresetRecord | None) -> list[Group]:
    """A compiled-preset run's rows: its builds and the stock wheel at the stock's
    threads (the preset's question); any other run: every configuration."""
    if compiled is None:
        return list(wr.groups)
    wanted = {str(compiled.stock), *compiled.builds}
    threads = wr.baseline.threads if wr.baseline is not None else None
    return [g for g in wr.groups if g.variant in wanted and g.threads == threads]


def _headroom(roof: Roofline | None) -> dict[ConfigKey, float]:
    """At most how much faster each configuration could run each workload at this CPU's
    attainable peak (the roofline's own figure; none without stored peaks)."""
    if roof is None:
        return {}
    return {s.key: h for s in roof.shares if (h := s.headroom)}


def _row(wr: WorkloadReport, g: Group, room: Mapping[ConfigKey, float], currency: str) -> Row:
    missing = "no verdict" if g.time is not None else "no result"
    cost = g.cost_iv.value if g.cost_iv is not None else (g.cost.cost if g.cost else None)
    headroom = room.get(g.key)
    return Row(
        wr.name,
        g.label,
        *against_baseline(g.is_baseline, g.time_cmp, missing),
        cost=money(cost, currency) if cost is not None else "",
        headroom=f"{sig3(headroom)}x" if headroom else "",
        best=best(g is wr.fastest, wr.fastest_decided, g is wr.cheapest, wr.cheapest_decided),
        under_load=bool(g.under_load and g.under_load[0]),
    )


def _r(x: object) -> object:
    return float(f"{x:.6g}") if isinstance(x, float) else x


def _config_columns(analysis: Analysis) -> dict[ConfigKey, dict[str, Any]]:
    out: dict[ConfigKey, dict[str, Any]] = {}
    for w in analysis.workloads:
        for g in w.groups:
            row: dict[str, Any] = {}
            if g.time is not None:
                row.update(config_time_s=g.time.value, config_time_interval=g.time.label)
                if g.time.has_interval:
                    row.update(config_time_lo_s=g.time.lo, config_time_hi_s=g.time.hi)
            for kind, cmp in (("time", g.time_cmp), ("cost", g.cost_cmp)):
                if cmp is None:
                    continue
                row[f"{kind}_ratio"] = cmp.ratio.value
                row[f"{kind}_verdict"] = loadlabel.word(cmp.verdict, g.under_load)
                if cmp.ratio.has_interval:
                    row[f"{kind}_ratio_lo"], row[f"{kind}_ratio_hi"] = cmp.ratio.lo, cmp.ratio.hi
                if kind == "time":
                    row["ratio_interval"] = cmp.ratio.label
                    row["time_more_repeats"] = cmp.more_repeats
                    row["time_rounds"] = g.rounds_compared if g.verdict else None
            out[g.key] = row
    return out


def csv_rows(analysis: Analysis, roof: Roofline | None) -> list[dict[str, Any]]:
    """One row per training cell, from the report's facts (its costs and roofline:
    computed once)."""
    rows = []
    pricing = analysis.pricing
    configs = _config_columns(analysis)
    peaks = csv_columns(roof)
    for r in analysis.cells:
        cost = analysis.cell_costs.get(r.cell_id)
        sched = r.get("schedule") or {}
        ci = r.get("schedule", "projected_full_ci_s")
        lo, hi = ci if isinstance(ci, list) and len(ci) == 2 else (None, None)
        row = {
            "cell_id": r.cell_id,
            "workload": r.workload,
            "variant": r.variant,
            "threads": r.threads,
            "repeat": r.round,
            "status": r.status,
            "reason": r.reason or "",
            "steady_epoch_s": r.steady_epoch_s,
            "warmup_s": r.warmup_s,
            "training_time_s": r.training_time_s,
            "projected": bool(sched)
            and (
                sched.get("ran_epochs") != sched.get("full_epochs")
                or sched.get("ran_samples") != sched.get("full_samples")
            ),
            "samples_per_s": r.samples_per_s,
            "gflops_per_s": r.gflops_per_s,
            "accuracy": r.accuracy,
            "chance_accuracy": r.chance_accuracy,
            "peak_rss_bytes": r.peak_rss_bytes,
            "oversubscribed": r.oversubscribed,
            "instance": cost.instance if cost else "",
            "price_per_hour": cost.per_hour if cost else "",
            "price_tier": (cost.tier_word or cost.tier) if cost else "",
            "billed_seconds": cost.billed_seconds if cost else "",
            "cost": round(cost.cost, 6) if cost else "",
            "currency": pricing.catalog.currency if cost and pricing else "",
            "warmup_steps": r.get("timing", "warmup_steps"),
            "steady_steps": r.get("timing", "steady_steps"),
            "steady_step_s": r.steady_step_s,
            "projected_lo_s": lo,
            "projected_hi_s": hi,
            "cpu_utilisation": r.utilisation,
            "others_share": r.others_share,
            "disturbed": r.disturbed,
            **configs.get(r.key, {}),
            **peaks.get(r.key, {}),
        }
        rows.append({k: _r(v) for k, v in row.items()})
    return rows
