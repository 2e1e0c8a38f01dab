"""A cell's result from what its worker wrote and how its process ended (the runner's
verdict on one worker; the log is never parsed)."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

from tfvariants.execute.launchable import Launchable
from tfvariants.execute.process import ProcessOutcome
from tfvariants.plan.pinning import PinPlan
from tfvariants.plan.task import PlannedCell
from tfvariants.store.result import ResultError, host_result, load_result, stderr_tail


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def judge(
    cell: PlannedCell,
    variant: Launchable,
    outcome: ProcessOutcome,
    result_file: Path,
    config: dict[str, Any],
    plan: PinPlan,
    timeout_s: float,
) -> dict[str, Any]:
    """The cell's result from what the worker wrote and how its process ended; the log
    is never parsed (only its last lines go into a failure's ``stderr_tail``)."""

    def failed(status: str, reason: str) -> dict[str, Any]:
        requested = plan.to_dict()
        return host_result(
            cell.to_dict(), status, reason, stderr=outcome.tail, config=config, requested=requested
        )

    code = outcome.exit_code
    if outcome.start_error is not None:
        return failed("failed", outcome.start_error)
    if outcome.log_error is not None:  # whatever the worker wrote: its output is lost
        return failed("failed", f"runner error: {outcome.log_error}; the worker was stopped")
    if outcome.timed_out:
        return failed("timeout", f"no result within the {timeout_s:g} s timeout")
    if code is not None and code == -signal.SIGILL:
        # The up-front gate missed it (an image, or a kernel only some ops reach).
        return failed(
            "failed",
            (
                "worker killed by SIGILL: the variant's binary used an instruction this CPU "
                f"lacks (`tfvariants variants census {variant.name} --full` counts them); "
                "rerunning will not help"
            ),
        )
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
        result["stderr_tail"] = stderr_tail(outcome.tail)
    elif code != 0:
        return failed("failed", f"worker wrote a result but exited with code {code}")
    return result
