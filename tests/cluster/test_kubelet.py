"""The kubelet and the pod garbage collector of the in-memory cluster."""

from __future__ import annotations

from nodewright.cluster import objects
from nodewright.cluster.api import NotFoundError
from tests.cluster.world import World, node, pod


def exists(world: World, name: str) -> bool:
    try:
        world.pod(name)
    except NotFoundError:
        return False
    return True


def test_a_bound_pod_runs_after_the_start_delay() -> None:
    world = World(pod_start_delay=5)
    world.apply(node("n1"))
    world.apply(pod("web"))
    world.run(4)
    assert world.pod("web")["status"]["phase"] == "Pending"
    assert not objects.condition_is_true(world.pod("web"), "Ready")
    world.run(1)
    started = world.pod("web")
    assert started["status"]["phase"] == "Running"
    assert objects.condition_is_true(started, "Ready")
    assert started["status"]["startTime"] == "2026-01-05T00:00:05Z"
    assert [c["state"] for c in started["status"]["containerStatuses"]] == [
        {"running": {"startedAt": "2026-01-05T00:00:05Z"}}]


def test_a_pending_pod_does_not_run() -> None:
    world = World()
    world.apply(pod("web"))
    world.run(60)
    assert world.pod("web")["status"]["phase"] == "Pending"


def test_a_deleted_pod_terminates_for_its_grace_period() -> None:
    world = World()
    world.apply(node("n1"))
    world.apply(pod("web", terminationGracePeriodSeconds=20))
    world.run(2)
    world.cluster.delete("Pod", "web", "default")
    world.run(19)
    assert objects.is_deleting(world.pod("web"))
    world.run(1)
    assert not exists(world, "web")


def test_a_shorter_grace_period_on_a_second_delete_wins() -> None:
    world = World()
    world.apply(node("n1"))
    world.apply(pod("web"))
    world.run(2)
    world.cluster.delete("Pod", "web", "default")
    world.run(5)
    world.cluster.delete("Pod", "web", "default", grace_period_seconds=1)
    world.run(1)
    assert not exists(world, "web")


def test_a_finalizer_holds_a_terminated_pod() -> None:
    world = World()
    world.apply(node("n1"))
    guarded = pod("web")
    guarded["metadata"]["finalizers"] = ["example.com/keep"]
    world.apply(guarded)
    world.run(2)
    world.cluster.delete("Pod", "web", "default", grace_period_seconds=5)
    world.run(10)
    assert world.pod("web")["metadata"]["deletionGracePeriodSeconds"] == 0
    world.cluster.patch("Pod", "web", {"metadata": {"finalizers": []}}, "default")
    world.run()
    assert not exists(world, "web")


def test_pods_of_a_node_that_is_gone_are_collected_after_the_quarantine() -> None:
    world = World()
    world.apply(node("n1"))
    world.apply(pod("web"))
    world.run(2)
    world.cluster.delete("Node", "n1")
    world.run(39)
    assert exists(world, "web")
    world.run(1)
    assert not exists(world, "web")
