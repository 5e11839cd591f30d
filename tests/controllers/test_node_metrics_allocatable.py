"""The node metrics read each node's allocatable again only when what it is read from
changes (the state's own copy of it goes each time a pod binds), and a pod's limits only
when its spec changes: a Node, NodeClaim or pod written with new values is read again,
one written with the same is not."""

from __future__ import annotations

from typing import Any

from nodewright import metrics
from nodewright.controllers.metrics.nodes import NodeMetrics
from nodewright.runtime import VirtualClock
from nodewright.runtime.reconciler import WatchEvent
from nodewright.state import ClusterState
from tests.controllers.metric_samples import samples

PROVIDER_ID = "aws:///us-west-2a/i-0123456789"


def nodeclaim(cpu: str) -> dict[str, Any]:
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
            "metadata": {"name": "claim-1", "labels": {"karpenter.sh/nodepool": "default"}},
            "spec": {},
            "status": {"providerID": PROVIDER_ID, "capacity": {"cpu": cpu},
                       "allocatable": {"cpu": cpu}}}


def node(allocatable: dict[str, str], *, initialized: bool) -> dict[str, Any]:
    labels = {"karpenter.sh/nodepool": "default",
              "node.kubernetes.io/instance-type": "m5.large"}
    if initialized:
        labels["karpenter.sh/initialized"] = "true"
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "node-1", "labels": labels},
            "spec": {"providerID": PROVIDER_ID},
            "status": {"capacity": allocatable, "allocatable": allocatable}}


def pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"nodeName": "node-1", "containers": [
                {"name": "app", "resources": {"requests": {"cpu": "1"}}}]},
            "status": {"phase": "Running"}}


def cpu_utilization() -> float | None:
    found = [s.value for s in samples("karpenter_cluster_utilization_percent")
             if s.labels.get("resource_type") == "cpu"]
    return found[0] if found else None


def test_utilization_follows_the_node_and_nodeclaim_versions_and_nothing_else() -> None:
    metrics.CLUSTER_UTILIZATION.clear()
    clock = VirtualClock()
    state = ClusterState(clock)
    controller = NodeMetrics(clock, state)
    state.observe(WatchEvent("ADDED", nodeclaim("4")))  # type: ignore[arg-type]
    state.observe(WatchEvent("ADDED", node({}, initialized=False)))  # type: ignore[arg-type]
    state.observe(WatchEvent("ADDED", pod("a")))  # type: ignore[arg-type]
    controller.reconcile("")
    # Not initialized: the Node reports nothing yet, the NodeClaim's 4 cores count.
    assert cpu_utilization() == 25.0

    state.observe(WatchEvent("MODIFIED", nodeclaim("8")))  # type: ignore[arg-type]
    controller.reconcile("")
    assert cpu_utilization() == 12.5

    state.observe(WatchEvent("ADDED", pod("b")))  # type: ignore[arg-type]
    controller.reconcile("")
    assert cpu_utilization() == 25.0

    state.observe(WatchEvent(  # type: ignore[arg-type]
        "MODIFIED", node({"cpu": "2"}, initialized=True)))
    controller.reconcile("")
    assert cpu_utilization() == 100.0


def limited_pod(cpu_limit: str, phase: str = "Running", cpu: str = "1") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "limited", "namespace": "default"},
            "spec": {"nodeName": "node-1", "containers": [
                {"name": "app", "resources": {"requests": {"cpu": cpu},
                                              "limits": {"cpu": cpu_limit}}}]},
            "status": {"phase": phase}}


def pod_cpu_limits() -> float | None:
    found = [s.value for s in samples("karpenter_nodes_total_pod_limits")
             if s.labels.get("node_name") == "node-1" and s.labels.get("resource_type") == "cpu"]
    return found[0] if found else None


def one_node_of_cpus(cpus: str) -> tuple[ClusterState, NodeMetrics]:
    """A state holding one initialized managed node of `cpus`, and its node metrics."""
    clock = VirtualClock()
    state = ClusterState(clock)
    state.observe(WatchEvent("ADDED", nodeclaim(cpus)))  # type: ignore[arg-type]
    state.observe(WatchEvent("ADDED", node({"cpu": cpus}, initialized=True)))  # type: ignore[arg-type]
    return state, NodeMetrics(clock, state)


def test_a_pod_written_with_the_same_spec_keeps_its_limits_read(limit_reads: list[str]) -> None:
    """A status write keeps the pod's spec object (the API server shares what a write
    leaves alone): its limits are not read again. A new spec is read."""
    state, controller = one_node_of_cpus("4")
    first = limited_pod("2", phase="Pending")
    state.observe(WatchEvent("ADDED", first))  # type: ignore[arg-type]
    controller.reconcile("")
    assert pod_cpu_limits() == 2.0 and limit_reads == ["limited"]

    running = {**first, "status": {"phase": "Running"}}  # the same spec object
    state.observe(WatchEvent("MODIFIED", running))  # type: ignore[arg-type]
    controller.reconcile("")
    assert pod_cpu_limits() == 2.0 and limit_reads == ["limited"]

    # Resized (the node's series are rebuilt when its pods' requests change).
    state.observe(WatchEvent("MODIFIED", limited_pod("3", cpu="2")))  # type: ignore[arg-type]
    controller.reconcile("")
    assert pod_cpu_limits() == 3.0 and limit_reads == ["limited", "limited"]


def test_replicas_sharing_their_containers_are_read_once(limit_reads: list[str]) -> None:
    """Limits are kept by the spec parts they are read from, held by identity: a pod whose
    containers are the very list another pod's are is not read; equal but other lists
    are."""
    state, controller = one_node_of_cpus("8")
    first = limited_pod("2")
    sibling = {**first, "metadata": {"name": "sibling", "namespace": "default"},
               "spec": {**first["spec"]}}  # another spec, the same containers list
    lookalike = limited_pod("2")
    lookalike["metadata"] = {"name": "lookalike", "namespace": "default"}
    for pod_ in (first, sibling, lookalike):
        state.observe(WatchEvent("ADDED", pod_))  # type: ignore[arg-type]
    controller.reconcile("")

    assert pod_cpu_limits() == 6.0
    assert len(limit_reads) == 2 and "lookalike" in limit_reads
