"""Probing a variant: one of its modules (workloads.envprobe, workloads.onednn) in a fresh
process of the variant, asked with the workers' envelope (``WorkerRequest.probe``) and
run by the runner's process handling (``runner.watch``): its own session, a timeout that
stops the whole group, a capped output, and nothing it started left running."""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path
from typing import Any

from tfvariants.errors import UserError, one_line
from tfvariants.execute.process import ProcessOutcome
from tfvariants.execute.runner import Launch, watch, worker_env
from tfvariants.plan.pinning import plan_pinning
from tfvariants.plan.topology import read_topology
from tfvariants.variants import Variant
from workloads.protocol import WorkerRequest

PROBE_TIMEOUT_S = 300.0
MAX_PROBE_RESULT_BYTES = 16 << 20  # a probe's JSON is a few KiB


def run_probe(
    variant: Variant, module: str = "workloads.envprobe", timeout_s: float = PROBE_TIMEOUT_S
) -> dict[str, Any]:
    """What ``module`` reports from inside ``variant`` (its JSON result); the backend
    never loads in this process. A probe that cannot start, times out or writes no
    result is a UserError naming the variant (one line)."""
    topo = read_topology()
    plan = plan_pinning(topo.logical_count, topo)
    # Private (0700, as mkdtemp makes it): a container runs as our user (engine.user_flags).
    scratch = Path(tempfile.mkdtemp(prefix="tfv-env-"))
    try:
        request = WorkerRequest.probe(str(scratch / "result.json"))
        command, env = variant.launch(
            request, worker_env(variant, plan), plan.cpus, scratch, module=module
        )
        if os.environ.get("TFV_NO_REAL_WORKERS") == "1":  # the fast tests' guard (conftest)
            raise RuntimeError(
                f"TFV_NO_REAL_WORKERS=1: refusing to probe {variant.name} (real TensorFlow): "
                "mark the test @pytest.mark.tf or fake the probe"
            )
        launch = Launch(command, env, on_host=variant.pins_on_host())
        outcome = watch(launch, timeout_s, io.BytesIO())
        warning = outcome.warning(f"probe of {variant.name}")
        if warning:
            print(f"tfvariants: warning: {one_line(warning)}", file=sys.stderr)
        return _read(variant, outcome, scratch / "result.json")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _read(variant: Variant, outcome: ProcessOutcome, result: Path) -> dict[str, Any]:
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
