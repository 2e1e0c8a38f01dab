"""The serving worker: one fresh, pinned process runs one serving cell whole (model,
HTTP server, load generator) and writes one result file.

    python -m workloads.serving.worker --result out.json --request JSON --threads 2 ...

Paths to the model: ``inprocess`` (the client threads call the compiled model),
``http`` (a child process on the same CPUs serves TensorFlow Serving's REST API on
127.0.0.1; this process is the client) and ``target`` (an external server speaking that
API). LoadGen's logs go to ``<result folder>/artifacts/``, which the host keeps.
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from workloads import cpuload, envprobe
from workloads.protocol import SCHEMA_VERSION, RequestError, WorkerRequest, exit_now
from workloads.serving import closed_loop, http_client, models
from workloads.serving.percentiles import summary
from workloads.serving.request import SERVE_RESULT_KIND, ServeRequest, serve_request_of
from workloads.serving.server_process import ServerProcess
from workloads.worker import _now, record_run

SERVER_START_TIMEOUT_S = 600.0  # NASNetLarge builds in ~6 s; an image's first TF import is slower
HTTP_SUT_WORKERS = 8  # LoadGen over HTTP: requests in flight at most (one connection each)
OFFLINE_HTTP_SLACK = 1.5  # Offline over HTTP: expect 1.5x the single-request rate


def parse_args(argv: list[str] | None) -> WorkerRequest:
    """The worker's one argument: ``--request JSON``, the envelope with task "serve"."""
    p = argparse.ArgumentParser(prog="python -m workloads.serving.worker")
    p.add_argument("--request", required=True, help="the WorkerRequest (task serve) as JSON")
    args = p.parse_args(argv)
    try:
        wreq = WorkerRequest.from_json(args.request, task="serve")
        if not isinstance(wreq.payload, dict):  # serving's own request: required
            raise RequestError("worker request: task 'serve' carries no 'payload'")
        return wreq
    except RequestError as exc:
        p.error(str(exc))
        raise  # unreachable: error() exits


def _tf_setup(args: WorkerRequest, result: dict[str, Any]) -> Any:
    def configure(tf: Any) -> None:
        tf.config.threading.set_intra_op_parallelism_threads(args.intra_op)
        tf.config.threading.set_inter_op_parallelism_threads(args.inter_op)

    tf, log_text = envprobe.import_tensorflow(configure)
    result["environment"] = envprobe.probe(tf, log_text)
    result["applied"].update(
        intra_op=tf.config.threading.get_intra_op_parallelism_threads(),
        inter_op=tf.config.threading.get_inter_op_parallelism_threads(),
    )
    return tf


def _http_callers(
    endpoint: http_client.Endpoint,
    bodies: list[bytes],
    frags: list[bytes],
    timeout_s: float,
    overheads: list[float],
) -> tuple[Any, Any]:
    """(make_caller for the closed loop, infer(indices) for LoadGen): one keep-alive
    connection per client thread; bodies are encoded already."""
    local = threading.local()
    lock = threading.Lock()

    def session() -> http_client.Session:
        if getattr(local, "session", None) is None:
            local.session = http_client.Session(endpoint, timeout_s)
        return local.session

    def make_caller() -> Any:
        s = http_client.Session(endpoint, timeout_s)
        return lambda i: s.predict(bodies[i], 1)

    def infer(indices: list[int]) -> None:
        body = (
            bodies[indices[0]]
            if len(indices) == 1
            else (b'{"instances":[' + b",".join(frags[i] for i in indices) + b"]}")
        )
        reply = session().predict(body, len(indices))
        if reply.model_s is not None:
            with lock:
                overheads.append(max(reply.latency_s - reply.model_s, 0.0))

    return make_caller, infer


def _model_of(req: ServeRequest, result: dict[str, Any]) -> tuple[Any, tuple[int, ...] | None, str]:
    """(the in-process model or None, its input shape if known yet, its name)."""
    if req.path != "inprocess":
        shape = tuple(req.input_shape) if req.input_shape else models.input_shape_of(req.model)
        return None, shape, req.target_model or models.label(req.model)
    served = models.load(req.model)  # thread pools already sized by _tf_setup
    result["model"] = {
        "name": served.name,
        "input_shape": list(served.input_shape),
        "params": served.params,
        "build_s": served.build_s,
    }
    return served, served.input_shape, served.name


