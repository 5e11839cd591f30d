"""Karpenter v1.14.1 pkg/controllers/disruption/consolidation_test.go, Contexts
("Multi-NodeClaim"), ("Node Lifetime Consideration"), ("Topology Consideration") and
("Parallelization"), told as stories: three 2xlarge left with one small pod each merge into
one cheaper node after the validation wait; two of the cheapest type are not swapped for a
third of the same type, one of them is deleted; a command invalidated at validation gives
way to single-node consolidation; the node with fewer pods goes first; a replacement keeps
its zone for a zonal spread; and nodes launched for a deleted node's pods are left alone."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from nodewright.cluster import objects
from nodewright.controllers.common import decision_log as ex
from tests.controllers.conftest import WORKSHOP
from tests.controllers.expectations import expect_no_controller_errors, expect_running
from tests.disruption.helpers import BIG, HOGS, decisions, nodepool_with, started
from tests.disruption.test_consolidation_karpenter import GUARD_ON
from tests.disruption.test_consolidation_karpenter_budgets import (
    FILLER,
    commands_by_time,
    fleet,
)
from tests.disruption.test_consolidation_karpenter_metrics import validating
from tests.disruption.test_consolidation_karpenter_replace import SPOT_GATE
from tests.disruption.test_policy_stories import SPOT_M5
from tests.harness import World

CAPACITY = ["on-demand", "spot"]
# Three small pods, two on one node and one on the other: they ask for memory, which both
# nodes' scores (least allocated, balanced allocation) spread.
THREE_SMALL = FILLER.replace("cpu: 800m", "memory: 64Mi") % (3, 0)


def big_nodes_then_small_pods(make_world: Callable[..., World], capacity: str, nodes: int,
                              *extra: Any) -> tuple[World, list[str]]:
    """`nodes` 2xlarge of `capacity`, each left running one 1Gi inflate pod once the hogs
    go; the nodes' names."""
    world = make_world(options=SPOT_GATE)
    wanted = SPOT_M5 if capacity == "spot" else {}
    world.apply(WORKSHOP, nodepool_with(requirements=wanted,
                                        disruption={"consolidateAfter": "0s",
                                                    "budgets": [{"nodes": "100%"}]}),
                HOGS % nodes, *extra)
    assert world.settle()
    assert len(world.nodes()) == nodes
    world.scale("inflate", nodes)
    world.advance(5)
    hosts = {p["spec"].get("nodeName") for p in world.pods(labels={"app": "inflate"})}
    assert len(hosts) == nodes
    world.scale("hog", 0)
    return world, sorted(objects.name(n) for n in world.nodes())


def merged(world: World) -> list[ex.Decision]:
    return [d for d in started(world) if d.method == ex.MULTI_NODE]


@pytest.mark.parametrize("capacity", CAPACITY)
def test_three_nodes_merge_into_one(make_world: Callable[..., World], capacity: str) -> None:
    """consolidation_test.go Multi-NodeClaim: DescribeTable("can merge 3 nodes into 1"),
    Entry("if the candidate is on-demand node"), Entry("if the candidate is spot node");
    and DescribeTable("should wait for the node TTL for non-empty nodes before consolidating
    (multi-node)"), the same two Entries: the command waits out its validation first."""
    world, originals = big_nodes_then_small_pods(make_world, capacity, 3)
    assert world.run_until(lambda: bool(merged(world)), timeout=900)
    command = merged(world)
    assert sorted(d.node for d in command) == originals
    assert {d.decision for d in command} == {"replace"}
    proposed = [d for d in decisions(world) if d.cause == "Candidate"]
    assert (command[0].time - proposed[-1].time).total_seconds() >= 15
    assert world.settle()
    [node] = world.nodes()
    assert objects.name(node) not in originals
    assert objects.labels(node)["karpenter.sh/capacity-type"] == capacity
    expect_running(world, 3)
    expect_no_controller_errors(world)


SPOT_POOL = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: spot}
spec:
  weight: 10
  limits: {cpu: "16"}
  template:
    metadata: {labels: {type: karpenter}}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [spot]}
        - {key: karpenter.k8s.aws/instance-family, operator: In, values: [c5, m5]}
  disruption: {consolidateAfter: 0s, budgets: [{nodes: "100%"}]}
