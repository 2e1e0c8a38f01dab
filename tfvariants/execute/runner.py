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
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, fields
from pathlib import Path
from typing import IO, Any

from tfvariants.execute import priority as prio
from tfvariants.execute.quiet import QuietWait
from tfvariants.options.cell import CellOptions
from tfvariants.plan.cell import Cell
from tfvariants.plan.pinning import PinPlan, plan_pinning
from tfvariants.plan.task import PlannedCell
from tfvariants.plan.topology import Topology, read_topology
from tfvariants.store.result import (
    ResultError,
    host_result,
    load_result,
    stderr_tail,
)
from tfvariants.store.runfolder import RunFolder
from tfvariants.variants import Variant, skip_reason
from workloads.envprobe import host_id
from workloads.protocol import WorkerRequest

# Only these reach the worker from the caller's environment (pyperf's approach):
# nothing else, so no secret and no stray TF_* setting leaks into a measurement.
# (TFV_NO_REAL_WORKERS: the test suite's guard against real TensorFlow, see workloads/__init__.py.)
ENV_PASSTHROUGH = ("PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR", "USER", "LD_LIBRARY_PATH",
                   "TFV_NO_REAL_WORKERS")  # fmt: skip

# Waits for the cell's CPUs to be quiet (tfvariants.execute.quiet.wait_for_quiet, bound).
QuietGate = Callable[[Sequence[int]], QuietWait]

# After SIGTERM, how long a timed-out worker gets before SIGKILL.
KILL_GRACE_S = 5.0


# What a training cell runs with: declared once with the run options.
RunOptions = CellOptions


def worker_env(variant: Variant, plan: PinPlan) -> dict[str, str]:
    env = {k: os.environ[k] for k in ENV_PASSTHROUGH if k in os.environ}
    env.update(plan.env())
    env["KERAS_BACKEND"] = variant.backend
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # the workloads folder may be read-only
    env.update(variant.env)  # last: a variant's env defines it
    return env


def worker_request(
    cell: Cell, plan: PinPlan, options: RunOptions, variant: Variant, result_path: Path
) -> WorkerRequest:
    """What the worker is asked to do, with host paths (a container launcher rewrites
    them on the object)."""
    # Every option the request declares under the same name goes to the worker as is.
    wanted = {f.name for f in fields(WorkerRequest)}
    return WorkerRequest(
        **{k: v for k, v in asdict(options).items() if k in wanted},
        workload=cell.workload,
        cell=cell.to_dict(),
        result=str(result_path),
        intra_op=plan.intra_op,
        inter_op=plan.inter_op,
        cpus=tuple(plan.cpus),
        keras_options=dict(variant.keras),
        requested=plan.to_dict(),
        backend=variant.backend,
    )


@functools.cache
def _autogroup_applies() -> str | None:
    """Whether session groups decide between our workers and other programs (read once:
    it is the host's configuration, not the cell's)."""
    return prio.autogroup_applies()


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


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
    proc: subprocess.Popen[bytes], timeout_s: float, command: list[str]
) -> tuple[int | None, bool]:
    """Wait for the worker without polling; stop its group if it outlives the timeout.

    ``Popen.wait(timeout=...)`` polls every few milliseconds, which on a 2-core host
    took a visible share of the CPUs being measured; a blocking waitpid costs nothing,
    and a timer thread does the killing.
    """
    finished = threading.Event()
    timed_out = threading.Event()

    def on_timeout() -> None:
        timed_out.set()
        stop_groups([proc.pid], finished.wait)

    timer = threading.Timer(timeout_s, on_timeout)
    timer.daemon = True
    timer.start()
    try:
        code = proc.wait()
    except KeyboardInterrupt:
        timer.cancel()
        stop_groups([proc.pid], lambda wait_s: _exited(proc, wait_s))
        _remove_container(command)
        raise
    finally:
        finished.set()
        timer.cancel()
    if timed_out.is_set():
        _remove_container(command)
    return code, timed_out.is_set()


def _remove_container(command: list[str]) -> None:
    """A killed engine client can leave its container running: remove it by name."""
    if "--name" not in command or len(command) < 2 or command[1] != "run":
        return
    name = command[command.index("--name") + 1]
    try:
        subprocess.run([command[0], "rm", "-f", "--time", "2", name], capture_output=True,
                       timeout=60, stdin=subprocess.DEVNULL)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        pass  # best effort: the cell's result already says what happened


def run_cell(
    cell: Cell,
    variant: Variant,
    options: RunOptions,
    cells_dir: str | Path,
    topology: Topology | None = None,
    quiet: QuietGate | None = None,
    priority: str = "normal",
) -> dict[str, Any]:
    """Run one training cell in a fresh worker; write and return its result.

    The result is stored as ``cells_dir/<cell_id>.json``; the worker's combined log as
    ``logs/<cell_id>.log`` of the same run folder (tfvariants.store.runfolder).
    """
    plan = plan_pinning(cell.threads, topology or read_topology())
    config = asdict(options)
    config["keras_options"] = dict(variant.keras)
    return run_request(
        cell,
        variant,
        plan,
        lambda result_path: worker_request(cell, plan, options, variant, result_path),
        cells_dir=cells_dir,
        config=config,
        timeout_s=options.timeout_s,
        quiet=quiet,
        priority=priority,
    )


