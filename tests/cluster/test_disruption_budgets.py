"""The disruption controller keeps PodDisruptionBudget status current, and evictions
in a running cluster respect it."""

from __future__ import annotations

import pytest

from nodewright.cluster import objects
from nodewright.cluster.api import TooManyRequestsError
from tests.cluster.world import World, node, workload


def budget(**spec: object) -> dict[str, object]:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, **spec}}


def test_budget_status_follows_the_pods() -> None:
    world = World()
    world.apply(node("n1", cpu="8"))
    world.apply(workload("Deployment", "web", 4), budget(maxUnavailable="25%"))
    status = world.cluster.get("PodDisruptionBudget", "web", "default")["status"]
    assert (status["expectedPods"], status["desiredHealthy"], status["currentHealthy"],
            status["disruptionsAllowed"]) == (4, 3, 0, 0)
    world.run(2)
    pdb = world.cluster.get("PodDisruptionBudget", "web", "default")
    assert (pdb["status"]["currentHealthy"], pdb["status"]["disruptionsAllowed"]) == (4, 1)
    assert objects.condition_is_true(pdb, "DisruptionAllowed")


def test_a_drain_goes_one_pod_at_a_time_under_max_unavailable_one() -> None:
    world = World()
    world.apply(node("n1", cpu="8"))
    world.apply(workload("Deployment", "web", 3), budget(maxUnavailable=1))
    world.run(2)
    first, second, _ = [objects.name(p) for p in world.pods()]
    world.cluster.evict(first, "default")
    with pytest.raises(TooManyRequestsError, match="disruption budget web"):
        world.cluster.evict(second, "default")
    world.run(30)  # the evicted pod is gone and its replacement ready
    world.run(2)
    world.cluster.evict(second, "default")