def _inprocess_callers(served: Any, x: Any) -> tuple[Any, Any]:
    """(make_caller, infer): the client threads call the model itself."""

    def make_caller() -> Any:
        return lambda i: served.predict(x[i : i + 1])

    def infer(indices: list[int]) -> None:
        served.predict(x[indices])

    return make_caller, infer


def _server_ready(
    server: ServerProcess, result: dict[str, Any], name: str, shape: tuple[int, ...] | None
) -> tuple[str, Any, tuple[int, ...]]:
    """Waits for the model server child; (its URL, its CPUs, the input shape)."""
    info = server.wait_ready(SERVER_START_TIMEOUT_S)
    url = f"http://127.0.0.1:{info['port']}"
    result["model"] = {
        "name": name,
        "input_shape": list(shape or info.get("shape", [])),
        "params": info.get("params"),
        "build_s": info.get("build_s"),
    }
    shape = shape or tuple(info["shape"])
    if isinstance(info.get("environment"), dict):
        # The server child ran the model: its TensorFlow is the one to report
        # (this client process never imports it on the HTTP path).
        result["environment"] = info["environment"]
    return url, info.get("cpus"), shape


def _target_shape(
    req: ServeRequest,
    result: dict[str, Any],
    endpoint: http_client.Endpoint,
    name: str,
    shape: tuple[int, ...] | None,
) -> tuple[int, ...]:
    """An external target's input shape: given, built in, or asked of the server."""
    source = "given" if req.input_shape else "built-in model"
    if shape is None:  # neither given nor built in: ask the server
        shape, source = endpoint.metadata_shape(), "server metadata"
    if shape is None:
        raise ValueError("the target reports no input shape: pass --input-shape")
    result["model"] = {"name": name, "input_shape": list(shape), "input_shape_from": source}
    return shape


def run(args: WorkerRequest, req: ServeRequest, result: dict[str, Any], folder: Path) -> None:
    import numpy as np

    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    result["applied"] = {"affinity": cpus, "env": envprobe.probe_env()}
    needs_tf = req.path == "inprocess" and req.model != models.NOOP
    if needs_tf:
        _tf_setup(args, result)
    served, shape, name = _model_of(req, result)
    server = None
    overheads: list[float] = []

    def generated(shape: Any) -> Any:  # the same inputs on every path, by seed
        x = np.random.default_rng(req.seed).integers(0, 256, (req.sample_count, *shape))
        return x.astype(np.float32)

    try:
        if req.path == "inprocess":
            x = generated(shape)
            make_caller, infer = _inprocess_callers(served, x)
            result["placement"] = {
                "server_cpus": cpus,
                "loadgen_cpus": cpus,
                "shared": True,
                "note": "in-process: the client threads call the model",
            }
        else:
            if req.path == "http":
                server = ServerProcess(req, args, folder)
                url, server_cpus, shape = _server_ready(server, result, name, shape)
            else:
                url, server_cpus = str(req.target_url), None
            endpoint = http_client.Endpoint(url, name)
            endpoint.check()
            if req.path == "target":
                shape = _target_shape(req, result, endpoint, name, shape)
            if shape is None:
                raise ValueError("the model server reported no input shape")
            x = generated(shape)
            bodies, frags = _encode(req, result, x, shape, server_cpus, cpus)
            timeout_s = req.max_duration_s + 30
            make_caller, infer = _http_callers(endpoint, bodies, frags, timeout_s, overheads)
        own = server.cpu_seconds if server is not None else (lambda: 0.0)
        _measure(req, result, folder, make_caller, infer, len(x), overheads, own)
    finally:
        if server is not None:
            server.stop()
            result["server_log_tail"] = _tail(server.log_path, 2000)


