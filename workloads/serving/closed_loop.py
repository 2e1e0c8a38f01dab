"""The closed-loop concurrency sweep: N requests always in flight (N client threads,
each sending its next request as soon as the last one answers), as the seed study's
20-50 client threads did and as LoadGen cannot (it has no closed-loop mode).

Every loop is bounded in time and in count. It stops once it has run for the minimum
duration AND done the minimum number of requests, or at either hard cap.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from workloads.serving.percentiles import summary

# Stop early when this many requests failed and none succeeded: the target is broken.
FAIL_FAST_ERRORS = 5


class _Loop:
    """The shared state of one sweep point: the counters every client thread reads and
    writes under one lock, and the stop rule over them."""

    def __init__(self, *, concurrency: int, samples: int, limits: tuple[float, float, int, int]):
        self.concurrency = concurrency
        self.samples = samples
        self.min_duration_s, self.max_duration_s, self.min_requests, self.max_requests = limits
        self.lock = threading.Lock()
        self.latencies: list[float] = []
        self.overheads: list[float] = []
        self.model_times: list[float] = []
        self.errors: list[str] = []
        self.issued = 0
        self.stop = threading.Event()
        self.start = 0.0

    def next_ticket(self) -> bool:
        with self.lock:
            elapsed = time.perf_counter() - self.start
            enough = elapsed >= self.min_duration_s and self.issued >= self.min_requests
            if (
                self.stop.is_set()
                or enough
                or elapsed >= self.max_duration_s
                or self.issued >= self.max_requests
            ):
                self.stop.set()
                return False
            self.issued += 1
            return True

    def client(self, k: int, call: Callable[[int], Any], barrier: threading.Barrier) -> None:
        barrier.wait()
        i = k
        while self.next_ticket():
            t0 = time.perf_counter()
            try:
                reply = call(i % self.samples)
            except Exception as exc:
                self._failed(exc)
                continue
            finally:
                i += self.concurrency
            self._answered(time.perf_counter() - t0, reply)

    def _failed(self, exc: Exception) -> None:
        with self.lock:
            self.errors.append(f"{type(exc).__name__}: {exc}".splitlines()[0][:300])
            if len(self.errors) >= FAIL_FAST_ERRORS and not self.latencies:
                self.stop.set()

    def _answered(self, latency: float, reply: Any) -> None:
        with self.lock:
            self.latencies.append(latency)
            model_s = getattr(reply, "model_s", None)
            if model_s is not None:  # server-reported: the rest is HTTP + (de)serialising
                self.model_times.append(model_s)
                self.overheads.append(max(latency - model_s, 0.0))

    def result(self, duration: float, hung: int) -> dict[str, Any]:
        return {
            "concurrency": self.concurrency,
            "completed": len(self.latencies),
            "errors": len(self.errors),
            "error_examples": sorted(set(self.errors))[:3],
            "hung_clients": hung,
            "duration_s": duration,
            "throughput_per_s": len(self.latencies) / duration if duration > 0 else None,
            "latency": summary(self.latencies),
            "model_latency": summary(self.model_times) if self.model_times else None,
            "overhead": summary(self.overheads) if self.overheads else None,
        }


def run(
    make_caller: Callable[[], Callable[[int], Any]],
    *,
    concurrency: int,
    samples: int,
    min_duration_s: float,
    max_duration_s: float,
    min_requests: int,
    max_requests: int,
    warmup: int = 0,
) -> dict[str, Any]:
    """``make_caller()`` gives each client thread its own ``call(sample_index)``, which
    returns None or an object with ``decode_s``/``model_s`` (server-reported), and raises
    on failure. Returns throughput, latency percentiles and the error count."""
    limits = (min_duration_s, max_duration_s, min_requests, max_requests)
    loop = _Loop(concurrency=concurrency, samples=samples, limits=limits)
    callers = [make_caller() for _ in range(concurrency)]
    if warmup > 0:  # warm every connection once, then the first one up to ``warmup`` calls
        for i, call in enumerate(callers):
            call(i % samples)
        for i in range(warmup - 1):
            callers[0](i % samples)
    barrier = threading.Barrier(concurrency + 1)
    threads = [
        threading.Thread(target=loop.client, args=(k, c, barrier), daemon=True)
        for k, c in enumerate(callers)
    ]
    for t in threads:
        t.start()
    loop.start = time.perf_counter()
    barrier.wait()
    for t in threads:
        t.join(max_duration_s + 60)  # a request stuck past the cap: the timeout below says so
    duration = time.perf_counter() - loop.start
    return loop.result(duration, sum(1 for t in threads if t.is_alive()))
