"""Which training steps ran while other processes used our pinned CPUs (stdlib only).

A cell-level share (workloads.cpuload.usage) says how much of the cell others took, not
when: a burst of a few seconds covers part of a cell, and the cell's mean step then mixes
disturbed and undisturbed steps. Here the fit is cut into sampling intervals of at least
``SAMPLE_S`` seconds, closed at batch ends (never inside a step), and each interval gets
others' share of the pinned CPUs over it, as cpuload.usage computes it for the whole cell:
(busy x CPU-seconds elapsed - this process's CPU seconds) / CPU-seconds elapsed. Each step
gets the largest share of the intervals it overlaps; the host decides what to do with it.

A reading is one /proc/stat read and one getrusage call (tens of microseconds, at most
four a second, and outside the steps' times: the timer starts the next step after it); a
batch end without a reading only compares two clocks. Intervals are also closed at the
epoch's phase changes (before its first step, before validation, at its end) so that the
time between steps (the epoch gap) has its own share.

/proc/stat counts in clock ticks (usually 1/100 s, per CPU) while getrusage is precise:
over a very short interval the share is mostly that rounding (one tick of ours read as
busy makes a 1 ms interval look 90 % others'; a quiet 0.15 s interval read 15 %). An
interval shorter than ``SAMPLE_S`` (one a forced reading closed) is therefore merged
with a neighbour (at 100 ticks/s, 25 ticks per CPU or more: a tick's rounding is 4 %).
"""

from __future__ import annotations

import bisect
import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from workloads import cpuload, steady

SAMPLE_S = 0.25  # the shortest sampling interval between batch ends
CLEAN_LIMIT = 0.10  # a step is clean when others' share of its intervals is at most this
STEPS, GAP = "steps", "gap"  # what an interval held: training steps, or the epoch gap


@dataclass(frozen=True)
class Reading:
    t: float  # perf_counter
    cpu_s: float  # this process's CPU seconds (user + system, all threads)
    stat: dict[int, list[int]]  # the pinned CPUs' /proc/stat rows
    label: str  # what the interval ending at this reading held (STEPS or GAP)
    epoch: int  # the epoch the interval ended in


@dataclass(frozen=True)
class Interval:
    start: float
    end: float
    share: float | None  # others' share of the pinned CPUs; None when unreadable
    label: str
    epoch: int
    others_cpu_s: float  # others' CPU seconds on the pinned CPUs (0 when unreadable)
    total_cpu_s: float  # CPU seconds that elapsed on the pinned CPUs


@dataclass(frozen=True)
class _Part:
    """Consecutive readings merged into one interval, and what it held."""

    start: Reading
    end: Reading
    label: str

    @property
    def seconds(self) -> float:
        return self.end.t - self.start.t

    def join(self, later: _Part) -> _Part:
        label = GAP if self.label == later.label == GAP else STEPS
        return _Part(self.start, later.end, label)


