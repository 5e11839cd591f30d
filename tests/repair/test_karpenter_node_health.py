"""Karpenter's node health suite, ported: kubernetes-sigs/karpenter v1.14.1
pkg/controllers/node/health/suite_test.go. Each story names its It.

Karpenter's fake cloud provider has one repair policy, BadNode=False for 30 minutes; the
AWS provider's StorageReady=False (30 minutes) plays it here, and its
AcceleratedHardwareReady=False (10 minutes) is the second policy where a story needs two.
The nodes run a do-not-disrupt pod under a PodDisruptionBudget that allows nothing, in a
NodePool whose disruption budget is zero nodes: repair ignores all three. "should ignore
unhealthy nodes if more then 20% of the nodes are unhealthy in a nodepool" is
tests/repair/test_node_repair_stories.py
test_more_than_a_fifth_of_the_pool_unhealthy_blocks_repair."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from nodewright import metrics
from nodewright.cloud.sim import SimulatedEC2
from nodewright.cluster import objects
from nodewright.cluster.events import EventRecorder
from nodewright.cluster.memory import InMemoryCluster
from nodewright.controllers.node.health import UNHEALTHY_DISRUPTED, NodeHealth
from nodewright.runtime.clock import VirtualClock, format_time, parse_time
from nodewright.runtime.reconciler import WatchEvent
from nodewright.state import ClusterState
from tests.harness import World
from tests.repair.test_node_repair_stories import _node_names, _set_condition, _world

BAD = "StorageReady"
ANNOTATION = "karpenter.sh/nodeclaim-termination-timestamp"


def claim_of(world: World, node_name: str) -> dict[str, Any]:
    return next(c for c in world.nodeclaims() if c["status"].get("nodeName") == node_name)


def deleting(world: World, node_name: str) -> bool:
    return objects.is_deleting(claim_of(world, node_name))


def annotate(world: World, node_name: str, when: str) -> None:
    world.cluster.patch("NodeClaim", objects.name(claim_of(world, node_name)),
                        {"metadata": {"annotations": {ANNOTATION: when}}})
    world.deliver()


def test_a_node_unhealthy_by_the_cloud_providers_policy_is_replaced() -> None:
    """It("should delete nodes that are unhealthy by the cloud provider") (with Forceful
    termination's It("should ignore node disruption budgets"): the NodePool allows zero)."""
    world = _world(1)
    (node,) = _node_names(world)
    _set_condition(world, node, BAD, "False", ago=3600)
    world.advance(5)
    assert deleting(world, node)


def test_a_condition_type_no_policy_names_is_left_alone() -> None:
    """It("should not delete node when unhealthy type does not match cloud provider passed
    in value")."""
    world = _world(1)
    (node,) = _node_names(world)
    _set_condition(world, node, "FakeHealthyNode", "False", ago=3600)
    world.advance(60)
    assert not deleting(world, node)


def test_a_status_the_policy_does_not_name_is_left_alone() -> None:
    """It("should not delete node when health status does not match cloud provider passed
    in value")."""
    world = _world(1)
    (node,) = _node_names(world)
    _set_condition(world, node, BAD, "True", ago=3600)
    world.advance(60)
    assert not deleting(world, node)


def test_a_node_unhealthy_for_less_than_the_toleration_is_kept() -> None:
    """It("should not delete node when health duration is not reached"): 20 of 30 minutes."""
    world = _world(1)
    (node,) = _node_names(world)
    _set_condition(world, node, BAD, "False", ago=20 * 60)
    world.advance(60)
    assert not deleting(world, node)


def test_forceful_termination_sets_the_termination_timestamp_to_now() -> None:
    """It("should set annotation termination grace period when force termination is
    started")."""
    world = _world(1)
    (node,) = _node_names(world)
    _set_condition(world, node, BAD, "False", ago=3600)
    world.advance(5)
    claim = claim_of(world, node)
    stamp = parse_time(str(objects.annotations(claim)[ANNOTATION]))
    assert abs((stamp - world.clock.now()).total_seconds()) <= 5


def test_the_nodepools_termination_grace_period_is_not_respected() -> None:
    """It("should not respect termination grace period if set on the nodepool"): a
    termination timestamp two hours away is brought forward to now."""
    world = _world(1)
    (node,) = _node_names(world)
    annotate(world, node, format_time(world.clock.now() + timedelta(minutes=120)))
    _set_condition(world, node, BAD, "False", ago=3600)
    world.advance(5)
    stamp = parse_time(str(objects.annotations(claim_of(world, node))[ANNOTATION]))
    assert abs((stamp - world.clock.now()).total_seconds()) <= 5


def test_a_termination_timestamp_already_past_is_kept() -> None:
    """It("should not update termination grace period if set before the current time")."""
    world = _world(1)
    (node,) = _node_names(world)
    earlier = format_time(world.clock.now() - timedelta(minutes=3))
    annotate(world, node, earlier)
    _set_condition(world, node, BAD, "False", ago=3600)
    world.advance(5)
    assert objects.annotations(claim_of(world, node))[ANNOTATION] == earlier


def test_of_two_unhealthy_conditions_the_one_due_first_decides() -> None:
    """It("should return the requeue interval for the condition closest to its
    terminationDuration"): StorageReady (30 min) and AcceleratedHardwareReady (10 min)
    since the same moment: the node goes when the 10 minutes are up."""
    world = _world(1)
    (node,) = _node_names(world)
    _set_condition(world, node, BAD, "False")
    _set_condition(world, node, "AcceleratedHardwareReady", "False")
    world.advance(9 * 60)
    assert not deleting(world, node)
    world.advance(90)
    assert deleting(world, node)


def test_the_node_goes_when_its_toleration_ends() -> None:
    """It("should return the requeue interval for the time between now and when the
    nodeClaim termination time"): unhealthy 27 minutes ago, the node goes 3 minutes on."""
    world = _world(1)
    (node,) = _node_names(world)
    _set_condition(world, node, BAD, "False", ago=27 * 60)
    world.advance(150)
    assert not deleting(world, node)
    world.advance(60)
    assert deleting(world, node)


def test_do_not_disrupt_on_the_node_is_ignored() -> None:
    """It("should ignore do-not-disrupt on a node")."""
    world = _world(1)
    (node,) = _node_names(world)
    world.cluster.patch("Node", node, {"metadata": {"annotations": {
        "karpenter.sh/do-not-disrupt": "true"}}})
    _set_condition(world, node, BAD, "False", ago=3600)
    world.advance(5)
    assert deleting(world, node)


def test_one_unhealthy_node_of_three_is_repaired() -> None:
    """It("should consider round up when there is a low number of nodes for a nodepool"):
    20 % of 3 rounds up to one node."""
    world = _world(3)
    victim = _node_names(world)[0]
    _set_condition(world, victim, BAD, "False", ago=3600)
    world.advance(5)
    assert deleting(world, victim)


def test_a_repair_counts_as_an_unhealthy_disruption() -> None:
    """It("should fire a karpenter_nodeclaims_disrupted_total metric when unhealthy")."""
    metrics.NODECLAIMS_DISRUPTED.clear()
    UNHEALTHY_DISRUPTED.clear()
    world = _world(1)
    (node,) = _node_names(world)
    _set_condition(world, node, BAD, "False", ago=3600)
    world.advance(5)
    assert deleting(world, node)

    def total(metric: str, **labels: str) -> float:
        return sum(s.value for family in metrics.REGISTRY.restricted_registry([metric]).collect()
                   for s in family.samples if s.name == metric
                   and all(s.labels.get(k) == v for k, v in labels.items()))

    assert total("karpenter_nodeclaims_disrupted_total", reason="unhealthy",
                 nodepool="default") == 1
    assert total("karpenter_nodeclaims_unhealthy_disrupted_total", condition="storage_ready",
                 nodepool="default") == 1


def test_more_than_a_fifth_of_the_cluster_unhealthy_blocks_repair() -> None:
    """It("should ignore unhealthy nodes if more then 20% of the nodes are unhealthy in a
    cluster"): NodeClaims without a NodePool are measured against every node; three of ten
    unhealthy is more than two, so none is repaired and each is looked at again in five
    minutes. Told on the health controller alone, as Karpenter's (no story launches
    NodeClaims without a NodePool)."""
    clock = VirtualClock()
    cluster = InMemoryCluster(clock)
    state = ClusterState(clock)
    now = clock.now()
    stale = format_time(now - timedelta(hours=1))
    for i in range(10):
        provider_id = f"aws:///us-east-1a/i-{i:017x}"
        claim = cluster.create({
            "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
            "metadata": {"name": f"claim-{i}", "finalizers": ["karpenter.sh/termination"]},
            "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                      "name": "default"}, "requirements": []}})
        claim = cluster.patch("NodeClaim", f"claim-{i}", {"status": {
            "providerID": provider_id}}, subresource="status")
        conditions = [{"type": "Ready", "status": "True", "lastTransitionTime": stale}]
        if i < 3:
            conditions.append({"type": BAD, "status": "False", "lastTransitionTime": stale})
        node = {"apiVersion": "v1", "kind": "Node", "metadata": {
            "name": f"node-{i}", "labels": {"node.kubernetes.io/instance-type": "m5.large",
                                            "karpenter.sh/registered": "true",
                                            "karpenter.sh/initialized": "true"}},
            "spec": {"providerID": provider_id}, "status": {"conditions": conditions}}
        for obj in (claim, node):
            state.observe(WatchEvent("ADDED", obj))
    health = NodeHealth(cluster, SimulatedEC2(clock, cluster=cluster), clock, state,
                        EventRecorder(cluster, clock))
    for i in range(3):
        result = health.reconcile(f"node-{i}")
        assert result.requeue_after == 300
        assert not objects.is_deleting(cluster.get("NodeClaim", f"claim-{i}"))
    blocked = [e for e in cluster.list("Event") if e.get("reason") == "NodeRepairBlocked"]
    # events.go NodeRepairBlockedUnmanagedNodeClaim: on the Node, Karpenter's message.
    assert blocked and blocked[0]["note"] == "more then 20% nodes are unhealthy in the cluster"
    assert {e["regarding"]["kind"] for e in blocked} == {"Node"}
