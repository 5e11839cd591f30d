"""The operator's HTTP endpoints: Prometheus metrics, and the kubelet's probes.

- `/metrics` on METRICS_PORT serves `nodewright.metrics.REGISTRY`; with ENABLE_PROFILING
  the same port serves `/debug/pprof/` (`operator.profiling`).
- `/healthz` (liveness) on HEALTH_PROBE_PORT answers 200 while the operator's loop makes
  progress: it fails when the loop thread died, a controller has had work past its budget
  without finishing a reconcile (`HealthLimits`: 10 min for disruption and provisioning,
  2 min for the others), an informer has had no open watch for 5 min, or the Lease was
  lost, so the kubelet restarts the container.
- `/readyz` (readiness) answers 200 once the informer caches have synced, and for the
  leader while its Lease renewals go through. A standby replica is ready too: it is
  healthy and waiting for the Lease, and being ready keeps the PodDisruptionBudget
  satisfied.

Port 0 binds a free port (tests); `port` tells which one was bound.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import make_wsgi_app

from nodewright.metrics import REGISTRY
from nodewright.operator import profiling

Check = Callable[[], str | None]  # None when fine, else the reason it is not

# How often a server's loop looks for a stop; closing it waits up to this long (with
# serve_forever's default, 0.5 s, each endpoint added half a second to every stop).
STOP_POLL_SECONDS = 0.05


def _serve(server: Any, name: str) -> threading.Thread:
    thread = threading.Thread(target=server.serve_forever, name=name, daemon=True,
                              kwargs={"poll_interval": STOP_POLL_SECONDS})
    thread.start()
    return thread


class _ThreadingWSGIServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        return  # scrapes every few seconds would drown the logs


def _with_profiling(metrics_app: Any) -> Any:
    """/debug/pprof/... answered by `operator.profiling`, the rest by the metrics app."""

    def app(environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        path = str(environ.get("PATH_INFO", ""))
        if not profiling.handles(path):
            return metrics_app(environ, start_response)  # type: ignore[no-any-return]
        status, body = profiling.answer(path, str(environ.get("QUERY_STRING", "")))
        data = body.encode()
        start_response(f"{status} {'OK' if status == 200 else 'Error'}",
                       [("Content-Type", "text/plain; charset=utf-8"),
                        ("Content-Length", str(len(data)))])
        return [data]

    return app


class MetricsEndpoint:
    def __init__(self, port: int, address: str = "0.0.0.0", *,
                 profiling: bool = False) -> None:
        app = make_wsgi_app(REGISTRY)
        # As prometheus_client's start_http_server serves it (a thread per scrape, no
        # request logged), with a loop that stops at once.
        self._server: WSGIServer = make_server(
            address, port, _with_profiling(app) if profiling else app, _ThreadingWSGIServer,
            handler_class=_QuietHandler)
        self._thread = _serve(self._server, "metrics")
        self.port = int(self._server.server_port)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class ProbeEndpoint:
    def __init__(self, port: int, *, healthy: Check, ready: Check,
                 address: str = "0.0.0.0") -> None:
        checks = {"/healthz": healthy, "/readyz": ready}

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                check = checks.get(self.path.split("?", 1)[0])
                if check is None:
                    self._answer(404, "not found\n")
                    return
                problem = check()
                if problem is None:
                    self._answer(200, "ok\n")
                else:
                    self._answer(500, f"{problem}\n")

            def _answer(self, status: int, body: str) -> None:
                data = body.encode()
                self.send_response(status)
                self.send_header("Content-Type", "text/plain; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: object) -> None:
                return  # probes every few seconds would drown the logs

        self._server = ThreadingHTTPServer((address, port), Handler)
        self._server.daemon_threads = True
        self.port = int(self._server.server_port)
        self._thread = _serve(self._server, "probes")

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