def _encode(
    req: ServeRequest,
    result: dict[str, Any],
    x: Any,
    shape: tuple[int, ...],
    server_cpus: list[int] | None,
    cpus: list[int],
) -> tuple[list[bytes], list[bytes]]:
    """The HTTP request bodies (and their instance fragments), encoded before the clock
    starts; records the encoding and where server and load generator ran."""
    t0 = time.perf_counter()
    # b64 carries images (PNG): other inputs (the no-op model's) go as JSON
    form = req.encoding if len(shape) == 3 else "json"
    if form == "b64":
        frags = [
            json.dumps(
                {"b64": __import__("base64").b64encode(http_client.png_bytes(xi)).decode()}
            ).encode()
            for xi in x
        ]
    else:
        frags = [json.dumps(xi.tolist(), separators=(",", ":")).encode() for xi in x]
    bodies = [b'{"instances":[' + f + b"]}" for f in frags]
    encode_s = (time.perf_counter() - t0) / len(x)
    result["encoding"] = {
        "form": form,
        "body_bytes": len(bodies[0]),
        "client_encode_ms": encode_s * 1e3,
        "note": "bodies encoded before the clock starts",
    }
    shared = server_cpus is not None and bool(set(server_cpus) & set(cpus))
    result["placement"] = {
        "server_cpus": server_cpus,
        "loadgen_cpus": cpus,
        "shared": shared if server_cpus is not None else None,
        "note": (
            "server and load generator share CPUs"
            if shared
            else "external target"
            if server_cpus is None
            else "separate CPUs"
        ),
    }
    return bodies, frags


