"""The offering metrics controller run once over a NodePool of one node class, as
Karpenter's metrics suite reconciles its controller (ExpectSingletonReconciled), and its
series read back from the registry."""

from __future__ import annotations

from datetime import UTC, datetime

from nodewright.api.ec2nodeclass import EC2NodeClass
from nodewright.cloud.provider import CloudProvider
from nodewright.controllers.metrics.offerings import OfferingMetrics
from nodewright.metrics import REGISTRY
from nodewright.runtime import VirtualClock, WatchEvent
from nodewright.scheduling.catalog import InstanceType
from nodewright.state import ClusterState

Offering = tuple[str, str, str]  # instance type, capacity type, zone


def publish(provider: CloudProvider, node_class: EC2NodeClass) -> list[InstanceType]:
    """One pass of the controller over a NodePool `default` of `node_class`; the instance
    types the provider offers for it."""
    state = ClusterState(VirtualClock(datetime(2026, 11, 26, 12, 0, tzinfo=UTC)))
    nodepool = {"apiVersion": "karpenter.sh/v1", "kind": "NodePool",
                "metadata": {"name": "default", "resourceVersion": "1"},
                "spec": {"template": {"spec": {"nodeClassRef": {
                    "group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                    "name": node_class.name}, "requirements": []}}}}
    manifest = node_class.model_dump(by_alias=True, exclude_none=True)
    manifest["metadata"]["resourceVersion"] = "1"
    for obj in (manifest, nodepool):
        state.observe(WatchEvent("ADDED", obj))
    OfferingMetrics(provider, state).reconcile("")
    return provider.get_instance_types(node_class)


def offering_series(metric: str) -> dict[Offering, float]:
    """The metric's value per (instance_type, capacity_type, zone), one collection."""
    found: dict[Offering, float] = {}
    for family in REGISTRY.collect():
        for sample in family.samples:
            if sample.name == metric:
                labels = sample.labels
                found[(labels["instance_type"], labels["capacity_type"], labels["zone"])] = (
                    sample.value)
    return found
