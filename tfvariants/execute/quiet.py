"""Waiting for quiet before a cell: until other processes used less than a share of the
cell's CPUs over the last second, for at most a bounded time.

Between cells nothing of ours runs, so whatever keeps the CPUs busy is someone else.
The wait sleeps between two /proc/stat readings (no polling loop: the host must not
burn the CPUs it measures). Where /proc/stat cannot be read, it does not wait.

A machine that is never quiet must not cost the full wait before every cell: after
``SUSTAINED_AFTER`` waits in a row ran out, the load is taken as sustained and each
wait measures one window only (and the run stops re-running disturbed cells, which
would be disturbed again), until a wait finds quiet again.

A worker whose priority shields it from other sessions (tfvariants.execute.priority)
does not need quiet to measure cleanly: after such a cell came out undisturbed, the
next cell starts without waiting (``shielded``; nothing is measured before it). The
cell's own measurement stays the judge: one disturbed or unshielded cell, and the
waits are back.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from tfvariants.store.disturbance import worker_shielded
from workloads import cpuload

WINDOW_S = 1.0  # the "last second" the share is measured over
SUSTAINED_AFTER = 3  # waits in a row that ran out: the load is sustained


@dataclass(frozen=True)
class QuietWait:
    waited_s: float  # from the first reading to the cell's start
    others_share: float | None  # busy + steal share of the CPUs in the last window
    quiet: bool | None  # under the limit; False: the wait ran out; None: not measured
    limit: float
    max_wait_s: float
    sustained: bool = False  # the load was sustained: one window measured, no wait
    shielded: bool = False  # not waited: the last cell's raised priority kept it clean

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["waited_s"] = round(self.waited_s, 2)
        if self.others_share is not None:
            d["others_share"] = round(self.others_share, 4)
        return d


def wait_for_quiet(
    cpus: Sequence[int],
    *,
    limit: float,
    max_wait_s: float,
    window_s: float = WINDOW_S,
    read: Callable[[], dict[int, list[int]]] = cpuload.proc_stat,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> QuietWait:
    """Wait (sleeping) until the CPUs' busy + steal share over one window is at most
    ``limit``, or ``max_wait_s`` has passed (at least one window is measured)."""
    started = clock()
    before = read()
    share: float | None = None
    while True:
        sleep(window_s)
        after = read()
        shares = cpuload.busy_shares(before, after, cpus)
        if shares is None:  # unreadable: measure nothing, wait no longer
            return QuietWait(clock() - started, None, None, limit, max_wait_s)
        share = shares[0] + shares[1]
        waited = clock() - started
        if share <= limit:
            return QuietWait(waited, share, True, limit, max_wait_s)
        if waited + window_s > max_wait_s:
            return QuietWait(waited, share, False, limit, max_wait_s)
        before = after


class QuietGate:
    """The run's wait for quiet before each cell (``runner.run_request``'s ``quiet``):
    bounded per cell, and shortened to one window while the load is sustained."""

    def __init__(
        self,
        *,
        limit: float,
        max_wait_s: float,
        wait: Callable[..., QuietWait] = wait_for_quiet,
        disturbed: Callable[[Mapping[str, Any]], str | None] | None = None,
    ) -> None:
        self.limit, self.max_wait_s = limit, max_wait_s
        self._wait = wait
        self._disturbed = disturbed  # the run's rule (interference.disturbance)
        self.misses = 0  # waits in a row that ran out
        self.shielded = False  # the last cell ran shielded and came out undisturbed

    @property
    def sustained(self) -> bool:
        return self.misses >= SUSTAINED_AFTER

    def observe(self, result: Mapping[str, Any]) -> None:
        """After each cell: did its raised priority keep it undisturbed?"""
        cpu = result.get("cpu")
        others = cpu.get("others_share") if isinstance(cpu, Mapping) else None
        self.shielded = bool(
            worker_shielded(result)
            and result.get("status") == "ok"
            and isinstance(others, (int, float))  # measured, not merely unrecorded
            and self._disturbed is not None
            and self._disturbed(result) is None
        )

    def __call__(self, cpus: Sequence[int]) -> QuietWait:
        if self.shielded:
            return QuietWait(0.0, None, None, self.limit, self.max_wait_s, shielded=True)
        sustained = self.sustained
        result = self._wait(cpus, limit=self.limit,
                            max_wait_s=0.0 if sustained else self.max_wait_s)  # fmt: skip
        if result.quiet is False:
            self.misses += 1
        elif result.quiet:
            self.misses = 0
        return QuietWait(result.waited_s, result.others_share, result.quiet, self.limit,
                         self.max_wait_s, sustained)  # fmt: skip
