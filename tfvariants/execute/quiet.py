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

A cell that came out undisturbed and whose own last second was quiet (its worker's
per-step measurement of others' share, ``timing.step_others_share``, and its epoch gaps'
``timing.clean.gap_others_share``, both at most the limit) already measured what a
wait would: the next cell starts without one (``ended_quiet``; the share recorded is
that last second's). The wait would measure the second after it, but the gap between
two cells is a fraction of a second (the rule holds only within ``FRESH_S`` of the
cell's end: a look's analysis or a build in between and the wait is back), and the
next cell measures itself. An unprivileged
run on a quiet 2-core host waited 73 s for its 74 cells (1 s each, 9 % of a cell's
10-12 s) and found quiet every time (issue 25); a disturbed cell, or one whose end was
busy, and the waits are back. Results without per-step shares (serving, an unreadable
/proc/stat) always wait.

Waits must pay for themselves. Under random bursts every wait finds a quiet gap, yet
the cell after it overlaps the next burst: an unprivileged run under bursts waited 218 s
(38 % of its 10-minute budget) for 26 disturbed cells of 26. So the waits of a run with
a budget take at most ``BUDGET_SHARE`` of the run's time so far (a wait counted in it)
and of its budget, and after ``UNPAID_AFTER`` waits in a row were followed by a
disturbed cell, the run stops waiting: the cells then start at once and say why
(``skipped``: "share" or "unpaid"). So the first cell of such a run starts at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from tfvariants.store.disturbance import worker_shielded
from tfvariants.store.rawfields import finite_number, get_path
from workloads import cpuload

WINDOW_S = 1.0  # the "last second" the share is measured over
SUSTAINED_AFTER = 3  # waits in a row that ran out: the load is sustained
BUDGET_SHARE = 0.10  # the most of a run's --budget its waits for quiet may take
UNPAID_AFTER = 3  # waits in a row followed by a disturbed cell: waiting is not paying
SKIPPED = ("share", "unpaid")  # why a cell started without a wait
# How old a cell's quiet end may be to stand for a wait: between two cells the host
# takes 0.06-0.5 s (writing the result, starting the next worker).
FRESH_S = 2.0


def ended_quiet(result: Mapping[str, Any], limit: float, tail_s: float = WINDOW_S) -> float | None:
    """Others' share over a cell's last ``tail_s`` of steps (the mean of its sampled steps'
    shares, by time), when it and its epoch gaps' share are at most ``limit``; else None
    (busy, or not measured)."""
    times = get_path(result, "timing", "step_times_s")
    shares = get_path(result, "timing", "step_others_share")
    timing = result.get("timing")
    # Results from before the sampling have no stride (1); a null one is no evidence.
    stride = timing.get("step_sample_stride", 1) if isinstance(timing, Mapping) else None
    if result.get("status") != "ok" or not isinstance(times, list) or not isinstance(shares, list):
        return None
    if len(times) != len(shares):
        return None
    if not isinstance(stride, int) or isinstance(stride, bool) or stride < 1:
        return None  # not what a worker writes: no evidence, so wait
    gap = finite_number(get_path(result, "timing", "clean", "gap_others_share"))
    if gap is not None and gap > limit:
        return None
    covered = weighted = 0.0
    for raw_t, raw_share in zip(reversed(times), reversed(shares), strict=True):
        t, share = finite_number(raw_t), finite_number(raw_share)
        if t is None or share is None or t <= 0:
            return None  # a step the sampler missed: the tail is not known
        covered += t * stride
        weighted += share * t * stride
        if covered >= tail_s - 1e-9:  # ten steps of 0.1 s sum to just under 1
            share_s = weighted / covered
            return share_s if share_s <= limit else None
    return None  # fewer steps than the tail: not enough to go on


@dataclass(frozen=True)
class QuietWait:
    waited_s: float  # from the first reading to the cell's start
    others_share: float | None  # busy + steal share of the CPUs in the last window
    quiet: bool | None  # under the limit; False: the wait ran out; None: not measured
    limit: float
    max_wait_s: float
    sustained: bool = False  # the load was sustained: one window measured, no wait
    shielded: bool = False  # not waited: the last cell's raised priority kept it clean
    skipped: str | None = None  # not waited: SKIPPED (the waits' share used, or unpaid)
    allowance_s: float | None = None  # the run's most for all waits (budget x share)
    ended_quiet: bool = False  # not waited: the last cell was clean and ended quiet

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
    """The run's wait for quiet before each cell (``runner.Conditions``' ``quiet``):
    bounded per cell, shortened to one window while the load is sustained, bounded in all
    by ``budget_share`` of the time since the gate was made and of ``budget_s`` (when the
    run has a budget), and stopped once
    waiting has not paid off (``UNPAID_AFTER`` waits in a row, each followed by a
    disturbed cell)."""

    def __init__(
        self,
        *,
        limit: float,
        max_wait_s: float,
        wait: Callable[..., QuietWait] = wait_for_quiet,
        disturbed: Callable[[Mapping[str, Any]], str | None] | None = None,
        budget_s: float | None = None,
        budget_share: float = BUDGET_SHARE,
        window_s: float = WINDOW_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limit, self.max_wait_s = limit, max_wait_s
        self._wait = wait
        self._disturbed = disturbed  # the run's rule (interference.disturbance)
        self.misses = 0  # waits in a row that ran out
        self.shielded = False  # the last cell ran shielded and came out undisturbed
        self.tail_share: float | None = None  # the last cell was clean, its end this quiet
        self._ended_at = 0.0  # when the last cell was observed (the gate's clock)
        if not 0 <= budget_share < 1:
            raise ValueError(f"budget_share {budget_share}: expected at least 0 and under 1")
        self.allowance_s = budget_s * budget_share if budget_s else None
        self.budget_share = budget_share
        self._clock = clock
        self._started = clock()  # made as the run starts: its time counts from here
        self.window_s = window_s
        self.spent_s = 0.0  # waited in all, this run
        self.unpaid = 0  # waits in a row whose cell came out disturbed
        self._waited = False  # the cell now running was waited for

    @property
    def sustained(self) -> bool:
        return self.misses >= SUSTAINED_AFTER

    def observe(self, result: Mapping[str, Any]) -> None:
        """After each cell: did its raised priority keep it undisturbed? Did the wait
        before it pay (a clean cell)?"""
        cpu = result.get("cpu")
        others = cpu.get("others_share") if isinstance(cpu, Mapping) else None
        measured = result.get("status") == "ok" and isinstance(others, (int, float))
        clean = measured and self._disturbed is not None and self._disturbed(result) is None
        self.shielded = bool(worker_shielded(result) and clean)
        self.tail_share = ended_quiet(result, self.limit) if clean else None
        self._ended_at = self._clock()
        if self._waited and measured and self._disturbed is not None:
            self.unpaid = 0 if clean else self.unpaid + 1
        self._waited = False

    def _left_s(self) -> float | None:
        """The longest the next wait may take within the waits' share (None: no bound).
        A wait of w keeps spent + w <= share x (elapsed + w) and <= the allowance."""
        if self.allowance_s is None:
            return None
        elapsed = self._clock() - self._started
        by_time = (self.budget_share * elapsed - self.spent_s) / (1 - self.budget_share)
        return min(self.allowance_s - self.spent_s, by_time)

    def _skip(self, left: float | None) -> str | None:
        if left is not None and left < self.window_s:
            return "share"
        if self.unpaid >= UNPAID_AFTER:
            return "unpaid"
        return None

    def _record(
        self,
        waited_s: float,
        share: float | None,
        quiet: bool | None,
        *,
        sustained: bool = False,
        shielded: bool = False,
        skipped: str | None = None,
        ended: bool = False,
    ) -> QuietWait:
        return QuietWait(
            waited_s,
            share,
            quiet,
            self.limit,
            self.max_wait_s,
            sustained,
            shielded,
            skipped,
            self.allowance_s,
            ended,
        )

    def __call__(self, cpus: Sequence[int]) -> QuietWait:
        if self.shielded:
            return self._record(0.0, None, None, shielded=True)
        fresh = self._clock() - self._ended_at <= FRESH_S
        if self.tail_share is not None and fresh:  # measured at the last cell's end: quiet
            self.misses = 0
            return self._record(0.0, self.tail_share, True, ended=True)
        left = self._left_s()
        skipped = self._skip(left)
        if skipped is not None:
            return self._record(0.0, None, None, skipped=skipped)
        sustained = self.sustained
        most = 0.0 if sustained else self.max_wait_s
        if left is not None:
            most = min(most, left)
        result = self._wait(cpus, limit=self.limit, max_wait_s=most)
        self.spent_s += result.waited_s
        self._waited = True
        if result.quiet is False:
            self.misses += 1
        elif result.quiet:
            self.misses = 0
        return self._record(result.waited_s, result.others_share, result.quiet, sustained=sustained)
