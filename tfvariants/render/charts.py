"""Training's charts in the report: each workload's bar charts (time and cost relative to
the baseline) and the roofline, as inline SVG; :data:`TEMPLATE_NAMES` are the names its
section templates call (render/html.py)."""

from __future__ import annotations

import math
from typing import Any

from tfvariants.analyze.cost.pricing import Pricing
from tfvariants.analyze.shared.frame import RunFrame
from tfvariants.analyze.statistics.verdict import Verdict
from tfvariants.analyze.training.groups import WorkloadReport
from tfvariants.render.labels import config_words
from tfvariants.render.rooflinechart import roofline_chart
from tfvariants.render.svgchart import PALETTE, Bar, bar_chart


def workload_charts(
    wr: WorkloadReport, baseline_label: str, variants: list[str], pricing: Pricing | None
) -> tuple[str, str | None]:
    """(time chart, cost chart or None) for one workload, as SVG markup."""
    colors = {v: PALETTE[i % len(PALETTE)] for i, v in enumerate(variants)}

    def bars(kind: str) -> list[Bar]:
        out = []
        for g in wr.groups:
            cmp = g.time_cmp if kind == "time" else g.cost_cmp
            if cmp is None:
                why = "; ".join(sorted({r.status for r in g.results if not r.ok})) or "no data"
                if g.verdict is not None and g.verdict.comparison is None:
                    why = "no common undisturbed round"
                elif g.times and kind == "cost":
                    why = "no price for this instance"
                elif g.times:
                    why = "no baseline"
                out.append(Bar(g.label, None, color=colors[g.variant], note=why))
                continue
            r = cmp.ratio
            # the baseline's bar is in bold and "undecided" is the pale bar's (the legend
            # says both once), not a word per bar
            note = "equiv." if cmp.verdict == Verdict.EQUIVALENT else ""
            label = g.label + (" *" if g.oversubscribed else "")
            hi = r.hi if math.isfinite(r.hi) else None
            out.append(
                Bar(
                    label,
                    r.value,
                    r.lo,
                    hi,
                    colors[g.variant],
                    note,
                    emphasis=cmp.verdict == Verdict.BASELINE,
                    faded=cmp.verdict not in (Verdict.DIFFERENT, Verdict.BASELINE),
                )
            )
        return out

    foot = "* more threads than host CPUs" if any(g.oversubscribed for g in wr.groups) else ""
    # The workload's heading names it: the titles say only what is charted.
    time_chart = bar_chart(f"training time vs {baseline_label}", bars("time"), footnote=foot)
    cost_chart = None
    if pricing is not None:
        cost_chart = bar_chart(f"training cost vs {baseline_label}", bars("cost"), footnote=foot)
    return time_chart, cost_chart


def charts_of(wr: WorkloadReport, frame: RunFrame) -> tuple[str, str | None]:
    """A workload's charts against its own baseline, else the run's."""
    base = wr.baseline.label if wr.baseline else config_words(frame.baseline)
    return workload_charts(wr, base, frame.variants, frame.pricing)


TEMPLATE_NAMES: dict[str, Any] = {"workload_charts": charts_of, "roofline_chart": roofline_chart}
