"""The eviction API asks the pod's PodDisruptionBudget, as Kubernetes does."""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.cluster import objects
from nodewright.cluster.api import ApiError, ConflictError, TooManyRequestsError
from nodewright.cluster.memory import InMemoryCluster
from nodewright.runtime.clock import VirtualClock


def running_pod(cluster: InMemoryCluster, name: str, *, ready: bool = True,
                owner: dict[str, Any] | None = None, app: str = "web") -> None:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "labels": {"app": app}}
    if owner is not None:
        meta["ownerReferences"] = [objects.owner_reference(owner)]
    cluster.create({
        "apiVersion": "v1", "kind": "Pod", "metadata": meta,
        "spec": {"nodeName": "n1", "containers": [{"name": "app", "image": "app"}]},
        "status": {"phase": "Running", "conditions": [
            {"type": "Ready", "status": "True" if ready else "False"}]},
    })


def budget(cluster: InMemoryCluster, name: str = "web", **spec: Any) -> None:
    cluster.create({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                    "metadata": {"name": name, "namespace": "default"},
                    "spec": {"selector": {"matchLabels": {"app": "web"}}, **spec}})


@pytest.fixture
def cluster() -> InMemoryCluster:
    return InMemoryCluster(VirtualClock())


def deleting(cluster: InMemoryCluster) -> list[str]:
    return [objects.name(p) for p in cluster.list("Pod") if objects.is_deleting(p)]


def test_min_available_lets_pods_go_down_to_the_minimum(cluster: InMemoryCluster) -> None:
    for name in ("a", "b", "c"):
        running_pod(cluster, name)
    budget(cluster, minAvailable=2)
    cluster.evict("a", "default")
    with pytest.raises(TooManyRequestsError,
                       match="disruption budget web needs 2 healthy pods and has 2 currently"):
        cluster.evict("b", "default")
    assert deleting(cluster) == ["a"]
    status = cluster.get("PodDisruptionBudget", "web", "default")["status"]
    assert status["disruptionsAllowed"] == 0 and "a" in status["disruptedPods"]


def test_max_unavailable_percent_counts_against_the_controllers_scale(
    cluster: InMemoryCluster,
) -> None:
    deployment = cluster.create({"apiVersion": "apps/v1", "kind": "Deployment",
                                 "metadata": {"name": "web"}, "spec": {"replicas": 4}})
    replica_set = cluster.create({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {
        "name": "web-1", "ownerReferences": [objects.owner_reference(deployment)]},
        "spec": {"replicas": 4}})
    for name in ("a", "b", "c"):
        running_pod(cluster, name, owner=replica_set)
    # 4 expected, 25% of 4 rounds up to 1 unavailable: 3 must stay healthy, 3 are.
    budget(cluster, maxUnavailable="25%")
    with pytest.raises(TooManyRequestsError):
        cluster.evict("a", "default")


def test_pods_without_a_controller_make_a_percentage_budget_fail_safe(
    cluster: InMemoryCluster,
) -> None:
    running_pod(cluster, "a")
    running_pod(cluster, "b")
    budget(cluster, maxUnavailable=1)
    with pytest.raises(TooManyRequestsError, match="found no controller ref"):
        cluster.evict("a", "default")


def test_an_unhealthy_pod_may_go_if_the_budget_is_healthy_or_always_allowed(
    cluster: InMemoryCluster,
) -> None:
    running_pod(cluster, "a")
    running_pod(cluster, "broken", ready=False)
    budget(cluster, minAvailable=1)
    cluster.evict("broken", "default")  # IfHealthyBudget: 1 healthy >= 1 desired
    running_pod(cluster, "broken-too", ready=False)
    cluster.patch("PodDisruptionBudget", "web", {"spec": {"minAvailable": 2}}, "default")
    with pytest.raises(TooManyRequestsError):
        cluster.evict("broken-too", "default")
    cluster.patch("PodDisruptionBudget", "web",
                  {"spec": {"unhealthyPodEvictionPolicy": "AlwaysAllow"}}, "default")
    cluster.evict("broken-too", "default")
    assert deleting(cluster) == ["broken", "broken-too"]


def test_two_budgets_for_one_pod_is_a_server_error(cluster: InMemoryCluster) -> None:
    running_pod(cluster, "a")
    budget(cluster, "one", minAvailable=0)
    budget(cluster, "two", minAvailable=0)
    with pytest.raises(ApiError, match="more than one PodDisruptionBudget") as error:
        cluster.evict("a", "default")
    assert error.value.status == 500


def test_pods_outside_any_budget_or_not_running_are_just_deleted(
    cluster: InMemoryCluster,
) -> None:
    running_pod(cluster, "other", app="batch")
    budget(cluster, minAvailable=5)
    cluster.evict("other", "default")
    cluster.create({"apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": "waiting", "labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "app", "image": "app"}]}})
    cluster.evict("waiting", "default")
    assert deleting(cluster) == ["other"]
    assert [objects.name(p) for p in cluster.list("Pod")] == ["other"]


def test_an_eviction_for_a_pod_since_recreated_is_a_conflict(cluster: InMemoryCluster) -> None:
    """The Eviction's deleteOptions.preconditions.uid, as the API server checks it: a pod
    deleted and created again under its name is another pod (409), and stays."""
    running_pod(cluster, "a")
    old_uid = objects.uid(cluster.get("Pod", "a", "default"))
    cluster.delete("Pod", "a", "default", grace_period_seconds=0)
    running_pod(cluster, "a")
    with pytest.raises(ConflictError, match=f"UID in precondition: {old_uid}"):
        cluster.evict("a", "default", uid=old_uid)
    assert deleting(cluster) == []
    cluster.evict("a", "default", uid=objects.uid(cluster.get("Pod", "a", "default")))
    assert deleting(cluster) == ["a"]


def test_a_budget_that_refuses_answers_before_the_uid_precondition(
        cluster: InMemoryCluster) -> None:
    """The API server asks the budget first and checks the precondition in the delete."""
    running_pod(cluster, "a")
    budget(cluster, maxUnavailable=0)
    with pytest.raises(TooManyRequestsError):
        cluster.evict("a", "default", uid="not-this-pod")