class Sampler:
    """Readings at batch ends, at most one per ``sample_s`` unless forced (:meth:`mark`).

    ``read_stat`` and ``cpu_seconds`` default to /proc/stat and getrusage; tests pass
    fakes. With no readable /proc/stat row for every pinned CPU the sampler stays off
    (``available`` is False) and the result records no step shares."""

    def __init__(
        self,
        cpus: Sequence[int],
        sample_s: float = SAMPLE_S,
        read_stat: Callable[[], dict[int, list[int]]] = cpuload.proc_stat,
        cpu_seconds: Callable[[], float] = cpuload.cpu_seconds,
    ) -> None:
        self.cpus = cpuload.pinned_cpus(cpus)
        self.sample_s = sample_s
        self.epoch = 0
        self.readings: list[Reading] = []
        self.available = False
        self._read_stat = read_stat
        self._cpu_seconds = cpu_seconds

    def _read(self, now: float, label: str) -> None:
        stat = self._read_stat()
        rows = {c: stat[c] for c in self.cpus if c in stat}
        if len(rows) != len(self.cpus) or not rows:
            self.available = False
            return
        self.readings.append(Reading(now, self._cpu_seconds(), rows, label, self.epoch))

    def begin(self, now: float) -> None:
        """The first reading (fit begins)."""
        self.readings.clear()
        self.available = True
        self._read(now, STEPS)

    def tick(self, now: float) -> bool:
        """At a batch end: a reading when ``sample_s`` passed since the last; True if read."""
        if not self.available or now - self.readings[-1].t < self.sample_s:
            return False
        self._read(now, STEPS)
        return True

    def mark(self, now: float, label: str) -> None:
        """A reading now, whatever the time since the last: the interval it closes held
        ``label`` (short ones are merged when the intervals are made)."""
        if self.available:
            self._read(now, label)

    def intervals(self) -> list[Interval]:
        """The sampling intervals, consecutive, each at least ``sample_s`` long (except a
        lone one). A short part joins the interval before it when that held the same and
        is under ``2 x sample_s`` (the last steps before validation join the steps before
        them, so a long validation keeps its own share; epochs shorter than ``sample_s``
        do not make one long interval), else the next one (the rest at the end: the one
        before). A merged interval is a gap only when all its parts were."""
        if not self.available or len(self.readings) < 2:
            return []
        out: list[_Part] = []
        pending: _Part | None = None  # a short part waiting for the next
        for a, b in zip(self.readings, self.readings[1:], strict=False):
            part = _Part(a, b, b.label)
            if pending is not None:
                part, pending = pending.join(part), None
            if part.seconds >= self.sample_s:
                out.append(part)
            elif out and out[-1].label == part.label and out[-1].seconds < 2 * self.sample_s:
                out[-1] = out[-1].join(part)
            else:
                pending = part
        if pending is not None:
            if out:
                out[-1] = out[-1].join(pending)
            else:
                out.append(pending)
        return [self._interval(p.start, p.end, p.label) for p in out]

    def _interval(self, a: Reading, b: Reading, label: str) -> Interval:
        shares = cpuload.busy_shares(a.stat, b.stat, self.cpus)
        if shares is None:
            return Interval(a.t, b.t, None, label, b.epoch, 0.0, 0.0)
        busy, _steal, total_s = shares
        others = cpuload.others_cpu_s(busy, total_s, b.cpu_s - a.cpu_s)
        return Interval(a.t, b.t, others / total_s, label, b.epoch, others, total_s)


def step_shares(
    spans: Sequence[tuple[float, float]], intervals: Sequence[Interval]
) -> list[float | None]:
    """Each step's (start, end) gets the largest share of the intervals it overlaps; None
    when one of them is unreadable or none covers it."""
    ends = [iv.end for iv in intervals]
    out: list[float | None] = []
    for start, end in spans:
        # intervals (a, b] overlapping (start, end]: b > start and a < end
        lo = bisect.bisect_right(ends, start)
        hi = bisect.bisect_left(ends, end)
        hit = intervals[lo : hi + 1]
        known = [iv.share for iv in hit if iv.share is not None]
        out.append(max(known) if hit and len(known) == len(hit) else None)
    return out


def gap_share(intervals: Sequence[Interval]) -> float | None:
    """Others' share over the epoch gaps (CPU-time weighted), from the epochs after the
    first when there are any (the projection's epoch gap is measured on those)."""
    gaps = [iv for iv in intervals if iv.label == GAP and iv.share is not None]
    later = [iv for iv in gaps if iv.epoch > 0]
    use = later or gaps
    total = math.fsum(iv.total_cpu_s for iv in use)
    return math.fsum(iv.others_cpu_s for iv in use) / total if total > 0 else None


def clean_timing(
    state: steady.SteadyState,
    steps: Sequence[float],
    shares: Sequence[float | None],
    schedule: tuple[int, int, float],
    gap_others: float | None,
    limit: float = CLEAN_LIMIT,
    sample_s: float = SAMPLE_S,
) -> dict[str, Any]:
    """The result's ``timing.clean``: the steady steps whose share is at most ``limit``,
    their mean, and the projection (steady.project) with that mean in place of the
    steady mean (warm-up and epoch gap as measured) over the full ``schedule`` (steps
    per epoch, epochs, epoch gap in seconds)."""
    steady_shares = shares[state.warmup_steps :]
    clean = [
        s
        for s, share in zip(steps[state.warmup_steps :], steady_shares, strict=True)
        if share is not None and share <= limit
    ]
    mean = statistics.fmean(clean) if clean else None
    projected = None
    if mean is not None:
        basis = replace(state, step_mean_s=mean, step_ci_s=None)
        projected = steady.project(basis, *schedule)["projected_full_s"]
    return {
        "limit": limit,
        "sample_s": sample_s,
        "steady_steps": state.steady_steps,
        "clean_steps": len(clean),
        "step_mean_s": mean,
        "projected_full_s": projected,
        "gap_others_share": gap_others,
    }
