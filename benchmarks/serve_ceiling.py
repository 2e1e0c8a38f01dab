"""The serving harness's own ceiling on this host (`make bench-serve`; not a test).

Prints what tfvariants can measure at best: the closed loop's QPS against an in-process
no-op model, the HTTP path's per-request cost against a no-op model server (a child
process on the same CPUs, as serving cells run it), and what encoding one 224x224x3
image as TensorFlow Serving REST JSON (and as b64 PNG) costs. A model faster than these
figures is measured as the harness, not as the model.

    python benchmarks/serve_ceiling.py [--seconds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from workloads.serving import closed_loop, http_client, models  # noqa: E402


def _loop(make_caller, concurrency: int, seconds: float) -> dict:
    return closed_loop.run(make_caller, concurrency=concurrency, samples=4, min_duration_s=seconds,
                           max_duration_s=seconds * 2, min_requests=10, max_requests=2_000_000,
                           warmup=1)  # fmt: skip


def _row(label: str, res: dict) -> str:
    lat = res["latency"]
    return (f"{label:<38} {res['throughput_per_s']:>11,.0f}/s   p50 {lat['p50_ms']:8.3f} ms   "
            f"p99 {lat['p99_ms']:8.3f} ms   ({res['completed']:,} requests)")  # fmt: skip


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=2.0, help="per measurement (default 2)")
    args = p.parse_args()
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    print(f"serving harness ceiling on this host ({len(cpus)} CPUs: {cpus}), "
          f"{args.seconds:g} s per line\n")  # fmt: skip

    served = models.load(models.NOOP)
    x = models.inputs(served, 4, 0)
    for c in (1, 4):
        res = _loop(lambda: lambda i: served.predict(x[i : i + 1]), c, args.seconds)
        print(_row(f"in-process no-op, {c} in flight", res))

    with tempfile.TemporaryDirectory() as tmp:
        port_file = Path(tmp) / "port.json"
        root = str(Path(__file__).resolve().parent.parent)
        server = subprocess.Popen([sys.executable, "-m", "workloads.serving.http_server",
                                   "--model", models.NOOP, "--port-file", str(port_file)],
                                  env={**os.environ, "PYTHONPATH": root},
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        try:
            deadline = time.monotonic() + 60
            while not port_file.exists():
                if time.monotonic() > deadline or server.poll() is not None:
                    print("no-op model server did not start", file=sys.stderr)
                    return 1
                time.sleep(0.05)
            port = json.loads(port_file.read_text())["port"]
            ep = http_client.Endpoint(f"http://127.0.0.1:{port}", models.NOOP)
            body = http_client.encode_body(x[:1], "json")

            def make_caller():
                s = http_client.Session(ep, 30)
                return lambda i: s.predict(body, 1)

            for c in (1, 4):
                res = _loop(make_caller, c, args.seconds)
                print(_row(f"HTTP no-op server, {c} in flight", res))
                if c == 1:
                    o = res["overhead"]
                    print(f"{'':<38} per-request HTTP overhead p50 {o['p50_ms']:.3f} ms "
                          f"(latency minus the server's model time)")  # fmt: skip
        finally:
            server.terminate()
            server.wait(10)

    image = np.random.default_rng(0).integers(0, 256, (1, 224, 224, 3)).astype(np.float32)
    for form in ("json", "b64"):
        t0 = time.perf_counter()
        body = http_client.encode_body(image, form)
        enc = time.perf_counter() - t0
        t0 = time.perf_counter()
        doc = json.loads(body)
        if form == "json":
            np.asarray(doc["instances"], dtype=np.float32)
        dec = time.perf_counter() - t0
        print(f"one 224x224x3 image as {form:<4} body: {len(body) / 1e6:6.2f} MB, encode "
              f"{enc * 1e3:6.1f} ms, JSON decode {dec * 1e3:6.1f} ms"
              + (" (+ PNG decode on the server)" if form == "b64" else ""))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
