"""The client side of TensorFlow Serving's REST predict API: request bodies encoded
before any clock starts, one keep-alive connection per in-flight request.

Stdlib only (the PNG encoder too), so the load generator needs no TensorFlow.
"""

from __future__ import annotations

import base64
import http.client
import json
import socket
import struct
import time
import urllib.parse
import zlib
from dataclasses import dataclass
from typing import Any

from workloads.serving.http_server import HDR_DECODE, HDR_MODEL

CONNECT_TIMEOUT_S = 5.0


class _NoDelayConnection(http.client.HTTPConnection):
    """Headers and body leave at once (Nagle would hold the body for a delayed ACK)."""

    def connect(self) -> None:
        super().connect()
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class ServingError(RuntimeError):
    """A request the server answered wrongly (status, JSON, shape) or not at all."""


def png_bytes(image: Any) -> bytes:
    """A (height, width, channels) uint8-valued array -> PNG (stdlib zlib, no filter)."""
    h, w, c = (int(d) for d in image.shape)
    color = {1: 0, 3: 2, 4: 6}.get(c)
    if color is None:
        raise ValueError(f"PNG needs 1, 3 or 4 channels, got {c}")
    raw = image.clip(0, 255).astype("uint8").tobytes()
    stride = w * c
    rows = b"".join(b"\x00" + raw[r * stride : (r + 1) * stride] for r in range(h))

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))

    header = struct.pack(">IIBBBBB", w, h, 8, color, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows, 6))
        + chunk(b"IEND", b"")
    )


def encode_body(batch: Any, encoding: str) -> bytes:
    """A predict request for ``batch`` (numpy, instances on axis 0)."""
    if encoding == "b64":
        instances = [{"b64": base64.b64encode(png_bytes(x)).decode("ascii")} for x in batch]
    else:
        instances = batch.tolist()
    return json.dumps({"instances": instances}, separators=(",", ":")).encode()


@dataclass
class Reply:
    latency_s: float
    count: int  # predictions returned
    decode_s: float | None  # server-reported (our server only)
    model_s: float | None


class Endpoint:
    """``http://127.0.0.1:PORT`` + model name -> the predict path; checks loopback."""

    def __init__(self, url: str, model: str) -> None:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"target must be http://HOST:PORT, got {url!r}")
        self.host, self.port = parts.hostname, parts.port or 80
        self.model = model
        self.predict_path = f"/v1/models/{model}:predict"
        self.status_path = f"/v1/models/{model}"

    def connect(self, timeout_s: float) -> http.client.HTTPConnection:
        return _NoDelayConnection(self.host, self.port, timeout=timeout_s)

    def _get(self, path: str, timeout_s: float) -> tuple[int, bytes]:
        """One GET on a fresh connection: (HTTP status, body); ServingError (one line)
        when the server cannot be reached."""
        conn = self.connect(timeout_s)
        try:
            conn.request("GET", path)
            resp = conn.getresponse()
            return resp.status, resp.read()
        except OSError as exc:
            raise ServingError(f"cannot reach {self.host}:{self.port}: {exc}") from None
        finally:
            conn.close()

    def check(self, timeout_s: float = CONNECT_TIMEOUT_S) -> dict:
        """GET the model status; ServingError (one line) when unreachable or not serving."""
        status, data = self._get(self.status_path, timeout_s)
        if status != 200:
            raise ServingError(f"GET {self.status_path}: HTTP {status}: {data[:200]!r}")
        try:
            return json.loads(data)
        except ValueError:
            raise ServingError(f"GET {self.status_path}: malformed JSON") from None

    def metadata_shape(self, timeout_s: float = CONNECT_TIMEOUT_S) -> tuple[int, ...] | None:
        """The input shape the server reports (GET .../metadata), or None."""
        status, data = self._get(self.status_path + "/metadata", timeout_s)
        if status != 200:
            return None
        try:
            return shape_from_metadata(json.loads(data))
        except ValueError:
            return None


def shape_from_metadata(doc: Any) -> tuple[int, ...] | None:
    """One instance's shape from TensorFlow Serving's model metadata reply
    (``metadata.signature_def.signature_def.serving_default.inputs.*.tensor_shape.dim``,
    the batch axis first), or None when it is missing or not fully defined."""
    try:
        sigs = doc["metadata"]["signature_def"]["signature_def"]
        sig = sigs.get("serving_default") or next(iter(sigs.values()))
        (tensor,) = sig["inputs"].values()
        dims = [int(d["size"]) for d in tensor["tensor_shape"]["dim"]]
    except (KeyError, TypeError, ValueError, StopIteration, AttributeError):
        return None
    shape = tuple(dims[1:])
    return shape if shape and all(d > 0 for d in shape) else None


class Session:
    """One keep-alive connection; ``predict(body, n)`` times one request end to end."""

    def __init__(self, endpoint: Endpoint, timeout_s: float) -> None:
        self.endpoint = endpoint
        self.conn = endpoint.connect(timeout_s)

    def predict(self, body: bytes, expected: int) -> Reply:
        headers = {"Content-Type": "application/json", "Connection": "keep-alive"}
        t0 = time.perf_counter()
        try:
            self.conn.request("POST", self.endpoint.predict_path, body, headers)
            resp = self.conn.getresponse()
            data = resp.read()
        except OSError as exc:
            self.conn.close()  # reconnects on the next request
            raise ServingError(f"request failed: {type(exc).__name__}: {exc}") from None
        except http.client.HTTPException as exc:
            self.conn.close()
            raise ServingError(f"bad HTTP reply: {type(exc).__name__}: {exc}") from None
        try:
            doc = json.loads(data)
        except (ValueError, UnicodeDecodeError):
            raise ServingError(f"HTTP {resp.status}: malformed JSON reply: {data[:80]!r}") from None
        latency = time.perf_counter() - t0
        if resp.status != 200:
            msg = doc.get("error") if isinstance(doc, dict) else None
            raise ServingError(f"HTTP {resp.status}: {msg or str(data[:200])}")
        preds = doc.get("predictions") if isinstance(doc, dict) else None
        if not isinstance(preds, list) or len(preds) != expected:
            got = len(preds) if isinstance(preds, list) else "no"
            raise ServingError(f"reply has {got} predictions for {expected} instances")

        def header_s(name: str) -> float | None:
            v = resp.getheader(name)
            return int(v) / 1e9 if v and v.isdigit() else None

        return Reply(latency, len(preds), header_s(HDR_DECODE), header_s(HDR_MODEL))

    def close(self) -> None:
        self.conn.close()
