"""Inline SVG bar charts (no JavaScript, no CDN): the report must work offline.

Every piece of text is escaped here, because labels come from result files.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from markupsafe import Markup, escape

from tfvariants.analyze.report.format import sig3

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


def bar_chart(
    title: str,
    bars: list[Bar],
    *,
    axis_label: str = "relative to baseline (lower is better)",
    reference: float | None = 1.0,
    width: int = 570,
    footnote: str = "",
) -> Markup:
    """A horizontal bar chart with error bars and a dotted reference line."""
    label_w, right_pad, row_h, top, bottom = 130, 90, 26, 42, 58
    plot_w = width - label_w - right_pad
    height = top + bottom + row_h * max(1, len(bars))
    values = [b.value for b in bars if b.value is not None]
    his = [b.hi for b in bars if b.value is not None and b.hi is not None and math.isfinite(b.hi)]
    # Scale to the bars, not to a huge interval (3 noisy repeats can give a 100x upper
    # bound); an error bar that runs past the axis ends in an arrow at the edge.
    cap = max([*values, reference or 0.0, 0.0]) * 2.5
    vmax = _nice_max(min(max([*values, *his, reference or 0.0, 0.0]), cap) * 1.05)

    def x(v: float) -> float:
        return label_w + plot_w * min(max(v, 0.0), vmax) / vmax

    out: list[str] = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" font-family="system-ui, sans-serif" '
        f'font-size="12"><title>{escape(title)}</title>',
        f'<text x="{label_w}" y="20" font-size="14" font-weight="600" fill="#222">{escape(title)}</text>',
    ]
    # Grid and ticks.
    for i in range(6):
        v = vmax * i / 5
        gx = x(v)
        out.append(
            f'<line x1="{gx:.1f}" y1="{top - 6}" x2="{gx:.1f}" y2="{height - bottom + 4}" stroke="#e6e6e6"/>'
        )
        out.append(
            f'<text x="{gx:.1f}" y="{height - bottom + 18}" text-anchor="middle" fill="#555">{_fmt(v)}</text>'
        )
    out.append(
        f'<text x="{label_w + plot_w / 2:.1f}" y="{height - 24}" text-anchor="middle" fill="#444">{escape(axis_label)}</text>'
    )
    for i, b in enumerate(bars):
        y = top + i * row_h
        weight = ' font-weight="700"' if b.emphasis else ""
        out.append(
            f'<text x="{label_w - 8}" y="{y + row_h / 2 + 4:.1f}" text-anchor="end" fill="#222"{weight}>{escape(b.label)}</text>'
        )
        if b.value is None:
            out.append(
                f'<text x="{label_w + 6}" y="{y + row_h / 2 + 4:.1f}" fill="#999" font-style="italic">{escape(b.note or "no data")}</text>'
            )
            continue
        bw = max(x(b.value) - label_w, 1.0)
        span = (
            f" ({sig3(b.lo)}-{sig3(b.hi)})"
            if b.lo is not None and b.hi is not None and b.hi > b.lo
            else ""
        )
        opacity = "0.4" if b.faded else "0.9"
        out.append(
            f'<rect x="{label_w}" y="{y + 4}" width="{bw:.1f}" height="{row_h - 8}" fill="{escape(b.color)}" '
            f'fill-opacity="{opacity}"><title>{escape(b.label)}: {sig3(b.value)}{span}</title></rect>'
        )
        end = x(b.value)
        if b.lo is not None and b.hi is not None and b.hi > b.lo:
            clipped = not math.isfinite(b.hi) or b.hi > vmax
            x1, x2 = x(b.lo), x(b.hi) if math.isfinite(b.hi) else label_w + plot_w
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
    if reference is not None:
        rx = x(reference)
        out.append(
            f'<line x1="{rx:.1f}" y1="{top - 6}" x2="{rx:.1f}" y2="{height - bottom + 4}" '
            f'stroke="#c0392b" stroke-width="1.5" stroke-dasharray="3,3"/>'
        )
    if footnote:
        out.append(
            f'<text x="{label_w + plot_w / 2:.1f}" y="{height - 7}" text-anchor="middle" fill="#888" font-size="10">{escape(footnote)}</text>'
        )
    out.append("</svg>")
    return Markup("".join(out))
