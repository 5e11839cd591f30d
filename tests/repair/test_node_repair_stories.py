"""Node auto-repair (NodeRepair gate), ported from Karpenter's node health suite: a node
holding one of the cloud provider's unhealthy conditions past its toleration is replaced,
PDBs and do-not-disrupt notwithstanding, unless more than 20 % of its NodePool is
unhealthy."""

from __future__ import annotations

from datetime import timedelta

from nodewright.cluster import objects
from nodewright.controllers.node.health import unhealthy_allowed
from nodewright.controllers.options import ControllerOptions
from nodewright.runtime.clock import format_time
from tests.controllers.expectations import expect_no_controller_errors
from tests.harness import NODE_CLASS, World, node_pool
from tests.static.helpers import workload

POOL = node_pool(types=["m5.large"],
                 disruption={"consolidateAfter": "Never", "budgets": [{"nodes": "0"}]})


def _world(nodes: int, *, repair: bool = True) -> World:
    world = World(options=ControllerOptions(node_repair=repair))
    world.apply(NODE_CLASS, POOL)
    app = workload("app", nodes, "1500m", anti_affinity=True,
                   annotations={"karpenter.sh/do-not-disrupt": "true"})
    world.apply(app)
    world.apply({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                 "metadata": {"name": "app", "namespace": "default"},
                 "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "app"}}}})
    assert world.settle()
    assert len(world.nodes()) == nodes
    return world


def _set_condition(world: World, node_name: str, kind: str, status: str,
                   ago: float = 0.0) -> None:
    node = world.cluster.get("Node", node_name)
    stamp = format_time(world.clock.now() - timedelta(seconds=ago))
    conditions = [c for c in node["status"]["conditions"] if c["type"] != kind]
    conditions.append({"type": kind, "status": status, "reason": "Test", "message": "",
                       "lastHeartbeatTime": stamp, "lastTransitionTime": stamp})
    world.cluster.patch("Node", node_name, {"status": {"conditions": conditions}},
                        subresource="status")
    world.deliver()


def _node_names(world: World) -> list[str]:
    return sorted(objects.name(n) for n in world.nodes()
                  if not objects.is_deleting(n))


def test_a_node_unhealthy_past_its_toleration_is_replaced_despite_pdb_and_do_not_disrupt(
) -> None:
    world = _world(5)
    victim = _node_names(world)[0]
    _set_condition(world, victim, "AcceleratedHardwareReady", "False")
    world.advance(9 * 60)  # the policy tolerates it for 10 minutes
    assert victim in _node_names(world)
    world.advance(90)
    claim = next(c for c in world.nodeclaims() if c["status"].get("nodeName") == victim)
    assert objects.is_deleting(claim)
    assert "karpenter.sh/nodeclaim-termination-timestamp" in objects.annotations(claim)
    assert world.settle()
    names = _node_names(world)
    assert victim not in names and len(names) == 5
    assert not world.pending_pods()
    expect_no_controller_errors(world)


def test_a_condition_no_policy_names_or_a_healthy_status_is_left_alone() -> None:
    world = _world(3)
    first, second = _node_names(world)[:2]
    _set_condition(world, first, "SomethingElse", "False", ago=3600)
    _set_condition(world, second, "StorageReady", "True", ago=3600)
    world.advance(120)
    assert world.settle()
    assert {first, second} <= set(_node_names(world))


def test_more_than_a_fifth_of_the_pool_unhealthy_blocks_repair() -> None:
    """Karpenter v1.14.1 pkg/controllers/node/health/suite_test.go, It("should ignore
    unhealthy nodes if more then 20% of the nodes are unhealthy in a nodepool")."""
    world = _world(5)
    first, second = _node_names(world)[:2]
    # Two of five is more than 20 % (one allowed): neither is repaired.
    for name in (first, second):
        _set_condition(world, name, "Ready", "False", ago=3600)
    world.advance(120)
    assert {first, second} <= set(_node_names(world))
    blocked = world.events(reason="NodeRepairBlocked")
    assert blocked and "more than 20% nodes are unhealthy in the nodepool" in blocked[0]["note"]
    # As Karpenter's events.go NodeRepairBlocked: every copy is on the Node.
    assert {e["regarding"]["kind"] for e in blocked} == {"Node"}
    assert {e["regarding"]["name"] for e in blocked} <= {first, second}
    # One recovers: the other is within the threshold again and is repaired.
    _set_condition(world, second, "Ready", "True")
    world.advance(400)
    assert first not in _node_names(world)


def test_the_threshold_rounds_up_for_small_pools() -> None:
    assert [unhealthy_allowed(n) for n in (1, 3, 5, 6, 10, 11)] == [1, 1, 1, 2, 2, 3]


def test_without_the_node_repair_gate_nothing_is_repaired() -> None:
    world = _world(2, repair=False)
    victim = _node_names(world)[0]
    _set_condition(world, victim, "Ready", "False", ago=3600)
    world.advance(300)
    assert victim in _node_names(world)
