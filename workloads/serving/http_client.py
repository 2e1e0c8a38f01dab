"""The client side of TensorFlow Serving's REST predict API: request bodies encoded
before any clock starts, one keep-alive connection per in-flight request.

Stdlib only (the PNG encoder too), so the load generator needs no TensorFlow.
"""

from __future__ import annotations

import base64
import http.client
import json
import math
import re
import socket
import struct
import time
import urllib.parse
import zlib
from dataclasses import dataclass
from typing import Any

from workloads.serving.http_server import HDR_DECODE, HDR_MODEL

CONNECT_TIMEOUT_S = 5.0  # the whole of one up-front GET, connect to the last byte
# A server's reply is input like a file: bounded. http.client already bounds a line
# (status or header, 64 KiB) and the header count (100); these bound the rest.
MAX_GET_BYTES = 4 << 20  # model status and metadata: a few KiB from TensorFlow Serving
MAX_REPLY_BYTES = 256 << 20  # predictions for the largest batch, with room to spare
MAX_JSON_DEPTH = 64  # predictions are a few levels deep; a deeper reply is not one


class _DeadlineSocket(socket.socket):
    """A socket whose every read and write ends at one deadline for the whole request:
    a per-read timeout alone never ends a server that sends a byte a second."""

    deadline = math.inf

    def _arm(self) -> None:
        if self.deadline == math.inf:  # not armed: the connection's own timeout holds
            return
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("no complete reply within the request deadline")
        self.settimeout(left)

    def recv_into(self, *args: Any) -> int:
        self._arm()
        return super().recv_into(*args)

    def recv(self, *args: Any) -> bytes:
        self._arm()
        return super().recv(*args)

    def sendall(self, *args: Any) -> None:
        self._arm()
        super().sendall(*args)


class _NoDelayConnection(http.client.HTTPConnection):
    """Headers and body leave at once (Nagle would hold the body for a delayed ACK);
    each request ends by its deadline (``arm``), connect included."""

    deadline = math.inf

    def arm(self, timeout_s: float) -> None:
        self.deadline = time.monotonic() + timeout_s
        if isinstance(self.sock, _DeadlineSocket):
            self.sock.deadline = self.deadline

    def connect(self) -> None:
        left = min(self.timeout or CONNECT_TIMEOUT_S, self.deadline - time.monotonic())
        if left <= 0:
            raise TimeoutError("no complete reply within the request deadline")
        raw = socket.create_connection((self.host, self.port), left)
        sock = _DeadlineSocket(raw.family, raw.type, raw.proto, raw.detach())
        sock.settimeout(self.timeout)  # the fd is non-blocking: the new object must know
        sock.deadline = self.deadline
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = sock


class ServingError(RuntimeError):
    """A request the server answered wrongly (status, JSON, shape, size) or not at all,
    or not within its deadline."""


def redact(url: str) -> str:
    """The URL with any ``user:password@`` and query (a token's place) shown as ``***``:
    for every line printed."""
    url = re.sub(r"(?<=//)[^/?#]*@", "***@", url, count=1)
    return re.sub(r"\?[^#]*", "?***", url, count=1)


_JSON_TOKENS = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.S)


def _too_deep(data: bytes) -> bool:
    """JSON nested deeper than MAX_JSON_DEPTH (strings skipped); the bracket count
    answers at once for the usual reply."""
    if data.count(b"[") + data.count(b"{") <= MAX_JSON_DEPTH:
        return False
    depth = 0
    for m in _JSON_TOKENS.finditer(data):
        t = m.group()
        if t in (b"[", b"{"):
            depth += 1
            if depth > MAX_JSON_DEPTH:
                return True
        elif t in (b"]", b"}"):
            depth -= 1
    return False


def parse_json(data: bytes) -> Any:
    """A reply's JSON; ValueError (one line) when malformed or nested too deeply."""
    if _too_deep(data):
        raise ValueError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
    return json.loads(data)


def _why(exc: BaseException, timeout_s: float) -> str:
    if isinstance(exc, TimeoutError):
        return f"no complete reply within {timeout_s:g} s"
    detail = " ".join(str(exc).split())[:200] or "connection closed"
    return f"{type(exc).__name__}: {detail}"


