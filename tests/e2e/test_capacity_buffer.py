"""A CapacityBuffer on a real API server (CapacityBuffer gate): the CRD Nodewright
installs takes Karpenter's manifests and refuses what its CEL rules refuse, the controller
reads the PodTemplate it names, writes the buffer's status through the status subresource
with the chart's rights, and launches the headroom; deleting the buffer lets emptiness take
the node back."""

from __future__ import annotations

from typing import Any

from tests.conftest import EXAMPLES
from tests.e2e.conftest import StartController
from tests.e2e.harness import Controller, ControlPlane, Installation, eventually

NODE_CLASS = EXAMPLES / "workshop" / "ec2nodeclass.yaml"
MANIFESTS = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large, m5.xlarge]}
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
  disruption: {consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: 5s}
---
apiVersion: v1
kind: PodTemplate
metadata: {name: chunk, namespace: default}
template:
  metadata: {labels: {app: headroom}}
  spec:
    containers:
      - name: chunk
        image: registry.k8s.io/pause:3.9
        resources: {requests: {cpu: 500m}}
---
apiVersion: autoscaling.x-k8s.io/v1beta1
kind: CapacityBuffer
metadata: {name: headroom, namespace: default}
spec:
  podTemplateRef: {name: chunk}
  replicas: 2
"""
BOTH_REFS = """
apiVersion: autoscaling.x-k8s.io/v1beta1
kind: CapacityBuffer
metadata: {name: both, namespace: default}
spec:
  podTemplateRef: {name: chunk}
  scalableRef: {kind: Deployment, name: app}
  replicas: 1
"""


def conditions(plane: ControlPlane) -> dict[str, tuple[str, str]]:
    body: dict[str, Any] = plane.get("capacitybuffers.autoscaling.x-k8s.io", "-n", "default",
                                     "headroom")
    return {c["type"]: (c["status"], c["reason"])
            for c in body.get("status", {}).get("conditions", [])}


def live_claims(plane: ControlPlane) -> list[dict[str, Any]]:
    return [c for c in plane.items("nodeclaims.karpenter.sh")
            if not c["metadata"].get("deletionTimestamp")]


def condition_series(controller: Controller, name: str, reason: str) -> list[str]:
    """The /metrics lines of operator_status_condition_count for a CapacityBuffer's
    condition with this reason."""
    wanted = ('kind="CapacityBuffer"', f'name="{name}"', 'namespace="default"',
              'group="autoscaling.x-k8s.io"', f'reason="{reason}"')
    return [line for line in controller.metrics().splitlines()
            if line.startswith("operator_status_condition_count{")
            and all(part in line for part in wanted) and line.endswith(" 1.0")]


def test_a_capacity_buffer_launches_its_headroom_and_gives_it_back(
        control_plane: ControlPlane, installation: Installation,
        start: StartController) -> None:
    plane = control_plane
    plane.apply(NODE_CLASS)
    plane.apply(MANIFESTS)
    stored = plane.get("capacitybuffers.autoscaling.x-k8s.io", "-n", "default", "headroom")
    assert stored["spec"]["provisioningStrategy"] == "buffer.x-k8s.io/active-capacity"
    refused = plane.kubectl("apply", "-f", "-", input=BOTH_REFS, check=False)
    assert refused.returncode != 0
    assert "You must define either PodTemplateRef or ScalableRef, but not both" in \
        refused.stderr

    controller = start(env={"FEATURE_GATES": "CapacityBuffer=true"})
    eventually(lambda: conditions(plane).get("ReadyForProvisioning") == ("True", "Resolved"),
               timeout=60, what="the buffer ReadyForProvisioning")
    eventually(lambda: len(live_claims(plane)) == 1, timeout=120,
               what="a NodeClaim launched for the headroom")
    eventually(lambda: conditions(plane).get("Provisioning") ==
               ("True", "FitsExistingCapacity"), timeout=120,
               what="the buffer's Provisioning condition FitsExistingCapacity")
    status = plane.get("capacitybuffers.autoscaling.x-k8s.io", "-n", "default",
                       "headroom")["status"]
    assert status["replicas"] == 2
    assert status["podTemplateRef"] == {"name": "chunk"}
    # No pod was created for the headroom: it is virtual.
    assert plane.items("pods", "-n", "default") == []
    # Its conditions are in the status-condition metrics, as Karpenter exports them.
    eventually(lambda: condition_series(controller, "headroom", "FitsExistingCapacity"),
               timeout=30, what="the buffer's Provisioning condition in /metrics")

    plane.kubectl("-n", "default", "delete", "capacitybuffers.autoscaling.x-k8s.io",
                  "headroom")
    eventually(lambda: live_claims(plane) == [], timeout=180,
               what="the headroom's node removed as empty once the buffer is gone")
