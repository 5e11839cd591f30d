"""`nodewright snapshot` and `nodewright simulate` on a real control plane (issue 33's "Done
when"): a cluster brought up by `nodewright controller --cloud sim` through the workshop's
12 replicas, scaled to 5 with the controller stopped, is snapshotted by a user holding
only the read-only ClusterRole of `--print-rbac`; the simulation says what the controller
then does (one node removed, and what it saves) and the controller, started again, does
exactly that. A cluster whose nodes belong to a node group gets NodePools proposed and a
savings estimate."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.e2e.conftest import StartController
from tests.e2e.fleet import WORKSHOP, claims, live, scale, settled
from tests.e2e.harness import (
    REPO_ROOT,
    ControlPlane,
    Installation,
    eventually,
    nodewright_command,
    nodewright_output,
    service_account_kubeconfig,
)

READER = "snapshot-reader"


def read_only_kubeconfig(plane: ControlPlane, folder: Path) -> Path:
    """A kubeconfig for a ServiceAccount bound to the snapshot's ClusterRole, nothing else."""
    role, binding = yaml.safe_load_all(nodewright_output("snapshot", "--print-rbac"))
    binding["subjects"] = [{"kind": "ServiceAccount", "name": READER, "namespace": "default"}]
    plane.kubectl("-n", "default", "create", "serviceaccount", READER, check=False)
    plane.apply(yaml.safe_dump_all([role, binding]))
    token = plane.kubectl("-n", "default", "create", "token", READER).stdout.strip()
    path = folder / "reader.kubeconfig"
    path.write_text(service_account_kubeconfig(plane, token), encoding="utf-8")
    return path


def run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(nodewright_command(*argv), capture_output=True, text=True,
                          cwd=REPO_ROOT, timeout=600, check=False)


def running_nodes(plane: ControlPlane) -> list[str]:
    return sorted(node["metadata"]["name"] for node in live(plane.items("nodes")))


def test_the_simulated_snapshot_says_what_the_restarted_controller_does(
        control_plane: ControlPlane, installation: Installation,
        start: StartController, tmp_path: Path) -> None:
    plane = control_plane
    plane.apply(WORKSHOP)
    controller = start()
    scale(plane, 12)
    eventually(lambda: settled(plane, 12, 2), timeout=120, what="12 pods on two nodes")

    # The controller stopped; the Deployment scaled in by kube-controller-manager alone.
    controller.stop()
    scale(plane, 5)
    eventually(lambda: settled(plane, 5, 2), timeout=60, what="5 pods, still two nodes")
    before = running_nodes(plane)

    kubeconfig = read_only_kubeconfig(plane, tmp_path)
    snapshot = tmp_path / "snapshot.yaml"
    taken = run("snapshot", "--kubeconfig", str(kubeconfig), "-o", str(snapshot))
    assert taken.returncode == 0, taken.stderr
    assert "2 NodeClaims, 0 unmanaged nodes, 5 running pods" in taken.stderr, taken.stderr
    assert "Secret" not in snapshot.read_text(encoding="utf-8")

    timeline = tmp_path / "timeline.json"
    simulated = run("simulate", str(snapshot), "--quiet", "--json", str(timeline),
                    "--report", str(tmp_path / "report.html"))
    assert simulated.returncode == 0, simulated.stdout + simulated.stderr
    outcome: dict[str, Any] = json.loads(timeline.read_text())["whatItWouldDo"][0]
    assert len(outcome["disruptions"]) == 1, outcome["disruptions"]
    removed = outcome["disruptions"][0]["node"]
    assert outcome["disruptions"][0]["savings"] > 0
    assert len(outcome["after"]["nodes"]) == 1
    assert "saving:" in simulated.stdout

    # The controller, started again, removes that node and keeps the other.
    start("replica-b")
    eventually(lambda: settled(plane, 5, 1), timeout=180, what="back to one node")
    assert running_nodes(plane) == sorted(set(before) - {removed})
    assert len(claims(plane)) == 1


NODE_GROUP = """
apiVersion: v1
kind: Node
metadata:
  name: ng-{i}
  labels:
    eks.amazonaws.com/nodegroup: workers
    eks.amazonaws.com/capacityType: ON_DEMAND
    node.kubernetes.io/instance-type: m5.2xlarge
    topology.kubernetes.io/zone: {zone}
    kubernetes.io/arch: amd64
    kubernetes.io/os: linux
spec:
  providerID: aws:///{zone}/i-000000000000000{i}
"""


def test_a_node_group_cluster_gets_nodepools_proposed_and_a_savings_estimate(
        control_plane: ControlPlane, installation: Installation, tmp_path: Path) -> None:
    plane = control_plane
    for i, zone in enumerate(("us-east-1a", "us-east-1b")):
        plane.apply(NODE_GROUP.format(i=i, zone=zone))
        plane.kubectl("patch", "node", f"ng-{i}", "--subresource", "status", "--type",
                      "merge", "-p", json.dumps({"status": {
                          "capacity": {"cpu": "8", "memory": "32Gi", "pods": "58"},
                          "allocatable": {"cpu": "7910m", "memory": "31Gi", "pods": "58"},
                          "conditions": [{"type": "Ready", "status": "True",
                                          "reason": "KubeletReady", "message": "ready"}]}}))
    kubeconfig = read_only_kubeconfig(plane, tmp_path)
    snapshot, pools = tmp_path / "snapshot.yaml", tmp_path / "pools.yaml"
    taken = run("snapshot", "--kubeconfig", str(kubeconfig), "-o", str(snapshot),
                "--as-nodepools", str(pools))
    assert taken.returncode == 0, taken.stderr
    assert "0 NodeClaims, 2 unmanaged nodes" in taken.stderr, taken.stderr
    assert "nodewright.io/takes-over: workers" in pools.read_text(encoding="utf-8")
    compared = run("simulate", str(snapshot), "--quiet", "--compare", str(pools))
    assert compared.returncode == 0, compared.stdout + compared.stderr
    with_pools = compared.stdout.partition(f"With {pools} instead:")[2]
    assert "saving:       $0.7680/hour" in with_pools, compared.stdout
