"""The bounded hogs of `make bench-noise` (benchmarks/noise.py): CPU bursts at normal
priority, or a sustained CPU load at nice 19, pinned to the cells' CPUs; or a memory
hog (membw) streaming over buffers larger than the last-level cache on the CPUs the
cells do not use (on the cells' own CPUs at nice 19 where they use them all). Every
process ends by itself.

The memory hog is a neighbour the priority shield holds off only in part: a raised
worker takes the CPU time back from a nice-19 process, not the cache and the memory bus
(docs/methods.md, "Interference"); but where the cells take every CPU it runs only while
they idle, and is held off nearly whole (docs/measurements.md). The steal hog is the one
no priority holds off: memory streaming at real-time priority for a wandering share of
each CPU (STEAL_CODE; root only), as a neighbour VM takes a cloud host's cores. Alone,
beside any command:

    python benchmarks/noise_hog.py membw --seconds 900 [--cpus 1]
    python benchmarks/noise_hog.py steal --seconds 900 [--cpus 0-1] [--seed 0]
"""

from __future__ import annotations

import argparse
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
# Copies one large array into another until argv[1] seconds have passed: a stream over
# argv[2] bytes, twice per copy, that no cache holds (numpy: pure Python is too slow to
# reach the memory bus's bandwidth).
MEMBW_CODE = (
    "import sys, time\n"
    "import numpy as np\n"
    "end = time.monotonic() + float(sys.argv[1])\n"
    "src = np.ones(int(sys.argv[2]) // 8)\n"
    "dst = np.empty_like(src)\n"
    "while time.monotonic() < end:\n"
    "    np.copyto(dst, src)\n"
)
# The neighbour no priority holds off (steal): at real-time priority (SCHED_FIFO 1, which
# any nice value yields to), it streams memory for a share ("duty") of every PERIOD_S
# and sleeps the rest; the duty is drawn from STEAL_DUTY and held for STEAL_HOLD_S, the
# same sequence on every CPU (one seed): a neighbour VM whose load changes every few
# seconds to half a minute, the length of a cell, so processes differ as they did on the
# cloud host of issue 42 (a cell slowed by 1/(1 - duty): 1.05x to 1.5x, a spread of
# about 10 % from this alone). The kernel's real-time throttling (95 % of each second by
# default) bounds it even if the sleep failed. 4 MiB a copy: bursts of a few ms.
STEAL_CODE = (
    "import os, random, sys, time\n"
    "import numpy as np\n"
    "seconds, size, seed = float(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])\n"
    "lo, hi, hold_lo, hold_hi, period = (float(x) for x in sys.argv[4:9])\n"
    "try:\n"
    "    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))\n"
    "except PermissionError:\n"
    "    sys.exit('noise_hog.py steal: real-time priority needs root (CAP_SYS_NICE)')\n"
    "rng = random.Random(seed)\n"
    "end = time.monotonic() + seconds\n"
    "src = np.ones(size // 8)\n"
    "dst = np.empty_like(src)\n"
    "chunk, i = (4 << 20) // 8, 0\n"
    "while (now := time.monotonic()) < end:\n"
    "    duty = rng.uniform(lo, hi)\n"
    "    until = min(end, now + rng.uniform(hold_lo, hold_hi))\n"
    "    while (t := time.monotonic()) < until:\n"
    "        stop = t + duty * period\n"
    "        while time.monotonic() < stop:\n"
    "            np.copyto(dst[i : i + chunk], src[i : i + chunk])\n"
    "            i = (i + chunk) % (len(src) - chunk)\n"
    "        time.sleep((1 - duty) * period)\n"
)
REALTIME_NEEDS = "real-time priority needs root (CAP_SYS_NICE)"
STEAL_DUTY = (0.05, 0.35)
STEAL_HOLD_S = (5.0, 30.0)
PERIOD_S = 0.1

# Each buffer holds this many times the last-level cache (at least MIN_BUFFER): a copy
# evicts the cells' working set and streams from memory.
LLC_TIMES = 4
MIN_BUFFER = 64 << 20
LLC_FALLBACK = 32 << 20  # where sysfs says nothing (a container, another OS)
BURST_S = (2.0, 8.0)
OFF_S = (3.0, 12.0)  # mean 7.5 s off against 5 s on: about 40 % on


def llc_bytes(root: str = "/sys/devices/system/cpu/cpu0/cache") -> int:
    """The largest cache of CPU 0 (the last level), from sysfs; LLC_FALLBACK unknown."""
    sizes = []
    try:
        names = os.listdir(root)
    except OSError:
        return LLC_FALLBACK
    for name in names:
        try:
            with open(os.path.join(root, name, "size"), encoding="ascii") as fh:
                text = fh.read().strip()
        except OSError:
            continue
        units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
        if text[:-1].isdigit() and text[-1] in units:
            sizes.append(int(text[:-1]) * units[text[-1]])
    return max(sizes, default=LLC_FALLBACK)


def buffer_of(llc: int) -> int:
    """A hog's buffer: LLC_TIMES the last-level cache, at least MIN_BUFFER."""
    return max(LLC_TIMES * llc, MIN_BUFFER)


