"""A hostile HTTP server on 127.0.0.1 for the ``serve --target`` client: every request
(or every POST) gets the same wrong reply, chosen by mode, written on a raw socket so it
can break HTTP itself (a garbage status line, endless headers, a body that never ends)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator

OK = b'{"model_version_status": [{"state": "AVAILABLE"}]}'
DRIP_S = 0.1  # a slow-loris's pause between bytes: far inside any per-read timeout


def _reply(mode: str, conn: socket.socket, stop: threading.Event) -> None:
    def head(extra: bytes = b"", status: bytes = b"200 OK") -> bytes:
        return b"HTTP/1.1 " + status + b"\r\n" + extra

    def drip(data: bytes) -> None:
        for i in range(len(data)):
            if stop.wait(DRIP_S):
                return
            conn.sendall(data[i : i + 1])

    def endless(chunk: bytes) -> None:
        while not stop.is_set():
            conn.sendall(chunk)

    if mode == "ok":
        conn.sendall(head(b"Content-Length: %d\r\n\r\n" % len(OK)) + OK)
    elif mode == "garbage-status":
        conn.sendall(b"\x16\x03\x01 HELLO, I AM NOT HTTP\r\n\r\n")
    elif mode == "status-line-endless":
        endless(b"X" * 65536)
    elif mode == "many-headers":
        conn.sendall(head(b"".join(b"X-%d: y\r\n" % i for i in range(500)) + b"\r\n" + OK))
    elif mode == "long-header":
        conn.sendall(head(b"X-Long: " + b"y" * 200_000 + b"\r\n\r\n"))
    elif mode == "short-body":
        conn.sendall(head(b"Content-Length: 1000\r\n\r\n") + OK[:10])
    elif mode == "deep-json":
        body = b"[" * 100_000 + b"]" * 100_000
        conn.sendall(head(b"Content-Length: %d\r\n\r\n" % len(body)) + body)
    elif mode == "huge-declared":
        conn.sendall(head(b"Content-Length: 1000000000000\r\n\r\n"))
        endless(b"0" * 65536)
    elif mode == "huge-endless":  # no length: the body ends when the connection does
        conn.sendall(head(b"Connection: close\r\n\r\n"))
        endless(b"0" * 65536)
    elif mode == "slow-loris":
        conn.sendall(head())
        drip(b"X-Slow: " + b"y" * 10_000)
    elif mode == "trickled-body":
        conn.sendall(head(b"Content-Length: 10000\r\n\r\n"))
        drip(b" " * 10_000)
    elif mode == "error-500":
        body = b'{"error": "internal: out of memory"}'
        conn.sendall(head(b"Content-Length: %d\r\n\r\n" % len(body), b"500 Oops") + body)
    else:
        raise ValueError(mode)


def _serve(
    mode: str, conn: socket.socket, stop: threading.Event, paths: list[str], posts_only: bool
) -> None:
    with conn:
        try:
            conn.settimeout(5)
            request = b""
            while b"\r\n\r\n" not in request:
                got = conn.recv(65536)
                if not got:
                    return
                request += got
            head, _, body = request.partition(b"\r\n\r\n")
            paths.append(head.split(b" ")[1].decode())
            lengths = [h for h in head.split(b"\r\n") if h.lower().startswith(b"content-length:")]
            length = int(lengths[0].split(b":")[1]) if lengths else 0
            while len(body) < length:
                body += conn.recv(65536)
            # posts_only: the up-front check's GETs pass, the measurement's POSTs meet it
            _reply("ok" if posts_only and head.startswith(b"GET ") else mode, conn, stop)
        except OSError:
            pass  # the client hung up, as it should


@contextlib.contextmanager
def hostile_server(mode: str, *, posts_only: bool = False) -> Iterator[tuple[str, list[str]]]:
    """Serve in threads for the ``with`` block; yields (base URL, the paths requested).
    With ``posts_only`` a GET is answered well: only predictions meet ``mode``."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.1)
    stop = threading.Event()
    paths: list[str] = []

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(
                target=_serve, args=(mode, conn, stop, paths, posts_only), daemon=True
            ).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}", paths
    finally:
        stop.set()
        time.sleep(0.15)
        listener.close()
