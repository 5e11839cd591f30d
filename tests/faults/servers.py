"""Small local servers for the proxy's own tests: an HTTP/1.1 server (keep-alive, a count of
what it stored, a watch-like stream the test feeds line by line, optionally over TLS) and a
TLS echo server."""

from __future__ import annotations

import contextlib
import http.server
import json
import queue
import socket
import ssl
import threading
from pathlib import Path
from typing import Any

from tests.faults.certs import self_signed


class LocalHttpServer:
    """GET /hello answers `hello`; POST /items stores one item and answers 201 with the
    count; GET /stream?watch=true streams (chunked) each line `feed()` gets, until
    `feed(None)`. With `tls=True` it serves HTTPS for 127.0.0.1 (its CA: `ca_file`)."""

    def __init__(self, *, tls: bool = False) -> None:
        self.items: list[bytes] = []
        self.requests: list[tuple[str, str]] = []
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self.ca_file: Path | None = None
        served = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                served.requests.append(("GET", self.path))
                if self.path == "/hello":
                    self._send(200, b"hello")
                elif self.path.startswith("/stream"):
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    while (line := served.lines.get(timeout=30)) is not None:
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                        self.wfile.flush()
                    self.wfile.write(b"0\r\n\r\n")
                else:
                    self._send(404, b"not here")

            def do_POST(self) -> None:
                served.requests.append(("POST", self.path))
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                served.items.append(body)
                self._send(201, json.dumps({"count": len(served.items)}).encode())

            def _send(self, status: int, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        if tls:
            self.ca_file, context = self_signed()
            self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self.port = int(self._server.server_address[1])
        # A short poll: a stop waits for the loop's next look at its shutdown flag.
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def feed(self, line: bytes | None) -> None:
        self.lines.put(line)

    def stop(self) -> None:
        self.feed(None)
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(10)


class TlsEchoServer:
    """Echoes what each TLS connection sends, with a certificate for 127.0.0.1 (its CA:
    `ca_file`)."""

    def __init__(self) -> None:
        self.ca_file, self._context = self_signed()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stopped.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._echo, args=(client,), daemon=True).start()

    def _echo(self, client: socket.socket) -> None:
        with contextlib.suppress(OSError, ssl.SSLError), \
                self._context.wrap_socket(client, server_side=True) as tls:
            while data := tls.recv(65536):
                tls.sendall(data)

    def stop(self) -> None:
        self._stopped.set()
        self._listener.close()
