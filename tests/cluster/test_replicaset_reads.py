"""The ReplicaSet controller keeps what it read of each pod while the pod is the same
stored object; the replicas it counts and writes are those a controller reading every
pod afresh counts, through readiness lost, pods finishing, pods orphaned and scaling."""

from __future__ import annotations

from typing import Any

from nodewright.cluster import objects
from nodewright.cluster.memory.workloads.replicasets import ReplicaSetController
from tests.cluster.world import World, node, workload


def replica_set(world: World) -> dict[str, Any]:
    (found,) = world.cluster.list("ReplicaSet")
    return found


def assert_a_fresh_reading_agrees(world: World) -> None:
    """A controller that never read a pod writes nothing new: the status is its own."""
    before = replica_set(world)
    ReplicaSetController(world.cluster).reconcile(objects.key(before))
    after = replica_set(world)
    assert after["status"] == before["status"]
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


def test_the_kept_reads_count_as_a_fresh_reading_through_every_change() -> None:
    world = World()
    world.apply(node("n1", cpu="16"))
    world.apply(workload("Deployment", "web", 5))
    world.run(5)
    assert replica_set(world)["status"]["readyReplicas"] == 5
    assert_a_fresh_reading_agrees(world)

    first, second, third, *_ = sorted(objects.name(p) for p in world.pods())
    world.cluster.set_status("Pod", first, "default", {
        **world.pod(first)["status"],
        "conditions": [{"type": "Ready", "status": "False"}]})
    world.run()  # the kubelet answers with the pod's own conditions again
    assert_a_fresh_reading_agrees(world)

    world.cluster.set_status("Pod", second, "default", {
        **world.pod(second)["status"], "phase": "Succeeded"})
    world.run(5)
    assert_a_fresh_reading_agrees(world)

    world.cluster.patch("Pod", third, {"metadata": {"ownerReferences": None}}, "default")
    world.run(5)
    assert all(objects.name(p) != third or not objects.controller_owner(p)
               for p in world.pods())
    assert_a_fresh_reading_agrees(world)

    world.cluster.patch("Deployment", "web", {"spec": {"replicas": 2}}, "default")
    world.run(5)
    assert replica_set(world)["status"]["replicas"] == 2
    assert_a_fresh_reading_agrees(world)
