"""SIGTERM stops `nodewright controller` cleanly: it logs, stops its loop and exits 0."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from nodewright.cluster.api import KINDS
from tests.kube.waiting import eventually


class Unavailable(BaseHTTPRequestHandler):
    """An API server that answers discovery (so the controller starts) and nothing else:
    its informers keep retrying, which must not block a stop."""

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0].strip("/")
        if path == "version":
            self._answer(200, {"major": "1", "minor": "32", "gitVersion": "v1.32.0"})
            return
        for kind in KINDS.values():
            root = "api/v1" if kind.api_version == "v1" else f"apis/{kind.api_version}"
            if path == root:
                self._answer(200, {"kind": "APIResourceList", "resources": [
                    {"name": k.plural, "kind": k.kind} for k in KINDS.values()
                    if k.api_version == kind.api_version]})
                return
        self._answer(503, {"kind": "Status", "code": 503, "reason": "ServiceUnavailable"})

    def _answer(self, status: int, body: dict[str, object]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture
def api_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Unavailable)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


def test_sigterm_stops_the_controller_cleanly(tmp_path: Path, api_server: str) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "unavailable",
        "clusters": [{"name": "unavailable", "cluster": {"server": api_server}}],
        "users": [{"name": "unavailable", "user": {"token": "x"}}],
        "contexts": [{"name": "unavailable",
                      "context": {"cluster": "unavailable", "user": "unavailable"}}],
    }))
    process = subprocess.Popen(
        [sys.executable, "-m", "nodewright", "controller", "--cloud", "sim",
         "--cluster-name", "demo", "--kubeconfig", str(kubeconfig),
         "--metrics-port", "0", "--health-probe-port", "0", "--log-level", "info"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    lines: list[str] = []
    try:
        assert process.stdout is not None
        stdout = process.stdout

        def started() -> bool:
            line = stdout.readline()
            lines.append(line)
            assert line or process.poll() is None, (
                f"the controller exited ({process.poll()}) before it started:\n"
                + "".join(lines))
            return '"message": "started"' in line

        eventually(started, "the controller to log that it started")
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    rest = process.stdout.read() if process.stdout else ""
    logged = [json.loads(line) for line in [*lines, *rest.splitlines()]
              if line.startswith("{")]
    assert code == 0, rest
    messages = [entry["message"] for entry in logged]
    assert "received SIGTERM; stopping" in messages
    assert messages[-1] == "stopped"
