"""benchmarks/duet.py's summary of each mode: the pairs as the project's paired comparison
judges them, and the widths side by side."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tfvariants.analyze.statistics import pairing


@dataclass(frozen=True)
class ModeSummary:
    """One mode's pairs as the project's paired comparison judges them (ratio B/A)."""

    label: str
    pairs: int
    wall_s: float
    median_ratio: float | None
    lo: float | None
    hi: float | None
    spread: float | None  # MAD of the per-pair log ratios
    verdict: str

    @property
    def width(self) -> float | None:
        return None if self.lo is None or self.hi is None else self.hi - self.lo

    def line(self) -> str:
        def num(x: float | None, fmt: str = ".4f") -> str:
            return "n/a" if x is None else format(x, fmt)

        interval = f"{num(self.lo)}-{num(self.hi)}" if self.width is not None else "none"
        return (
            f"{self.label:<22} {self.pairs:>5} {self.wall_s:>7.0f} {num(self.median_ratio):>9} "
            f"{interval:>15} {num(self.width):>7} {num(self.spread):>7}  {self.verdict}"
        )


HEADER = (
    f"{'mode':<22} {'pairs':>5} {'wall s':>7} {'median':>9} {'interval':>15} "
    f"{'width':>7} {'spread':>7}  verdict"
)


def summarise(
    label: str,
    values: Mapping[int, Mapping[str, float | None]],
    rounds: Sequence[int],
    wall_s: float,
    confidence: float,
) -> ModeSummary:
    """The pairs of ``rounds`` where both cells measured: median ratio, paired interval
    (compare_rounds, "paired"), the log ratios' spread, the verdict."""
    a: dict[int, float] = {}
    b: dict[int, float] = {}
    for r in rounds:
        got = values.get(r) or {}
        va, vb = got.get("a"), got.get("b")
        if va is not None and vb is not None and va > 0 and vb > 0:
            a[r], b[r] = va, vb
    if not a:
        return ModeSummary(label, 0, wall_s, None, None, None, None, "no pair measured")
    logs = [math.log(b[r] / a[r]) for r in a]
    med = statistics.median(logs)
    spread = statistics.median(abs(x - med) for x in logs)
    c = pairing.compare_rounds(a, b, confidence=confidence, method="paired")
    lo, hi = (c.ratio.lo, c.ratio.hi) if c.ratio.has_interval else (None, None)
    return ModeSummary(label, len(a), wall_s, math.exp(med), lo, hi, spread, c.verdict)


def conclusion(rows: Sequence[ModeSummary]) -> str:
    """The widths side by side: what "keep it only if it narrows" is decided from."""
    seq, same_rounds, same_wall = rows
    if seq.width is None or same_wall.width is None:
        return "no interval in some mode (too few pairs): no conclusion; more --rounds"
    parts = [f"same wall {same_wall.width / seq.width:.2f}x"]
    if same_rounds.width is not None:
        parts.insert(0, f"same rounds {same_rounds.width / seq.width:.2f}x")
    return (
        "duet interval width against sequential: " + ", ".join(parts) + " (below 1: narrower; "
        "one run's widths are themselves noisy, repeat before deciding)"
    )
