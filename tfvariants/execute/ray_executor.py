"""Running the matrix on a Ray cluster: each cell is a Ray task on a node of its
instance type, one cell per node at a time, through the same runner as a local cell.

Node types are Ray custom resources named after catalog instances (a node of type
``n2-highcpu-16`` offers ``{"n2-highcpu-16": 1}``; a cell asks for all of it, so nothing
else runs there meanwhile). Results come back to this driver, which stores them in the
run folder exactly like local cells (``cells/<cell_id>.json``, ``logs/<cell_id>.log``).
A node lost mid-cell (a spot preemption) reruns the cell on another node of its type, up
to --preempt-retries times, each loss recorded in the result (execute/preempt.py); task
failure, missing node types and losses past the limit become results with reasons;
Ctrl-C cancels what is in flight (those cells are not recorded: --resume reruns them).

This is an executor of the one matrix loop (execute/matrix.py, execute/executors.py):
with --budget, adaptive repeats run as waves, the same ``next_round`` hook and budget
rule as local runs deciding; each round is submitted as one wave of Ray tasks (in
parallel across the nodes) while the time spent plus the wave's estimate fits the
budget.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from tfvariants.analyze.cost.preemption import preempted
from tfvariants.errors import UserError
from tfvariants.execute.executors import Finished, Results
from tfvariants.execute.preempt import DEFAULT_RETRIES, Attempts, node_lost
from tfvariants.execute.ray_node import REAL_INSTANCE_LABEL, run_on_node
from tfvariants.execute.record import StoredCell
from tfvariants.execute.runner import KILL_GRACE_S, RunOptions
from tfvariants.plan.cell import Cell
from tfvariants.store.result import host_result
from tfvariants.store.rundir import load_run_dir
from tfvariants.store.runfolder import RunFolder
from tfvariants.store.runhosts import declare_hosts, ray_node_entry

DEFAULT_NODE_WAIT_S = 900.0  # an autoscaled GPU node can take several minutes to join
POLL_S = 2.0


@dataclass(frozen=True)
class RaySettings:
    address: str = "auto"  # an existing cluster; never a throwaway local instance
    node_wait_s: float = DEFAULT_NODE_WAIT_S
    preempt_retries: int = DEFAULT_RETRIES  # reruns of a cell whose node was lost


def _import_ray() -> ModuleType:
    try:
        import ray
    except ImportError:
        raise UserError("--executor ray needs Ray: pip install 'tfvariants[ray]'") from None
    return ray


def _connect(ray: ModuleType, address: str, log_file: Path) -> None:
    """Join the cluster as a driver. Ray's own messages (connection info, node-death
    dumps, worker output) go to the run's logs/ray-driver.log, not the terminal."""
    handler = logging.FileHandler(log_file, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    ray_logger = logging.getLogger("ray")
    ray_logger.handlers[:] = [handler]
    ray_logger.propagate = False
    ray_logger.setLevel(logging.INFO)
    import tfvariants
    import workloads

    try:
        ray.init(
            address=address,
            log_to_driver=False,
            configure_logging=False,
            # The nodes get this driver's tfvariants and workloads code.
            runtime_env={
                "py_modules": [tfvariants, workloads],
                "excludes": ["__pycache__", "*.pyc"],
            },
        )
    except ConnectionError as exc:
        raise UserError(
            f"--ray-address {address}: cannot connect to a Ray cluster ({exc})"
        ) from None


def _alive_nodes(ray: ModuleType) -> list[dict]:
    return [n for n in ray.nodes() if n.get("Alive")]


def _node_entries(nodes: list[dict], instances: set[str]) -> list[dict]:
    out = []
    for n in nodes:
        for inst in sorted(instances & set(n.get("Resources") or {})):
            labels = n.get("Labels") or {}
            real = str(labels.get(REAL_INSTANCE_LABEL, "")).lower() in ("true", "1", "yes")
            out.append(
                ray_node_entry(
                    node_id=n["NodeID"],
                    hostname=n.get("NodeManagerHostname") or n.get("NodeManagerAddress", "?"),
                    instance=inst,
                    simulated=not real,
                )
            )
    return out


def _error_reason(exc: BaseException, instance: str) -> tuple[str, str]:
    """(one-line reason, full text for the cell's log) for a task that raised."""
    full = f"{type(exc).__name__}: {exc}"
    name = type(exc).__name__
    if name in ("NodeDiedError", "ObjectLostError", "OwnerDiedError"):
        why = f"node lost mid-cell ({instance}): {name}; the cell can be rerun with --resume"
    elif name in ("WorkerCrashedError", "ActorDiedError", "LocalRayletDiedError"):
        why = f"Ray worker died mid-cell ({instance}): {name}"
    elif name == "TaskCancelledError":
        why = f"task cancelled ({instance})"
    elif name in ("RuntimeEnvSetupError",):
        why = f"code could not be shipped to the {instance} node: {name}"
    else:
        first = str(exc).strip().splitlines()[-1:] or [""]
        why = f"task failed on a {instance} node: {name}: {first[0][:200]}"
    return why, full


class RayWaves:
    """The matrix loop's Ray executor (execute/executors.py): a round's pending cells
    submitted as one wave of Ray tasks, each on a node of the instance type
    ``placement`` maps its (variant, threads) to, stored in ``out`` as they end. The
    folder must be prepared (Matrix.prepare: run.json, resume checks)."""

    width = 0  # the rest of the round at once
    round_fields: Mapping[str, Any] = {"wave": "ray"}
    all_hosts = True  # nodes are declared as they join

    def __init__(
        self,
        out: Path,
        settings: RaySettings,
        placement: dict[tuple[str, int], str],
        variants: dict[str, Any],
        options_for: Callable[[Cell], RunOptions],
    ) -> None:
        self.out = Path(out)
        self.folder = RunFolder(self.out)
        self.settings, self.placement = settings, placement
        self.variants, self.options_for = variants, options_for
        self.ray: ModuleType | None = None
        self.lost: list[dict[str, Any]] = []  # every lost attempt of the run, for its summary

    def __enter__(self) -> RayWaves:
        self.ray = _import_ray()
        _connect(self.ray, self.settings.address, self.folder.write_driver_log("ray-driver.log"))
        return self

    def __exit__(self, *exc: object) -> None:
        if self.ray is not None:
            self.ray.shutdown()
        if self.lost:  # what the spot nodes' losses cost (priced in the report)
            import sys

            lines = "; ".join(p.line for p in preempted([{"attempts": self.lost}]))
            print(f"preemptions: {lines}", file=sys.stderr)

    def take(self, todo: list[Cell], i: int) -> list[Cell]:
        slot = todo[i:]
        del todo[i + 1 :]
        return slot

    def _store(self, cell: Cell, result: dict, log: str) -> StoredCell:
        log_path = self.folder.write_log(cell.cell_id, log)
        runner = result.get("runner")
        if isinstance(runner, dict):
            runner["log"] = str(log_path)  # the node's scratch copy is gone
        return StoredCell.written(
            cell.cell_id, result, self.folder.write_cell(cell.cell_id, result)
        )

    def estimate(self, cells: Sequence[Cell], eta: object) -> float:
        """A wave's wall time, as if one node per type: per type, the sum of its cells'
        last measured wall times (the median of the configuration's stored cells) plus
        the node-seconds its preemptions cost per stored cell so far (spent time, like
        the cells'); the slowest type decides. Unknown configurations count as the
        slowest known cell."""
        from statistics import median

        stored = load_run_dir(self.out, allow_mixed_hosts=True).results
        walls: dict[tuple[str, str, int], list[float]] = {}
        lost: dict[str, float] = {}  # node type -> node-seconds its preemptions cost
        seen: dict[str, int] = {}  # node type -> stored cells
        for r in stored.values():
            cell, runner = r.get("cell") or {}, r.get("runner") or {}
            inst = self.placement.get((str(cell.get("variant")), int(cell.get("threads") or 0)))
            if inst is not None:
                seen[inst] = seen.get(inst, 0) + 1
                lost[inst] = lost.get(inst, 0.0) + sum(
                    float(a.get("lost_s") or 0.0) for a in r.get("attempts") or ()
                )
            if isinstance(runner.get("wall_s"), (int, float)):
                key = (
                    str(cell.get("workload")),
                    str(cell.get("variant")),
                    int(cell.get("threads") or 0),
                )
                walls.setdefault(key, []).append(float(runner["wall_s"]))
        typical = {k: median(v) for k, v in walls.items()}
        fallback = max(typical.values(), default=0.0)
        per_type: dict[str, float] = {}
        for c in cells:
            inst = self.placement[(c.variant, c.threads)]
            per_type[inst] = (
                per_type.get(inst, 0.0)
                + typical.get((c.workload, c.variant, c.threads), fallback)
                + lost.get(inst, 0.0) / seen.get(inst, 1)
            )
        return max(per_type.values(), default=0.0)

    def submit(self, cells: Sequence[Cell], folder: RunFolder) -> Results[Cell]:
        """One wave: every cell a task; a cell whose node is lost is submitted again (to
        a node of its type) up to ``preempt_retries`` times; each stored as it ends. A
        Ctrl-C (or the loop leaving early) cancels what is in flight."""
        ray = self.ray
        assert ray is not None, "entered first"
        instances = {self.placement[(c.variant, c.threads)] for c in cells}
        declare_hosts(self.out, _node_entries(_alive_nodes(ray), instances))
        pending: dict[Any, tuple[Cell, Attempts]] = {}
        for cell in cells:
            attempts = Attempts(self.placement[(cell.variant, cell.threads)])
            pending[self._launch(ray, cell, attempts.instance)] = (cell, attempts)
        free_since: dict[str, float] = {}  # node type -> when its last cell ended
        waiting_since: dict[str, float] = {}
        try:
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1, timeout=POLL_S)
                for ref in ready:
                    cell, attempts = pending.pop(ref)
                    inst = attempts.instance
                    try:
                        payload = ray.get(ref)
                    except Exception as exc:  # Ray's errors: node death, worker crash, task error
                        retry = (
                            node_lost(exc) and len(attempts.lost) < self.settings.preempt_retries
                        )
                        if node_lost(exc):
                            attempts.record(exc, free_since.get(inst, 0.0))
                        if retry:
                            self._say_rerun(cell, attempts)
                            pending[self._launch(ray, cell, inst)] = (cell, attempts)
                            continue
                        payload = exc
                    free_since[inst] = time.monotonic()
                    yield self._finish(payload, cell, attempts)
                if not ready:
                    yield from self._check_node_types(ray, pending, waiting_since)
        except (KeyboardInterrupt, GeneratorExit):
            self._cancel(ray, pending)
            raise

    def _launch(self, ray: ModuleType, cell: Cell, inst: str) -> object:
        task = ray.remote(num_cpus=0, max_retries=0)(run_on_node)  # reruns are ours
        return task.options(resources={inst: 1}, name=f"tfvariants {cell.cell_id}").remote(
            cell, self.variants[cell.variant], self.options_for(cell), inst
        )

    def _say_rerun(self, cell: Cell, attempts: Attempts) -> None:
        """The rerun and the preemptions so far, on the driver's terminal."""
        import sys

        (line,) = [p.line for p in preempted([{"attempts": attempts.lost[-1:]}])]
        print(
            f"{cell.cell_id}: {line}; rerunning on another {attempts.instance} node "
            f"({len(attempts.lost)}/{self.settings.preempt_retries})",
            file=sys.stderr,
        )

    def _finish(
        self, payload: dict | BaseException, cell: Cell, attempts: Attempts
    ) -> Finished[Cell]:
        inst = attempts.instance
        if isinstance(payload, BaseException):
            if node_lost(payload) and attempts.lost:
                reason, full = (
                    attempts.failed_reason(self.settings.preempt_retries),
                    (f"{type(payload).__name__}: {payload}"),
                )
            else:
                reason, full = _error_reason(payload, inst)
            result = host_result(cell.to_dict(), "failed", reason)
            result["node"] = {"executor": "ray", "instance": inst}
            log = full
        else:
            result, log = payload["result"], payload.get("log", "")
            node = result.get("node") or {}
            if node.get("node_id"):
                declare_hosts(
                    self.out,
                    [
                        ray_node_entry(
                            node_id=node["node_id"],
                            hostname=node.get("hostname", "?"),
                            instance=inst,
                            simulated=bool(node.get("simulated", True)),
                        )
                    ],
                )
        if attempts.lost:
            result["attempts"] = attempts.lost
            self.lost += attempts.lost
        stored = self._store(cell, result, log)
        wall = (stored.raw.get("runner") or {}).get("wall_s") or 0.0
        return Finished(cell, stored, float(wall))

    def _check_node_types(
        self,
        ray: ModuleType,
        pending: dict[Any, tuple[Cell, Attempts]],
        waiting_since: dict[str, float],
    ) -> Results[Cell]:
        """Cells whose instance type no live node offers wait up to node_wait_s (an
        autoscaler may be starting one), then fail with that reason."""
        offered: set[str] = set()
        for n in _alive_nodes(ray):
            offered |= set(n.get("Resources") or {})
        now = time.monotonic()
        for inst in {a.instance for _c, a in pending.values()}:
            if inst in offered:
                waiting_since.pop(inst, None)
                continue
            since = waiting_since.setdefault(inst, now)
            if now - since < self.settings.node_wait_s:
                continue
            reason = (
                f"no node of type {inst} joined the cluster within "
                f"{self.settings.node_wait_s:g} s (declare it as a Ray custom resource)"
            )
            for ref, (cell, a) in list(pending.items()):
                if a.instance != inst:
                    continue
                ray.cancel(ref, force=False)
                pending.pop(ref)
                result = host_result(cell.to_dict(), "failed", reason)
                result["node"] = {"executor": "ray", "instance": inst}
                if a.lost:
                    result["attempts"] = a.lost
                    self.lost += a.lost
                yield Finished(cell, self._store(cell, result, reason + "\n"), 0.0)

    def _cancel(self, ray: ModuleType, pending: dict[Any, tuple[Cell, Attempts]]) -> None:
        """Ctrl-C: ask every task to stop (the node stops its worker), then force."""
        refs = list(pending)
        for ref in refs:
            try:
                ray.cancel(ref, force=False)
            except Exception:
                pass
        deadline = time.monotonic() + KILL_GRACE_S + 10
        remaining = refs
        while remaining and time.monotonic() < deadline:
            try:
                _done, remaining = ray.wait(remaining, num_returns=len(remaining), timeout=1.0)
            except KeyboardInterrupt:
                break  # a second Ctrl-C: stop waiting
        for ref in remaining:
            try:
                ray.cancel(ref, force=True)
            except Exception:
                pass
