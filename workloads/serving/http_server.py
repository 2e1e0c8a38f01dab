"""A real HTTP server speaking TensorFlow Serving's REST predict API, on 127.0.0.1.

    POST /v1/models/NAME:predict            {"instances": [...]} or {"inputs": [...]}
    POST /v1/models/NAME/versions/1:predict
    GET  /v1/models/NAME                    model status (as TensorFlow Serving answers)
    GET  /v1/models/NAME/metadata           signature with the input shape (the same form)

An instance is a nested list of numbers, or ``{"b64": "<base64 PNG>"}`` (decoded on the
server). Replies ``{"predictions": [...]}``, or ``{"error": "..."}`` with 400/404/500,
over HTTP/1.1 keep-alive. Two extra response headers (ignored by other clients) say how
long the request spent decoding and in the model, so the client can report the HTTP and
serialisation overhead as its own figure.

Optional server-side batching (like TensorFlow Serving's ``--enable_batching``): requests
wait up to ``batch_timeout_ms`` for others and run as one batch of at most
``max_batch_size`` instances.

Run alone (the serving worker starts it as a child process on the same CPUs):
    python -m workloads.serving.http_server --model mobilenet_v2 --port-file PORT
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import queue
import re
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

HOST = "127.0.0.1"  # loopback only, always
MAX_BODY = 512 * 1024 * 1024
HDR_DECODE = "X-Tfv-Decode-Ns"
HDR_MODEL = "X-Tfv-Model-Ns"
_PREDICT = re.compile(r"^/v1/models/([^/:]+)(?:/versions/(\d+))?:predict$")
_STATUS = re.compile(r"^/v1/models/([^/:]+)(?:/versions/(\d+))?(/metadata)?$")


class BadRequest(ValueError):
    pass


class Batcher:
    """Collects instances from concurrent requests into batches for one model call."""

    def __init__(self, predict: Any, max_batch_size: int, timeout_s: float) -> None:
        self.predict, self.max_batch, self.timeout_s = predict, max_batch_size, timeout_s
        self.queue: queue.Queue[Any] = queue.Queue()
        self.batches: list[int] = []  # sizes of the batches run (for the result)
        self._thread = threading.Thread(target=self._loop, daemon=True, name="batcher")
        self._thread.start()

    def submit(self, batch: Any) -> tuple[Any, float]:
        """Run ``batch`` (a numpy array) as part of a larger one; returns (output, model_s)."""
        done = threading.Event()
        slot: dict[str, Any] = {"batch": batch, "done": done}
        self.queue.put(slot)
        done.wait()
        if "error" in slot:
            raise slot["error"]
        return slot["out"], slot["model_s"]

    def _loop(self) -> None:
        import numpy as np

        while True:
            first = self.queue.get()
            if first is None:
                return
            group, size = [first], len(first["batch"])
            deadline = time.perf_counter() + self.timeout_s
            while size < self.max_batch:
                left = deadline - time.perf_counter()
                try:
                    nxt = (
                        self.queue.get(timeout=max(left, 0))
                        if left > 0
                        else self.queue.get_nowait()
                    )
                except queue.Empty:
                    break
                if nxt is None:
                    self.queue.put(None)
                    break
                group.append(nxt)
                size += len(nxt["batch"])
            try:
                t0 = time.perf_counter()
                out = self.predict(np.concatenate([s["batch"] for s in group]))
                model_s = time.perf_counter() - t0
                self.batches.append(size)
                at = 0
                for s in group:
                    n = len(s["batch"])
                    s["out"], s["model_s"] = out[at : at + n], model_s
                    at += n
            except Exception as exc:  # every waiting request gets the error
                for s in group:
                    s["error"] = exc
            for s in group:
                s["done"].set()

    def close(self) -> None:
        self.queue.put(None)


def parse_instances(body: bytes, decode_png: Any) -> Any:
    """Request body -> float32 batch. Raises BadRequest with TF Serving-like wording."""
    import numpy as np

    try:
        doc = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadRequest(f"JSON Parse error: {exc}") from None
    if not isinstance(doc, dict):
        raise BadRequest("request body must be a JSON object")
    instances = doc.get("instances", doc.get("inputs"))
    if not isinstance(instances, list) or not instances:
        raise BadRequest('missing "instances" (a non-empty list)')
    if all(isinstance(i, dict) and "b64" in i for i in instances):
        try:
            blobs = [base64.b64decode(i["b64"], validate=True) for i in instances]
        except (ValueError, TypeError) as exc:
            raise BadRequest(f"invalid b64 value: {exc}") from None
        try:
            return decode_png(blobs)
        except Exception as exc:
            raise BadRequest(f"cannot decode b64 image: {exc}".splitlines()[0]) from None
    try:
        return np.asarray(instances, dtype=np.float32)
    except (ValueError, TypeError) as exc:
        raise BadRequest(f"instances are not a numeric tensor: {exc}") from None


def metadata(served: Any) -> dict[str, Any]:
    """TensorFlow Serving's model metadata reply, reduced to the input signature."""
    dims = [{"size": "-1", "name": ""}] + [{"size": str(d), "name": ""} for d in served.input_shape]
    tensor = {
        "dtype": "DT_FLOAT",
        "tensor_shape": {"dim": dims, "unknown_rank": False},
        "name": "serving_default_input:0",
    }
    sig = {"inputs": {"input": tensor}, "outputs": {}, "method_name": "tensorflow/serving/predict"}
    return {
        "model_spec": {"name": served.name, "signature_name": "", "version": "1"},
        "metadata": {"signature_def": {"signature_def": {"serving_default": sig}}},
    }


