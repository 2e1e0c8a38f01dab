"""What runs on a Ray node for one cell: the same runner as a local cell, in a scratch
folder, returning the result (with the node's facts) and the worker's log to the driver.

Imported on the nodes (shipped with the job's runtime environment); imports Ray lazily
so the driver-side helpers here work without it.
"""

from __future__ import annotations

import os
import platform
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from tfvariants.errors import UserError
from tfvariants.execute.containers import remove_container
from tfvariants.execute.launchable import Launchable
from tfvariants.execute.runner import (
    KILL_GRACE_S,
    RunOptions,
    run_cell,
    stop_groups,
)
from tfvariants.plan.cell import Cell
from tfvariants.store.result import host_result
from tfvariants.store.runfolder import RunFolder

# A node declares itself a real cloud instance with this Ray node label (the cluster
# recipes in docs/cluster/ set it); nodes without it are reported as simulated.
REAL_INSTANCE_LABEL = "tfvariants/real-instance"

_READY: dict[str, str | None] = {}  # per worker process: readiness is checked once


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or None


def node_facts(instance: str) -> dict[str, Any]:
    """Where this task runs: Ray node id, hostname, CPU model and counts, and whether the
    node declares itself a real instance."""
    import ray

    from workloads.envprobe import host_id

    ctx = ray.get_runtime_context()
    try:
        labels = ctx.get_node_labels() or {}
    except Exception:  # older Ray: no labels, so no declaration either
        labels = {}
    declared = str(labels.get(REAL_INSTANCE_LABEL, "")).lower() in ("true", "1", "yes")
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return {
        "executor": "ray",
        "instance": instance,
        "node_id": ctx.get_node_id(),
        "hostname": platform.node(),
        "host_id": host_id(),
        "cpu_model": _cpu_model(),
        "cpus": os.cpu_count(),
        "cpus_usable": affinity,
        "real_instance": declared,
        "simulated": not declared,
        "kind": "real instance"
        if declared
        else "simulated (node does not declare a real instance)",
    }


def _variant_problem(variant: Launchable) -> str | None:
    """Why this variant cannot run on this node (None: it can). GPU variants on a node
    without a GPU are left to the runner, which records them as skipped."""
    if variant.skip_reason():
        return None
    key = repr(variant)  # a Variant holds dicts: not hashable
    if key not in _READY:
        ready, detail = variant.readiness()
        _READY[key] = None if ready else detail
    return _READY[key]


def _stop_children() -> None:
    """Stop the worker(s) this process started (each leads its own process group)."""
    import psutil

    children = psutil.Process().children()
    stop_groups(
        [c.pid for c in children], lambda wait_s: not psutil.wait_procs(children, timeout=wait_s)[1]
    )
    for child in psutil.Process().children():
        try:
            remove_container(child.cmdline())
        except psutil.Error:
            pass


def _run_interruptibly(
    cell: Cell, variant: Launchable, options: RunOptions, folder: RunFolder
) -> dict:
    """run_cell in a thread, so that Ray's cancel (a KeyboardInterrupt raised between
    bytecodes of this thread) is not stuck behind the runner's blocking waitpid."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            # The task ships the stored dict home (run_on_node's contract).
            box["result"] = dict(run_cell(cell, variant, options, folder).raw)
        except BaseException as exc:  # handed to the task thread below
            box["error"] = exc

    thread = threading.Thread(target=target, name=f"cell-{cell.cell_id}", daemon=True)
    thread.start()
    try:
        while thread.is_alive():
            thread.join(0.5)
    except KeyboardInterrupt:
        _stop_children()
        thread.join(KILL_GRACE_S + 5)
        raise
    if "error" in box:
        raise box["error"]
    return box["result"]


def _prepare(variant: Launchable, lines: list[str]) -> tuple[dict | None, str | None]:
    """(the environment's identity, why it could not be made ready): a requirement-spec
    variant is built here on first use, once per node (envbuild's file lock)."""
    try:
        return variant.prepare(lambda line: lines.append(f"[build] {line}")), None
    except UserError as exc:
        return None, str(exc).strip().splitlines()[-1]


def run_on_node(cell: Cell, variant: Launchable, options: RunOptions, instance: str) -> dict:
    """The body of the Ray task: returns {"result": dict, "log": str}."""
    started = time.time()
    facts = node_facts(instance)
    work = Path(tempfile.mkdtemp(prefix="tfvariants-node-"))
    try:
        build_lines: list[str] = []
        environment, problem = _prepare(variant, build_lines)
        problem = problem or _variant_problem(variant)
        log = ""
        if problem:
            # An image the node lacks is skipped, as the dry run says (the recipes load
            # none); anything else missing on a node is a failure to look into.
            result = host_result(
                cell.to_dict(),
                "skipped" if variant.kind == "image" else "failed",
                f"variant {variant.name!r} is not available on node {facts['node_id'][:8]} "
                f"({facts['hostname']}): {problem}",
            )
        else:
            result = _run_interruptibly(cell, variant, options, RunFolder(work))
            log_path = work / "logs" / f"{cell.cell_id}.log"
            if log_path.is_file():
                log = log_path.read_text(encoding="utf-8", errors="replace")
        result["node"] = {**facts, "task_started_at": started, "task_finished_at": time.time()}
        if environment is not None:
            result["node"]["environment"] = environment
        return {"result": result, "log": "".join(f"{x}\n" for x in build_lines) + log}
    finally:
        shutil.rmtree(work, ignore_errors=True)