def exchange(
    conn: _NoDelayConnection,
    request: tuple[str, str, bytes | None, dict[str, str]],
    timeout_s: float,
    limit: int,
) -> tuple[http.client.HTTPResponse, bytes]:
    """One request and its whole reply within ``timeout_s``, the body at most ``limit``
    bytes and as long as it says; ServingError (one line) for any failure."""
    method, path, body, headers = request
    conn.arm(timeout_s)
    try:
        conn.request(method, path, body, headers)
    except OSError as exc:
        conn.close()  # reconnects on the next request
        why = _why(exc, timeout_s)
        raise ServingError(f"cannot reach {conn.host}:{conn.port}: {why}") from None
    try:
        resp = conn.getresponse()
        declared = resp.length
        if declared is not None and declared > limit:
            raise ServingError(f"{method} {path}: a reply of {declared} bytes (limit {limit})")
        data = resp.read(limit + 1)
        if len(data) > limit:
            raise ServingError(f"{method} {path}: a reply longer than {limit} bytes")
        if declared is not None and len(data) < declared:
            raise ServingError(f"{method} {path}: a short reply, {len(data)} of {declared} bytes")
    except (OSError, http.client.HTTPException) as exc:
        conn.close()
        raise ServingError(f"{method} {path}: {_why(exc, timeout_s)}") from None
    except ServingError:
        conn.close()
        raise
    return resp, data


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


def _url_parts(url: str) -> tuple[str, int, str]:
    """(host, port, path prefix) of ``http://HOST:PORT[/PREFIX]``; ValueError (one line,
    never quoting the URL: the caller prints it redacted) for anything else."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "http" or not parts.hostname:
        raise ValueError("target must be http://HOST:PORT[/PREFIX]")
    if "@" in parts.netloc:
        raise ValueError("credentials in the URL (user:password@) are not supported: remove them")
    if parts.query or parts.fragment:
        raise ValueError("a query or fragment (?... #...) in the URL is not supported: remove it")
    prefix = parts.path.rstrip("/")
    if "/v1/" in prefix + "/":
        raise ValueError(
            "the URL names the API path: give the server's root (http://HOST:PORT), "
            "and the model with --target-model"
        )
    return parts.hostname, parts.port or 80, prefix


class Endpoint:
    """``http://HOST:PORT[/PREFIX]`` + model name -> the REST paths (a prefix, as behind
    a reverse proxy, goes before ``/v1``)."""

    def __init__(self, url: str, model: str) -> None:
        self.host, self.port, prefix = _url_parts(url)
        self.model = model
        self.predict_path = f"{prefix}/v1/models/{model}:predict"
        self.status_path = f"{prefix}/v1/models/{model}"

    def connect(self, timeout_s: float) -> _NoDelayConnection:
        return _NoDelayConnection(self.host, self.port, timeout=timeout_s)

    def _get(self, path: str, timeout_s: float | None) -> tuple[int, bytes]:
        """One GET on a fresh connection, whole within the deadline: (HTTP status, body);
        ServingError (one line) when the server cannot be reached or answers wrongly."""
        timeout_s = CONNECT_TIMEOUT_S if timeout_s is None else timeout_s
        conn = self.connect(timeout_s)
        try:
            resp, data = exchange(conn, ("GET", path, None, {}), timeout_s, MAX_GET_BYTES)
            return resp.status, data
        finally:
            conn.close()

    def check(self, timeout_s: float | None = None) -> dict:
        """GET the model status; ServingError (one line) when unreachable or not serving."""
        status, data = self._get(self.status_path, timeout_s)
        if status != 200:
            raise ServingError(f"GET {self.status_path}: HTTP {status}: {data[:200]!r}")
        try:
            doc = parse_json(data)
        except ValueError as exc:
            why = " ".join(str(exc).split())[:200]
            raise ServingError(f"GET {self.status_path}: malformed JSON: {why}") from None
        if not isinstance(doc, dict):
            raise ServingError(f"GET {self.status_path}: not a JSON object")
        return doc

    def metadata_shape(self, timeout_s: float | None = None) -> tuple[int, ...] | None:
        """The input shape the server reports (GET .../metadata), or None."""
        status, data = self._get(self.status_path + "/metadata", timeout_s)
        if status != 200:
            return None
        try:
            return shape_from_metadata(parse_json(data))
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
        self.timeout_s = timeout_s  # the whole of one request, connect to the last byte
        self.conn = endpoint.connect(timeout_s)

    def predict(self, body: bytes, expected: int) -> Reply:
        headers = {"Content-Type": "application/json", "Connection": "keep-alive"}
        t0 = time.perf_counter()
        request = ("POST", self.endpoint.predict_path, body, headers)
        resp, data = exchange(self.conn, request, self.timeout_s, MAX_REPLY_BYTES)
        try:
            doc = parse_json(data)
        except ValueError as exc:
            why = exc if "nested" in str(exc) else repr(data[:80])
            raise ServingError(f"HTTP {resp.status}: malformed JSON reply: {why}") from None
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
