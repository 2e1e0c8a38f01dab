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
    lock = threading.Lock()
    latencies: list[float] = []
    overheads: list[float] = []
    model_times: list[float] = []
    errors: list[str] = []
    issued = 0
    stop = threading.Event()
    start = [0.0]

    def next_ticket() -> bool:
        nonlocal issued
        with lock:
            elapsed = time.perf_counter() - start[0]
            enough = elapsed >= min_duration_s and issued >= min_requests
            if stop.is_set() or enough or elapsed >= max_duration_s or issued >= max_requests:
                stop.set()
                return False
            issued += 1
            return True

    callers = [make_caller() for _ in range(concurrency)]
    if warmup > 0:  # warm every connection once, then the first one up to ``warmup`` calls
        for i, call in enumerate(callers):
            call(i % samples)
        for i in range(warmup - 1):
            callers[0](i % samples)
    barrier = threading.Barrier(concurrency + 1)

    def client(k: int, call: Callable[[int], Any]) -> None:
        barrier.wait()
        i = k
        while next_ticket():
            t0 = time.perf_counter()
            try:
                reply = call(i % samples)
            except Exception as exc:
                with lock:
                    errors.append(f"{type(exc).__name__}: {exc}".splitlines()[0][:300])
                    if len(errors) >= FAIL_FAST_ERRORS and not latencies:
                        stop.set()
                continue
            finally:
                i += concurrency
            latency = time.perf_counter() - t0
            with lock:
                latencies.append(latency)
                model_s = getattr(reply, "model_s", None)
                if model_s is not None:  # server-reported: the rest is HTTP + (de)serialising
                    model_times.append(model_s)
                    overheads.append(max(latency - model_s, 0.0))

    threads = [
        threading.Thread(target=client, args=(k, c), daemon=True) for k, c in enumerate(callers)
    ]
    for t in threads:
        t.start()
    start[0] = time.perf_counter()
    barrier.wait()
    for t in threads:
        t.join(max_duration_s + 60)  # a request stuck past the cap: the timeout below says so
    duration = time.perf_counter() - start[0]
    hung = sum(1 for t in threads if t.is_alive())
    return {
        "concurrency": concurrency,
        "completed": len(latencies),
        "errors": len(errors),
        "error_examples": sorted(set(errors))[:3],
        "hung_clients": hung,
        "duration_s": duration,
        "throughput_per_s": len(latencies) / duration if duration > 0 else None,
        "latency": summary(latencies),
        "model_latency": summary(model_times) if model_times else None,
        "overhead": summary(overheads) if overheads else None,
    }
