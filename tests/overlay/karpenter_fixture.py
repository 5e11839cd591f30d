"""The world of Karpenter's nodeoverlay suites, in ours: an API server (the in-memory
one, with our CRDs' admission), the cluster state fed by its watch, a fake cloud whose
instance types each test sets (Karpenter's fake.CloudProvider and fake.NewInstanceType),
and the NodeOverlay controller.

Karpenter's fake cloud answers GetInstanceTypes per NodePool; ours is asked per
EC2NodeClass, so each NodePool here has an EC2NodeClass of its own name, and "an error for
a NodePool" is an error for its node class.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nodewright.api.ec2nodeclass import EC2NodeClass
from nodewright.cloud.provider import CloudProviderError
from nodewright.cluster import objects
from nodewright.cluster.api import NotFoundError
from nodewright.cluster.memory import InMemoryCluster
from nodewright.controllers.nodeoverlay.controller import NodeOverlayController
from nodewright.runtime.clock import VirtualClock
from nodewright.runtime.reconciler import Result
from nodewright.scheduling.allocatable import Overhead
from nodewright.scheduling.catalog import InstanceType, Offering
from nodewright.state import ClusterState
from tests.harness import NODE_CLASS, documents

GI = 1024 ** 3 * 1000  # a gibibyte in milli-units
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
ZONE = "topology.kubernetes.io/zone"
CAPACITY_TYPE = "karpenter.sh/capacity-type"
ARCH = "kubernetes.io/arch"
OS = "kubernetes.io/os"
NODEPOOL = "karpenter.sh/nodepool"
GPU_VENDOR_A = "fake.com/vendor-a"
GPU_VENDOR_B = "fake.com/vendor-b"


def offering(capacity_type: str, zone: str, price: float) -> Offering:
    return Offering(zone=zone, zone_id=None, capacity_type=capacity_type, price=price)


def price_from(resources: Mapping[str, int]) -> float:
    """Karpenter's fake.PriceFromResources."""
    price = 0.0
    for name, amount in resources.items():
        if name == "cpu":
            price += 0.1 * amount / 1000
        elif name == "memory":
            price += 0.1 * amount / 1000 / 1e9
        elif name in (GPU_VENDOR_A, GPU_VENDOR_B):
            price += 1.0
    return price


def instance_type(name: str, *offerings: Offering, resources: Mapping[str, int] | None = None,
                  arch: str = "amd64", os: str = "linux") -> InstanceType:
    """Karpenter's fake.NewInstanceType: 4 cpu, 4Gi and 5 pods unless told otherwise, and
    five offerings (spot in test-zone-1 and -2, on-demand in test-zone-1 to -3) unless
    given some. Its operating systems are one label here (ours are single-valued)."""
    capacity = {"cpu": 4000, "memory": 4 * GI, "pods": 5000, **(resources or {})}
    if not offerings:
        price = price_from(capacity)
        offerings = (offering("spot", "test-zone-1", price),
                     offering("spot", "test-zone-2", price),
                     offering("on-demand", "test-zone-1", price),
                     offering("on-demand", "test-zone-2", price),
                     offering("on-demand", "test-zone-3", price))
    large = capacity["cpu"] > 4000 and capacity["memory"] > 8 * GI
    labels = {INSTANCE_TYPE: name, ARCH: arch, OS: os, "size": "large" if large else "small",
              "integer": str(capacity["cpu"] // 1000)}
    overhead = Overhead(kube_reserved={"cpu": 100, "memory": 10 * 1024 ** 2 * 1000},
                        system_reserved={}, eviction_threshold={})
    return InstanceType(name=name, labels=labels, capacity=capacity, overhead=overhead,
                        offerings=tuple(offerings))


def default_instance_types() -> list[InstanceType]:
    """What Karpenter's fake cloud answers when no instance types are set."""
    return [
        instance_type("default-instance-type"),
        instance_type("small-instance-type", resources={"cpu": 2000, "memory": 2 * GI}),
        instance_type("gpu-vendor-instance-type", resources={GPU_VENDOR_A: 2000}),
        instance_type("gpu-vendor-b-instance-type", resources={GPU_VENDOR_B: 2000}),
        instance_type("arm-instance-type", arch="arm64",
                      resources={"cpu": 16000, "memory": 128 * GI}),
        instance_type("single-pod-instance-type", resources={"pods": 1000}),
    ]


@dataclass
class FakeCloud:
    """Karpenter's fake.CloudProvider, as far as the overlay controller asks it."""

    instance_types: list[InstanceType] | None = None
    errors_for_nodepool: dict[str, str] = field(default_factory=dict)

    def get_instance_types(self, node_class: EC2NodeClass) -> list[InstanceType]:
        pool = node_class.metadata.name  # each NodePool has a node class of its name
        if pool in self.errors_for_nodepool:
            raise CloudProviderError(self.errors_for_nodepool[pool])
        if self.instance_types is not None:
            return list(self.instance_types)
        return default_instance_types()


def nodepool(name: str = "default", *, labels: Mapping[str, str] | None = None,
             instance_types: Sequence[str] = ()) -> dict[str, Any]:
    requirements = ([{"key": INSTANCE_TYPE, "operator": "In", "values": list(instance_types)}]
                    if instance_types else [])
    template: dict[str, Any] = {"spec": {
        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": name},
        "requirements": requirements}}
    if labels:
        template["metadata"] = {"labels": dict(labels)}
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name},
            "spec": {"template": template}}


