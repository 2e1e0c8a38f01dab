"""Inline SVG bar charts (no JavaScript, no CDN): the report must work offline.

Every piece of text is escaped here, because labels come from result files.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from markupsafe import Markup, escape

from tfvariants.analyze.shared.format import sig3

PALETTE = ["#3b6fb6", "#e07b39", "#4c9a5b", "#b5485d", "#7a5aa6", "#8c6d3f", "#4a9fb0", "#777777"]


@dataclass(frozen=True)
class Bar:
    label: str
    value: float | None  # None: no data (failed/skipped); drawn as a note
    lo: float | None = None
    hi: float | None = None
    color: str = PALETTE[0]
    note: str = ""  # short, after the value: "baseline", "n.s.", or why there is no bar
    emphasis: bool = False  # the baseline
    faded: bool = False  # not significantly different from the reference


def _fmt(v: float) -> str:
    """Axis ticks (round steps: 0.40, 1.20, 10.0)."""
    return f"{v:.2f}" if v < 10 else f"{v:.1f}"


def _nice_max(v: float) -> float:
    if v <= 0 or not math.isfinite(v):
        return 2.0
    exp = 10 ** math.floor(math.log10(v))
    for m in (1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10):
        if m * exp >= v:
            return m * exp
    return 10 * exp


@dataclass(frozen=True)
class _Plot:
    """A bar chart's geometry: where a value, a row and the axes go."""

    label_w: int
    plot_w: int
    row_h: int
    top: int
    bottom: int
    height: int
    vmax: float

    def x(self, v: float) -> float:
        return self.label_w + self.plot_w * min(max(v, 0.0), self.vmax) / self.vmax


def bar_chart(
    title: str,
    bars: list[Bar],
    *,
    axis_label: str = "ratio, lower is better",
    reference: float | None = 1.0,
    width: int = 570,
    footnote: str = "",
) -> Markup:
    """A horizontal bar chart with error bars and a dotted reference line."""
    label_w, right_pad, row_h, top, bottom = 130, 90, 26, 42, 58
    height = top + bottom + row_h * max(1, len(bars))
    values = [b.value for b in bars if b.value is not None]
    his = [b.hi for b in bars if b.value is not None and b.hi is not None and math.isfinite(b.hi)]
    # Scale to the bars, not to a huge interval (3 noisy repeats can give a 100x upper
    # bound); an error bar that runs past the axis ends in an arrow at the edge.
    cap = max([*values, reference or 0.0, 0.0]) * 2.5
    vmax = _nice_max(min(max([*values, *his, reference or 0.0, 0.0]), cap) * 1.05)
    p = _Plot(label_w, width - label_w - right_pad, row_h, top, bottom, height, vmax)
    out: list[str] = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" font-family="system-ui, sans-serif" '
        f'font-size="12" aria-label="{escape(title)}">',
        f'<text x="{label_w}" y="20" font-size="14" font-weight="600" fill="#222">'
        f"{escape(title)}</text>",
    ]
    out += _axes(p, axis_label)
    for i, b in enumerate(bars):
        out += _bar(p, b, top + i * row_h)
    if reference is not None:
        rx = p.x(reference)
        out.append(
            f'<line x1="{rx:.1f}" y1="{top - 6}" x2="{rx:.1f}" y2="{height - bottom + 4}" '
            f'stroke="#c0392b" stroke-width="1.5" stroke-dasharray="3,3"/>'
        )
    if footnote:
        out.append(
            f'<text x="{label_w + p.plot_w / 2:.1f}" y="{height - 7}" text-anchor="middle" '
            f'fill="#888" font-size="10">{escape(footnote)}</text>'
        )
    out.append("</svg>")
    return Markup("".join(out))


def _axes(p: _Plot, axis_label: str) -> list[str]:
    """The grid, its ticks and the axis label."""
    out = []
    for i in range(6):
        v = p.vmax * i / 5
        gx = p.x(v)
        out.append(
            f'<line x1="{gx:.1f}" y1="{p.top - 6}" x2="{gx:.1f}" y2="{p.height - p.bottom + 4}" '
            'stroke="#e6e6e6"/>'
        )
        out.append(
            f'<text x="{gx:.1f}" y="{p.height - p.bottom + 18}" text-anchor="middle" '
            f'fill="#555">{_fmt(v)}</text>'
        )
    out.append(
        f'<text x="{p.label_w + p.plot_w / 2:.1f}" y="{p.height - 24}" text-anchor="middle" '
        f'fill="#444">{escape(axis_label)}</text>'
    )
    return out


def _bar(p: _Plot, b: Bar, y: int) -> list[str]:
    """One row: the label, the bar (or why there is none), its error bar and value."""
    label_w, row_h = p.label_w, p.row_h
    weight = ' font-weight="700"' if b.emphasis else ""
    out = [
        f'<text x="{label_w - 8}" y="{y + row_h / 2 + 4:.1f}" text-anchor="end" '
        f'fill="#222"{weight}>{escape(b.label)}</text>'
    ]
    if b.value is None:
        out.append(
            f'<text x="{label_w + 6}" y="{y + row_h / 2 + 4:.1f}" fill="#999" '
            f'font-style="italic">{escape(b.note or "no data")}</text>'
        )
        return out
    bw = max(p.x(b.value) - label_w, 1.0)
    has_span = b.lo is not None and b.hi is not None and b.hi > b.lo
    # The label and the value are drawn beside the bar: the tooltip holds only what is
    # not, the interval the error bar draws (its figures reachable, not said thrice).
    tip = f"<title>{sig3(b.lo)}-{sig3(b.hi)}</title>" if has_span else ""
    opacity = "0.4" if b.faded else "0.9"
    out.append(
        f'<rect x="{label_w}" y="{y + 4}" width="{bw:.1f}" height="{row_h - 8}" '
        f'fill="{escape(b.color)}" fill-opacity="{opacity}">{tip}</rect>'
    )
    end = p.x(b.value)
    if b.lo is not None and b.hi is not None and b.hi > b.lo:
        clipped = not math.isfinite(b.hi) or b.hi > p.vmax
        x1, x2 = p.x(b.lo), p.x(b.hi) if math.isfinite(b.hi) else label_w + p.plot_w
        cy = y + row_h / 2
        right_end = (
            f"M{x2 - 6:.1f},{cy - 4:.1f}L{x2:.1f},{cy:.1f}L{x2 - 6:.1f},{cy + 4:.1f}"
            if clipped
            else f"M{x2:.1f},{cy - 5:.1f}V{cy + 5:.1f}"
        )
        out.append(
            f'<path d="M{x1:.1f},{cy:.1f}H{x2:.1f}M{x1:.1f},{cy - 5:.1f}V{cy + 5:.1f}'
            f'{right_end}" stroke="#222" stroke-width="1.2" fill="none"/>'
        )
        end = max(end, x2)
    note = f" {b.note}" if b.note else ""
    out.append(
        f'<text x="{end + 6:.1f}" y="{y + row_h / 2 + 4:.1f}" fill="#333">{sig3(b.value)}'
        f'<tspan fill="#888" font-size="10">{escape(note)}</tspan></text>'
    )
    return out
