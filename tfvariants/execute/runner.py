"""Running one cell: a fresh, pinned worker process and exactly one result file.

Whatever happens to the worker (crash, signal, timeout, garbage output, a result file
that never appears), the host writes one result for the cell and returns it; only a
Ctrl-C propagates, after the worker's process group has been stopped.
"""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from tfvariants.errors import one_line
from tfvariants.execute import priority as prio
from tfvariants.execute.containers import remove_container
from tfvariants.execute.judge import judge
from tfvariants.execute.launchable import Launchable
from tfvariants.execute.process import (
    SPAWN_LOCK,
    CappedLog,
    Leftover,
    Ownership,
    ProcessOutcome,
    interrupted,
    start_pump,
)
from tfvariants.execute.quiet import QuietWait
from tfvariants.execute.record import StoredCell
from tfvariants.options.cell import CellOptions
from tfvariants.options.declare import RunOptionsBase
from tfvariants.plan.pinning import PinPlan, plan_pinning
from tfvariants.plan.task import PlannedCell
from tfvariants.plan.tasks import WorkerOrder, task_of
from tfvariants.plan.topology import Topology, read_topology
from tfvariants.store.result import host_result
from tfvariants.store.runfolder import ARTIFACTS_DIR, RunFolder
from workloads.envprobe import host_id
from workloads.protocol import WorkerRequest

# Only these reach the worker from the caller's environment (pyperf's approach):
# nothing else, so no secret and no stray TF_* setting leaks into a measurement.
# (TFV_NO_REAL_WORKERS: the test suite's guard against real TensorFlow, see workloads/__init__.py.)
ENV_PASSTHROUGH = tuple(
    "PATH HOME LANG LC_ALL TZ TMPDIR USER LD_LIBRARY_PATH TFV_NO_REAL_WORKERS".split()
)

# Waits for the cell's CPUs to be quiet (tfvariants.execute.quiet.wait_for_quiet, bound).
QuietGate = Callable[[Sequence[int]], QuietWait]

# After SIGTERM, how long a timed-out worker gets before SIGKILL.
KILL_GRACE_S = 5.0
# How long the log's reader may take to drain the pipe once the worker and what it left
# have been killed (a writer the sweep could not kill would hold it open).
PUMP_JOIN_S = 10.0


# What a training cell runs with: declared once with the run options.
RunOptions = CellOptions


def worker_env(variant: Launchable, plan: PinPlan) -> dict[str, str]:
    env = {k: os.environ[k] for k in ENV_PASSTHROUGH if k in os.environ}
    env.update(plan.env())
    env["KERAS_BACKEND"] = variant.backend
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # the workloads folder may be read-only
    env.update(variant.env)  # last: a variant's env defines it
    return env


def worker_request(
    cell: PlannedCell, order: WorkerOrder, plan: PinPlan, result_path: Path
) -> WorkerRequest:
    """What the worker is asked to do (its task's ``order``), with host paths (a
    container launcher rewrites them on the object)."""
    payload = dict(order.payload) if order.payload is not None else None
    return WorkerRequest(
        **order.fields,
        workload=order.workload,
        cell=cell.to_dict(),
        result=str(result_path),
        intra_op=plan.intra_op,
        inter_op=plan.inter_op,
        cpus=tuple(plan.cpus),
        requested=plan.to_dict(),
        task=task_of(cell.to_dict()).name,
        payload=payload,
    )


@functools.cache
def _autogroup_applies() -> str | None:
    """Whether session groups decide between our workers and other programs (read once:
    it is the host's configuration, not the cell's)."""
    return prio.autogroup_applies()


def stop_groups(pgids: Sequence[int], ended: Callable[[float], bool]) -> None:
    """The one SIGTERM -> SIGKILL escalation (a timeout, Ctrl-C or SIGTERM, Ray's
    cancel): SIGTERM to each worker's process group (each leads its own session), and
    SIGKILL to those left if ``ended(KILL_GRACE_S)`` says they have not all ended."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        sent = False
        for pgid in pgids:
            try:
                os.killpg(pgid, sig)
                sent = True
            except (ProcessLookupError, PermissionError):
                continue
        if not sent or ended(KILL_GRACE_S):
            return


def _exited(proc: subprocess.Popen[bytes], wait_s: float) -> bool:
    try:
        proc.wait(timeout=wait_s)
        return True
    except subprocess.TimeoutExpired:
        return False


def _die_with_parent() -> None:
    """In the worker (before exec): get SIGKILL when the process that started it dies,
    e.g. a Ray worker lost with its node, so no orphan keeps measuring."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass  # not Linux: best effort


