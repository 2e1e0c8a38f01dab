"""The roofline-style chart: each configuration's achieved GFLOP/s against its build's
attainable peak (solid line) and the CPU's theoretical peak (dashed), per thread count.
Inline SVG, every label escaped (they come from result files)."""

from __future__ import annotations

from markupsafe import Markup, escape

from tfvariants.analyze.shared.format import sig3
from tfvariants.analyze.training.roofline import Roofline
from tfvariants.render.svgchart import PALETTE, _nice_max

# Marker shapes, one per workload (cycled): circle, square, triangle, diamond, cross.
_SHAPES = ("circle", "square", "triangle", "diamond", "cross")
_LEFT, _RIGHT, _TOP, _BOTTOM = 60, 170, 34, 44


def _marker(shape: str, x: float, y: float, color: str, title: str) -> str:
    t = f"<title>{escape(title)}</title>"
    if shape == "circle":
        return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4.5" fill="{color}">{t}</circle>'
    if shape == "square":
        return (
            f'<rect x="{x - 4:.1f}" y="{y - 4:.1f}" width="8" height="8" fill="{color}">{t}</rect>'
        )
    if shape == "triangle":
        pts = f"{x:.1f},{y - 5:.1f} {x - 5:.1f},{y + 4:.1f} {x + 5:.1f},{y + 4:.1f}"
        return f'<polygon points="{pts}" fill="{color}">{t}</polygon>'
    if shape == "diamond":
        pts = f"{x:.1f},{y - 5:.1f} {x + 5:.1f},{y:.1f} {x:.1f},{y + 5:.1f} {x - 5:.1f},{y:.1f}"
        return f'<polygon points="{pts}" fill="{color}">{t}</polygon>'
    a, b, c, e = x - 4, x + 4, y - 4, y + 4
    d = f"M{a:.1f},{c:.1f}L{b:.1f},{e:.1f}M{a:.1f},{e:.1f}L{b:.1f},{c:.1f}"
    return f'<path d="{d}" stroke="{color}" stroke-width="2.5">{t}</path>'


def roofline_chart(roof: Roofline, variants: list[str], width: int = 640) -> Markup:
    """Thread counts across, GFLOP/s up; lines per variant, markers per configuration."""
    threads = sorted({p.threads for p in roof.peaks} | {s.threads for s in roof.shares})
    values = [p.attainable for p in roof.peaks] + [p.theoretical for p in roof.peaks]
    values += [s.achieved for s in roof.shares]
    top = _nice_max(max([v for v in values if v] or [1.0]))
    height = 300
    plot_w, plot_h = width - _LEFT - _RIGHT, height - _TOP - _BOTTOM
    names = list(dict.fromkeys([*variants, *(p.variant for p in roof.peaks)]))
    colors = {v: PALETTE[i % len(PALETTE)] for i, v in enumerate(names)}
    workloads = list(dict.fromkeys(s.workload for s in roof.shares))
    shapes = {w: _SHAPES[i % len(_SHAPES)] for i, w in enumerate(workloads)}

    def x_of(t: int) -> float:
        step = plot_w / max(len(threads), 1)
        return _LEFT + step * (threads.index(t) + 0.5)

    def y_of(v: float) -> float:
        return _TOP + plot_h * (1 - v / top)

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'role="img" aria-label="achieved GFLOP/s against the peaks" font-size="11">',
        f'<text x="{_LEFT}" y="16" font-weight="bold" font-size="13">GFLOP/s against the '
        "attainable (solid) and theoretical (dashed) peaks</text>",
    ]
    for i in range(6):  # fifths of a nice maximum are round numbers
        tick = top * i / 5
        y = y_of(tick)
        out.append(
            f'<line x1="{_LEFT}" x2="{_LEFT + plot_w}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>'
        )
        out.append(f'<text x="{_LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{sig3(tick)}</text>')
    for t in threads:
        out.append(
            f'<text x="{x_of(t):.1f}" y="{_TOP + plot_h + 16}" text-anchor="middle">{t}</text>'
        )
    out.append(
        f'<text x="{_LEFT + plot_w / 2:.1f}" y="{height - 8}" text-anchor="middle">'
        "threads (vCPUs)</text>"
    )
    for v in names:
        mine = [p for p in roof.peaks if p.variant == v]
        for attr, dash in (("attainable", ""), ("theoretical", ' stroke-dasharray="5,4"')):
            pts = [(x_of(p.threads), y_of(getattr(p, attr))) for p in mine if getattr(p, attr)]
            if len(pts) == 1:  # one thread count: a short level mark
                pts = [(pts[0][0] - 18, pts[0][1]), (pts[0][0] + 18, pts[0][1])]
            if pts:
                line = " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)
                out.append(
                    f'<polyline points="{line}" fill="none" stroke="{colors[v]}" '
                    f'stroke-width="1.6"{dash}/>'
                )
    for s in roof.shares:
        if s.achieved and s.threads in threads:
            off = (workloads.index(s.workload) - (len(workloads) - 1) / 2) * 9
            title = f"{s.workload} {s.label}: {sig3(s.achieved)} GFLOP/s"
            out.append(
                _marker(
                    shapes[s.workload],
                    x_of(s.threads) + off,
                    y_of(s.achieved),
                    colors.get(s.variant, PALETTE[-1]),
                    title,
                )
            )
    out += _legend(_LEFT + plot_w + 14, colors, shapes)
    out.append("</svg>")
    return Markup("".join(out))


def _legend(x: float, colors: dict[str, str], shapes: dict[str, str]) -> list[str]:
    """Variants (line colours), then workloads (marker shapes)."""
    out = []
    for i, (v, color) in enumerate(colors.items()):
        y = _TOP + 10 + 16 * i
        out.append(
            f'<line x1="{x}" x2="{x + 18}" y1="{y - 4}" y2="{y - 4}" '
            f'stroke="{color}" stroke-width="2"/>'
        )
        out.append(f'<text x="{x + 24}" y="{y}">{escape(v)}</text>')
    for i, (w, shape) in enumerate(shapes.items()):
        y = _TOP + 10 + 16 * (len(colors) + i) + 8
        out.append(_marker(shape, x + 9, y - 4, "#555", w))
        out.append(f'<text x="{x + 24}" y="{y}">{escape(w)}</text>')
    return out
