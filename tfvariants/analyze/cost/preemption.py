"""What spot preemptions cost: after a run, per node type, the lost attempts the cells
recorded (``attempts``, execute/preempt.py) and their node-seconds priced; before a
run, the expected preemptions at a rate per node-hour (``--preempt-rate``) priced into
the dry run's bill.

A lost attempt costs the node-seconds it had run plus, before the rerun, a replacement
node's boot; the dry run expects half a cell lost per preemption (a preemption is
equally likely at any moment of a cell) plus that boot.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tfvariants.analyze.cost.pricing import Pricing

# Google gave 5-15 % of preemptible VMs preempted per day (seven-day average, per
# project); the midpoint, 10 % a day, is 0.1 / 24 per node-hour.
DEFAULT_PREEMPT_RATE = 0.004
PREEMPT_RATE_SOURCE = (
    "Google's figure for preemptible VMs, 5-15 % preempted per day: 10 % a day = "
    "0.004 per node-hour"
)


@dataclass(frozen=True)
class Preempted:
    """One node type's preemptions in a run."""

    instance: str
    count: int
    lost_s: float
    cost: float | None  # lost_s at the node type's price (None: not priced)

    @property
    def line(self) -> str:
        """ "1 preemption (n2-highcpu-8), 37 s lost ($0.0012)" """
        cost = f" (${self.cost:.4f})" if self.cost is not None else ""
        s = "s" if self.count != 1 else ""
        return f"{self.count} preemption{s} ({self.instance}), {self.lost_s:.0f} s lost{cost}"


def preempted(
    results: Iterable[Mapping[str, Any]], per_hour: Mapping[str, float] | None = None
) -> list[Preempted]:
    """Per node type, from the cells' ``attempts`` records (a cell that reran after a
    node loss, or failed past the limit)."""
    per: dict[str, list[float]] = {}
    for r in results:
        for a in r.get("attempts") or ():
            if isinstance(a, Mapping):
                inst = str(a.get("instance") or "?")
                per.setdefault(inst, []).append(float(a.get("lost_s") or 0.0))
    out = []
    for inst, lost in sorted(per.items()):
        price = (per_hour or {}).get(inst)
        cost = price * sum(lost) / 3600 if price is not None else None
        out.append(Preempted(inst, len(lost), sum(lost), cost))
    return out


def expected(node_seconds: float, cells: int, rate: float, boot_s: float) -> tuple[float, float]:
    """(expected preemptions, node-seconds they cost) for a node type busy
    ``node_seconds`` over ``cells`` cells at ``rate`` preemptions per node-hour."""
    count = rate * node_seconds / 3600
    mean_cell = node_seconds / cells if cells else 0.0
    return count, count * (mean_cell / 2 + boot_s)


def run_preemptions(results: Iterable[Mapping[str, Any]], pricing: Pricing | None) -> list[str]:
    """The report's lines: per node type, preemptions and their node-seconds priced
    with the run's catalog (unpriced when the catalog lacks the type)."""
    found = preempted(results)
    if pricing is None:
        return [p.line for p in found]
    per_hour: dict[str, float] = {}
    names = {i.name for i in pricing.catalog.instances}
    for p in found:
        if p.instance in names:
            inst = pricing.catalog.instance(p.instance)
            sel = pricing.catalog.price(inst, as_of=pricing.as_of, tier=pricing.tier)
            if sel is not None:
                per_hour[p.instance] = sel.per_hour
    return [p.line for p in preempted(results, per_hour)]
