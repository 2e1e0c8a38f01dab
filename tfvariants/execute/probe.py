"""Probing a variant: one of its modules (workloads.envprobe, workloads.onednn,
workloads.peakprobe) in a fresh process of the variant, asked with the workers' envelope
(``WorkerRequest.probe``) and run by the runner's process handling (``runner.watch``):
its own session, a timeout that stops the whole group, a capped output, and nothing it
started left running. One launcher (:func:`_launch`) for both readers: the environment
probe (:func:`run_probe`, a failure is a UserError) and the peak probe
(:func:`peak_probe`, a failure is a peak "not measured", with why)."""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tfvariants.errors import UserError, one_line
from tfvariants.execute import runner
from tfvariants.execute.launchable import Launchable
from tfvariants.execute.process import ProcessOutcome
from tfvariants.plan.pinning import PinPlan, plan_pinning
from tfvariants.plan.topology import read_topology
from workloads.protocol import WorkerRequest

PROBE_TIMEOUT_S = 300.0
MAX_PROBE_RESULT_BYTES = 16 << 20  # a probe's JSON is a few KiB
PEAK_MODULE = "workloads.peakprobe"
PEAK_TIMEOUT_S = 120.0


def _launch(
    variant: Launchable,
    plan: PinPlan,
    module: str,
    scratch: Path,
    *,
    timeout_s: float,
    refused: str,
    env: Mapping[str, str] | None = None,
    pinned: bool = False,
    priority: str = "normal",
) -> ProcessOutcome:
    """``module`` run in ``variant`` with ``plan``'s thread pools, its result asked at
    ``scratch``/result.json; ``pinned``: on ``plan``'s CPUs (a host-pinned variant), at
    ``priority``. ``refused`` names the probe when the fast tests' guard refuses it."""
    request = WorkerRequest.probe(str(scratch / "result.json"))
    worker_env = {**runner.worker_env(variant, plan), **(env or {})}
    command, cmd_env = variant.launch(request, worker_env, plan.cpus, scratch, module=module)
    if os.environ.get("TFV_NO_REAL_WORKERS") == "1":  # the fast tests' guard (conftest)
        raise RuntimeError(f"TFV_NO_REAL_WORKERS=1: refusing to probe {refused}")
    on_host = variant.pins_on_host()
    cpus = plan.cpus if pinned and on_host else ()
    launch = runner.Launch(command, cmd_env, cpus=cpus, priority=priority, on_host=on_host)
    return runner.watch(launch, timeout_s, io.BytesIO())


def run_probe(
    variant: Launchable, module: str = "workloads.envprobe", timeout_s: float = PROBE_TIMEOUT_S
) -> dict[str, Any]:
    """What ``module`` reports from inside ``variant`` (its JSON result); the backend
    never loads in this process. A probe that cannot start, times out or writes no
    result is a UserError naming the variant (one line)."""
    topo = read_topology()
    plan = plan_pinning(topo.logical_count, topo)
    # Private (0700, as mkdtemp makes it): a container runs as our user (engine.user_flags).
    scratch = Path(tempfile.mkdtemp(prefix="tfv-env-"))
    try:
        refused = (
            f"{variant.name} (real TensorFlow): mark the test @pytest.mark.tf or fake the probe"
        )
        outcome = _launch(variant, plan, module, scratch, timeout_s=timeout_s, refused=refused)
        warning = outcome.warning(f"probe of {variant.name}")
        if warning:
            print(f"tfvariants: warning: {one_line(warning)}", file=sys.stderr)
        return _read(variant, outcome, scratch / "result.json")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _read(variant: Launchable, outcome: ProcessOutcome, result: Path) -> dict[str, Any]:
    if outcome.start_error is not None:
        raise UserError(f"variant '{variant.name}': {outcome.start_error}")
    if outcome.timed_out:
        raise UserError(f"variant '{variant.name}': probe timed out")
    size = result.stat().st_size if result.is_file() else None
    if size is None or size > MAX_PROBE_RESULT_BYTES:
        tail = outcome.tail.strip().splitlines()[-1:] or ["no output"]
        if outcome.exit_code == -signal.SIGILL:
            tail = ["killed by SIGILL: its binary uses an instruction this CPU lacks"]
        elif size is not None:
            tail = [f"its result is {size} bytes, more than a probe writes"]
        raise UserError(f"variant '{variant.name}': probe failed ({outcome.exit_code}): {tail[0]}")
    try:
        data = json.loads(result.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        what = f"variant '{variant.name}': probe wrote an unreadable result: {exc}"
        raise UserError(what) from None
    if not isinstance(data, dict):
        raise UserError(f"variant '{variant.name}': probe wrote an unreadable result")
    return data


def peak_probe(variant: Launchable, plan: PinPlan, priority: str = "normal") -> dict[str, Any]:
    """workloads.peakprobe in a fresh process of the variant, pinned like a cell of
    ``plan``, at the run's ``priority`` (execute.priority: a probe at normal priority
    beside raised cells would lose its CPUs to the load they are shielded from, and read
    a lower peak). What it measured, or ``{"measured": False, "why": ...}``
    (tfvariants.variants.peak caches and records it)."""
    with tempfile.TemporaryDirectory(prefix="tfv-peak-") as scratch:
        outcome = _launch(
            variant,
            plan,
            PEAK_MODULE,
            Path(scratch),
            timeout_s=PEAK_TIMEOUT_S,
            refused=f"{variant.name}'s peak",
            env={"TFV_PEAK_DEVICE": variant.device},
            pinned=True,
            priority=priority,
        )
        if outcome.start_error is not None:
            return {"measured": False, "why": f"cannot start the peak probe: {outcome.start_error}"}
        if outcome.timed_out:
            return {"measured": False, "why": f"peak probe gave no result in {PEAK_TIMEOUT_S:g} s"}
        result = Path(scratch) / "result.json"
        if not result.is_file():
            tail = outcome.tail.strip().splitlines()[-1:] or ["no output"]
            return {"measured": False, "why": f"peak probe failed ({outcome.exit_code}): {tail[0]}"}
        data: dict[str, Any] = json.loads(result.read_text())
        if outcome.priority is not None:  # what it ran at, as a cell records it
            data["priority"] = outcome.priority.to_json()
        return data
