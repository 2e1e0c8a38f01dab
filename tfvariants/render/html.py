"""The HTML report: one self-contained file (inline CSS and SVG), rendered with jinja2
from an analysis of stored results only: the run never renders, and a report can be
re-made any time."""

from __future__ import annotations

from pathlib import Path

from tfvariants import __version__
from tfvariants.analyze.analysis import Analysis, analyze
from tfvariants.analyze.format import (
    dur,
    interval_label,
    interval_sub,
    interval_text,
    mem,
    money,
    num_fmt,
    pct,
    ratio_main,
    ratio_sub,
    sig3,
)
from tfvariants.analyze.pricing import Pricing
from tfvariants.analyze.serving import (
    HEADLINE,
    ServingAnalysis,
    analyze_serving,
    as_throughput,
    serving_only_analysis,
)
from tfvariants.render.charts import workload_charts
from tfvariants.render.csvout import write_csv, write_serving_csv
from tfvariants.render.linechart import batching_charts, throughput_chart
from tfvariants.render.output import write_text_atomic
from tfvariants.store.cellresult import DISTURBED_SHARE

TEMPLATE_DIR = Path(__file__).parent / "templates"


def render_html(analysis: Analysis, serving: ServingAnalysis | None = None) -> str:
    """The report as one self-contained HTML string (autoescaped)."""
    from jinja2 import Environment, FileSystemLoader

    env = Environment(
        loader=FileSystemLoader(str(TEMPLATE_DIR)),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(dur=dur, money=money, interval=interval_text, mem=mem, num=num_fmt)
    env.filters.update(ratio_main=ratio_main, ratio_sub=ratio_sub, interval_sub=interval_sub)
    env.filters.update(interval_label=interval_label, pct=pct, sig3=sig3)
    env.filters["money_sub"] = lambda iv: interval_sub(iv, money).replace("-$", "-")
    env.filters["as_throughput"] = as_throughput
    charts = {
        w.name: workload_charts(
            w,
            w.baseline.label if w.baseline else analysis.baseline_label,
            analysis.variants,
            analysis.pricing,
        )  # fmt: skip
        for w in analysis.workloads
    }
    extra = {}
    if serving is not None:
        from tfvariants.analyze.serving import serving_cell_id

        extra = {
            "serving": serving,
            "serving_charts": {
                m.model: throughput_chart(m, serving.p99_bound_ms) for m in serving.models
            },
            "batching_charts": {
                m.model: batching_charts(m, serving.p99_bound_ms) for m in serving.models
            },
            "serving_headline": HEADLINE,
            "serving_cell_id": serving_cell_id,
            "num_fmt": sig3,
        }
    return env.get_template("report.html").render(
        a=analysis, charts=charts, version=__version__, disturbed_share=DISTURBED_SHARE, **extra
    )


def write_report(
    results_dir: Path,
    out: Path,
    *,
    pricing: Pricing | None = None,
    baseline: str | None = None,
    csv_path: Path | None = None,
    min_effect: float | None = None,
    confidence: float | None = None,
    allow_mixed_hosts: bool = False,
    p99_bound_ms: float | None = None,
) -> Analysis:
    """Analyse results_dir and write the HTML report (atomically) and optional CSV
    (serving cells, when present, get a section and ``<csv stem>-serving.csv``)."""
    serving = analyze_serving(
        results_dir, pricing=pricing, baseline=baseline, p99_bound_ms=p99_bound_ms,
        allow_mixed_hosts=allow_mixed_hosts, min_effect=min_effect, confidence=confidence,
    )  # fmt: skip
    if serving is not None and serving.only_serving:
        analysis = serving_only_analysis(serving)
    else:
        analysis = analyze(
            results_dir, pricing=pricing, baseline=baseline, min_effect=min_effect,
            confidence=confidence, allow_mixed_hosts=allow_mixed_hosts,
        )  # fmt: skip
    analysis.serving = serving  # the CLI prints its sentences too
    write_text_atomic(Path(out), render_html(analysis, serving))
    if csv_path is not None:
        if analysis.workloads:
            write_csv(analysis, csv_path)
        if serving is not None:
            path = Path(csv_path)
            write_serving_csv(serving, path if not analysis.workloads else
                              path.with_name(f"{path.stem}-serving{path.suffix}"))  # fmt: skip
    return analysis
