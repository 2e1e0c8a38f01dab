"""The one rule for a disturbed cell: other processes, the hypervisor or (for a worker at
raised priority) the wait for a CPU took more of the cell's pinned CPUs than a limit.
Every caller (the retry and the quiet gate, the adaptive rounds, the report) comes
here, so they cannot disagree on which cells count."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from tfvariants.options.declare import RunOptionsBase
from tfvariants.options.interference import DISTURBED_SHARE, SHIELDED_SHARE
from tfvariants.store.rawfields import finite_number, get_path

# The limits' defaults and why: options/interference.py.


def disturbance(
    others_share: float | None,
    steal_share: float | None,
    limit: float = DISTURBED_SHARE,
    *,
    runq_wait_share: float | None = None,
    shielded: bool = False,
    shielded_limit: float = SHIELDED_SHARE,
) -> str | None:
    """The one rule for a disturbed cell: why it is ("other processes used 34% of its
    pinned CPUs (limit 10%)"), or None. Every caller (the retry, the rounds, the report)
    comes here, through :func:`result_disturbance` or ``analyze/interference.disturbance``.
    A ``shielded`` worker with a recorded run-queue wait is judged by that wait against
    ``shielded_limit`` instead of by others' share (see SHIELDED_SHARE)."""
    parts = []
    if shielded and runq_wait_share is not None:
        if runq_wait_share > shielded_limit:
            parts.append(
                f"its threads waited for a CPU {runq_wait_share:.0%} of the time at raised "
                f"priority (limit {shielded_limit:.0%})"
            )
    elif others_share is not None and others_share > limit:
        parts.append(
            f"other processes used {others_share:.0%} of its pinned CPUs (limit {limit:.0%})"
        )
    if steal_share is not None and steal_share > limit:
        parts.append(f"the hypervisor stole {steal_share:.0%} (limit {limit:.0%})")
    return " and ".join(parts) if parts else None


def result_disturbance(
    result: Mapping[str, Any],
    limit: float = DISTURBED_SHARE,
    shielded_limit: float = SHIELDED_SHARE,
) -> str | None:
    """:func:`disturbance` over what a result dict recorded (any status); None for a cell
    measured on its undisturbed steps (:func:`undisturbed_steps`)."""
    why = disturbance(
        finite_number(get_path(result, "cpu", "others_share")),
        finite_number(get_path(result, "cpu", "steal_share")),
        limit,
        runq_wait_share=finite_number(get_path(result, "cpu", "runq_wait_share")),
        shielded=worker_shielded(result),
        shielded_limit=shielded_limit,
    )
    return None if why and undisturbed_steps(result, limit) else why


# A burst covers only part of a cell (mnist_cnn t1 under bursts, unprivileged: steady
# windows 0.157, 0.116, 0.115, 0.117, 0.233 s/step against 0.116 quiet), so the worker
# records which steps ran while others used its CPUs (timing.step_others_share) and the
# projection from the steps that did not (timing.clean, workloads/). A cell disturbed by
# others' share (not by steal, which the steps do not see, nor a shielded worker's wait)
# counts as measured on those steps when they are at least CLEAN_SHARE of its steady
# steps and of its window's min_steady_steps, and span at least CLEAN_SHARE of its
# window's min_steady_s: enough steps to stand for the cell on their own. Why, and the
# offline figures: docs/measurements.md, "Interference and priority".
CLEAN_SHARE = 0.5


@dataclass(frozen=True)
class CleanSteps:
    """What the worker recorded of a cell's steady steps that ran undisturbed
    (``timing.clean``)."""

    limit: float  # a step is clean when others used at most this share of its interval
    steady_steps: int
    clean_steps: int
    step_mean_s: float  # mean of the clean steady steps
    projected_full_s: float  # the full schedule projected from that mean
    gap_others_share: float | None  # others' share over the epoch gaps (validation)
    others_share: float | None  # over the whole cell (cpu.others_share)
    all_step_mean_s: float | None  # mean of all its steady steps (timing.steady_step_s)

    @property
    def time_factor(self) -> float:
        """The clean steps' mean over all steady steps' (1.0 when unknown): the factor to
        the cell's times per step, the inverse one to its rates (samples/s, GFLOP/s)."""
        full = self.all_step_mean_s
        return self.step_mean_s / full if full else 1.0

    def gap_disturbed(self, limit: float) -> bool:
        """Others used more than ``limit`` of its CPUs over its epoch gaps: no correction
        (nothing measured the gaps undisturbed), but its flag says so."""
        return self.gap_others_share is not None and self.gap_others_share > limit

    def note(self, limit: float) -> str:
        """The cell's flag: what it was measured on, and a disturbed epoch gap."""
        text = (
            f"measured on its undisturbed steps only: {self.clean_steps} of "
            f"{self.steady_steps} steady steps ran while others used at most "
            f"{self.limit:.0%} of its CPUs"
        )
        if self.others_share is not None:
            text += f" (over the whole cell {self.others_share:.0%})"
        if self.gap_disturbed(limit):
            text += (
                f"; its epoch gaps (validation) ran while others used "
                f"{self.gap_others_share:.0%} of its CPUs, and the projection counts them "
                "as measured"
            )
        return text


def scaled(clean: CleanSteps | None, v: float | None, power: int) -> float | None:
    """A cell's per-step figure from its clean steps: a time per step (power 1, e.g. the
    steady epoch) x the time factor, a rate (power -1: samples/s, GFLOP/s) / it; as
    recorded without ``clean`` or for power 0."""
    if v is None or clean is None:
        return v
    return v * clean.time_factor**power


def _count(v: object) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None


def clean_steps(result: Mapping[str, Any]) -> CleanSteps | None:
    """The result's ``timing.clean`` record, or None without one (old results, other
    workers) or when it has no clean step to project from."""
    clean = get_path(result, "timing", "clean")
    if not isinstance(clean, Mapping):
        return None
    limit = finite_number(clean.get("limit"))
    steady, n = _count(clean.get("steady_steps")), _count(clean.get("clean_steps"))
    mean = finite_number(clean.get("step_mean_s"))
    full = finite_number(clean.get("projected_full_s"))
    if limit is None or steady is None or n is None or mean is None or full is None:
        return None
    if mean <= 0 or full <= 0 or n > steady:
        return None
    return CleanSteps(
        limit,
        steady,
        n,
        mean,
        full,
        finite_number(clean.get("gap_others_share")),
        finite_number(get_path(result, "cpu", "others_share")),
        finite_number(get_path(result, "timing", "steady_step_s")),
    )


def undisturbed_steps(
    result: Mapping[str, Any], limit: float = DISTURBED_SHARE
) -> CleanSteps | None:
    """The clean steps a cell disturbed by others' share is measured on instead (see
    CLEAN_SHARE), or None: not disturbed that way, or too few clean steps."""
    others = finite_number(get_path(result, "cpu", "others_share"))
    steal = finite_number(get_path(result, "cpu", "steal_share"))
    runq = finite_number(get_path(result, "cpu", "runq_wait_share"))
    if others is None or others <= limit or (steal is not None and steal > limit):
        return None
    if worker_shielded(result) and runq is not None:  # judged by its wait, not by steps
        return None
    clean = clean_steps(result)
    min_steps = _count(get_path(result, "timing", "window", "min_steps"))
    min_s = finite_number(get_path(result, "timing", "window", "min_s"))
    if clean is None or min_steps is None or min_s is None or clean.limit > limit:
        return None
    # Half of what the window asks for, and half of what it ran: a window usually stops
    # at its min_steady_steps (mnist_cnn t1: 50 steps of 0.116 s), so asking for all of
    # them would demand every step clean.
    enough = math.ceil(CLEAN_SHARE * max(min_steps, clean.steady_steps))
    span_s = clean.clean_steps * clean.step_mean_s
    return clean if clean.clean_steps >= enough and span_s >= CLEAN_SHARE * min_s else None


def worker_shielded(result: Mapping[str, Any]) -> bool:
    """The worker ran at raised priority, shielded from other sessions
    (``runner.priority.shielded``, tfvariants.execute.priority)."""
    return get_path(result, "runner", "priority", "shielded") is True


@runtime_checkable
class SharesLimited(Protocol):
    """Options of a task whose cells carry CPU shares (--disturbed-share,
    --shielded-share): named by what they hold, so the store names no task."""

    disturbed_share: float
    shielded_share: float


def limits_of(options: RunOptionsBase | None) -> tuple[float, float]:
    """The run's limits, (disturbed, shielded): its options' (run.json's, bounded by its
    loader) where it has them, else DISTURBED_SHARE and SHIELDED_SHARE."""
    if isinstance(options, SharesLimited):
        return options.disturbed_share, options.shielded_share
    return DISTURBED_SHARE, SHIELDED_SHARE