def _tail(path: Path, size: int) -> str:
    """The last ``size`` bytes of a file, without reading the rest (a server that printed
    gigabytes must not fill this process's memory)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(max(0, os.fstat(fh.fileno()).st_size - size))
            return fh.read(size).decode("utf-8", errors="replace")
    except OSError:
        return ""


def _calibrate(make_caller: Any, samples: int, count: int) -> float:
    """Warm up and return the median single-request latency (LoadGen's expectation)."""
    call = make_caller()
    times = []
    for i in range(max(count, 3)):
        t0 = time.perf_counter()
        call(i % samples)
        times.append(time.perf_counter() - t0)
    times.sort()
    return times[len(times) // 2]


def _snapshot(child_cpu_s: Any) -> dict[str, Any]:
    snap = cpuload.snapshot()
    snap["cpu_s"] += child_cpu_s()  # the model server child is part of the cell
    return snap


def _closed_loop(
    req: ServeRequest, result: dict[str, Any], make_caller: Any, samples: int
) -> tuple[int, list[str]]:
    """The concurrency scenario; (failed requests, examples)."""
    res = closed_loop.run(
        make_caller,
        concurrency=req.concurrency,
        samples=samples,
        min_requests=req.min_queries,
        max_requests=req.max_queries,
        warmup=1,
        min_duration_s=req.min_duration_s,
        max_duration_s=req.max_duration_s,
    )
    result["closed_loop"] = res
    lat = res["latency"]
    result["metrics"] = {
        "source": "closed loop",
        "throughput_per_s": res["throughput_per_s"],
        **{k: lat.get(k) for k in ("p50_ms", "p90_ms", "p95_ms", "p99_ms")},
        "validity": None,
    }
    return res["errors"] + res["hung_clients"], res["error_examples"]


def _loadgen(
    req: ServeRequest,
    result: dict[str, Any],
    folder: Path,
    infer: Any,
    samples: int,
    single_s: float,
) -> tuple[int, list[str]]:
    """The LoadGen scenarios (offline, server, server_search); (failed requests, examples)."""
    from workloads.serving import loadgen

    missing = loadgen.available()
    if missing:
        raise RuntimeError(missing)
    workers = 1 if req.path == "inprocess" else HTTP_SUT_WORKERS
    batch = req.max_batch_size if req.scenario == "offline" or req.path == "inprocess" else 1
    # Offline over HTTP is capped: the server shares the cell's CPUs, so 8 client
    # workers do not make it 8x faster; expect the single-request rate (per batch),
    # not twice that of 8 workers (which queued minutes of JSON requests).
    offline_qps = batch / single_s * OFFLINE_HTTP_SLACK if req.path != "inprocess" else None
    common = loadgen.RunSettings(
        samples=samples,
        min_queries=req.min_queries,
        max_queries=req.max_queries,
        expected_latency_s=single_s,
        p99_bound_ms=req.p99_bound_ms,
        workers=workers,
        max_batch=batch,
        min_duration_s=req.min_duration_s,
        max_duration_s=req.max_duration_s,
        offline_qps=offline_qps,
    )
    lg_dir = folder / "artifacts" / "loadgen"
    if req.scenario == "server_search":
        search = loadgen.search_server_qps(
            lambda qps, sub: loadgen.run_one("server", infer, sub, replace(common, server_qps=qps)),
            lg_dir,
            start_qps=req.server_qps,
            p99_bound_ms=req.p99_bound_ms,
            steps=req.search_steps,
        )
        head = search["best"] or search["steps"][-1]
        result["server_search"] = search
        log_dir = f"loadgen/{head['log_dir']}"
        errors = sum(s["errors"] for s in search["steps"])
        examples = [e for s in search["steps"] for e in s["error_examples"]][:3]
    else:
        head = loadgen.run_one(
            req.scenario, infer, lg_dir, replace(common, server_qps=req.server_qps)
        )
        log_dir, errors, examples = "loadgen", head["errors"], head["error_examples"]
    result["loadgen"] = {**head, "log_dir": log_dir}
    result["metrics"] = {
        "source": "LoadGen detail log",
        "throughput_per_s": head["throughput_per_s"],
        **{k: head.get(k) for k in ("p50_ms", "p90_ms", "p95_ms", "p99_ms")},
        "validity": head["validity"],
        "max_qps_under_bound": (result.get("server_search") or {}).get("max_qps"),
    }
    return errors, examples


def _measure(
    req: ServeRequest,
    result: dict[str, Any],
    folder: Path,
    make_caller: Any,
    infer: Any,
    samples: int,
    overheads: list[float],
    child_cpu_s: Any = lambda: 0.0,
) -> None:
    single_s = _calibrate(make_caller, samples, req.warmup_requests)
    result["calibration"] = {"single_request_ms": single_s * 1e3}
    overheads.clear()
    # What else ran on the cell's CPUs during the load (as training cells record it):
    # the analysis leaves disturbed cells out of its verdicts.
    before = _snapshot(child_cpu_s)
    if req.scenario == "concurrency":
        errors, examples = _closed_loop(req, result, make_caller, samples)
    else:
        errors, examples = _loadgen(req, result, folder, infer, samples, single_s)
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    result["cpu"] = cpuload.usage(before, _snapshot(child_cpu_s), cpus)
    if overheads:
        result["http_overhead"] = summary(overheads)
    elif result.get("closed_loop", {}).get("overhead"):
        result["http_overhead"] = result["closed_loop"]["overhead"]
    if errors:
        raise RuntimeError(f"{errors} request(s) failed, e.g. {'; '.join(examples) or '?'}")


def main(argv: list[str] | None = None) -> int:
    wreq = parse_args(argv)
    result: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "kind": SERVE_RESULT_KIND,
        "cell": wreq.cell,
        "status": "failed",
        "reason": None,
        "stderr_tail": None,
        "config": dict(wreq.payload or {}),
        "requested": wreq.requested,
        "started_at": _now(),
    }
    folder = Path(wreq.result).resolve().parent

    def body() -> None:
        req = serve_request_of(wreq)
        result["config"] = req.to_dict()
        if wreq.cpus and hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(0, wreq.cpus)  # before TF import and before the server child
        os.environ.setdefault("TF_NUM_INTRAOP_THREADS", str(wreq.intra_op))
        os.environ.setdefault("TF_NUM_INTEROP_THREADS", str(wreq.inter_op))
        os.environ.setdefault("KERAS_BACKEND", "tensorflow")
        t0 = time.perf_counter()
        run(wreq, req, result, folder)
        result["timing"] = {"total_s": time.perf_counter() - t0}
        result["status"] = "ok"

    return record_run(result, wreq.result, body)


if __name__ == "__main__":
    exit_now(main())