def _wait_blocking(
    proc: subprocess.Popen[bytes],
    timeout_s: float,
    stop: threading.Event | None = None,
    halt: threading.Event | None = None,
) -> tuple[int | None, bool]:
    """Wait for the worker without polling; stop its group if it outlives the timeout,
    or once ``stop`` (a duet's partner ended) or ``halt`` (its log failed) is set.

    ``Popen.wait(timeout=...)`` polls every few milliseconds, which on a 2-core host
    took a visible share of the CPUs being measured; a blocking waitpid costs nothing,
    and a timer thread does the killing. (A KeyboardInterrupt propagates: the caller
    stops the group and sweeps.)
    """
    finished = threading.Event()
    timed_out = threading.Event()

    def on_timeout() -> None:
        timed_out.set()
        stop_groups([proc.pid], finished.wait)

    timer = threading.Timer(timeout_s, on_timeout)
    timer.daemon = True
    timer.start()
    for event in (stop, halt):
        if event is not None:

            def on_event(event: threading.Event = event) -> None:
                if event.wait(timeout_s) and not finished.is_set():
                    stop_groups([proc.pid], finished.wait)

            threading.Thread(target=on_event, name="worker-stop", daemon=True).start()
    try:
        code = proc.wait()
    finally:
        finished.set()
        timer.cancel()
        if halt is not None:
            halt.set()  # its waiting thread ends now, not at the timeout
    return code, timed_out.is_set()


@dataclass(frozen=True)
class Launch:
    """How to start one worker process (the part of a cell the runner does not judge)."""

    command: list[str]
    env: dict[str, str]
    cpus: tuple[int, ...] = ()  # pin to these before exec (host-pinned variants)
    priority: str = "normal"  # "raised": the session group at the lowest nice permitted
    on_host: bool = True  # False: a container engine pins and prioritises


def watch(
    launch: Launch, timeout_s: float, sink: IO[bytes], stop: threading.Event | None = None
) -> ProcessOutcome:
    """Start the worker in its own session, wait for it (or its timeout, or ``stop``), and
    leave nothing it started running; its output goes to ``sink``, capped
    (process.CappedLog). A KeyboardInterrupt propagates after the worker's group and
    leftovers are gone."""
    raise_it = launch.priority == "raised" and launch.on_host
    lowest = prio.granted().nice if raise_it else 0  # read here: preexec runs in the child
    # Where a cgroup v2 CPU controller decides: the worker's own cgroup, weighted, if allowed.
    group = prio.make_cell_group() if raise_it and _autogroup_applies() is not None else None

    def preexec() -> None:
        _die_with_parent()
        # Pin before exec: TensorFlow sizes some pools from the affinity it starts with.
        if launch.cpus and hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(0, launch.cpus)
        if raise_it:  # after setsid: the worker's own session group
            prio.raise_in_child(lowest)
        if group is not None:
            group.join()

    owned = Ownership()
    log = CappedLog(sink, on_error=(halt := threading.Event()).set)  # stops the worker
    started = time.monotonic()
    try:
        with SPAWN_LOCK:  # no other cell's sweep runs while this one forks and execs
            if interrupted():  # a Ctrl-C reached the main thread (a duet's other cell)
                raise KeyboardInterrupt
            proc = subprocess.Popen(
                launch.command,
                env={**launch.env, **owned.env()},
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # own process group: a timeout kills it all
                preexec_fn=preexec,
            )
            owned.spawned(proc.pid)
    except BaseException as exc:
        owned.close()
        if group is not None:
            group.remove()
        if not isinstance(exc, OSError):
            raise
        reason = f"cannot start worker: {exc.strerror}: {launch.command[0]}"
        return ProcessOutcome(launch.command, None, 0.0, start_error=reason)
    assert proc.stdout is not None
    pump = start_pump(log, proc.stdout.fileno())
    # Read while the worker runs: preexec ran before exec, and Popen returned after it.
    got = (
        prio.read_back(proc.pid, launch.priority, _autogroup_applies(), cell_group=group)
        if launch.on_host
        else prio.container(launch.priority)
    )
    try:
        code, timed_out = _wait_blocking(proc, timeout_s, stop, halt)
        if interrupted():  # stopped by a Ctrl-C on the main thread: not a result
            raise KeyboardInterrupt
    except KeyboardInterrupt:
        stop_groups([proc.pid], lambda wait_s: _exited(proc, wait_s))
        _after(launch, proc, owned, log, pump)
        if group is not None:
            group.remove()
        raise
    wall = time.monotonic() - started
    killed = _after(launch, proc, owned, log, pump)
    if group is not None:  # empty now: everything the cell started is gone
        group.remove()
    return ProcessOutcome(
        launch.command,
        code,
        wall,
        timed_out=timed_out,
        priority=got,
        killed=killed,
        log_cut_bytes=log.cut,
        log_error=log.error,
        tail=log.last_text(),
    )


def _after(
    launch: Launch,
    proc: subprocess.Popen[bytes],
    owned: Ownership,
    log: CappedLog,
    pump: threading.Thread,
) -> tuple[Leftover, ...]:
    """Once the worker has ended: remove its container, kill what it left, close the log
    (the pipe ends once every writer is gone). The container goes first: the engine's
    own helpers end with it (process.Ownership.sweep)."""
    container = remove_container(launch.command)
    killed = list(owned.sweep(proc.pid, engine=not launch.on_host))
    if container is not None:
        killed.append(container)
    pump.join(PUMP_JOIN_S)
    if proc.stdout is not None and not pump.is_alive():
        proc.stdout.close()
    log.finish()
    return tuple(killed)


