"""The HTML report: one self-contained file (inline CSS and SVG), rendered with jinja2
from a built report (analyze/report/build.py): the template lays out the report's
sections in order, each with its own template under ``templates/sections/``. Nothing
here analyses: charts and number formats only."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import Any

from tfvariants import __version__
from tfvariants.analyze.report.build import Report
from tfvariants.analyze.shared.cautions import BRIEF, StatWarning
from tfvariants.analyze.shared.format import (
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
from tfvariants.analyze.shared.parity import Metric, VariantParity
from tfvariants.analyze.statistics.verdict import COST_WORDS, Verdict
from tfvariants.render import charts, linechart
from tfvariants.render.labels import config_words
from tfvariants.render.output import write_text_atomic

TEMPLATE_DIR = Path(__file__).parent / "templates"
# Each task's charts and helpers, as names its section templates call.
TASK_NAMES = (charts.TEMPLATE_NAMES, linechart.TEMPLATE_NAMES)


def alike(mapping: Mapping[str, Any]) -> list[tuple[list[str], Any]]:
    """The mapping's keys grouped by equal values, in order of first appearance: what
    several variants share (an environment) is shown once, under all their names."""
    groups: list[tuple[list[str], Any]] = []
    for key, value in mapping.items():
        same = next((names for names, v in groups if v == value), None)
        if same is None:
            groups.append(([key], value))
        else:
            same.append(key)
    return groups


def by_head(warnings: list[StatWarning]) -> list[tuple[str, list[StatWarning]]]:
    """Warnings said in brief, under their subject's first word (the workload): its name
    once, then each configuration's figures."""
    groups: dict[str, list[StatWarning]] = {}
    for w in warnings:
        groups.setdefault(w.subject.partition(" ")[0], []).append(w)
    return list(groups.items())


def alike_runs(warnings: list[StatWarning]) -> list[tuple[tuple[str, str], list[StatWarning]]]:
    """The warnings grouped by kind and hint, in order of first appearance."""
    groups: dict[tuple[str, str], list[StatWarning]] = {}
    for w in warnings:
        groups.setdefault((w.kind, w.hint), []).append(w)
    return list(groups.items())


def parity_rows(rows: list[VariantParity]) -> list[tuple[list[str], VariantParity]]:
    """Accuracy-parity rows with the same figures as one row under all their variants."""
    shown = {
        p.variant: (p.n, *_figures(p.accuracy), *_figures(p.loss), p.outlier, *p.flags, *p.notes)
        for p in rows
    }
    first = {p.variant: p for p in reversed(rows)}
    return [(names, first[names[0]]) for names, _ in alike(shown)]


def _figures(m: Metric) -> tuple[float | None, ...]:
    return (m.median, m.sd, m.delta, m.tolerance)


def render_html(report: Report) -> str:
    """The report as one self-contained HTML string (autoescaped)."""
    from jinja2 import Environment, FileSystemLoader

    env = Environment(
        loader=FileSystemLoader(str(TEMPLATE_DIR)),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,  # each section's file ends its last line
    )
    a = report.frame
    # Every amount in the catalog's currency (one catalog per report).
    pricing = a.pricing or next((p.pricing for p in report.parts if p.pricing), None)
    currency = pricing.catalog.currency if pricing is not None else "USD"
    in_currency = partial(money, currency=currency)
    env.filters.update(dur=dur, money=in_currency, interval=interval_text, mem=mem, num=num_fmt)
    env.filters.update(ratio_main=ratio_main, ratio_sub=ratio_sub, interval_sub=interval_sub)
    env.filters.update(interval_label=interval_label, pct=pct, sig3=sig3)
    env.filters.update(ratio_interval=ratio_interval, verdict_word=verdict_word)
    env.filters["cost_word"] = partial(verdict_word, lower=COST_WORDS[0], higher=COST_WORDS[1])
    env.globals["Verdict"] = Verdict  # templates name a verdict through the enum
    env.filters["repeats_needed"] = repeats_needed
    env.filters["money_sub"] = lambda iv: interval_sub(iv, in_currency).replace("-$", "-")
    env.filters["alike"] = alike
    env.filters["config_words"] = config_words
    env.filters["parity_rows"] = parity_rows
    env.filters["by_head"] = by_head
    env.filters["groupby_kind"] = lambda ws: [g for _, g in alike_runs(ws)]
    env.globals["money_unit"] = money_unit(currency)
    env.globals["brief"] = BRIEF
    for names in TASK_NAMES:
        env.globals.update(names)
    return env.get_template("report.html").render(
        a=a,
        sections=report.sections,
        headline=report.headline,
        version=__version__,
    )


def write_html(report: Report, out: Path) -> None:
    """The HTML report, written atomically."""
    write_text_atomic(Path(out), render_html(report))
