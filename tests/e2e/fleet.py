"""What the failure stories look at: the workshop's `inflate` pods, the NodeClaims and Nodes
serving them, the leader Lease, and what a controller's /metrics says about it."""

from __future__ import annotations

import json
import re
from typing import Any

from tests.conftest import EXAMPLES
from tests.e2e.harness import CONTROLLER_NAMESPACE, Controller, ControlPlane

WORKSHOP = sorted((EXAMPLES / "workshop").glob("*.yaml"))
LEASE = "nodewright-leader-election"


def scale(plane: ControlPlane, replicas: int) -> None:
    plane.kubectl("scale", "deployment", "inflate", "--replicas", str(replicas))


def live(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [item for item in items if not item["metadata"].get("deletionTimestamp")]


def claims(plane: ControlPlane) -> list[dict[str, Any]]:
    return live(plane.items("nodeclaims.karpenter.sh"))


def settled(plane: ControlPlane, replicas: int, nodes: int) -> bool:
    """`replicas` inflate pods running, on exactly `nodes` Nodes, each with one NodeClaim
    and no NodeClaim without its Node."""
    pods = live(plane.items("pods", "-n", "default", "-l", "app=inflate"))
    running = [pod for pod in pods if pod["status"].get("phase") == "Running"]
    assert len(running) == replicas == len(pods), f"{len(running)}/{len(pods)} pods running"
    every_claim = plane.items("nodeclaims.karpenter.sh")
    every_node = plane.items("nodes")
    assert len(every_claim) == nodes, f"{len(every_claim)} NodeClaims, {nodes} needed"
    assert len(every_node) == nodes, f"{len(every_node)} Nodes, {nodes} needed"
    node_ids = {node["spec"].get("providerID") for node in every_node}
    claim_ids = {claim.get("status", {}).get("providerID") for claim in every_claim}
    assert claim_ids == node_ids, f"NodeClaims {claim_ids} and Nodes {node_ids} differ"
    return True


def lease(plane: ControlPlane, namespace: str = CONTROLLER_NAMESPACE) -> dict[str, Any]:
    found = plane.kubectl("-n", namespace, "get", "lease", LEASE, "-o", "json", check=False)
    if found.returncode != 0:
        return {}
    return dict(json.loads(found.stdout).get("spec") or {})


def holder(plane: ControlPlane, namespace: str = CONTROLLER_NAMESPACE) -> str:
    """The replica named in the Lease (its holderIdentity is `<POD_NAME>_<uuid>`)."""
    return str(lease(plane, namespace).get("holderIdentity") or "").partition("_")[0]


def metric(controller: Controller, name: str) -> float:
    """The sum of a metric's samples in the controller's /metrics (0 when absent)."""
    total = 0.0
    for line in controller.metrics().splitlines():
        if re.match(rf"{re.escape(name)}(\{{| )", line):
            total += float(line.rsplit(" ", 1)[1])
    return total