def node_class(name: str) -> dict[str, Any]:
    (body,) = documents(NODE_CLASS)
    return {**body, "metadata": {"name": name}}


def overlay(name: str, *requirements: tuple[str, str, list[str]], weight: int | None = 10,
            **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "karpenter.sh/v1alpha1", "kind": "NodeOverlay",
        "metadata": {"name": name},
        "spec": {"requirements": [{"key": key, "operator": operator, "values": values}
                                  for key, operator, values in requirements], **spec}}
    if weight is not None:
        body["spec"]["weight"] = weight
    return body


class Env:
    def __init__(self) -> None:
        self.clock = VirtualClock()
        self.cluster = InMemoryCluster(self.clock)
        self.state = ClusterState(self.clock)
        self.cloud = FakeCloud()
        self.controller = NodeOverlayController(self.cluster, self.cloud,  # type: ignore[arg-type]
                                                self.clock, self.state)
        self._stream = self.cluster.watch(["NodePool", "EC2NodeClass", "NodeOverlay"])

    def apply(self, *bodies: dict[str, Any]) -> None:
        """Create or replace; a NodePool comes with its EC2NodeClass."""
        for body in bodies:
            if body["kind"] == "NodePool":
                self._put(node_class(body["metadata"]["name"]))
            self._put(body)

    def _put(self, body: dict[str, Any]) -> None:
        name = body["metadata"]["name"]
        try:
            current = self.cluster.get(body["kind"], name)
        except NotFoundError:
            self.cluster.create(body)
            return
        self.cluster.update({**body, "metadata": {
            **body["metadata"], "resourceVersion": current["metadata"]["resourceVersion"]}})

    def reconcile(self) -> Result:
        for event in self._stream.poll():
            self.state.observe(event)
        return self.controller.reconcile("")

    def condition(self, name: str) -> tuple[str, str]:
        found = objects.condition(self.cluster.get("NodeOverlay", name), "ValidationSucceeded")
        assert found is not None, f"{name} has no ValidationSucceeded"
        return str(found["status"]), str(found.get("reason") or "")

    def applied(self, pool: str = "default") -> list[InstanceType] | None:
        """store.ApplyAll(pool, cloudProvider.GetInstanceTypes(pool)); None is Karpenter's
        UnevaluatedNodePoolError."""
        store = self.state.overlay_store
        assert store is not None
        try:
            types = self.cloud.get_instance_types(
                EC2NodeClass.model_validate(node_class(pool)))
        except CloudProviderError:
            types = []
        return store.apply(pool, types)

    def one(self, pool: str = "default") -> InstanceType:
        found = self.applied(pool)
        assert found is not None and len(found) == 1, found
        return found[0]


def prices_in(it: InstanceType, *, zone: str | None = None,
              capacity_type: str | None = None) -> list[float]:
    """The prices of the offerings compatible with a zone or a capacity type."""
    return [o.price for o in it.offerings
            if (zone is None or o.zone == zone)
            and (capacity_type is None or o.capacity_type == capacity_type)]


def price_overlaid(it: InstanceType) -> bool:
    """Karpenter's InstanceType.IsPricingOverlayApplied."""
    return any(o.price_overlaid for o in it.offerings)
