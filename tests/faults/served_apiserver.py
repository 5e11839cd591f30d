"""The adapter tests' fake Kubernetes API server (tests/kube/apiserver.py) served on a real
socket, so that the controller's own client (lightkube over httpx2, its transport's
retries and Retry-After, its informers' watches) can be put behind the fault proxy: every
answer is sent chunked, as it comes (a watch stays open while the fake streams it)."""

from __future__ import annotations

import contextlib
import http.server
import threading
from pathlib import Path
from typing import Any

import httpx2

from tests.faults.certs import self_signed
from tests.kube.apiserver import FakeApiServer

FRAMING = frozenset({"content-length", "transfer-encoding", "connection"})


class ServedApiServer:
    """`fake` on 127.0.0.1 (`address`); over TLS with `tls=True`, its CA in `ca_file`."""

    def __init__(self, fake: FakeApiServer, *, tls: bool = False) -> None:
        self.fake = fake
        self.ca_file: Path | None = None

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                request = httpx2.Request(self.command, f"http://kube.test{self.path}",
                                         headers=list(self.headers.items()), content=body)
                try:
                    answer = fake.handle(request)
                except httpx2.HTTPError:  # the fake broke the connection (a lost answer)
                    self.close_connection = True
                    return
                self.send_response(answer.status_code)
                for key, value in answer.headers.items():
                    if key.lower() not in FRAMING:
                        self.send_header(key, value)
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                try:
                    for chunk in answer.iter_bytes():
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                        self.wfile.flush()
                except (httpx2.HTTPError, OSError):  # the fake cut the stream
                    self.close_connection = True
                    return
                self.wfile.write(b"0\r\n\r\n")

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _any

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = _QuietServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        if tls:
            self.ca_file, context = self_signed()
            self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self.address = f"127.0.0.1:{self._server.server_address[1]}"
        # A short poll: a stop waits for the loop's next look at its shutdown flag.
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self.fake.close()
        self._server.shutdown()
        with contextlib.suppress(OSError):
            self._server.server_close()
        self._thread.join(10)


class _QuietServer(http.server.ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client gone mid-request (a proxy's reset, a killed controller) is no error."""
