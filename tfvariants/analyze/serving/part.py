"""Serving's part of a report (analyze/report/part.py ``TaskPart``): its analysis, its
section, its rows of the answer table (cost per million predictions within the p99
bound), its CSV and its sentences on the terminal."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from tfvariants.analyze.cost.pricing import Pricing
from tfvariants.analyze.report.answer import against_baseline, best
from tfvariants.analyze.report.part import AnswerPart, CsvTable, Placed, Row, Shared, Words
from tfvariants.analyze.report.provenance import WhereRan
from tfvariants.analyze.serving.analysis import analyze_serving_contents
from tfvariants.analyze.serving.configs import (
    PCTS,
    Config,
    ModelReport,
    ServingAnalysis,
    answered,
    beyond_the_bound,
)
from tfvariants.analyze.serving.sentences import versus
from tfvariants.analyze.shared import cautions
from tfvariants.analyze.shared.format import money
from tfvariants.analyze.shared.frame import RunFrame, environments_of
from tfvariants.analyze.shared.header import header_of
from tfvariants.analyze.shared.settings import ReportSettings
from tfvariants.analyze.statistics.decide import Settings
from tfvariants.analyze.statistics.stats import Comparison
from tfvariants.analyze.statistics.verdict import COST_WORDS
from tfvariants.options.preset import PresetRecord
from tfvariants.store.rundir import RunContents


@dataclass(frozen=True)
class Serving:
    template: ClassVar[str] = "serving.html"
    serving: ServingAnalysis


@dataclass(frozen=True)
class ServingPart:
    name: ClassVar[str] = "serving"
    words: ClassVar[Words] = Words(
        "model", "cost", "cost", "serve", "Which TensorFlow build serves fastest and cheapest?"
    )
    analysis: ServingAnalysis
    shared: Shared = Shared()

    @property
    def frame(self) -> RunFrame:
        return serving_frame(self.analysis)

    @property
    def pricing(self) -> Pricing | None:
        return self.analysis.pricing

    def subjects(self) -> tuple[str, ...]:
        return tuple(m.model for m in self.analysis.models)

    def title(self) -> str:
        return f"serving {', '.join(self.subjects())}"

    def asks(self, what: str, frame: RunFrame) -> str:
        models = ", ".join(self.subjects())
        return (
            f"Which {what} serves {models} cheapest within p99 {self.analysis.p99_bound_ms:g} ms?"
        )

    def baselines(self, frame: RunFrame) -> tuple[tuple[str, str], ...]:
        return ()

    def sections(self, shared: Shared) -> Placed:
        return Placed(late=(Serving(self.analysis),))

    def where_ran(self) -> tuple[WhereRan, ...]:
        return ()

    def answer(self, currency: str, compiled: PresetRecord | None) -> AnswerPart:
        bound = self.analysis.p99_bound_ms
        rows: list[Row] = []
        cmps: list[Comparison] = []
        beyond: list[str] = []
        for m in self.analysis.models:
            rows += [_row(m, c, currency, bound) for c in m.configs]
            # the lines under the table too: their next step is the run's, as the rows' is
            cmps += answered(m)
            beyond += over_the_bound(m)
        keys = tuple(
            (c.variant, c.threads, c.device) for m in self.analysis.models for c in m.configs
        )
        none_kept = all(c.operating_row is None for m in self.analysis.models for c in m.configs)
        return AnswerPart(
            tuple(rows),
            tuple(cmps),
            keys,
            heading=f"No configuration kept p99 within {bound:g} ms" if none_kept else None,
            beyond=tuple(beyond),
        )

    def csv(self) -> CsvTable:
        rows = csv_rows(self.analysis)
        return CsvTable(tuple(rows[0]) if rows else ("cell_id",), tuple(rows))

    def said(self, shared: Shared) -> tuple[tuple[str, tuple[str, ...]], ...]:
        return tuple((f"serving {m.model}", tuple(m.conclusions)) for m in self.analysis.models)

    def notes(self, shared: Shared) -> tuple[str, ...]:
        return ()


def build_serving(
    contents: RunContents, report: ReportSettings, settings: Settings
) -> ServingPart | None:
    """Serving's part of a loaded folder; None when it holds no serving cells."""
    analysis = analyze_serving_contents(contents, report, settings)
    return ServingPart(analysis) if analysis is not None else None


def over_the_bound(m: ModelReport) -> list[str]:
    """The comparisons with the baseline made where a configuration kept no point within
    the bound (configs.beyond_the_bound: the throughput at the most requests in flight),
    each in a line under the table, whose rows can only say "p99 over"."""
    return [
        f"{m.model}, at {row.concurrency} in flight (over the bound): "
        + versus(m, c, b, cmp, "time")
        for c, b, cmp, row in beyond_the_bound(m)
    ]


def _row(m: ModelReport, c: Config, currency: str, bound_ms: float) -> Row:
    """A serving configuration: the cost per million predictions within the p99 bound,
    against the baseline's (no point within the bound: that is why there is none, the
    baseline's included: it has no cost to be "1x" of)."""
    cost = c.cost_per_million
    missing = "no verdict" if c.operating_row is not None else f"p99 over {bound_ms:g} ms"
    word, ratio, interval = against_baseline(c.is_baseline, c.cost_cmp, missing, COST_WORDS)
    if c.is_baseline and c.operating_row is None:
        ratio = ""
    return Row(
        m.model,
        c.label,
        word,
        ratio,
        interval,
        cost=f"{money(cost.value, currency)}/M" if cost is not None else "",
        headroom="",
        best=best(False, False, c is m.cheapest, m.cheapest_decided),
        under_load=m.under_load and c.cost_cmp is not None,  # marked as training's are
    )


def csv_rows(sa: ServingAnalysis) -> list[dict[str, Any]]:
    """One row per serving cell."""
    rows = []
    for r in sa.cells:
        rows.append(
            {
                "cell_id": r.cell_id,
                "model": r.model,
                "scenario": r.scenario,
                "concurrency": r.concurrency,
                "path": r.path,
                "variant": r.variant,
                "threads": r.threads,
                "repeat": r.round,
                "status": r.status,
                "reason": r.reason or "",
                "throughput_per_s": r.throughput_per_s,
                **{k: r.percentiles_ms.get(k) for k in PCTS},
                "validity": r.validity,
                "max_qps_under_bound": r.max_qps_under_bound,
                "http_overhead_p50_ms": r.http_overhead_p50_ms,
                "shared_cpus": r.shared_cpus,
                "artifacts": r.get("artifacts"),
            }
        )
    return rows


def serving_frame(sa: ServingAnalysis) -> RunFrame:
    """The report's frame (header, warnings, environments) for a run with no training
    cells: a RunFrame, not a training analysis with nothing in it."""
    envs, raw = environments_of(sa.cells, dict.fromkeys(r.variant for r in sa.cells), ok_only=True)
    base = next((m.baseline.key for m in sa.models if m.baseline), None)
    notices = sa.store.notices() if sa.store is not None else []
    return RunFrame(
        results_dir=sa.results_dir,
        run=sa.run,
        baseline=base,
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
