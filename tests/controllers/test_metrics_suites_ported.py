"""Karpenter's metrics controller suites, told on the in-memory world: the pod, node and
NodePool metrics appear with the objects and go away with them.

Ported from Karpenter v1.14.1 pkg/controllers/metrics/{pod,node,nodepool}/suite_test.go;
each test names the It it comes from."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from nodewright import metrics
from nodewright.api.quantity import parse_quantity
from nodewright.controllers.metrics.nodepools import NodePoolMetrics
from nodewright.runtime.clock import VirtualClock
from nodewright.runtime.reconciler import WatchEvent
from nodewright.state import ClusterState
from tests.controllers.conftest import WORKSHOP
from tests.controllers.metric_samples import sample_value, samples, series
from tests.harness import World, node_pool

PENDING = """
apiVersion: v1
kind: Pod
metadata: {name: waiting, namespace: default}
spec:
  nodeSelector: {no-such-label: anywhere}
  containers: [{name: app, resources: {requests: {cpu: 100m}}}]
"""


@pytest.fixture(autouse=True)
def fresh_gauges() -> Iterator[None]:
    """The registry is process-wide: an earlier test's world (same generated names) must
    leave nothing in the gauges these stories read."""
    for gauge in (metrics.PODS_STATE, metrics.PODS_UNBOUND_TIME, metrics.PODS_UNSTARTED_TIME,
                  metrics.NODES_ALLOCATABLE, metrics.NODES_CURRENT_LIFETIME,
                  metrics.CLUSTER_UTILIZATION, metrics.NODEPOOLS_LIMIT,
                  metrics.NODEPOOLS_USAGE):
        gauge.clear()
    yield


def value(metric: str, /, **labels: str) -> float:
    found = [s.value for s in samples(metric)
             if all(s.labels.get(k) == v for k, v in labels.items())]
    assert len(found) == 1, f"{metric}{labels}: {len(found)} samples"
    return found[0]


def running_workshop(world: World, replicas: int = 3) -> tuple[dict[str, Any], str]:
    world.apply(WORKSHOP)
    world.scale("inflate", replicas)
    assert world.settle()
    world.advance(60)
    (node,) = world.nodes()
    pod = next(p for p in world.pods("default") if p["metadata"]["name"].startswith("inflate"))
    return pod, node["metadata"]["name"]


def test_pod_state_metrics_describe_a_running_pod(world: World) -> None:
    """pod suite: It "should update the pod state metrics", It "should update the pod state
    metrics with pod phase" and It "should set the managed label based on whether the pod's
    node is Karpenter-managed"."""
    pod, node_name = running_workshop(world)
    (state,) = series("karpenter_pods_state", name=pod["metadata"]["name"], namespace="default")
    assert (state["node"], state["phase"], state["nodepool"], state["managed"]) == (
        node_name, "Running", "default", "true")


def test_a_pending_pod_has_unbound_and_unstarted_times(world: World) -> None:
    """pod suite: It "should update the pod bound and unbound time metrics" and It "should
    update the pod startup and unstarted time metrics" (the pending half)."""
    world.apply(WORKSHOP, PENDING)
    world.settle()
    world.advance(30)
    assert value("karpenter_pods_unbound_time_seconds", name="waiting", namespace="default") > 0
    assert value("karpenter_pods_unstarted_time_seconds", name="waiting",
                 namespace="default") > 0


def test_a_started_pod_is_observed_in_the_startup_summary(world: World) -> None:
    """pod suite: It "should update the pod startup and unstarted time metrics" (the started
    half: the unstarted gauge goes, the Summary observes)."""
    before = sample_value("karpenter_pods_startup_duration_seconds_count")
    pod, _ = running_workshop(world)
    after = sample_value("karpenter_pods_startup_duration_seconds_count")
    assert (after or 0) > (before or 0)
    assert series("karpenter_pods_unstarted_time_seconds", name=pod["metadata"]["name"]) == []


