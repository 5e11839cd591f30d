"""Karpenter v1.14.1 pkg/controllers/disruption/drift_test.go It("can replace drifted nodes
with multiple nodes") and queue_test.go It("should only finish a command when all
replacements are initialized"), told as one story: a c5.xlarge runs three 700m pods; the
NodePool then allows only c5.large, so the drifted node needs two replacements, and it is
deleted only once both have initialized."""

from __future__ import annotations

from typing import Any

from nodewright.cluster import objects
from nodewright.controllers.common import decision_log as ex
from tests.controllers.conftest import WORKSHOP
from tests.controllers.expectations import expect_no_controller_errors, expect_running
from tests.disruption.helpers import nodepool_with, started
from tests.harness import World

THREE = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: three, namespace: default}
spec:
  replicas: 3
  selector: {matchLabels: {app: three}}
  template:
    metadata: {labels: {app: three}}
    spec:
      nodeSelector: {type: karpenter}
      terminationGracePeriodSeconds: 0
      containers: [{name: app, resources: {requests: {cpu: 700m}}}]
"""


def only(instance_type: str) -> dict[str, Any]:
    return {"requirements": [
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": [instance_type]},
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
    ]}


def test_a_drifted_node_is_replaced_by_two_and_goes_once_both_are_initialized(
        world: World) -> None:
    """drift_test.go Drift: It("can replace drifted nodes with multiple nodes") and
    queue_test.go Reconcile: It("should only finish a command when all replacements are
    initialized")."""
    world.apply(WORKSHOP, nodepool_with(template=only("c5.xlarge"),
                                        disruption={"consolidateAfter": "Never"}), THREE)
    assert world.settle()
    [original] = [objects.name(c) for c in world.nodeclaims()]
    world.apply(nodepool_with(template=only("c5.large"),
                              disruption={"consolidateAfter": "Never"}))
    seen_replacements = 0
    for _ in range(900):
        world.advance(1)
        claims = {objects.name(c): c for c in world.nodeclaims()}
        replacements = [c for name, c in claims.items() if name != original]
        seen_replacements = max(seen_replacements, len(replacements))
        if original not in claims:
            break
        if objects.is_deleting(claims[original]):
            assert len(replacements) == 2
            assert all(objects.condition_is_true(c, "Initialized") for c in replacements)
    assert seen_replacements == 2
    assert world.settle()
    [command] = [d for d in started(world) if d.method == ex.DRIFT]
    assert command.decision == "replace" and len(command.replacements) == 2
    assert world.instance_types() == ["c5.large", "c5.large"]
    expect_running(world, 3, {"app": "three"})
    expect_no_controller_errors(world)
