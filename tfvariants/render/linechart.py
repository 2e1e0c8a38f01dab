"""Inline SVG line charts (throughput vs concurrency): one line per configuration,
log-scaled x (1, 2, 4, 8, 20, 50 in flight), error bars from repeats. No JavaScript.
Serving's charts in the report: :data:`TEMPLATE_NAMES` are the names its section
template calls (render/html.py)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup, escape

from tfvariants.analyze.serving.configs import HEADLINE, ModelReport, as_throughput
from tfvariants.analyze.shared.format import sig3
from tfvariants.plan.cell import config_label
from tfvariants.plan.serve import serve_cell_id
from tfvariants.render.svgchart import PALETTE, _fmt, _nice_max


@dataclass(frozen=True)
class Point:
    x: float
    y: float
    lo: float | None = None
    hi: float | None = None
    within: bool = True  # met the latency bound (drawn filled; hollow when not)


@dataclass(frozen=True)
class Series:
    label: str
    points: tuple[Point, ...]
    dashed: bool = False  # e.g. the HTTP path, beside the solid in-process line


@dataclass(frozen=True)
class _Plot:
    """A line chart's geometry: log-scaled x over ``xs``, linear y up to ``ymax``."""

    left: int
    top: int
    plot_w: int
    plot_h: int
    xs: tuple[float, ...]
    ymax: float

    def px(self, v: float) -> float:
        if len(self.xs) == 1:
            return self.left + self.plot_w / 2
        lx0, lx1 = math.log(self.xs[0]), math.log(self.xs[-1])
        return self.left + self.plot_w * (math.log(v) - lx0) / ((lx1 - lx0) or 1.0)

    def py(self, v: float) -> float:
        return self.top + self.plot_h * (1 - min(max(v, 0.0), self.ymax) / self.ymax)


def line_chart(
    title: str,
    series: list[Series],
    *,
    x_label: str,
    y_label: str,
    width: int = 640,
    height: int = 340,
    x_unit: str = "in flight",
    y_unit: str = "/s",
) -> Markup:
    left, right, top, bottom = 64, 190, 36, 50
    # room for the legend: long labels widen the chart, many lines make it taller
    longest = max((len(s.label) for s in series), default=0)
    extra = max(0, 50 + int(6.5 * longest) - right)
    width, right = width + extra, right + extra
    height = max(height, top + 16 + 18 * len(series) + bottom)
    xs = sorted({p.x for s in series for p in s.points if p.x > 0}) or [1.0]
    ys = [
        p.hi if p.hi is not None and math.isfinite(p.hi) else p.y for s in series for p in s.points
    ]
    ymax = _nice_max(max([*ys, 0.0]) * 1.05)
    p = _Plot(left, top, width - left - right, height - top - bottom, tuple(xs), ymax)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" font-family="system-ui, sans-serif" '
        f'font-size="12"><title>{escape(title)}</title>',
        f'<text x="{left}" y="20" font-size="14" font-weight="600" fill="#222">'
        f"{escape(title)}</text>",
    ]
    out += _axes(p, height, x_label, y_label)
    for i, s in enumerate(series):
        out += _series(p, s, PALETTE[i % len(PALETTE)], top + 8 + i * 18, x_unit, y_unit)
    if not series:
        out.append(
            f'<text x="{left + 10}" y="{top + 20}" fill="#999" font-style="italic">no data</text>'
        )
    out.append("</svg>")
    return Markup("".join(out))


def _axes(p: _Plot, height: int, x_label: str, y_label: str) -> list[str]:
    left, top, plot_w, plot_h = p.left, p.top, p.plot_w, p.plot_h
    out = []
    for i in range(6):
        v = p.ymax * i / 5
        out.append(
            f'<line x1="{left}" y1="{p.py(v):.1f}" x2="{left + plot_w}" y2="{p.py(v):.1f}" '
            'stroke="#e6e6e6"/>'
        )
        out.append(
            f'<text x="{left - 6}" y="{p.py(v) + 4:.1f}" text-anchor="end" '
            f'fill="#555">{_fmt(v)}</text>'
        )
    for v in p.xs:
        out.append(
            f'<text x="{p.px(v):.1f}" y="{top + plot_h + 16}" text-anchor="middle" '
            f'fill="#555">{v:g}</text>'
        )
    out.append(
        f'<text x="{left + plot_w / 2:.1f}" y="{height - 12}" text-anchor="middle" '
        f'fill="#444">{escape(x_label)}</text>'
    )
    out.append(
        f'<text x="14" y="{top + plot_h / 2:.1f}" text-anchor="middle" fill="#444" '
        f'transform="rotate(-90 14 {top + plot_h / 2:.1f})">{escape(y_label)}</text>'
    )
    return out


