"""What one serving cell measures: the request the host hands the serving worker.

Stdlib only: the host imports it to build the worker's command line, the worker to
read it back, so both sides agree on one set of fields and defaults.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from typing import Any

from workloads.protocol import WorkerRequest

SERVE_RESULT_KIND = "tfvariants.serve_cell"
SCENARIOS = ("single_stream", "offline", "server", "server_search", "concurrency")
LOADGEN_SCENARIOS = ("single_stream", "offline", "server", "server_search")
PATHS = ("inprocess", "http", "target")
ENCODINGS = ("json", "b64")
MAX_CONCURRENCY = 1024  # in-flight requests: one client thread each
# The default minimum query count per scenario (the quick scale's short runs stay
# meaningful): LoadGen's early-stopping estimate of SingleStream's p90 needs 64 queries
# (its p99 662); a Server run's p99 target needs about 460 queries with none over the
# bound (measured: 190 queries -> "need at least 269 more"); the closed loop's
# nearest-rank p99 of 100 requests is the second slowest; Offline is one query.
MIN_QUERIES = {
    "single_stream": 64,
    "server": 500,
    "server_search": 500,
    "offline": 1,
    "concurrency": 100,
}


@dataclass(frozen=True)
class ServeRequest:
    """One serving cell. Durations in seconds, latencies in milliseconds.

    The host sends every field the run's options declare (tfvariants' ServingOptions,
    the source of those values); the defaults here are the same ones, for a worker
    started by hand (tests/test_options.py holds them equal)."""

    model: str  # built-in name, user .py file or .keras file
    scenario: str  # one of SCENARIOS
    path: str = "inprocess"  # inprocess | http | target (an external --target URL)
    concurrency: int = 1  # in-flight requests (closed loop only)
    target_url: str | None = None  # path == "target": e.g. http://127.0.0.1:8501
    target_model: str | None = None  # model name on the target server
    input_shape: list[int] | None = None  # target: one instance's shape (else built-in/metadata)
    encoding: str = "b64"  # request body: instances as JSON numbers, or {"b64": PNG}
    max_batch_size: int = 1  # server-side batching (http) / LoadGen batch (offline)
    batch_timeout_ms: float = 2.0
    min_duration_s: float = 3.0  # LoadGen's minimum duration (and the closed loop's)
    max_duration_s: float = 60.0  # hard cap on every load loop
    min_queries: int = 100  # LoadGen's minimum query count
    max_queries: int = 100_000  # hard cap on every load loop
    server_qps: float = 10.0  # Server scenario's target QPS (and the search's start)
    p99_bound_ms: float = 100.0  # Server target latency; the search's bound
    search_steps: int = 5  # Server QPS search: at most this many LoadGen runs
    warmup_requests: int = 5
    sample_count: int = 8  # distinct generated inputs (LoadGen's performance sample count)
    seed: int = 0

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> ServeRequest:
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("serve request: expected a JSON object")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"serve request: unknown field(s) {', '.join(unknown)}")
        req = cls(**data)
        req.check()
        return req

    def check(self) -> None:
        if self.scenario not in SCENARIOS:
            raise ValueError(f"unknown scenario {self.scenario!r} (known: {', '.join(SCENARIOS)})")
        if self.path not in PATHS:
            raise ValueError(f"unknown path {self.path!r} (known: {', '.join(PATHS)})")
        if self.path == "target" and not self.target_url:
            raise ValueError("path 'target' needs target_url")
        if self.encoding not in ENCODINGS:
            raise ValueError(f"unknown encoding {self.encoding!r}")
        if not 1 <= self.concurrency <= MAX_CONCURRENCY:
            raise ValueError(f"concurrency must be 1..{MAX_CONCURRENCY}, got {self.concurrency}")
        if self.max_batch_size < 1 or self.sample_count < 1:
            raise ValueError("max_batch_size and sample_count must be at least 1")
        if not 0 < self.min_duration_s <= self.max_duration_s:
            raise ValueError("need 0 < min_duration_s <= max_duration_s")
        if not 1 <= self.min_queries <= self.max_queries:
            raise ValueError("need 1 <= min_queries <= max_queries")
        if self.server_qps <= 0 or self.p99_bound_ms <= 0:
            raise ValueError("server_qps and p99_bound_ms must be positive")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def serve_request_of(envelope: WorkerRequest) -> ServeRequest:
    """The ServeRequest a serving cell's envelope carries (``task`` "serve"), its model
    being the envelope's ``workload`` (a path a container launcher may have rewritten)
    and the rest its ``payload``."""
    return ServeRequest.from_json(
        json.dumps({**(envelope.payload or {}), "model": envelope.workload})
    )