"""


def test_spot_and_on_demand_nodes_merge_into_one(make_world: Callable[..., World]) -> None:
    """consolidation_test.go Multi-NodeClaim: It("can merge 3 nodes into 1 if the candidates
    have both spot and on-demand"): a weighted spot NodePool limited to two 2xlarge, the
    third on-demand from the workshop's."""
    world, originals = big_nodes_then_small_pods(make_world, "on-demand", 3, SPOT_POOL)
    kinds = sorted(objects.labels(n)["karpenter.sh/capacity-type"] for n in world.nodes())
    assert kinds == ["on-demand", "spot", "spot"]
    assert world.run_until(lambda: bool(merged(world)), timeout=900)
    assert sorted(d.node for d in merged(world)) == originals
    assert world.settle()
    [node] = world.nodes()
    assert objects.name(node) not in originals
    expect_running(world, 3)


@pytest.mark.parametrize("capacity", ["on-demand"])
def test_two_nodes_of_the_cheapest_type_are_not_swapped_for_one_of_the_same_type(
        make_world: Callable[..., World], capacity: str) -> None:
    """consolidation_test.go Multi-NodeClaim: DescribeTable("won't merge 2 nodes into 1 of the
    same type"), Entry("if the candidate is on-demand node"): one of them is deleted instead,
    the one with fewer pods. (The spot Entry is the story below.)"""
    world = make_world(options=SPOT_GATE)
    wanted = SPOT_M5 if capacity == "spot" else {}
    world.apply(WORKSHOP, nodepool_with(requirements=wanted, disruption={
        "consolidateAfter": "0s", "budgets": [{"nodes": "100%"}]}), BIG % 2)
    assert world.settle()
    [kind] = {objects.labels(n)["node.kubernetes.io/instance-type"] for n in world.nodes()}
    world.apply(THREE_SMALL)
    world.advance(5)
    hosts = [p["spec"].get("nodeName") for p in world.pods(labels={"app": "filler"})]
    [lighter] = [h for h in set(hosts) if hosts.count(h) == 1]
    claims = {objects.name(c) for c in world.nodeclaims()}
    world.scale("big", 0)
    assert world.run_until(lambda: len(world.nodes()) == 1, timeout=900)
    assert world.settle()
    [node] = world.nodes()
    assert objects.name(node) != lighter
    assert objects.labels(node)["node.kubernetes.io/instance-type"] == kind
    assert {objects.name(c) for c in world.nodeclaims()} <= claims
    assert {d.decision for d in started(world)} == {"delete"}
    expect_running(world, 3, {"app": "filler"})


def small_pod(name: str, node: str) -> dict[str, Any]:
    """A pod bound to `node` by hand, as Karpenter's ExpectManualBinding does."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": {"app": "small"}},
            "spec": {"nodeName": node, "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "app",
                                     "resources": {"requests": {"memory": "64Mi"}}}]}}


def test_two_spot_nodes_of_the_cheapest_type_are_not_swapped_for_one_of_the_same_type(
        make_world: Callable[..., World]) -> None:
    """consolidation_test.go Multi-NodeClaim: DescribeTable("won't merge 2 nodes into 1 of the
    same type"), Entry("if the candidate is spot node"): two spot t3a.small running one and
    two small pods (bound by hand: kube-scheduler would stack them on one node); the one
    with fewer pods is deleted, not both swapped for a third t3a.small."""
    world = make_world(options=SPOT_GATE)
    world.apply(WORKSHOP, nodepool_with(requirements=SPOT_M5, disruption={
        "consolidateAfter": "0s", "budgets": [{"nodes": "100%"}]}), BIG % 2)
    assert world.settle()
    [kind] = {objects.labels(n)["node.kubernetes.io/instance-type"] for n in world.nodes()}
    heavier, lighter = sorted(objects.name(n) for n in world.nodes())
    world.apply(small_pod("a", heavier), small_pod("b", heavier), small_pod("c", lighter))
    world.advance(5)
    claims = {objects.name(c) for c in world.nodeclaims()}
    world.scale("big", 0)
    assert world.run_until(lambda: len(world.nodes()) == 1, timeout=900)
    assert world.settle()
    [node] = world.nodes()
    assert objects.name(node) == heavier
    assert objects.labels(node)["node.kubernetes.io/instance-type"] == kind
    assert {objects.name(c) for c in world.nodeclaims()} <= claims
    assert {d.decision for d in started(world)} == {"delete"}
    assert [d.node for d in started(world)] == [lighter]


@pytest.mark.parametrize("capacity", CAPACITY)
def test_empty_nodes_go_together_after_the_validation_wait(
        make_world: Callable[..., World], capacity: str) -> None:
    """consolidation_test.go Multi-NodeClaim: DescribeTable("should consolidate multiple empty
    nodes via multi-nodeclaim consolidation"), Entry("if the candidate is on-demand node"),
    Entry("if the candidate is spot node") (Nodewright's emptiness method takes empty nodes
    before multi-node consolidation looks, as Karpenter's does with its real methods)."""
    world = make_world(options=SPOT_GATE)
    wanted = SPOT_M5 if capacity == "spot" else {}
    world.apply(WORKSHOP, nodepool_with(requirements=wanted, disruption={
        "consolidateAfter": "0s", "budgets": [{"nodes": "100%"}]}), HOGS % 3)
    assert world.settle()
    world.scale("hog", 0)
    nodes = validating(world)
    assert len(nodes) == 3
    world.advance(10)
    assert len(world.nodes()) == 3
    assert world.run_until(lambda: not world.nodes(), timeout=120)
    assert commands_by_time(world, ex.EMPTINESS) == [3]


@pytest.mark.parametrize("capacity", CAPACITY)
def test_single_node_consolidation_follows_a_multi_node_command_that_failed_validation(
        make_world: Callable[..., World], capacity: str) -> None:
    """consolidation_test.go Multi-NodeClaim: DescribeTable("should continue to single
    nodeclaim consolidation when multi-nodeclaim consolidation fails validation after the node
    ttl"), Entry("if the candidate is on-demand node"), Entry("if the candidate is spot
    node"): pods land on two of the three nodes while the merge waits; the third goes."""
    world, originals = big_nodes_then_small_pods(make_world, capacity, 3)
    proposed = validating(world)
    assert sorted(proposed) == originals
    first, second, third = originals
    world.apply(GUARD_ON.replace("name: guard", "name: guard-1") % first,
                GUARD_ON.replace("name: guard", "name: guard-2") % second)
    assert world.run_until(lambda: bool(started(world)), timeout=600)
    [command] = started(world)
    assert (command.method, command.node, command.decision) == (
        ex.SINGLE_NODE, third, "delete")
    assert any(d.cause == ex.CAUSE_VALIDATION and d.method == ex.MULTI_NODE
               for d in decisions(world))
    assert world.settle()
    assert sorted(objects.name(n) for n in world.nodes()) == [first, second]


def test_the_node_with_fewer_pods_is_consolidated_first(world: World) -> None:
    """consolidation_test.go Node Lifetime Consideration: It("should consolidate the node with
    best savings ratio first"): same price, same lifetime; fewer pods to move is the better
    ratio."""
    fleet(world, 2, {})
    world.apply(THREE_SMALL)
    world.advance(5)
    hosts = [p["spec"].get("nodeName") for p in world.pods(labels={"app": "filler"})]
    [lighter] = [h for h in set(hosts) if hosts.count(h) == 1]
    world.scale("big", 0)
    assert world.run_until(lambda: bool(started(world)), timeout=600)
    assert [d.node for d in started(world)] == [lighter]
    assert world.settle()
    assert lighter not in {objects.name(n) for n in world.nodes()}


SPREAD = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: spread, namespace: default}
spec:
  replicas: 3
  selector: {matchLabels: {app: spread}}
  template:
    metadata: {labels: {app: spread}}
    spec:
      nodeSelector: {type: karpenter}
      terminationGracePeriodSeconds: 0
      topologySpreadConstraints:
        - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone,
           whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: spread}}}
      containers: [{name: app, resources: {requests: {memory: 1Gi}}}]
