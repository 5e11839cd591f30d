"""The Karpenter workshop on a real control plane: kube-scheduler binds the pods,
kube-controller-manager runs the Deployment, Nodewright (`--cloud sim`, as the manifests'
ServiceAccount) launches, consolidates and drains through the eviction API, honouring a
PodDisruptionBudget."""

from __future__ import annotations

from collections import Counter
from typing import Any

from tests.e2e.conftest import StartController
from tests.e2e.fleet import WORKSHOP, live, scale
from tests.e2e.harness import ControlPlane, Installation, eventually

INSTANCE_TYPE = "node.kubernetes.io/instance-type"


def inflate_pods(plane: ControlPlane) -> list[dict[str, Any]]:
    return live(plane.items("pods", "-n", "default", "-l", "app=inflate"))


def fleet(plane: ControlPlane) -> Counter[str]:
    """Instance types of the Ready nodes that are not being deleted."""
    types: Counter[str] = Counter()
    for node in plane.items("nodes"):
        if node["metadata"].get("deletionTimestamp"):
            continue
        ready = any(c["type"] == "Ready" and c["status"] == "True"
                    for c in node.get("status", {}).get("conditions", []))
        if ready:
            types[node["metadata"]["labels"].get(INSTANCE_TYPE, "?")] += 1
    return types


def settled(plane: ControlPlane, replicas: int, expected: dict[str, int]) -> bool:
    pods = inflate_pods(plane)
    running = [pod for pod in pods if pod["status"].get("phase") == "Running"
               and pod["spec"].get("nodeName")]
    claims = [claim for claim in plane.items("nodeclaims.karpenter.sh")
              if not claim["metadata"].get("deletionTimestamp")]
    assert len(running) == replicas == len(pods), f"{len(running)}/{len(pods)} running"
    assert fleet(plane) == Counter(expected), f"fleet {dict(fleet(plane))}"
    assert len(claims) == sum(expected.values()), f"{len(claims)} NodeClaims"
    return True


def test_the_workshop_scales_out_and_consolidates_on_a_real_cluster(
        control_plane: ControlPlane, installation: Installation,
        start: StartController) -> None:
    plane = control_plane
    plane.apply(WORKSHOP)
    controller = start()

    scale(plane, 5)
    eventually(lambda: settled(plane, 5, {"m5.large": 1}), timeout=90,
               what="5 pods running on one m5.large")

    scale(plane, 12)
    eventually(lambda: settled(plane, 12, {"m5.large": 2}), timeout=90,
               what="12 pods running on two m5.large")

    scale(plane, 5)
    eventually(lambda: settled(plane, 5, {"m5.large": 1}), timeout=150,
               what="back to one m5.large")

    # A PodDisruptionBudget that allows no eviction holds the last pod where it is...
    plane.apply("""
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: inflate, namespace: default}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: inflate}}
""")
    scale(plane, 1)
    eventually(lambda: settled(plane, 1, {"m5.large": 1}), timeout=60, what="one pod left")
    eventually(lambda: any(
        event.get("reason") in ("DisruptionBlocked", "Unconsolidatable")
        and "inflate" in str(event.get("note") or event.get("message"))
        for event in plane.items("events", "-n", "default")),
        timeout=90, what="an event saying why the node stays")
    assert fleet(plane) == Counter({"m5.large": 1})
    assert controller.running()

    # ...and once it is gone the node is replaced by a cheaper c5.large through the eviction
    # API, the pod moving with it.
    plane.kubectl("-n", "default", "delete", "pdb", "inflate")
    eventually(lambda: settled(plane, 1, {"c5.large": 1}), timeout=180,
               what="the m5.large replaced by a c5.large")
    assert controller.logged("disrupting node(s)")

    reasons = {event.get("reason") for event in plane.items("events", "-A")
               if event.get("reportingComponent") == "karpenter"
               or event.get("reportingController") == "karpenter"}
    assert {"Nominated", "DisruptionLaunching", "DisruptionTerminating"} <= reasons, reasons
