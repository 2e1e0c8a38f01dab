"""CPU topology of this host, read from Linux sysfs.

Reading is separated from planning (tfvariants.plan.pinning) so that the plan can be tested
against fake topologies: a sysfs tree written into a temp folder, or a Topology built
by hand.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class LogicalCpu:
    cpu: int
    core: int  # core_id, unique only within a package
    package: int  # physical socket
    node: int  # NUMA node


@dataclass(frozen=True)
class Topology:
    cpus: tuple[LogicalCpu, ...]  # online CPUs this process may use

    @property
    def logical_count(self) -> int:
        return len(self.cpus)

    @property
    def physical_count(self) -> int:
        return len({(c.package, c.core) for c in self.cpus})

    def cpu_ids(self) -> list[int]:
        return sorted(c.cpu for c in self.cpus)


def parse_cpu_list(text: str) -> list[int]:
    """Parse the kernel's list format, e.g. ``0-3,8,10-11``."""
    cpus: list[int] = []
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            lo, hi = part.split("-", 1)
            cpus.extend(range(int(lo), int(hi) + 1))
        else:
            cpus.append(int(part))
    return sorted(set(cpus))


def format_cpu_list(cpus: list[int] | tuple[int, ...]) -> str:
    """The inverse of parse_cpu_list, compressing runs: [0,1,2,5] -> '0-2,5'."""
    ordered = sorted(set(cpus))
    parts: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(parts)


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def read_topology(sysfs: str | Path = "/sys", allowed: set[int] | None = None) -> Topology:
    """Read online CPUs with their core, package and NUMA node.

    ``allowed`` restricts to CPUs this process may run on (defaults to the current
    affinity when reading the real /sys), so a host that already runs us inside a
    cpuset plans within it. Missing sysfs files fall back to one core per CPU, one node.
    """
    root = Path(sysfs)
    cpu_dir = root / "devices/system/cpu"
    online_text = _read(cpu_dir / "online")
    if online_text:
        online = parse_cpu_list(online_text)
    else:
        online = sorted(
            int(p.name[3:]) for p in cpu_dir.glob("cpu[0-9]*") if p.name[3:].isdigit()
        ) or list(range(os.cpu_count() or 1))
    if allowed is None and Path(sysfs) == Path("/sys") and hasattr(os, "sched_getaffinity"):
        allowed = set(os.sched_getaffinity(0))
    if allowed is not None:
        online = [c for c in online if c in allowed]

    node_of: dict[int, int] = {}
    for node_dir in sorted((root / "devices/system/node").glob("node[0-9]*")):
        cpulist = _read(node_dir / "cpulist")
        if cpulist:
            for cpu in parse_cpu_list(cpulist):
                node_of[cpu] = int(node_dir.name[4:])

    cpus = []
    for cpu in online:
        topo = cpu_dir / f"cpu{cpu}" / "topology"
        core = _read(topo / "core_id")
        package = _read(topo / "physical_package_id")
        cpus.append(
            LogicalCpu(
                cpu=cpu,
                core=int(core) if core and core.lstrip("-").isdigit() else cpu,
                package=int(package) if package and package.lstrip("-").isdigit() else 0,
                node=node_of.get(cpu, 0),
            )
        )
    return Topology(cpus=tuple(cpus))
