"""SIGTERM stops `nodewright controller` cleanly: it logs, stops its loop and exits 0."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import yaml

from tests.kube.waiting import eventually

KUBECONFIG = {
    "apiVersion": "v1", "kind": "Config", "current-context": "nowhere",
    # Nothing listens there: the informers keep retrying, which must not block a stop.
    "clusters": [{"name": "nowhere", "cluster": {"server": "https://127.0.0.1:9"}}],
    "users": [{"name": "nowhere", "user": {"token": "x"}}],
    "contexts": [{"name": "nowhere", "context": {"cluster": "nowhere", "user": "nowhere"}}],
}


def test_sigterm_stops_the_controller_cleanly(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(KUBECONFIG))
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
