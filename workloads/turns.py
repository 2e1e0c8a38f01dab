"""Taking turns on the same CPUs with the other cells of a slot (stdlib only).

A neighbour whose load comes and goes over seconds (another VM on the host's cores)
slows whichever cell runs at that moment; cells run one after another then differ by
when they ran, and no window length cancels it. Cells that take turns, a turn of about
``turn_s`` seconds each, all live through the same bursts: the per-round ratio of two
of them loses what moved over time (tfvariants execute/turns.py runs the host's half).

The protocol, over two named pipes the host made (it holds both ends open, so opening
them never blocks and a host that died reads as the end of turns):

- the worker says READY on ``done`` once its model is built (its process group's id
  written beside the pipe first, ``<done>.pgid``) and blocks on ``go``: no cell's set-up
  (imports, data, tracing) runs while another's steps are timed;
- on GO it trains; after a step that ends a turn of at least ``turn_s`` seconds it says
  DONE and blocks again; FREE (or the pipe's end) lets it run to its end alone;
- it says END when training has ended (the stop, validation and all inside its turn).

The waits are in no step and no epoch: the timer starts the next step after one, and
CPU use is measured over the turns only (:meth:`Turns.usage`), so others' share does
not count the other cells' turns.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from typing import Any

from workloads import cpuload

READY, DONE, END = b"r", b"d", b"e"  # worker -> host, on ``done``
PGID = ".pgid"  # beside ``done``: the process group the host stops between turns
GO, FREE = b"g", b"f"  # host -> worker, on ``go``


class Turns:
    """The worker's half of the protocol; ``spec``: the request's ``turns`` object."""

    def __init__(self, spec: Mapping[str, Any]) -> None:
        self.turn_s = float(spec["turn_s"])
        self._pgid = str(spec["done"]) + PGID
        self._go = os.open(str(spec["go"]), os.O_RDONLY)
        self._done = os.open(str(spec["done"]), os.O_WRONLY)
        self.free = False
        self.turns = 0
        self.waited_s = 0.0
        self.busy_waiting_s = 0.0  # CPU seconds this process used while it waited
        self._started = 0.0
        # (snapshot at a turn's start, at its end): CPU use over the turns only
        self._spans: list[tuple[dict[str, Any], dict[str, Any]]] = []
        self._open: dict[str, Any] | None = None

    def begin(self) -> None:
        """Ready, and the first turn (training begins)."""
        try:
            with open(self._pgid, "w", encoding="ascii") as fh:
                fh.write(str(os.getpgid(0)))
        except OSError:  # the host then cannot stop this process between turns
            pass
        self._say(READY)
        self._wait()

    def due(self, stopping: bool = False) -> bool:
        """At a step's end: whether this turn is used up (never when the run is stopping:
        the rest of it is this turn's)."""
        return not (self.free or stopping or time.perf_counter() - self._started < self.turn_s)

    def hand_over(self) -> float:
        """The CPUs to the next cell, until this one's next turn: the seconds waited."""
        self._close_span()
        self._say(DONE)
        t0, cpu0 = time.perf_counter(), cpuload.cpu_seconds()
        self._wait()
        waited = time.perf_counter() - t0
        self.waited_s += waited
        # Its threads that kept running (input pipelines, spinning pools) took that
        # from the cell whose turn it was: recorded, so a report can say so.
        self.busy_waiting_s += cpuload.cpu_seconds() - cpu0
        return waited

    def end(self) -> None:
        """Training has ended: the next cell's turn."""
        self._close_span()
        self._say(END)
        os.close(self._done)
        os.close(self._go)

    def usage(self, cpus: Sequence[int]) -> dict[str, Any]:
        """cpuload.usage over the turns, as if they were one stretch of time."""
        first, last = joined(self._spans)
        return cpuload.usage(first, last, cpus)

    def to_json(self) -> dict[str, Any]:
        return {
            "turn_s": self.turn_s,
            "turns": self.turns,
            "waited_s": round(self.waited_s, 3),
            "busy_waiting_s": round(self.busy_waiting_s, 3),
        }

    def _say(self, what: bytes) -> None:
        if self.free:
            return
        try:
            os.write(self._done, what)
        except OSError:  # the host is gone: no one to take turns with
            self.free = True

    def _wait(self) -> None:
        if not self.free:
            try:
                got = os.read(self._go, 1)
            except OSError:
                got = b""
            self.free = got != GO  # FREE, or the host's end of the pipe closed
        self.turns += 1
        self._started = time.perf_counter()
        self._open = cpuload.snapshot()

    def _close_span(self) -> None:
        if self._open is not None:
            self._spans.append((self._open, cpuload.snapshot()))
            self._open = None


def joined(
    spans: Sequence[tuple[dict[str, Any], dict[str, Any]]],
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Two snapshots (cpuload.snapshot) whose difference is the sum of the spans'
    differences: the turns' wall, CPU, /proc/stat ticks and run-queue waits as if they
    were one stretch, without the time between them."""
    first = spans[0][0]
    last: dict[str, Any] = {"wall": first["wall"], "cpu_s": first["cpu_s"]}
    stat = {c: list(row) for c, row in (first.get("stat") or {}).items()}
    delays = dict(first.get("delays") or {}) if first.get("delays") is not None else None
    for a, b in spans:
        last["wall"] += b["wall"] - a["wall"]
        last["cpu_s"] += b["cpu_s"] - a["cpu_s"]
        for c in list(stat):
            if c in (a.get("stat") or {}) and c in (b.get("stat") or {}):
                stat[c] = [
                    s + y - x for s, x, y in zip(stat[c], a["stat"][c], b["stat"][c], strict=False)
                ]
            else:
                del stat[c]  # unreadable in one span: unknown over the turns
        if delays is not None and a.get("delays") is not None and b.get("delays") is not None:
            for tid, d in b["delays"].items():
                delays[tid] = delays.get(tid, 0) + max(d - a["delays"].get(tid, 0), 0)
    last["stat"] = stat
    last["delays"] = delays
    return first, last