def _series(p: _Plot, s: Series, color: str, ly: int, x_unit: str, y_unit: str) -> list[str]:
    """One line: its path, points with error bars, and its legend entry at ``ly``."""
    out = []
    pts = sorted((q for q in s.points if q.x > 0), key=lambda q: q.x)
    dash = ' stroke-dasharray="6,4"' if s.dashed else ""
    if len(pts) > 1:
        d = "M" + "L".join(f"{p.px(q.x):.1f},{p.py(q.y):.1f}" for q in pts)
        out.append(f'<path d="{d}" stroke="{color}" stroke-width="2" fill="none"{dash}/>')
    for q in pts:
        cx, cy = p.px(q.x), p.py(q.y)
        if q.lo is not None and q.hi is not None and q.hi > q.lo:
            hi = p.py(q.hi) if math.isfinite(q.hi) else p.top
            out.append(
                f'<path d="M{cx:.1f},{p.py(q.lo):.1f}V{hi:.1f}" stroke="{color}" stroke-width="1"/>'
            )
        fill = color if q.within else "#fff"
        over = "" if q.within else ", p99 over the bound"
        out.append(
            f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="3.5" fill="{fill}" stroke="{color}" '
            f'stroke-width="1.5"><title>{escape(s.label)}: {q.x:g} {escape(x_unit)}, '
            f"{sig3(q.y)}{escape(y_unit)}{over}</title></circle>"
        )
    right_x = p.left + p.plot_w
    out.append(
        f'<line x1="{right_x + 14}" y1="{ly}" x2="{right_x + 38}" y2="{ly}" '
        f'stroke="{color}" stroke-width="2"{dash}/>'
    )
    out.append(f'<text x="{right_x + 44}" y="{ly + 4}" fill="#222">{escape(s.label)}</text>')
    return out


def _within(p99_ms: float | None, bound_ms: float | None) -> bool:
    return bound_ms is None or (p99_ms is not None and p99_ms <= bound_ms)


def throughput_chart(model_report: ModelReport, bound_ms: float | None = None) -> Markup:
    """The model's throughput-vs-concurrency chart: one line per configuration; points
    whose median p99 broke ``bound_ms`` are hollow (the cost uses only filled ones)."""
    series = []
    for cfg in model_report.configs:
        pts = tuple(
            Point(
                row.concurrency,
                row.throughput.value,
                row.throughput.lo,
                row.throughput.hi,
                within=_within(row.percentiles.get("p99_ms"), bound_ms),
            )
            for row in cfg.curve()
            if row.throughput is not None
        )
        if pts:
            series.append(Series(cfg.label, pts, dashed=cfg.path != "inprocess"))
    return line_chart(
        f"{model_report.model}: throughput vs requests in flight",
        series,
        x_label="requests in flight (closed loop, log scale)",
        y_label="predictions per second",
    )


def batching_charts(model_report: object, bound_ms: float | None = None) -> Markup:
    """Throughput and p99 against the maximum batch size (log scale), one line per
    configuration without its batching and requests in flight; empty unless the run
    swept more than one batch size. A configuration's batch timeout goes in its label."""
    sizes = model_report.batch_sizes()  # type: ignore[attr-defined]
    if len(sizes) < 2:
        return Markup("")
    thr: dict[str, list[Point]] = {}
    p99: dict[str, list[Point]] = {}
    dashed: dict[str, bool] = {}
    for cfg in model_report.configs:  # type: ignore[attr-defined]
        wait = f", wait {cfg.batch_timeout_ms:g} ms" if cfg.max_batch_size > 1 else ""
        for row in cfg.curve():
            # batch 1 has no timeout: it starts every line of its configuration
            waits = (
                (
                    [
                        f", wait {c.batch_timeout_ms:g} ms"
                        for c in model_report.configs  # type: ignore[attr-defined]
                        if c.max_batch_size > 1
                        and (c.variant, c.threads, c.path) == (cfg.variant, cfg.threads, cfg.path)
                    ]
                    or [""]
                )
                if not wait
                else [wait]
            )
            for w in dict.fromkeys(waits):
                config = config_label(cfg.variant, cfg.threads)
                label = f"{config} {cfg.path}, {row.concurrency} in flight{w}"
                dashed[label] = cfg.path != "inprocess"
                p = row.percentiles.get("p99_ms")
                within = bound_ms is None or (p is not None and p <= bound_ms)
                if row.throughput is not None:
                    iv = row.throughput
                    thr.setdefault(label, []).append(
                        Point(cfg.max_batch_size, iv.value, iv.lo, iv.hi, within)
                    )
                if p is not None:
                    p99.setdefault(label, []).append(Point(cfg.max_batch_size, p, within=within))
    name = model_report.model  # type: ignore[attr-defined]
    charts = (  # what, its points, the y axis, its unit
        ("throughput", thr, "predictions per second", "/s"),
        ("p99 latency", p99, "p99 latency, ms (median)", " ms"),
    )
    out = [
        line_chart(
            f"{name}: {what} vs maximum batch size",
            [Series(k, tuple(v), dashed[k]) for k, v in points.items()],
            x_label="maximum batch size (log scale)",
            y_label=y_label,
            x_unit="max batch",
            y_unit=y_unit,
        )
        for what, points, y_label, y_unit in charts
    ]
    return Markup("").join(out)


TEMPLATE_NAMES: dict[str, Any] = {
    "throughput_chart": throughput_chart,
    "batching_charts": batching_charts,
    "as_throughput": as_throughput,
    "serving_headline": HEADLINE,
    "serving_cell_id": serve_cell_id,
    "num_fmt": sig3,
}
