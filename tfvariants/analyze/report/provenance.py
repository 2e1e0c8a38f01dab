"""Where each configuration's cells ran on a cluster: the node type, and whether the
nodes were real instances or simulated ones (a node that does not declare a real
instance, e.g. a laptop offering a catalog instance's Ray resource). Read from the
cells' ``node`` records, so a report made later says the same."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from tfvariants.analyze.training.groups import WorkloadReport


@dataclass
class WhereRan:
    configuration: str  # variant@threads
    instances: list[str] = field(default_factory=list)  # node types
    real: int = 0  # cells on nodes that declared a real instance
    simulated: int = 0  # cells on nodes that did not
    nodes: set[str] = field(default_factory=set)
    cpu_models: set[str] = field(default_factory=set)

    @property
    def verdict(self) -> str:
        """ "real instance", "simulated node", or both with the counts."""
        if self.real and not self.simulated:
            return "real instance"
        if self.simulated and not self.real:
            return "simulated node"
        return f"mixed: {self.real} cell(s) real, {self.simulated} simulated"


def where_ran(workloads: Sequence[WorkloadReport]) -> list[WhereRan]:
    """One row per configuration that ran on Ray nodes (empty for a local run)."""
    rows: dict[str, WhereRan] = {}
    for w in workloads:
        for g in w.groups:
            for r in g.results:
                node = r.raw.get("node")
                if not isinstance(node, dict) or node.get("executor") != "ray":
                    continue
                row = rows.setdefault(g.label, WhereRan(g.label))
                inst = str(node.get("instance") or "?")
                if inst not in row.instances:
                    row.instances.append(inst)
                if "real_instance" not in node and "simulated" not in node:
                    continue  # a cell that never reached a node (e.g. no node of its type)
                if node.get("real_instance") is True:
                    row.real += 1
                else:
                    row.simulated += 1
                if node.get("node_id"):
                    row.nodes.add(str(node["node_id"]))
                if node.get("cpu_model"):
                    row.cpu_models.add(str(node["cpu_model"]))

    def order(row: WhereRan) -> tuple[str, int]:
        variant, _, threads = row.configuration.rpartition("@")
        return variant, int(threads) if threads.isdigit() else 0

    return sorted(rows.values(), key=order)
