"""The node metrics' cluster utilization reads each node's allocatable once per version of
its Node and NodeClaim (the state's own copy of it goes each time a pod binds): a node
whose Node or NodeClaim is replaced is read again, the others are not."""

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
