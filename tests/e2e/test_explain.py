"""`nodewright explain` run as a user runs it, with the admin's kubeconfig, against the live
cluster the controller manages: why a node stays, why a pod is pending, and plain messages
with exit codes when the name or the server is wrong."""

from __future__ import annotations

import json
import socket
import subprocess
from pathlib import Path
from typing import Any

from tests.conftest import EXAMPLES
from tests.e2e.conftest import StartController
from tests.e2e.harness import (
    REPO_ROOT,
    ControlPlane,
    Installation,
    eventually,
    nodewright_command,
)

WORKSHOP = sorted((EXAMPLES / "workshop").glob("*.yaml"))
HUGE = """
apiVersion: v1
kind: Pod
metadata: {name: huge, namespace: default}
spec:
  nodeSelector: {type: karpenter}
  containers: [{name: app, image: pause, resources: {requests: {cpu: "1000"}}}]
"""


def explain(kubeconfig: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(nodewright_command("explain", *argv, "--kubeconfig", str(kubeconfig)),
                          capture_output=True, text=True, cwd=REPO_ROOT, timeout=120,
                          check=False)


def running(plane: ControlPlane, replicas: int) -> list[dict[str, Any]]:
    pods = [p for p in plane.items("pods", "-n", "default", "-l", "app=inflate")
            if p["status"].get("phase") == "Running" and p["spec"].get("nodeName")]
    assert len(pods) == replicas, f"{len(pods)}/{replicas} running"
    return pods


def test_explain_answers_about_the_live_cluster(
        control_plane: ControlPlane, installation: Installation,
        start: StartController, tmp_path: Path) -> None:
    plane = control_plane
    plane.apply(WORKSHOP)
    start()
    plane.kubectl("scale", "deployment", "inflate", "--replicas", "2")
    (pod, _) = eventually(lambda: running(plane, 2), timeout=90, what="2 inflate pods running")
    node = pod["spec"]["nodeName"]
    plane.apply(HUGE)

    # A node of the story: managed by the NodePool, and what its disruption waits for.
    shown = explain(plane.kubeconfig, "node", node)
    assert shown.returncode == 0, shown.stderr
    first, *details = shown.stdout.splitlines()
    # a disruption pass may already have added its last decision to the verdict
    assert first.startswith(f"Node {node}: may be disrupted"), shown.stdout
    assert any(line.split() == ["nodepool", "default"] for line in details), shown.stdout
    assert "(consolidateAfter 30s)" in shown.stdout, shown.stdout
    as_json = json.loads(explain(plane.kubeconfig, "node", node, "--format", "json").stdout)
    assert as_json["summary"], as_json

    # A pod no NodePool can hold: the NodePool is named with the reason.
    def pending_explained() -> str:
        answer = explain(plane.kubeconfig, "pod", "default/huge")
        assert answer.returncode == 0, answer.stderr
        assert answer.stdout.startswith(
            'Pod default/huge: pending: NodePool "default": no instance type has 1000 cpu '
            "allocatable"), answer.stdout
        return answer.stdout

    eventually(pending_explained, timeout=30, what="the pending pod explained")

    # Wrong names: exit 1 and a sentence, no traceback.
    missing = explain(plane.kubeconfig, "node", "no-such-node")
    assert missing.returncode == 1 and "no-such-node" in missing.stderr, missing
    assert "Traceback" not in missing.stderr
    absent_pod = explain(plane.kubeconfig, "pod", "default/no-such-pod")
    assert absent_pod.returncode == 1 and "no-such-pod" in absent_pod.stderr, absent_pod

    # A server that does not answer: exit 2, naming where it looked.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    dead = tmp_path / "dead.kubeconfig"
    dead.write_text(plane.kubeconfig.read_text().replace(
        plane.api_url, f"https://127.0.0.1:{port}"))
    unreachable = explain(dead, "node", node)
    assert unreachable.returncode == 2
    assert f"cannot reach the API server at https://127.0.0.1:{port}" in unreachable.stderr
    assert "Traceback" not in unreachable.stderr and "answered 503" not in unreachable.stderr