def may_take_realtime() -> bool:
    """Whether this process may take real-time priority (the steal hog's needs): tried and
    given back at once."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
    except PermissionError:
        return False
    os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    return True


def membw_plan(
    all_cpus: Sequence[int], cell_cpus: Sequence[int], llc: int
) -> tuple[list[int], int, int]:
    """(CPUs, nice, buffer bytes) of the memory hog: one streamer on each CPU the cells do
    not use, at normal priority; where they use them all, one on each of theirs at nice
    19 (the shield then holds off its CPU time, not its traffic)."""
    others = sorted(set(all_cpus) - set(cell_cpus))
    buffer = buffer_of(llc)
    if others:
        return others, 0, buffer
    return sorted(set(cell_cpus)), 19, buffer


class Hog:
    """A bounded hog on ``cpus``: CPU bursts at normal priority, a sustained CPU load at
    nice 19, or the memory streamer (membw: at ``nice``, over ``buffer_bytes``)."""

    def __init__(
        self,
        kind: str,
        cpus: Sequence[int],
        *,
        seed: int,
        max_s: float,
        nice: int = 0,
        buffer_bytes: int = MIN_BUFFER,
    ) -> None:
        self.kind, self.cpus, self.max_s = kind, list(cpus), max_s
        self.nice, self.buffer_bytes = nice, buffer_bytes
        self.seed = seed
        self.rng = random.Random(seed)
        self.stop_event = threading.Event()
        self.on_s = 0.0
        self.on_since: float | None = None  # nice: the sustained load's start
        self.bursts = 0
        self.started = 0.0
        self.procs: list[subprocess.Popen[bytes]] = []
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def command(self, seconds: float) -> list[str]:
        """One hog process's command line."""
        if self.kind == "membw":
            return [sys.executable, "-c", MEMBW_CODE, f"{seconds:.2f}", str(self.buffer_bytes)]
        if self.kind == "steal":
            seed = str(self.seed)  # every CPU's sequence alike: one neighbour
            levels = (*STEAL_DUTY, *STEAL_HOLD_S, PERIOD_S)
            return [
                sys.executable, "-c", STEAL_CODE, f"{seconds:.2f}", str(self.buffer_bytes), seed,
                *(f"{x:g}" for x in levels),
            ]  # fmt: skip
        return [sys.executable, "-c", HOG_CODE, f"{seconds:.2f}"]

    def _spawn(self, seconds: float, nice: int) -> list[subprocess.Popen[bytes]]:
        procs = []
        for cpu in self.cpus:

            def pin(cpu: int = cpu) -> None:
                os.sched_setaffinity(0, {cpu})
                if nice:
                    os.nice(nice)

            procs.append(
                subprocess.Popen(
                    self.command(seconds),
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
        if self.kind in ("nice", "membw", "steal"):  # sustained, from its launch
            self.on_since = time.monotonic()
            procs = self._spawn(self.max_s, 19 if self.kind == "nice" else self.nice)
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


def main(argv: list[str] | None = None) -> int:
    """A hog alone, for a command run beside it (e.g. make compare-compiled)."""
    p = argparse.ArgumentParser(description="a bounded noisy neighbour (benchmarks/noise_hog.py)")
    p.add_argument("kind", choices=("membw", "nice", "steal"))
    p.add_argument("--seconds", type=float, default=900.0, help="how long it runs (it ends itself)")
    p.add_argument(
        "--cpus",
        help="CPUs to pin to, e.g. 1 or 0-1 (default: all; membw there at nice 19, steal at "
        "real-time priority on every CPU given)",
    )
    p.add_argument("--seed", type=int, default=0, help="steal: its sequence of loads")
    args = p.parse_args(argv)
    every = sorted(os.sched_getaffinity(0))
    if args.kind == "steal":
        return _steal(args, every)
    if args.cpus is None:
        cpus, nice, size = membw_plan(every, every, llc_bytes())
    else:
        cpus = parse_cpus(args.cpus)
        if not cpus or not set(cpus) <= set(every):
            print(f"noise_hog.py: --cpus {args.cpus}: not among {every}", file=sys.stderr)
            return 2
        cpus, nice, size = membw_plan(every, sorted(set(every) - set(cpus)), llc_bytes())
    print(f"{args.kind} on CPUs {cpus} at nice {nice}, {size >> 20} MiB buffers, "
          f"{args.seconds:.0f} s", flush=True)  # fmt: skip
    with Hog(args.kind, cpus, seed=0, max_s=args.seconds, nice=nice, buffer_bytes=size) as hog:
        try:
            hog.thread.join()
        except KeyboardInterrupt:
            pass
    return 0


def _steal(args: argparse.Namespace, every: list[int]) -> int:
    """The steal hog on --cpus (default: every CPU), after checking here that this user
    may take real-time priority (each hog process would only exit with the message)."""
    cpus = every if args.cpus is None else parse_cpus(args.cpus)
    if not cpus or not set(cpus) <= set(every):
        print(f"noise_hog.py: --cpus {args.cpus}: not among {every}", file=sys.stderr)
        return 2
    if not may_take_realtime():
        print(f"noise_hog.py steal: {REALTIME_NEEDS}", file=sys.stderr)
        return 2
    size = buffer_of(llc_bytes())
    lo, hi = STEAL_DUTY
    print(f"steal on CPUs {cpus}: {lo:.0%}-{hi:.0%} of each CPU at real-time priority, held "
          f"{STEAL_HOLD_S[0]:g}-{STEAL_HOLD_S[1]:g} s a level, {size >> 20} MiB buffers, "
          f"{args.seconds:.0f} s", flush=True)  # fmt: skip
    with Hog("steal", cpus, seed=args.seed, max_s=args.seconds, buffer_bytes=size) as hog:
        try:
            hog.thread.join()
        except KeyboardInterrupt:
            pass
    return 0


def parse_cpus(text: str) -> list[int]:
    """ "0-1,3" -> [0, 1, 3]; [] for anything else."""
    out: set[int] = set()
    for part in text.split(","):
        lo, _, hi = part.strip().partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()):
            return []
        out.update(range(int(lo), int(hi or lo) + 1))
    return sorted(out)


if __name__ == "__main__":
    sys.exit(main())