@dataclass(frozen=True)
class Conditions:
    """How this host runs a cell's worker, whatever the cell measures: the wait for its
    CPUs to be quiet just before it starts (recorded as ``runner.quiet``; the gate sees
    the result after), its priority ("raised": the session group at the lowest nice
    permitted, recorded as ``runner.priority``) and the event that stops it early (a
    duet's filler, once its partner's cell has ended)."""

    quiet: QuietGate | None = None
    priority: str = "normal"
    stop: threading.Event | None = None


def run_cell(
    cell: PlannedCell,
    variant: Launchable,
    options: RunOptionsBase,
    folder: RunFolder,
    topology: Topology | None = None,
    at: Conditions = Conditions(),
    *,
    plan: PinPlan | None = None,
) -> StoredCell:
    """Run one cell of any task in a fresh worker; write its result and return the record of it.

    The result is stored as ``cells/<cell_id>.json`` of ``folder``, the worker's
    combined log (capped) as ``logs/<cell_id>.log``, what its task keeps of the worker's
    files under ``artifacts/<cell_id>/``. ``plan``: its CPUs and pools (a duet's second
    side; default the task's pools on the usual plan on ``topology``); ``at``: its wait
    for quiet, priority and stop (Conditions).
    """
    task = task_of(cell.to_dict())
    pinned = plan or task.pinning(plan_pinning(cell.threads, topology or read_topology()))
    order = task.worker(cell, options, variant.keras, variant.backend)
    return run_request(cell, variant, pinned, order, folder=folder, at=at)


def run_request(
    cell: PlannedCell,
    variant: Launchable,
    plan: PinPlan,
    order: WorkerOrder,
    *,
    folder: RunFolder,
    at: Conditions = Conditions(),
) -> StoredCell:
    """The one life of a cell, whatever it measures: skipped here, or one fresh worker
    (``order``: its request, module and limit) on ``plan`` under the conditions ``at``, and
    exactly one result stored as ``cells/<cell_id>.json`` of ``folder``; returned is the
    record of what was stored, with how the worker's process ended (None when none ran).
    What the cell left running is killed and recorded as ``runner.killed``."""
    config, timeout_s, quiet = dict(order.config), order.timeout_s, at.quiet
    cid = cell.cell_id
    with SPAWN_LOCK:  # a venv's readiness runs its interpreter: not during another's sweep
        reason = variant.skip_reason()
    if reason:
        result = host_result(
            cell.to_dict(), "skipped", reason, config=config, requested=plan.to_dict()
        )
        result["runner"] = {
            "variant_kind": variant.kind,
            "command": None,
            "exit_code": None,
            "host_id": host_id(),
        }
        return StoredCell.written(cid, result, folder.write_cell(cid, result))

    folder.check_cell_slot(cid)  # before its log is replaced for a result never stored
    # Private to us (0700): a container's user is ours (see variants.engine.user_flags).
    with folder.scratch(cid) as scratch:
        request = worker_request(cell, order, plan, scratch / "result.json")
        # A launch may run a helper process: never while another cell in flight (a
        # duet's) sweeps, which would take it for that cell's leftover.
        with SPAWN_LOCK:
            command, env = variant.launch(
                request, worker_env(variant, plan), plan.cpus, scratch, module=order.module
            )
        on_host = variant.pins_on_host()
        cpus = tuple(plan.cpus) if on_host else ()
        launch = Launch(command, env, cpus, at.priority, on_host)
        waited = quiet(plan.cpus) if quiet is not None else None
        with folder.log_file(cid) as log:
            outcome = watch(launch, timeout_s, log, at.stop)
        result = judge(cell, variant, outcome, scratch / "result.json", config, plan, timeout_s)
        result["runner"] = {
            "host_id": host_id(),  # the worker's own may be a container's
            "variant_kind": variant.kind,
            "image": variant.image,
            **outcome.runner_fields(),
            "log": str(folder.log_path(cid)),
        }
        if waited is not None:
            result["runner"]["quiet"] = waited.to_json()
        warning = outcome.warning(cid)
        if warning:
            print(f"tfvariants: warning: {one_line(warning)}", file=sys.stderr)
        kept = folder.keep_artifacts(cid, _left(scratch, order.keep))
        if kept:
            result["artifacts"] = kept
        path = folder.write_cell(cid, result)
        observe = getattr(quiet, "observe", None)
        if observe is not None:
            observe(result)
        return StoredCell.written(cid, result, path, outcome)


def _left(scratch: Path, keep: Sequence[str]) -> dict[str, Path]:
    """What a worker leaves worth keeping: its artifacts (e.g. LoadGen's logs) and the
    files its task names (a model server's log), by the name they get in
    <run>/artifacts/<cell_id>/."""
    src = scratch / ARTIFACTS_DIR
    found = {p.name: p for p in sorted(src.iterdir())} if src.is_dir() else {}
    found.update((name, scratch / name) for name in keep)
    return found
