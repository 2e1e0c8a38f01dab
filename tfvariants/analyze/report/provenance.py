"""Where each configuration's cells ran on a cluster: the node type, and whether the
nodes were real instances or simulated ones (a node that does not declare a real
instance, e.g. a laptop offering a catalog instance's Ray resource). Read from the
cells' ``node`` records, so a report made later says the same."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tfvariants.plan.cell import config_label


@dataclass(frozen=True)
class WhereRan:
    variant: str
    threads: int
    instances: list[str] = field(default_factory=list)  # node types
    real: int = 0  # cells on nodes that declared a real instance
    simulated: int = 0  # cells on nodes that did not
    nodes: set[str] = field(default_factory=set)
    cpu_models: set[str] = field(default_factory=set)

    @property
    def configuration(self) -> str:
        return config_label(self.variant, self.threads)

    @property
    def verdict(self) -> str:
        """ "real instance", "simulated node", or both with the counts."""
        if self.real and not self.simulated:
            return "real instance"
        if self.simulated and not self.real:
            return "simulated node"
        return f"mixed: {self.real} cell(s) real, {self.simulated} simulated"


def where_ran(cells: Iterable[tuple[str, int, Mapping[str, Any]]]) -> list[WhereRan]:
    """One row per configuration that ran on Ray nodes (empty for a local run), from
    each stored cell's (variant, threads, result dict)."""
    nodes: dict[tuple[str, int], list[dict]] = {}  # configuration -> its cells' Ray nodes
    for variant, threads, raw in cells:
        node = raw.get("node")
        if isinstance(node, dict) and node.get("executor") == "ray":
            nodes.setdefault((variant, threads), []).append(node)
    return [_where(config, nodes[config]) for config in sorted(nodes)]


def _where(config: tuple[str, int], nodes: list[dict]) -> WhereRan:
    # a cell that never reached a node (e.g. no node of its type) names only its type
    reached = [n for n in nodes if "real_instance" in n or "simulated" in n]
    return WhereRan(
        *config,
        instances=list(dict.fromkeys(str(n.get("instance") or "?") for n in nodes)),
        real=sum(1 for n in reached if n.get("real_instance") is True),
        simulated=sum(1 for n in reached if n.get("real_instance") is not True),
        nodes={str(n["node_id"]) for n in reached if n.get("node_id")},
        cpu_models={str(n["cpu_model"]) for n in reached if n.get("cpu_model")},
    )
