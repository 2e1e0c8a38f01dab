"""Waiting for quiet before a cell: until other processes used less than a share of the
cell's CPUs over the last second, for at most a bounded time.

Between cells nothing of ours runs, so whatever keeps the CPUs busy is someone else.
The wait sleeps between two /proc/stat readings (no polling loop: the host must not
burn the CPUs it measures). Where /proc/stat cannot be read, it does not wait.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from workloads import cpuload

WINDOW_S = 1.0  # the "last second" the share is measured over


@dataclass(frozen=True)
class QuietWait:
    waited_s: float  # from the first reading to the cell's start
    others_share: float | None  # busy + steal share of the CPUs in the last window
    quiet: bool | None  # under the limit; False: the wait ran out; None: not measured
    limit: float
    max_wait_s: float

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
    ``limit``, or ``max_wait_s`` has passed; ``max_wait_s`` 0 does not wait at all."""
    if max_wait_s <= 0:
        return QuietWait(0.0, None, None, limit, max_wait_s)
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
