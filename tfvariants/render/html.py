"""The HTML report: one self-contained file (inline CSS and SVG), rendered with jinja2
from an analysis of stored results only: the run never renders, and a report can be
re-made any time."""

from __future__ import annotations

from functools import partial
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
    money_unit,
    num_fmt,
    pct,
    ratio_interval,
    ratio_main,
    ratio_sub,
    repeats_needed,
    sig3,
    verdict_word,
)
from tfvariants.analyze.frame import RunFrame
from tfvariants.analyze.pricing import Pricing
from tfvariants.analyze.serving import (
    HEADLINE,
    ServingAnalysis,
    analyze_serving,
    as_throughput,
    serving_frame,
)
from tfvariants.render.charts import workload_charts
from tfvariants.render.csvout import write_csv, write_serving_csv
from tfvariants.render.linechart import batching_charts, throughput_chart
from tfvariants.render.output import write_text_atomic
from tfvariants.store.disturbance import DISTURBED_SHARE

TEMPLATE_DIR = Path(__file__).parent / "templates"


def render_html(analysis: RunFrame, serving: ServingAnalysis | None = None) -> str:
    """The report as one self-contained HTML string (autoescaped): ``analysis`` is a
    training Analysis, or the plain RunFrame of a serving-only run."""
    from jinja2 import Environment, FileSystemLoader

    env = Environment(
        loader=FileSystemLoader(str(TEMPLATE_DIR)),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    # Every amount in the catalog's currency (one catalog per report).
    pricing = analysis.pricing or (serving.pricing if serving is not None else None)
    currency = pricing.catalog.currency if pricing is not None else "USD"
    in_currency = partial(money, currency=currency)
    env.filters.update(dur=dur, money=in_currency, interval=interval_text, mem=mem, num=num_fmt)
    env.filters.update(ratio_main=ratio_main, ratio_sub=ratio_sub, interval_sub=interval_sub)
    env.filters.update(interval_label=interval_label, pct=pct, sig3=sig3)
    env.filters.update(ratio_interval=ratio_interval, verdict_word=verdict_word)
    env.filters["repeats_needed"] = repeats_needed
    env.filters["money_sub"] = lambda iv: interval_sub(iv, in_currency).replace("-$", "-")
    env.globals["money_unit"] = money_unit(currency)
    training = analysis if isinstance(analysis, Analysis) else None
    workloads = training.workloads if training is not None else []
    env.filters["as_throughput"] = as_throughput
    charts = {
        w.name: workload_charts(
            w,
            w.baseline.label if w.baseline else analysis.baseline_label,
            analysis.variants,
            analysis.pricing,
        )  # fmt: skip
        for w in workloads
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
    from tfvariants.analyze.compiled import answer

    compiled = (
        answer(training.workloads, training.run, training.settings.min_effect)
        if training is not None
        else None
    )
    from tfvariants.analyze.provenance import where_ran
    from tfvariants.analyze.roofline import roofline
    from tfvariants.render.rooflinechart import roofline_chart

    roof = roofline(training.workloads, training.run) if training is not None else None
    if roof is not None:
        extra.update(roofline=roof, roofline_chart=roofline_chart(roof, analysis.variants))

    return env.get_template("report.html").render(
        a=analysis,
        where_ran=where_ran(workloads),
        workloads=workloads,
        charts=charts,
        version=__version__,
        # The run's limit (its interference summary), else the default.
        disturbed_share=getattr(getattr(analysis, "interference", None), "limit", DISTURBED_SHARE),
        compiled_answer=compiled,
        **extra,
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
    disturbed: str | None = None,
) -> RunFrame:
    """Analyse results_dir and write the HTML report (atomically) and optional CSV
    (serving cells, when present, get a section and ``<csv stem>-serving.csv``).
    Returns the training Analysis, or a serving-only run's RunFrame."""
    serving = analyze_serving(
        results_dir, pricing=pricing, baseline=baseline, p99_bound_ms=p99_bound_ms,
        allow_mixed_hosts=allow_mixed_hosts, min_effect=min_effect, confidence=confidence,
    )  # fmt: skip
    analysis: RunFrame
    if serving is not None and serving.only_serving:
        analysis = serving_frame(serving)
    else:
        analysis = analyze(
            results_dir, pricing=pricing, baseline=baseline, min_effect=min_effect,
            confidence=confidence, allow_mixed_hosts=allow_mixed_hosts,
            disturbed=disturbed,
        )  # fmt: skip
    analysis.serving = serving  # the CLI prints its sentences too
    write_text_atomic(Path(out), render_html(analysis, serving))
    if csv_path is not None:
        training = analysis.workloads if isinstance(analysis, Analysis) else []
        if isinstance(analysis, Analysis) and training:
            write_csv(analysis, csv_path)
        if serving is not None:
            path = Path(csv_path)
            write_serving_csv(serving, path if not training else
                              path.with_name(f"{path.stem}-serving{path.suffix}"))  # fmt: skip
    return analysis
