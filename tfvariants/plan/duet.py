"""Where a duet fits: two CPU sets for two cells of the same thread count at once.

Duet measurement (Bulej et al., 2020; ``compare --duet``) runs two cells of a round at
the same time on disjoint CPUs, so interference from the rest of the machine hits both
and their per-round ratio cancels it (``make bench-duet`` measured it narrower at the
same wall time, docs/measurements.md, "Duet"). It fits only where each side gets
what a lone cell would: the usual pinning plan for one side, and the same plan on the
cores the first does not touch for the other (siblings of one core share its units, so
a side there would slow the other, and the two would no longer be alike).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tfvariants.plan.pinning import PinPlan, plan_pinning
from tfvariants.plan.topology import Topology


@dataclass(frozen=True)
class DuetPlans:
    """The two sides' plans: ``first`` is the one a lone cell gets."""

    first: PinPlan
    second: PinPlan

    def both(self) -> tuple[PinPlan, PinPlan]:
        return self.first, self.second

    def cpus(self) -> tuple[int, ...]:
        return tuple(sorted(self.first.cpus + self.second.cpus))


def duet_plans(threads: int, topology: Topology) -> DuetPlans | str:
    """The two plans for ``threads``-thread cells, or why they do not fit (one line)."""
    first = plan_pinning(threads, topology)
    if first.oversubscribed:
        cpus = topology.logical_count
        return f"{threads}-thread cells already oversubscribe this host's {cpus} CPUs"
    used = {(c.node, c.package, c.core) for c in topology.cpus if c.cpu in first.cpus}
    rest = Topology(tuple(c for c in topology.cpus if (c.node, c.package, c.core) not in used))
    if rest.logical_count < threads:
        need = 2 * threads
        return (
            f"two {threads}-thread cells at once need {need} CPUs on separate cores; "
            f"this host has {topology.logical_count} CPU(s) on {topology.physical_count} core(s)"
        )
    return DuetPlans(first, plan_pinning(threads, rest))


def duet_fit(
    threads: Sequence[int],
    configurations: int,
    host_pinned: Mapping[str, bool],
    topology: Topology,
    *,
    executor: str = "local",
) -> DuetPlans | str:
    """The two sides' plans for ``compare --duet`` on this plan, or why it cannot run
    (one line, "--duet: ...").

    ``configurations``: the plan's configurations per workload (each round's cells of a
    workload); ``host_pinned``: variant name -> whether it is pinned on the host."""
    fit = _fit(threads, configurations, host_pinned, topology, executor)
    return f"--duet: {fit}" if isinstance(fit, str) else fit


def _fit(
    threads: Sequence[int],
    configurations: int,
    host_pinned: Mapping[str, bool],
    topology: Topology,
    executor: str,
) -> DuetPlans | str:
    if executor != "local":
        return "runs on this host's executor only (each Ray task is one cell)"
    counts = sorted(set(threads))
    if len(counts) != 1:
        # A comparison across thread counts would set a side measured beside a neighbour
        # against one measured beside another kind of neighbour: not alike.
        return (
            f"needs one thread count (the plan has {', '.join(map(str, counts))}): both sides "
            "of a pair must be alike"
        )
    if configurations < 2:
        return "needs at least two configurations to run side by side"
    contained = sorted(name for name, on_host in host_pinned.items() if not on_host)
    if contained:
        return (
            f"needs variants pinned on this host; {', '.join(contained)} run(s) in a container, "
            "whose engine's helpers one cell's clean-up would take for the other's"
        )
    return duet_plans(counts[0], topology)
