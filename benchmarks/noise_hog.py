"""The bounded CPU hog of `make bench-noise` (benchmarks/noise.py): bursts at normal
priority, or a sustained load at nice 19, pinned to the cells' CPUs; every process ends
by itself."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import threading
import time
from collections.abc import Sequence

# A busy loop that ends by itself after argv[1] seconds (no tool outside Python).
HOG_CODE = (
    "import sys, time\n"
    "end = time.monotonic() + float(sys.argv[1])\n"
    "while time.monotonic() < end:\n"
    "    for _ in range(20000):\n"
    "        pass\n"
)
BURST_S = (2.0, 8.0)
OFF_S = (3.0, 12.0)  # mean 7.5 s off against 5 s on: about 40 % on


class Hog:
    """A bounded CPU hog on ``cpus``: bursts at normal priority, or sustained at nice 19."""

    def __init__(self, kind: str, cpus: Sequence[int], *, seed: int, max_s: float) -> None:
        self.kind, self.cpus, self.max_s = kind, list(cpus), max_s
        self.rng = random.Random(seed)
        self.stop_event = threading.Event()
        self.on_s = 0.0
        self.on_since: float | None = None  # nice: the sustained load's start
        self.bursts = 0
        self.started = 0.0
        self.procs: list[subprocess.Popen[bytes]] = []
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _spawn(self, seconds: float, nice: int) -> list[subprocess.Popen[bytes]]:
        procs = []
        for cpu in self.cpus:

            def pin(cpu: int = cpu) -> None:
                os.sched_setaffinity(0, {cpu})
                if nice:
                    os.nice(nice)

            procs.append(
                subprocess.Popen(
                    [sys.executable, "-c", HOG_CODE, f"{seconds:.2f}"],
                    # Its own session, like a job started from another terminal (with
                    # autogroup scheduling, nice then ranks it only within its session).
                    preexec_fn=pin,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                )  # fmt: skip
            )
        with self.lock:
            self.procs = procs
        return procs

    def _run(self) -> None:
        if self.kind == "quiet":  # the quiet run before a scenario: no load at all
            return
        deadline = self.started + self.max_s
        if self.kind == "nice":
            self.on_since = time.monotonic()  # on from its launch
            procs = self._spawn(self.max_s, 19)
            self.bursts = 1
            for p in procs:
                p.wait()
            self.on_s = time.monotonic() - self.on_since
            self.on_since = None
            return
        while not self.stop_event.is_set():
            off = self.rng.uniform(*OFF_S)
            if self.stop_event.wait(off) or time.monotonic() + BURST_S[0] > deadline:
                return
            burst = min(self.rng.uniform(*BURST_S), deadline - time.monotonic())
            t0 = time.monotonic()
            for p in self._spawn(burst, 0):
                p.wait()
            self.on_s += time.monotonic() - t0
            self.bursts += 1

    def __enter__(self) -> Hog:
        self.started = time.monotonic()
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop_event.set()
        with self.lock:
            for p in self.procs:
                if p.poll() is None:
                    p.terminate()
        self.thread.join(timeout=30)

    @property
    def duty(self) -> float:
        now = time.monotonic()
        elapsed = now - self.started
        on = self.on_s + (now - self.on_since if self.on_since is not None else 0.0)
        return on / elapsed if elapsed > 0 else 0.0
