"""A pod's limits can change while its requests stay the same: resized in place (Kubernetes
1.33's InPlacePodVerticalScaling patches a running pod's container limits), or replaced by
a pod of the same requests and other limits. The node's limit series follow at the node
metrics' next pass, as Karpenter's do (its state node reads a pod's limits at every
update)."""

from __future__ import annotations

from typing import Any

import pytest

from nodewright import metrics
from nodewright.runtime.reconciler import WatchEvent
from tests.controllers.conftest import WORKSHOP
from tests.controllers.metric_samples import samples
from tests.controllers.test_node_metrics_allocatable import limited_pod, one_node_of_cpus
from tests.harness import World


def web_pod(cpu_limit: str, memory_limit: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
            "spec": {"nodeSelector": {"type": "karpenter"},
                     "terminationGracePeriodSeconds": 0,
                     "containers": [web_container(cpu_limit, memory_limit)]}}


def web_container(cpu_limit: str, memory_limit: str) -> dict[str, Any]:
    return {"name": "app", "image": "app",
            "resources": {"requests": {"cpu": "250m", "memory": "256Mi"},
                          "limits": {"cpu": cpu_limit, "memory": memory_limit}}}


def node_series(metric: str, node_name: str, resource: str) -> float | None:
    found = [s.value for s in samples(metric)
             if s.labels.get("node_name") == node_name
             and s.labels.get("resource_type") == resource]
    return found[0] if found else None


@pytest.fixture(autouse=True)
def fresh_node_gauges() -> None:
    """The node gauges are process-wide: an earlier test's world may have left series for
    a node of the same (seeded) name."""
    for gauge in (metrics.NODES_TOTAL_POD_REQUESTS, metrics.NODES_TOTAL_POD_LIMITS,
                  metrics.NODES_TOTAL_DAEMON_REQUESTS, metrics.NODES_TOTAL_DAEMON_LIMITS):
        gauge.clear()


def a_node_running_web(world: World) -> str:
    world.apply(WORKSHOP, web_pod("500m", "512Mi"))
    assert world.settle()
    world.advance(10)
    (node,) = world.nodes()
    name = str(node["metadata"]["name"])
    assert node_series("karpenter_nodes_total_pod_limits", name, "cpu") == pytest.approx(0.5)
    return name


def test_a_pod_resized_in_place_moves_its_nodes_limits(world: World) -> None:
    name = a_node_running_web(world)
    requests_before = node_series("karpenter_nodes_total_pod_requests", name, "cpu")

    # The resize subresource: new limits for the running container, the same requests.
    world.cluster.patch("Pod", "web", {"spec": {"containers": [web_container("2", "1Gi")]}},
                        "default")
    world.advance(10)

    (pod,) = world.pods("default")
    assert pod["spec"]["nodeName"] == name, "resized in place, not rescheduled"
    assert node_series("karpenter_nodes_total_pod_limits", name, "cpu") == pytest.approx(2.0)
    assert node_series("karpenter_nodes_total_pod_limits", name, "memory") == pytest.approx(
        1024 ** 3)
    assert node_series("karpenter_nodes_total_pod_requests", name, "cpu") == requests_before


def test_a_pod_replaced_by_one_of_other_limits_moves_its_nodes_limits(world: World) -> None:
    name = a_node_running_web(world)

    world.delete("Pod", "web", "default")
    replacement = web_pod("1500m", "512Mi")
    replacement["spec"]["nodeName"] = name  # bound where its predecessor ran
    world.apply(replacement)
    world.advance(10)

    (pod,) = world.pods("default")
    assert pod["spec"]["nodeName"] == name
    assert node_series("karpenter_nodes_total_pod_limits", name, "cpu") == pytest.approx(1.5)


def test_a_pod_adopted_by_a_daemonset_counts_in_its_nodes_daemon_series() -> None:
    """Adoption changes who owns the pod, not what it requests: the node's DaemonSet
    requests and limits still follow."""
    state, controller = one_node_of_cpus("4")
    orphan = limited_pod("2")
    state.observe(WatchEvent("ADDED", orphan))  # type: ignore[arg-type]
    controller.reconcile("")
    assert node_series("karpenter_nodes_total_daemon_requests", "node-1", "cpu") is None

    adopted = {**orphan, "metadata": {**orphan["metadata"], "ownerReferences": [
        {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": "ds-1",
         "controller": True}]}}
    state.observe(WatchEvent("MODIFIED", adopted))  # type: ignore[arg-type]
    controller.reconcile("")

    assert node_series("karpenter_nodes_total_daemon_requests", "node-1", "cpu") == 1.0
    assert node_series("karpenter_nodes_total_daemon_limits", "node-1", "cpu") == 2.0
