"""The pinning plan: which CPUs and thread-pool sizes emulate an N-vCPU machine.

A cloud vCPU is a hyperthread, and an N-vCPU instance gets N/2 whole cores with both
siblings, on one NUMA node while it fits. We pick CPUs the same way: whole cores
(siblings together), filling one NUMA node before the next. When more threads are
asked for than the host has, we pin to all CPUs and say so (``oversubscribed``):
a 2-core host cannot tell how a 64-vCPU machine behaves, and must not pretend to.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from itertools import groupby

from tfvariants.plan.topology import Topology


@dataclass(frozen=True)
class PinPlan:
    threads: int  # the vCPU count being emulated
    cpus: tuple[int, ...]  # CPU ids to pin to (cpuset)
    intra_op: int
    inter_op: int
    oversubscribed: bool
    oversubscription_ratio: float  # threads / CPUs used (1.0 when it fits)

    def env(self) -> dict[str, str]:
        """Thread variables for the worker; TF and OpenMP read these at start-up."""
        return {
            "TF_NUM_INTRAOP_THREADS": str(self.intra_op),
            "TF_NUM_INTEROP_THREADS": str(self.inter_op),
            "OMP_NUM_THREADS": str(self.intra_op),
        }

    def to_dict(self) -> dict:
        data = asdict(self)
        data["cpus"] = list(self.cpus)
        return data


def inter_op_threads(threads: int) -> int:
    """Small inter-op pool: Keras training runs few independent ops at once, and a big
    inter-op pool competes with the intra-op pool for the same cores."""
    return 1 if threads < 4 else 2


def for_serving(plan: PinPlan) -> PinPlan:
    """A model server's pools: one inter-op thread per vCPU, as TensorFlow Serving sizes
    them by default (``--tensorflow_inter_op_parallelism=0``: one per core). A server runs
    independent requests at once and each request's graph runs on the inter-op pool;
    training's small pool (``inter_op_threads``) made concurrent requests take turns, so
    a second vCPU served no more (MobileNetV2 over HTTP, 4 in flight: 82.8 predictions/s
    at 1 and at 2 threads, 2-core host)."""
    return replace(plan, inter_op=max(plan.threads, 1))


def cpu_order(topology: Topology) -> list[int]:
    """CPUs in the order a cloud would hand them out: node by node, core by core,
    hyperthread siblings next to each other."""
    ordered = sorted(topology.cpus, key=lambda c: (c.node, c.package, c.core, c.cpu))
    return [c.cpu for c in ordered]


def plan_pinning(threads: int, topology: Topology) -> PinPlan:
    """Plan CPUs and pool sizes for ``threads`` vCPUs on ``topology``."""
    if threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    available = topology.logical_count
    if available == 0:
        raise ValueError("no usable CPUs in topology")
    if threads >= available:
        cpus = tuple(sorted(topology.cpu_ids()))
        over = threads > available
        return PinPlan(
            threads=threads,
            cpus=cpus,
            intra_op=threads,
            inter_op=inter_op_threads(threads),
            oversubscribed=over,
            oversubscription_ratio=round(threads / available, 3),
        )

    # Take whole cores first (siblings together); only split a core when N is odd
    # or the remaining count is smaller than a core.
    ordered = sorted(topology.cpus, key=lambda c: (c.node, c.package, c.core, c.cpu))
    cores = [
        [c.cpu for c in group]
        for _, group in groupby(ordered, key=lambda c: (c.node, c.package, c.core))
    ]
    chosen: list[int] = []
    # Prefer the first NUMA node that can hold all N on its own.
    by_node: dict[int, list[list[int]]] = {}
    for core in cores:
        node = next(c.node for c in topology.cpus if c.cpu == core[0])
        by_node.setdefault(node, []).append(core)
    fitting = [n for n, cs in by_node.items() if sum(len(c) for c in cs) >= threads]
    if fitting:
        cores = by_node[min(fitting)]
    for core in cores:
        if len(chosen) >= threads:
            break
        chosen.extend(core[: threads - len(chosen)])
    return PinPlan(
        threads=threads,
        cpus=tuple(sorted(chosen)),
        intra_op=threads,
        inter_op=inter_op_threads(threads),
        oversubscribed=False,
        oversubscription_ratio=1.0,
    )
