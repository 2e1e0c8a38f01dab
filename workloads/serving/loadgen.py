"""MLPerf LoadGen scenarios (SingleStream, Offline, Server, and a search for the highest
Server QPS whose p99 stays under a bound) around any ``infer(sample_indices)`` callable.

The only module that imports ``mlperf_loadgen`` (``pip install mlcommons-loadgen``).
LoadGen writes ``mlperf_log_summary.txt`` and ``mlperf_log_detail.txt`` into each run's
folder; they are kept, and every number returned comes from the detail log's
``:::MLLOG`` records, so a report can be checked against them. A short run's INVALID
verdict is returned as is.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workloads.serving import mllog

KEEP = ("mlperf_log_summary.txt", "mlperf_log_detail.txt")
_SCENARIO_NAMES = {"single_stream": "SingleStream", "offline": "Offline", "server": "Server"}


def available() -> str | None:
    """None when LoadGen imports, else why not (one line)."""
    try:
        import mlperf_loadgen  # noqa: F401
    except ImportError as exc:
        return f"mlperf_loadgen not importable ({exc}); pip install mlcommons-loadgen"
    return None


class _SUT:
    """Queue + worker threads: LoadGen's issue callback never blocks on the model."""

    def __init__(
        self, lg: Any, infer: Callable[[list[int]], None], workers: int, max_batch: int
    ) -> None:
        self.lg, self.infer, self.max_batch = lg, infer, max_batch
        self.queue: queue.Queue[Any] = queue.Queue()
        self.errors: list[str] = []
        self.threads = [threading.Thread(target=self._work, daemon=True) for _ in range(workers)]
        for t in self.threads:
            t.start()

    def issue(self, samples: Any) -> None:
        for s in samples:
            self.queue.put(s)

    def flush(self) -> None:
        pass

    def _work(self) -> None:
        lg = self.lg
        while True:
            first = self.queue.get()
            if first is None:
                return
            batch = [first]
            while len(batch) < self.max_batch:
                try:
                    nxt = self.queue.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    self.queue.put(None)
                    break
                batch.append(nxt)
            try:
                self.infer([s.index for s in batch])
            except Exception as exc:  # answered anyway, so LoadGen finishes; the cell fails
                if len(self.errors) < 100:
                    self.errors.append(f"{type(exc).__name__}: {exc}".splitlines()[0][:300])
            lg.QuerySamplesComplete([lg.QuerySampleResponse(s.id, 0, 0) for s in batch])

    def close(self) -> None:
        for _ in self.threads:
            self.queue.put(None)
        for t in self.threads:
            t.join(30)


@dataclass(frozen=True)
class RunSettings:
    """One LoadGen run's test settings and the SUT's shape (``workers`` threads, batches
    of up to ``max_batch``). ``offline_qps``: Offline's expected rate (it sends that
    times the minimum duration in samples); default twice what ``workers`` x
    ``max_batch`` at the expected latency would do."""

    samples: int
    min_duration_s: float
    max_duration_s: float
    min_queries: int
    max_queries: int
    expected_latency_s: float
    server_qps: float = 10.0
    p99_bound_ms: float = 100.0
    workers: int = 1
    max_batch: int = 1
    offline_qps: float | None = None


def run_one(
    scenario: str, infer: Callable[[list[int]], None], out_dir: str | Path, run: RunSettings
) -> dict[str, Any]:
    """One LoadGen run; returns the detail log's headline plus the SUT's errors."""
    import mlperf_loadgen as lg

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    ts = lg.TestSettings()
    ts.scenario = getattr(lg.TestScenario, _SCENARIO_NAMES[scenario])
    ts.mode = lg.TestMode.PerformanceOnly
    ts.min_duration_ms = int(run.min_duration_s * 1000)
    ts.max_duration_ms = int(run.max_duration_s * 1000)
    ts.min_query_count = int(run.min_queries)
    ts.max_query_count = int(run.max_queries)
    expected_qps = max(run.workers * run.max_batch / max(run.expected_latency_s, 1e-6), 0.1)
    ts.single_stream_expected_latency_ns = int(run.expected_latency_s * 1e9)
    # Offline sends ONE query of expected_qps x min duration samples: overestimate, so a
    # model faster than its warm-up suggested still fills the minimum duration.
    ts.offline_expected_qps = run.offline_qps if run.offline_qps else expected_qps * 2
    ts.server_target_qps = float(run.server_qps)
    ts.server_target_latency_ns = int(run.p99_bound_ms * 1e6)
    ts.server_target_latency_percentile = 0.99
    log_out = lg.LogOutputSettings()
    log_out.outdir = str(out)
    log_out.copy_summary_to_stdout = False
    log_settings = lg.LogSettings()
    log_settings.log_output = log_out
    log_settings.enable_trace = False

    sut_impl = _SUT(lg, infer, run.workers, run.max_batch)
    sut = lg.ConstructSUT(sut_impl.issue, sut_impl.flush)
    qsl = lg.ConstructQSL(run.samples, run.samples, lambda s: None, lambda s: None)
    try:
        lg.StartTestWithLogSettings(sut, qsl, ts, log_settings)
    finally:
        lg.DestroyQSL(qsl)
        lg.DestroySUT(sut)
        sut_impl.close()
    for extra in out.iterdir():  # keep LoadGen's summary and detail logs, drop the rest
        if extra.name not in KEEP and extra.is_file():
            os.unlink(extra)
    detail = out / "mlperf_log_detail.txt"
    if not detail.is_file():
        raise RuntimeError(f"LoadGen wrote no {detail.name}")
    result = mllog.headline(mllog.parse_detail_log(detail))
    result["errors"] = len(sut_impl.errors)
    result["error_examples"] = sorted(set(sut_impl.errors))[:3]
    result["target_qps"] = float(run.server_qps) if scenario == "server" else None
    return result


def search_server_qps(
    run_at: Callable[[float, Path], dict[str, Any]],
    out_dir: Path,
    *,
    start_qps: float,
    p99_bound_ms: float,
    steps: int,
) -> dict[str, Any]:
    """The highest target QPS whose p99 (from the detail log) stays within the bound:
    doubling/halving until bracketed, then bisection; at most ``steps`` LoadGen runs."""
    lo: float | None = None
    hi: float | None = None
    qps = start_qps
    tried: list[dict[str, Any]] = []
    best: dict[str, Any] | None = None
    for i in range(steps):
        sub = out_dir / f"step{i + 1}_qps{qps:.4g}"
        res = run_at(qps, sub)
        p99 = res.get("p99_ms")
        passed = p99 is not None and p99 <= p99_bound_ms and not res.get("errors")
        res["passed"] = passed
        res["log_dir"] = sub.name
        tried.append(res)
        if passed:
            lo = qps
            best = res
        else:
            hi = qps
        if lo is not None and hi is not None:
            if hi / lo < 1.05:  # bracketed to 5 %: more runs would measure noise
                break
            qps = (lo + hi) / 2
        else:
            qps = qps * 2 if passed else qps / 2
    return {"max_qps": lo, "best": best, "steps": tried, "p99_bound_ms": p99_bound_ms}
