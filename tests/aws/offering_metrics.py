"""The offering metrics controller run once over a NodePool of one node class, as
Karpenter's metrics suite reconciles its controller (ExpectSingletonReconciled), and its
series read back from the registry."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from nodewright.api.ec2nodeclass import EC2NodeClass
from nodewright.cloud.provider import CloudProvider
from nodewright.controllers.metrics.offerings import OfferingMetrics
from nodewright.runtime import VirtualClock, WatchEvent
from nodewright.scheduling.catalog import InstanceType
from nodewright.state import ClusterState
from tests.controllers.metric_samples import samples

Offering = tuple[str, str, str]  # instance type, capacity type, zone


class MetricsCluster:
    """NodePools of node classes in one cluster state, with the offering metrics controller
    over them: each `reconcile` is one pass, as Karpenter's ExpectSingletonReconciled."""

    def __init__(self, provider: CloudProvider, *, reserved_capacity: bool = True) -> None:
        self.provider = provider
        self.state = ClusterState(VirtualClock(datetime(2026, 11, 26, 12, 0, tzinfo=UTC)))
        self.controller = OfferingMetrics(provider, self.state,
                                          reserved_capacity=reserved_capacity)
        self._versions = 0

    def apply(self, node_class: EC2NodeClass, nodepool: str | None = None) -> None:
        """The node class, created or changed, and a NodePool `nodepool` of it (none when
        None)."""
        manifest = node_class.model_dump(by_alias=True, exclude_none=True)
        self._observe(manifest)
        if nodepool is not None:
            self._observe({"apiVersion": "karpenter.sh/v1", "kind": "NodePool",
                           "metadata": {"name": nodepool},
                           "spec": {"template": {"spec": {"nodeClassRef": {
                               "group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                               "name": node_class.name}, "requirements": []}}}})

    def reconcile(self) -> None:
        self.controller.reconcile("")

    def _observe(self, obj: dict[str, Any]) -> None:
        self._versions += 1
        obj["metadata"]["resourceVersion"] = str(self._versions)
        self.state.observe(WatchEvent("ADDED", obj))


def publish(provider: CloudProvider, node_class: EC2NodeClass, *,
            reserved_capacity: bool = True) -> list[InstanceType]:
    """One pass of the controller over a NodePool `default` of `node_class`; the instance
    types the provider offers for it."""
    cluster = MetricsCluster(provider, reserved_capacity=reserved_capacity)
    cluster.apply(node_class, "default")
    cluster.reconcile()
    return provider.get_instance_types(node_class)


def offering_series(metric: str) -> dict[Offering, float]:
    """The metric's value per (instance_type, capacity_type, zone), one collection."""
    found: dict[Offering, float] = {}
    for sample in samples(metric):
        labels = sample.labels
        found[(labels["instance_type"], labels["capacity_type"], labels["zone"])] = sample.value
    return found
