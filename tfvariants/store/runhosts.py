"""Ray nodes as hosts of a run: ``run.json`` "hosts" entries of kind "ray-node", so that
the cells they ran are not taken for another machine's."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from tfvariants.store.runfile import load_run, write_run


def host_id_for(hostname: str) -> str:
    """The host tag a worker records (workloads.envprobe.host_id) for a hostname."""
    return hashlib.sha256(hostname.encode()).hexdigest()[:12]


def ray_node_entry(
    *, node_id: str, hostname: str, instance: str, simulated: bool
) -> dict[str, Any]:
    """One ``hosts`` entry for a Ray node of a catalog instance type."""
    kind = "simulated" if simulated else "real instance"
    return {
        "host_id": host_id_for(hostname),
        "kind": "ray-node",
        "label": f"{instance} ({kind}, node {node_id[:8]})",
        "instance": instance,
        "node_id": node_id,
        "simulated": bool(simulated),
    }


def declare_hosts(results_dir: Path, entries: list[dict[str, Any]]) -> int:
    """Add host entries to run.json (a node once, by kind and node_id); returns how many
    were new. Other keys are untouched; the file is validated and written atomically."""
    record = load_run(Path(results_dir))
    hosts = list(record.get("hosts") or [])

    def key(h: dict[str, Any]) -> tuple:
        return (h.get("kind"), h.get("node_id") or h.get("host_id"))

    have = {key(h) for h in hosts}
    new = [e for e in entries if key(e) not in have]
    if new:
        write_run(Path(results_dir), {**record, "hosts": [*hosts, *new]})
    return len(new)
