"""The HTML report: one self-contained file (inline CSS and SVG), rendered with jinja2
from an analysis of stored results only: the run never renders, and a report can be
re-made any time."""

from __future__ import annotations

from pathlib import Path

from tfvariants import __version__
from tfvariants.analyze.analysis import Analysis, analyze
from tfvariants.analyze.format import (
    dur,
    interval_sub,
    interval_text,
    mem,
    money,
    num_fmt,
    ratio_main,
    ratio_sub,
)
from tfvariants.analyze.pricing import Pricing
from tfvariants.render.charts import workload_charts
from tfvariants.render.csvout import write_csv
from tfvariants.render.output import write_text_atomic

TEMPLATE_DIR = Path(__file__).parent / "templates"


def render_html(analysis: Analysis) -> str:
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
    env.filters["money_sub"] = lambda iv: interval_sub(iv, money).replace("-$", "-")
    charts = {
        w.name: workload_charts(w, analysis.baseline_label, analysis.variants, analysis.pricing)
        for w in analysis.workloads
    }
    return env.get_template("report.html").render(a=analysis, charts=charts, version=__version__)


def write_report(
    results_dir: Path,
    out: Path,
    *,
    pricing: Pricing | None = None,
    baseline: str | None = None,
    csv_path: Path | None = None,
    allow_mixed_hosts: bool = False,
) -> Analysis:
    """Analyse results_dir and write the HTML report (atomically) and optional CSV."""
    analysis = analyze(
        results_dir, pricing=pricing, baseline=baseline, allow_mixed_hosts=allow_mixed_hosts
    )
    write_text_atomic(Path(out), render_html(analysis))
    if csv_path is not None:
        write_csv(analysis, csv_path)
    return analysis
