"""The hosts a run declares in ``run.json`` ("hosts": [...]): the local host, or the Ray
nodes that ran its cells, so that their results are not taken for foreign ones."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from tfvariants.store.result import write_json_atomic

RUN_FILE = "run.json"


def host_id_for(hostname: str) -> str:
    """The worker's host tag (workloads.envprobe._host_id) for a given hostname."""
    return hashlib.sha256(hostname.encode()).hexdigest()[:12]


def ray_node_entry(
    *, node_id: str, hostname: str, instance: str, simulated: bool
) -> dict[str, Any]:
    """One ``hosts`` entry for a Ray node of a catalog instance type."""
    kind = "simulated" if simulated else "real instance"
    return {
        "host_id": host_id_for(hostname),
        "kind": "ray-node",
        "label": f"{instance} on {hostname} ({kind}, node {node_id[:8]})",
        "instance": instance,
        "node_id": node_id,
        "simulated": bool(simulated),
    }


def declare_hosts(results_dir: Path, entries: list[dict[str, Any]]) -> int:
    """Merge host entries into run.json (keyed by kind + node_id or host_id); returns how
    many were new. The file is rewritten atomically, other keys untouched."""
    path = Path(results_dir) / RUN_FILE
    record = json.loads(path.read_text(encoding="utf-8"))
    hosts = record.setdefault("hosts", [])

    def key(h: dict[str, Any]) -> tuple:
        return (h.get("kind"), h.get("node_id") or h.get("host_id"))

    have = {key(h) for h in hosts if isinstance(h, dict)}
    new = [e for e in entries if key(e) not in have]
    if new:
        hosts.extend(new)
        write_json_atomic(path, record)
    return len(new)
