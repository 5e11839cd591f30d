"""Karpenter v1.14.1 pkg/controllers/disruption/suite_test.go,
Describe("BuildDisruptionBudgetMapping"):
how many more nodes a NodePool may start disrupting, per reason. Karpenter's map is the
room a pass of Nodewright's loop computes (`budget_room.room_by_pool`, `Room.left`), over
the workshop's NodePool of ten c5.large (one `big` pod each keeps them from being
consolidated), for each of the three reasons."""

from __future__ import annotations

from typing import Any

from nodewright.cluster import objects
from nodewright.controllers.disruption.budget_room import Room
from nodewright.controllers.disruption.budgets import REASONS
from tests.disruption.test_consolidation_karpenter_budgets import fleet
from tests.harness import World

HOLD = "test/hold"


def rooms(world: World) -> dict[str, Room]:
    """The workshop NodePool's room for each reason, as a pass sees it now."""
    world.deliver()
    disruption = world.controllers.disruption.disruption
    state = world.controllers.state
    with state.lock:
        current = disruption.new_pass(world.clock.now())
        return {reason: current.rooms(reason)["default"] for reason in REASONS}


def left(world: World) -> set[int]:
    return {room.left for room in rooms(world).values()}


def ten_nodes(world: World, nodes: str = "100%") -> list[dict[str, Any]]:
    fleet(world, 10, {"budgets": [{"nodes": nodes}]})
    if nodes == "100%":
        assert left(world) == {10}
    return sorted(world.nodeclaims(), key=objects.name)


def held(world: World, claim: dict[str, Any]) -> str:
    """A finalizer keeps the NodeClaim while it is deleted (Karpenter's test finalizer)."""
    name = objects.name(claim)
    world.cluster.patch("NodeClaim", name, {"metadata": {"finalizers": [
        *objects.meta(claim).get("finalizers", []), HOLD]}})
    return name


def test_an_unmanaged_node_is_not_counted(world: World) -> None:
    """suite_test.go BuildDisruptionBudgetMapping: It("should not consider nodes that are not
    managed as part of disruption count")."""
    ten_nodes(world)
    world.apply({"apiVersion": "v1", "kind": "Node", "metadata": {
        "name": "hand-made", "labels": {"kubernetes.io/hostname": "hand-made"}},
        "spec": {"providerID": "aws:///us-west-2a/i-0hand0made0000001"}})
    assert world.controllers.state.node_by_name("hand-made") is not None
    assert left(world) == {10}


def test_an_uninitialized_node_is_not_counted(world: World) -> None:
    """suite_test.go BuildDisruptionBudgetMapping: It("should not consider nodes that are not
    initialized as part of disruption count") (one of eleven nodes is not initialized)."""
    fleet(world, 11, {"budgets": [{"nodes": "100%"}]})
    node = sorted(objects.name(n) for n in world.nodes())[0]
    world.cluster.patch("Node", node, {"metadata": {"labels": {"karpenter.sh/initialized": None}}})
    world.deliver()
    machine = world.controllers.state.node_by_name(node)
    assert machine is not None and not machine.initialized
    assert left(world) == {10}


def test_a_node_whose_instance_is_terminating_is_not_counted(world: World) -> None:
    """suite_test.go BuildDisruptionBudgetMapping: It("should not consider nodes that have the
    terminating status condition as part of disruption count") (one of eleven NodeClaims
    has InstanceTerminating)."""
    fleet(world, 11, {"budgets": [{"nodes": "100%"}]})
    claim = sorted(world.nodeclaims(), key=objects.name)[0]
    conditions = [*objects.conditions(claim), {
        "type": "InstanceTerminating", "status": "True", "reason": "InstanceTerminating",
        "message": "", "lastTransitionTime": claim["metadata"]["creationTimestamp"]}]
    world.cluster.patch("NodeClaim", objects.name(claim), {"status": {"conditions": conditions}},
                        subresource="status")
    assert left(world) == {10}


def test_the_room_is_never_negative(world: World) -> None:
    """suite_test.go BuildDisruptionBudgetMapping: It("should not return a negative disruption
    value") (a 10% budget, every NodeClaim and Node being deleted)."""
    claims = ten_nodes(world, "10%")
    for claim in claims:
        world.cluster.delete("NodeClaim", held(world, claim))
    assert left(world) == {0}
    assert {(room.nodes, room.disrupting) for room in rooms(world).values()} == {(10, 10)}


def test_deleting_and_marked_nodes_use_up_the_budget(world: World) -> None:
    """suite_test.go BuildDisruptionBudgetMapping: It("should consider nodes with a deletion
    timestamp set and MarkedForDeletion to the disruption count")."""
    claims = ten_nodes(world)
    world.cluster.delete("NodeClaim", held(world, claims[0]))
    world.controllers.state.mark_for_deletion(claims[1]["status"]["providerID"])
    assert left(world) == {8}


def test_not_ready_nodes_use_up_the_budget(world: World) -> None:
    """suite_test.go BuildDisruptionBudgetMapping: It("should consider not ready nodes to the
    disruption count")."""
    claims = ten_nodes(world)
    for claim in claims[:2]:
        node = world.cluster.get("Node", claim["status"]["nodeName"])
        conditions = [dict(c, status="False") if c.get("type") == "Ready" else c
                      for c in objects.conditions(node)]
        world.cluster.patch("Node", objects.name(node), {"status": {"conditions": conditions}},
                            subresource="status")
    assert left(world) == {8}
