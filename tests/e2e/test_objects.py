"""Every kind of object the controller writes, as the real API server stored it and kubectl
shows it: NodeClaims and Nodes through their lifecycle, the leader Lease, NodePool and
EC2NodeClass status, and Events with Karpenter's reasons; and not one write refused."""

from __future__ import annotations

from typing import Any

from tests.conftest import EXAMPLES
from tests.e2e.conftest import StartController
from tests.e2e.harness import CONTROLLER_NAMESPACE, ControlPlane, Installation, eventually

WORKSHOP = sorted((EXAMPLES / "workshop").glob("*.yaml"))
TERMINATION = "karpenter.sh/termination"
REFUSALS = ("is invalid", "not written", "forbidden")


def conditions(obj: dict[str, Any]) -> dict[str, str]:
    return {c["type"]: c["status"] for c in obj.get("status", {}).get("conditions", [])}


def live(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [item for item in items if not item["metadata"].get("deletionTimestamp")]


def running_inflate(plane: ControlPlane, replicas: int) -> list[dict[str, Any]]:
    pods = live(plane.items("pods", "-n", "default", "-l", "app=inflate"))
    running = [p for p in pods if p["status"].get("phase") == "Running"
               and p["spec"].get("nodeName")]
    assert len(running) == len(pods) == replicas, f"{len(running)}/{len(pods)} running"
    return running


def ready_claims(plane: ControlPlane) -> list[dict[str, Any]]:
    claims = live(plane.items("nodeclaims.karpenter.sh"))
    assert claims and all(conditions(c).get("Ready") == "True" for c in claims), \
        [conditions(c) for c in claims]
    return claims


def karpenter_events(plane: ControlPlane) -> list[dict[str, Any]]:
    """`kubectl get events -A` (core/v1), those Nodewright wrote."""
    return [event for event in plane.items("events", "-A")
            if event.get("reportingComponent") == "karpenter"]


def test_what_the_controller_writes_is_accepted_and_visible_with_kubectl(
        control_plane: ControlPlane, installation: Installation,
        start: StartController) -> None:
    plane = control_plane
    plane.apply(WORKSHOP)
    controller = start()
    plane.kubectl("scale", "deployment", "inflate", "--replicas", "3")
    eventually(lambda: running_inflate(plane, 3) and ready_claims(plane), timeout=90,
               what="3 inflate pods running on a Ready NodeClaim")

    (claim,) = ready_claims(plane)
    assert TERMINATION in claim["metadata"]["finalizers"]
    assert {"Launched", "Registered", "Initialized", "Ready"} <= {
        kind for kind, status in conditions(claim).items() if status == "True"}, claim["status"]
    status = claim["status"]
    assert status["providerID"].startswith("aws:///") and status["nodeName"]
    assert status["capacity"]["cpu"] and status["allocatable"]["memory"]

    node = plane.get("node", status["nodeName"])
    labels = node["metadata"]["labels"]
    assert labels["karpenter.sh/nodepool"] == "default"
    assert labels["karpenter.sh/registered"] == "true"
    assert labels["karpenter.sh/initialized"] == "true"
    assert labels["type"] == "karpenter"  # the NodePool's template label
    for key in ("node.kubernetes.io/instance-type", "topology.kubernetes.io/zone",
                "karpenter.sh/capacity-type", "karpenter.k8s.aws/instance-family"):
        assert labels.get(key), key
    assert TERMINATION in node["metadata"]["finalizers"]
    taints = {t["key"] for t in node["spec"].get("taints", [])}
    assert "karpenter.sh/unregistered" not in taints, taints
    assert node["spec"]["providerID"] == status["providerID"]
    assert conditions(node)["Ready"] == "True"

    lease = plane.get("lease", "-n", CONTROLLER_NAMESPACE, "nodewright-leader-election")
    assert lease["spec"]["holderIdentity"].startswith("replica-a")

    pool = plane.get("nodepool", "default")
    assert conditions(pool).get("Ready") == "True", pool.get("status")
    assert pool["status"]["resources"]["nodes"] == "1"
    node_class = plane.get("ec2nodeclass", "default")
    assert conditions(node_class).get("Ready") == "True", node_class.get("status")
    assert node_class["status"]["subnets"] and node_class["status"]["amis"]

    # The user deletes the NodeClaim: its pods are evicted, the node drained and deleted,
    # and a new NodeClaim holds the pods again.
    plane.kubectl("delete", "nodeclaim", claim["metadata"]["name"], "--wait=false")
    eventually(lambda: not any(n["metadata"]["name"] == status["nodeName"]
                               for n in plane.items("nodes")),
               timeout=90, what="the node of the deleted NodeClaim gone")
    eventually(lambda: running_inflate(plane, 3) and ready_claims(plane), timeout=90,
               what="the pods running again on a new NodeClaim")
    eventually(lambda: claim["metadata"]["name"] not in {
        c["metadata"]["name"] for c in plane.items("nodeclaims.karpenter.sh")},
        timeout=60, what="the deleted NodeClaim gone once its instance terminated")

    events = karpenter_events(plane)
    by_reason: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        by_reason.setdefault(event["reason"], []).append(event)
    assert {"Nominated", "Evicted"} <= by_reason.keys(), sorted(by_reason)
    nominated = by_reason["Nominated"][0]
    assert nominated["involvedObject"]["kind"] == "Pod"
    assert "Pod should schedule on" in nominated["message"]
    evicted = by_reason["Evicted"][0]
    assert evicted["involvedObject"]["kind"] == "Pod"
    assert evicted["involvedObject"]["name"].startswith("inflate-")
    assert evicted["type"] == "Normal"

    controller.stop()
    refused = [line for line in controller.raw_log().splitlines()
               if any(text in line for text in REFUSALS)]
    assert not refused, "\n".join(refused[:5])
