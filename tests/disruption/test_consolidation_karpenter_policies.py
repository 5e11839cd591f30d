"""Karpenter v1.14.1 pkg/controllers/disruption/consolidation_test.go, Contexts("Preferences")
and ("MinValuesPolicy"), told as stories: with PREFERENCE_POLICY=Ignore a pod's preferred
anti-affinity or preferred instance type does not keep its node; with
MIN_VALUES_POLICY=BestEffort a NodePool whose minValues cannot be met still launches, but
consolidation does not relax minValues to replace the node."""

from __future__ import annotations

from collections.abc import Callable

from nodewright.cluster import objects
from nodewright.controllers.common import decision_log as ex
from nodewright.controllers.options import ControllerOptions
from tests.controllers.conftest import WORKSHOP
from tests.controllers.expectations import expect_instance_types, expect_running
from tests.disruption.helpers import decisions, nodepool_with, started
from tests.disruption.test_consolidation_karpenter_budgets import fleet
from tests.harness import World

SHY = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: shy, namespace: default}
spec:
  replicas: 3
  selector: {matchLabels: {app: shy}}
  template:
    metadata: {labels: {app: shy}}
    spec:
      nodeSelector: {type: karpenter}
      terminationGracePeriodSeconds: 0
      affinity:
        podAntiAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
            - weight: 1
              podAffinityTerm:
                topologyKey: kubernetes.io/hostname
                labelSelector: {matchLabels: {app: shy}}
      containers: [{name: app, resources: {requests: {cpu: 100m}}}]
"""


def test_ignored_preferences_let_a_node_be_deleted(make_world: Callable[..., World]) -> None:
    """consolidation_test.go Preferences: It("should consolidate a node through deletion when
    ignoring preferences"): three pods preferring each other's absence on two c5.large; the
    node with one of them goes."""
    world = make_world(options=ControllerOptions(ignore_preferences=True))
    fleet(world, 2, {})
    world.apply(SHY)
    world.advance(5)
    hosts = [p["spec"].get("nodeName") for p in world.pods(labels={"app": "shy"})]
    [lighter] = [h for h in set(hosts) if hosts.count(h) == 1]
    world.scale("big", 0)
    assert world.run_until(lambda: len(world.nodes()) == 1, timeout=900)
    assert [(d.node, d.decision) for d in started(world)] == [(lighter, "delete")]
    assert world.settle()
    expect_running(world, 3, {"app": "shy"})


PICKY = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: picky, namespace: default}
spec:
  replicas: 1
  selector: {matchLabels: {app: picky}}
  template:
    metadata: {labels: {app: picky}}
    spec:
      nodeSelector: {type: karpenter}
      terminationGracePeriodSeconds: 0
      affinity:
        nodeAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
            - weight: 1
              preference:
                matchExpressions:
                  - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large]}
      containers: [{name: app, resources: {requests: {memory: 1Gi}}}]
"""


def test_ignored_preferences_let_a_node_be_replaced(make_world: Callable[..., World]) -> None:
    """consolidation_test.go Preferences: It("should consolidate a node through replacement
    when ignoring preferences"): the pod prefers the m5.large it runs on; a c5.large holds it
    for less."""
    world = make_world(options=ControllerOptions(ignore_preferences=True))
    world.apply(WORKSHOP, nodepool_with(disruption={"consolidateAfter": "0s"}))
    world.scale("inflate", 5)
    assert world.settle()
    expect_instance_types(world, "m5.large")
    world.apply(PICKY)
    world.advance(5)
    world.scale("inflate", 0)
    assert world.run_until(lambda: bool(started(world)), timeout=900)
    assert [d.decision for d in started(world)] == ["replace"]
    assert world.settle()
    expect_instance_types(world, "c5.large")
    expect_running(world, 1, {"app": "picky"})


def test_best_effort_min_values_are_not_relaxed_to_consolidate(
        make_world: Callable[..., World]) -> None:
    """consolidation_test.go MinValuesPolicy: It("should not consolidate a node by relaxing min
    values when policy is set to BestEffort"): two instance types where minValues asks for
    three (the third value names no type); provisioning relaxes it; a cheaper replacement
    would leave one type, and consolidation says minValues is not met."""
    world = make_world(options=ControllerOptions(relax_min_values=True))
    world.apply(WORKSHOP, nodepool_with(disruption={"consolidateAfter": "0s"}, template={
        "requirements": [
            {"key": "node.kubernetes.io/instance-type", "operator": "In",
             "values": ["c5.large", "m5.large", "no-such.type"], "minValues": 3},
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
        ]}))
    world.scale("inflate", 5)
    assert world.settle()
    expect_instance_types(world, "m5.large")
    [original] = world.nodeclaims()
    world.scale("inflate", 1)
    world.advance(600)
    assert started(world) == []
    assert [objects.name(c) for c in world.nodeclaims()] == [objects.name(original)]
    # As Karpenter's "Filtering by price: minValues requirement is not met" (the event
    # itself is deduplicated behind the earlier Unconsolidatable of the same node).
    [verdict] = decisions(world, objects.name(world.nodes()[0]))[-1:]
    assert verdict.cause == ex.CAUSE_NO_CHEAPER
    assert verdict.message.startswith("filtering by price: minValues"), verdict.message
    assert "node.kubernetes.io/instance-type" in verdict.message
