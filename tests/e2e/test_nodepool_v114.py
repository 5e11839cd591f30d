"""Karpenter v1.14 NodePools on a real API server: a static NodePool (spec.replicas), a
Balanced one and a NodeOverlay are accepted as written, `kubectl scale nodepool` drives the
static one through the CRD's scale subresource, the overlay's status is reported, and
what Karpenter's CEL rules refuse is refused."""

from __future__ import annotations

from typing import Any

from tests.conftest import EXAMPLES
from tests.e2e.conftest import StartController
from tests.e2e.harness import ControlPlane, Installation, eventually

NODE_CLASS = EXAMPLES / "workshop" / "ec2nodeclass.yaml"
POOLS = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: fleet}
spec:
  replicas: 2
  template:
    metadata: {labels: {capacity: static}}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large]}
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
  limits: {nodes: "4"}
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: balanced}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - key: karpenter.k8s.aws/instance-category
          operator: In
          values: [c, m]
          minValues: 2
  disruption:
    consolidationPolicy: Balanced
    consolidateAfter: 30s
---
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: discount-m5}
spec:
  weight: 10
  requirements:
    - {key: karpenter.k8s.aws/instance-family, operator: In, values: [m5]}
  priceAdjustment: "-10%"
  capacity: {example.com/slices: "4"}
"""


def fleet_claims(plane: ControlPlane) -> list[dict[str, Any]]:
    return [c for c in plane.items("nodeclaims.karpenter.sh", "-l", "karpenter.sh/nodepool=fleet")
            if not c["metadata"].get("deletionTimestamp")]


def ready_count(plane: ControlPlane) -> int:
    return sum(1 for claim in fleet_claims(plane)
               if any(c["type"] == "Ready" and c["status"] == "True"
                      for c in claim.get("status", {}).get("conditions", [])))


def overlay_ready(plane: ControlPlane) -> str:
    overlay = plane.get("nodeoverlays.karpenter.sh", "discount-m5")
    return next((c["status"] for c in overlay.get("status", {}).get("conditions", [])
                 if c["type"] == "Ready"), "")


def refused(plane: ControlPlane, patch: str) -> str:
    done = plane.kubectl("patch", "nodepool", "fleet", "--type=merge", "-p", patch,
                         check=False)
    assert done.returncode != 0, done.stdout
    return done.stderr


def test_static_and_balanced_nodepools_run_and_kubectl_scale_works(
        control_plane: ControlPlane, installation: Installation,
        start: StartController) -> None:
    plane = control_plane
    plane.apply(NODE_CLASS)
    plane.apply(POOLS)
    balanced = plane.get("nodepool", "balanced")
    assert balanced["spec"]["disruption"]["consolidationPolicy"] == "Balanced"
    start(env={"FEATURE_GATES": "StaticCapacity=true,NodeOverlay=true"})
    eventually(lambda: ready_count(plane) == 2, timeout=120,
               what="the static NodePool's two NodeClaims Ready")
    eventually(lambda: overlay_ready(plane) == "True", timeout=60,
               what="the NodeOverlay's Ready condition True")

    plane.kubectl("scale", "nodepool", "fleet", "--replicas=3")
    eventually(lambda: ready_count(plane) == 3, timeout=120,
               what="a third static NodeClaim after kubectl scale")
    eventually(lambda: plane.get("nodepool", "fleet")["status"].get("nodes") == 3,
               timeout=60, what="status.nodes (the scale subresource's status replicas) 3")

    # Beyond limits.nodes: the pool stops at four.
    plane.kubectl("scale", "nodepool", "fleet", "--replicas=6")
    eventually(lambda: ready_count(plane) == 4, timeout=120, what="four static NodeClaims")
    plane.kubectl("scale", "nodepool", "fleet", "--replicas=1")
    eventually(lambda: len(fleet_claims(plane)) == 1, timeout=180,
               what="the static NodePool scaled down to one NodeClaim")

    assert "Cannot transition NodePool between static" in refused(
        plane, '{"spec": {"replicas": null}}')
    assert "only 'limits.nodes' is supported on static NodePools" in refused(
        plane, '{"spec": {"limits": {"cpu": "10"}}}')
    assert "'weight' is not supported on static NodePools" in refused(
        plane, '{"spec": {"weight": 10}}')
    dynamic = plane.kubectl("patch", "nodepool", "balanced", "--type=merge", "-p",
                            '{"spec": {"replicas": 2}}', check=False)
    assert dynamic.returncode != 0
    assert "Cannot transition NodePool between static" in dynamic.stderr
    both = plane.kubectl("patch", "nodeoverlays.karpenter.sh", "discount-m5", "--type=merge",
                         "-p", '{"spec": {"price": "0.5"}}', check=False)
    assert both.returncode != 0
    assert "cannot set both 'price' and 'priceAdjustment'" in both.stderr