def make_handler(served: Any, batcher: Batcher | None, counters: dict[str, int]) -> type:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive
        server_version = "tfvariants-serving/1"

        def setup(self) -> None:
            super().setup()
            # Without it, Nagle + the client's delayed ACK add ~40 ms to every reply.
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def log_message(self, fmt: str, *args: Any) -> None:  # no per-request log lines
            pass

        def _reply(self, code: int, payload: bytes, extra: dict[str, str] | None = None) -> None:
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for k, v in (extra or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(payload)

        def _error(self, code: int, message: str) -> None:
            counters["errors"] = counters.get("errors", 0) + 1
            self._reply(code, json.dumps({"error": message}).encode())

        def do_GET(self) -> None:  # noqa: N802
            m = _STATUS.match(self.path)
            if not m or m.group(1) != served.name:
                return self._error(404, f"Servable not found for request: {self.path}")
            if m.group(3):
                return self._reply(200, json.dumps(metadata(served)).encode())
            status = {
                "version": "1",
                "state": "AVAILABLE",
                "status": {"error_code": "OK", "error_message": ""},
            }
            self._reply(200, json.dumps({"model_version_status": [status]}).encode())

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length") or 0)
            if length <= 0 or length > MAX_BODY:
                self.rfile.read(max(0, min(length, MAX_BODY)))
                return self._error(400, "request needs a body (Content-Length)")
            body = self.rfile.read(length)
            m = _PREDICT.match(self.path)
            if not m:
                return self._error(404, f"Malformed request: POST {self.path}")
            if m.group(1) != served.name:
                return self._error(404, f"Servable not found for request: {m.group(1)}")
            t0 = time.perf_counter()
            try:
                batch = parse_instances(body, served.decode_png)
                if batch.shape[1:] != tuple(served.input_shape):
                    raise BadRequest(
                        f"instance shape {list(batch.shape[1:])} != model input "
                        f"{list(served.input_shape)}"
                    )
            except BadRequest as exc:
                return self._error(400, str(exc))
            decode_s = time.perf_counter() - t0
            try:
                if batcher is not None:
                    out, model_s = batcher.submit(batch)
                else:
                    t1 = time.perf_counter()
                    out = served.predict(batch)
                    model_s = time.perf_counter() - t1
            except Exception as exc:
                return self._error(500, f"{type(exc).__name__}: {exc}".splitlines()[0])
            payload = json.dumps({"predictions": out.tolist()}).encode()
            counters["requests"] = counters.get("requests", 0) + 1
            self._reply(
                200,
                payload,
                {HDR_DECODE: str(int(decode_s * 1e9)), HDR_MODEL: str(int(model_s * 1e9))},
            )

    return Handler


class ModelServer:
    """The server in a background thread; ``url`` once started. Use as a context manager."""

    def __init__(
        self, served: Any, *, port: int = 0, max_batch_size: int = 1, batch_timeout_ms: float = 2.0
    ) -> None:
        self.served = served
        self.batcher = (
            Batcher(served.predict, max_batch_size, batch_timeout_ms / 1e3)
            if max_batch_size > 1
            else None
        )
        self.counters: dict[str, int] = {}
        handler = make_handler(served, self.batcher, self.counters)
        self.httpd = ThreadingHTTPServer((HOST, port), handler)
        self.httpd.daemon_threads = True
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.httpd.server_address[1]}"

    def __enter__(self) -> ModelServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        if self.batcher is not None:
            self.batcher.close()


def _environment() -> dict[str, Any]:
    """Where the model ran (the serving worker reports it for HTTP cells): the
    TensorFlow the model was built with when it was imported (the no-op model needs none)."""
    from workloads import envprobe

    tf = sys.modules.get("tensorflow")
    if tf is None:
        return envprobe.probe()
    env = envprobe.probe(tf)
    env["backend"] = envprobe.probe_backend("tensorflow", tf)
    return env


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m workloads.serving.http_server")
    p.add_argument("--model", required=True)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--port-file", default=None, help="write the port here once serving")
    p.add_argument("--max-batch-size", type=int, default=1)
    p.add_argument("--batch-timeout-ms", type=float, default=2.0)
    p.add_argument("--threads", type=int, default=None, help="intra-op pool size")
    p.add_argument("--inter-op", type=int, default=1)
    args = p.parse_args(argv)
    from workloads.serving import models

    served = models.load(args.model, args.threads, args.inter_op)
    with ModelServer(
        served,
        port=args.port,
        max_batch_size=args.max_batch_size,
        batch_timeout_ms=args.batch_timeout_ms,
    ) as server:
        info = {
            "port": server.httpd.server_address[1],
            "pid": os.getpid(),
            "cpus": sorted(os.sched_getaffinity(0)),
            "params": served.params,
            "shape": list(served.input_shape),
            "build_s": served.build_s,
            "environment": _environment(),
        }
        if args.port_file:
            tmp = args.port_file + ".tmp"
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump(info, fh)
            os.replace(tmp, args.port_file)
        print(f"serving {served.name} at {server.url}", file=sys.stderr, flush=True)
        try:
            threading.Event().wait()  # until killed
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