"""


def test_a_replacement_keeps_the_zone_a_zonal_spread_needs(world: World) -> None:
    """consolidation_test.go Topology Consideration: It("can replace node maintaining zonal
    topology spread")."""
    world.apply(WORKSHOP, nodepool_with(disruption={"consolidateAfter": "0s"}), SPREAD)
    assert world.settle()
    assert len({objects.labels(n)["topology.kubernetes.io/zone"] for n in world.nodes()}) == 3
    [busiest] = world.nodes()[:1]
    zone = objects.labels(busiest)["topology.kubernetes.io/zone"]
    world.apply(HOGS.replace("type: karpenter}", "type: karpenter, "
                             f"topology.kubernetes.io/zone: {zone}}}") % 1)
    assert world.settle()
    sizes = {objects.labels(n)["topology.kubernetes.io/zone"]:
             objects.labels(n)["node.kubernetes.io/instance-type"] for n in world.nodes()}
    assert sizes[zone].endswith(".2xlarge")
    world.scale("hog", 0)
    assert world.settle()
    replaced = [d for d in started(world) if d.decision == "replace"]
    assert replaced
    zones = sorted(objects.labels(n)["topology.kubernetes.io/zone"] for n in world.nodes())
    assert len(set(zones)) == 3 and len(zones) == 3
    assert not any(objects.labels(n)["node.kubernetes.io/instance-type"].endswith(".2xlarge")
                   for n in world.nodes())
    expect_running(world, 3, {"app": "spread"})


def test_nodes_launched_for_a_deleted_nodes_pods_are_not_consolidated(world: World) -> None:
    """consolidation_test.go Parallelization: It("should not consolidate a node that is
    launched for pods on a deleting node")."""
    world.apply(WORKSHOP, nodepool_with(disruption={"consolidateAfter": "0s"}))
    world.scale("inflate", 5)
    assert world.settle()
    [claim] = world.nodeclaims()
    world.delete("NodeClaim", objects.name(claim))
    assert world.settle()
    assert objects.name(claim) not in {objects.name(c) for c in world.nodeclaims()}
    assert started(world) == []
    expect_running(world, 5)
