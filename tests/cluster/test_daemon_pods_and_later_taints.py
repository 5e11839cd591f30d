"""A taint put on a node after its daemon pod runs: Kubernetes' DaemonSet controller
(NodeShouldRunDaemonPod) keeps a running daemon pod unless the taint is an untolerated
NoExecute; a NoSchedule taint only keeps new daemon pods off. Karpenter's drain relies on
it: the karpenter.sh/disrupted:NoSchedule taint must not take DaemonSet pods away before
the terminator evicts them in their turn (regression suite termination_test.go It("should
drain pods on a node in order"), tests/regression/test_termination_karpenter.py)."""

from __future__ import annotations

from nodewright.cluster import objects
from tests.cluster.world import World, node, workload


def taint(world: World, name: str, key: str, effect: str) -> None:
    current = world.cluster.get("Node", name)
    taints = [*(current["spec"].get("taints") or []), {"key": key, "effect": effect}]
    world.cluster.patch("Node", name, {"spec": {"taints": taints}})
    world.run(5)


def test_a_later_no_schedule_taint_leaves_the_daemon_pod_running() -> None:
    world = World()
    world.apply(node("n1"))
    world.apply(workload("DaemonSet", "agent", 0))
    world.run(5)
    (first,) = world.pods()
    taint(world, "n1", "karpenter.sh/disrupted", "NoSchedule")
    (still,) = world.pods()
    assert objects.uid(still) == objects.uid(first)
    assert not objects.is_deleting(still)


def test_a_later_no_execute_taint_removes_the_daemon_pod() -> None:
    world = World()
    world.apply(node("n1"))
    world.apply(workload("DaemonSet", "agent", 0))
    world.run(5)
    taint(world, "n1", "chaos", "NoExecute")
    world.run(60)
    assert world.pods() == []
