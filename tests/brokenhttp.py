"""A TensorFlow-Serving look-alike on 127.0.0.1 that answers predictions wrongly: an HTTP
500 with an error text, or a 200 whose body is not the JSON it should be."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class _Broken(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    mode = "500"
    error = "boom"
    malformed = b"<html>not json"

    def log_message(self, *a):
        pass

    def do_GET(self):
        self._send(200, b'{"model_version_status": [{"state": "AVAILABLE"}]}')

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        if self.mode == "500":
            self._send(500, b'{"error": "%s"}' % self.error.encode())
        else:
            self._send(200, self.malformed)

    def _send(self, code, payload):
        self.send_response(code)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


@contextlib.contextmanager
def broken_server(mode: str, *, error: str = "boom", malformed: bytes = b"<html>not json"
                  ) -> Iterator[str]:  # fmt: skip
    """Serve in a thread for the ``with`` block; yields the base URL."""
    handler = type("H", (_Broken,), {"mode": mode, "error": error, "malformed": malformed})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