def test_a_deleted_pod_leaves_no_pod_series(world: World) -> None:
    """pod suite: It "should delete the pod state metric on pod delete" and It "should delete
    pod unbound and unstarted time metrics on pod delete"."""
    world.apply(WORKSHOP, PENDING)
    world.settle()
    world.advance(30)
    assert series("karpenter_pods_state", name="waiting")
    world.cluster.delete("Pod", "waiting", "default")
    world.settle()
    world.advance(30)
    for metric in ("karpenter_pods_state", "karpenter_pods_unbound_time_seconds",
                   "karpenter_pods_unstarted_time_seconds"):
        assert series(metric, name="waiting", namespace="default") == [], metric


def test_node_metrics_follow_the_node_and_go_with_it(world: World) -> None:
    """node suite: It "should update the allocatable metric", It "should update the node
    lifetime and cluster utilization metrics", It "should set the managed label on per-node
    metrics for Karpenter-managed nodes" and It "should remove the node metric gauge when
    the node is deleted"."""
    _, node_name = running_workshop(world)
    (node,) = world.nodes()
    cpu = series("karpenter_nodes_allocatable", node_name=node_name, resource_type="cpu")
    assert len(cpu) == 1 and cpu[0]["managed"] == "true"
    assert value("karpenter_nodes_allocatable", node_name=node_name, resource_type="cpu") == (
        parse_quantity(node["status"]["allocatable"]["cpu"]) / 1000)
    assert value("karpenter_nodes_current_lifetime_seconds", node_name=node_name) > 0
    assert value("karpenter_cluster_utilization_percent", resource_type="cpu") > 0
    lifetime = value("karpenter_nodes_current_lifetime_seconds", node_name=node_name)
    world.advance(20)  # the node unchanged meanwhile: only its lifetime is set again
    assert value("karpenter_nodes_current_lifetime_seconds", node_name=node_name) == (
        lifetime + 20)
    world.scale("inflate", 0)
    assert world.settle()
    world.advance(60)
    assert world.nodes() == []
    assert series("karpenter_nodes_allocatable", node_name=node_name) == []
    assert series("karpenter_nodes_current_lifetime_seconds", node_name=node_name) == []


def test_nodepool_limit_and_usage_metrics_come_and_go_with_the_nodepool(world: World) -> None:
    """nodepool suite: Entry "should update the nodepool limit metrics", It "should update
    the nodepool usage metrics" and It "should delete the nodepool state metrics on nodepool
    delete"."""
    world.apply(WORKSHOP, node_pool("limited", limits={"cpu": "100", "memory": "400Gi"}))
    world.scale("inflate", 3)
    assert world.settle()
    world.advance(30)
    assert value("karpenter_nodepools_limit", nodepool="limited", resource_type="cpu") == 100
    assert value("karpenter_nodepools_limit", nodepool="limited",
                 resource_type="memory") == 400 * 2**30
    assert value("karpenter_nodepools_usage", nodepool="default", resource_type="cpu") > 0
    world.cluster.delete("NodePool", "limited")
    world.settle()
    world.advance(30)
    assert series("karpenter_nodepools_limit", nodepool="limited") == []
    assert series("karpenter_nodepools_usage", nodepool="limited") == []


def test_a_nodepool_on_another_providers_node_class_has_no_metrics() -> None:
    """nodepool suite: Entry "should ignore nodepools not managed by this instance of
    Karpenter"."""
    state = ClusterState(VirtualClock())
    state.observe(WatchEvent("ADDED", {
        "apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "unmanaged"},
        "spec": {"limits": {"cpu": "10", "memory": "10Mi"}, "template": {"spec": {
            "nodeClassRef": {"group": "karpenter.test.sh", "kind": "UnmanagedNodeClass",
                             "name": "default"},
            "requirements": []}}}}))
    NodePoolMetrics(state).reconcile("unmanaged")
    assert series("karpenter_nodepools_limit", nodepool="unmanaged") == []