def run_request(
    cell: PlannedCell,
    variant: Variant,
    plan: PinPlan,
    make_request: Callable[[Path], Any],
    *,
    cells_dir: str | Path,
    config: dict[str, Any],
    timeout_s: float,
    module: str = "workloads.worker",
    keep: Callable[[Path, dict[str, Any]], None] | None = None,
    quiet: QuietGate | None = None,
    priority: str = "normal",
) -> dict[str, Any]:
    """The one life of a cell, whatever it measures: skipped here, or one fresh worker
    (``python -m module``) given ``make_request(result_path)``, and exactly one result
    stored as ``cells_dir/<cell_id>.json``. ``keep(scratch, result)`` may copy what the
    worker left beside its result before the scratch folder goes. ``quiet(cpus)``, when
    given, waits for the cell's CPUs to be quiet just before the worker starts; what it
    found is recorded as ``runner.quiet``, and it sees the result after (``observe``).
    ``priority`` "raised" asks for the worker's session group at nice -20
    (tfvariants.execute.priority); what it got is recorded as ``runner.priority``."""
    folder = RunFolder(Path(cells_dir).parent)
    cid = cell.cell_id

    reason = skip_reason(variant)
    if reason:
        result = host_result(
            cell.to_dict(), "skipped", reason, config=config, requested=plan.to_dict()
        )
        result["runner"] = {"variant_kind": variant.kind, "command": None, "exit_code": None,
                            "host_id": host_id()}  # fmt: skip
        folder.write_cell(cid, result)
        return result

    # Private to us (0700): a container's user is ours (see variants.engine.user_flags).
    with folder.scratch(cid) as scratch:
        request = make_request(scratch / "result.json")
        command, env = variant.launch(
            request, worker_env(variant, plan), plan.cpus, scratch, module=module
        )
        waited = quiet(plan.cpus) if quiet is not None else None
        with folder.log_file(cid) as log:
            result = _execute(
                cell, variant, timeout_s, plan, command, env, scratch, log, config, priority
            )
        result["runner"] = {
            "host_id": host_id(),  # the worker's own may be a container's
            "variant_kind": variant.kind,
            "image": variant.image,
            "command": command,
            "exit_code": result.pop("_exit_code", None),
            "wall_s": result.pop("_wall_s", None),
            "log": str(folder.log_path(cid)),
        }
        got = result.pop("_priority", None)
        if got is not None:
            result["runner"]["priority"] = got.to_json()
        if waited is not None:
            result["runner"]["quiet"] = waited.to_json()
        if keep is not None:
            keep(scratch, result)
        folder.write_cell(cid, result)
        observe = getattr(quiet, "observe", None)
        if observe is not None:
            observe(result)
        return result


def _execute(
    cell: PlannedCell,
    variant: Variant,
    timeout_s: float,
    plan: PinPlan,
    command: list[str],
    env: dict[str, str],
    scratch: Path,
    log: IO[bytes],
    config: dict[str, Any],
    priority: str = "normal",
) -> dict[str, Any]:
    on_host = variant.pins_on_host()
    raise_it = priority == "raised" and on_host

    def preexec() -> None:
        _die_with_parent()
        # Pin before exec: TensorFlow sizes some pools from the affinity it starts with.
        if on_host and hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(0, plan.cpus)
        if raise_it:  # after setsid: the worker's own session group
            prio.raise_in_child()

    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            command,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # own process group: a timeout kills it all
            preexec_fn=preexec,
        )
    except OSError as exc:
        return {
            **host_result(
                cell.to_dict(), "failed", f"cannot start worker: {exc.strerror}: {command[0]}",
                config=config, requested=plan.to_dict(),
            ),
            "_exit_code": None,
            "_wall_s": 0.0,
        }  # fmt: skip
    # Read while the worker runs: preexec ran before exec, and Popen returned after it.
    got = (
        prio.read_back(proc.pid, priority, _autogroup_applies())
        if on_host
        else prio.container(priority)
    )
    code, timed_out = _wait_blocking(proc, timeout_s, command)
    wall = time.monotonic() - started
    log.flush()
    log.seek(0)
    log_text = log.read().decode("utf-8", errors="replace")
    result_file = scratch / "result.json"

    def failed(status: str, reason: str) -> dict[str, Any]:
        res = host_result(
            cell.to_dict(), status, reason, stderr=log_text, config=config,
            requested=plan.to_dict(),
        )  # fmt: skip
        res["_exit_code"] = code
        res["_wall_s"] = wall
        res["_priority"] = got
        return res

    if timed_out:
        return failed("timeout", f"no result within the {timeout_s:g} s timeout")
    if code is not None and code == -signal.SIGILL:
        # The up-front gate missed it (an image, or a kernel only some ops reach).
        return failed("failed", (
            "worker killed by SIGILL: the variant's binary used an instruction this CPU "
            f"lacks (`tfvariants variants census {variant.name} --full` counts them); "
            "rerunning will not help"
        ))  # fmt: skip
    if code is not None and code < 0:
        return failed("failed", f"worker killed by {_signal_name(code)}")
    if not result_file.exists():
        return failed("failed", f"worker exited with code {code} and wrote no result file")
    try:
        result = load_result(result_file)
    except ResultError as exc:
        return failed("failed", f"invalid result file: {exc}".replace(str(result_file), "result"))
    if result.get("cell") != cell.to_dict():
        return failed("failed", "result file is for a different cell")
    if result["status"] != "ok":
        result["stderr_tail"] = stderr_tail(log_text)
    elif code != 0:
        return failed("failed", f"worker wrote a result but exited with code {code}")
    result["_exit_code"] = code
    result["_wall_s"] = wall
    result["_priority"] = got
    return result
