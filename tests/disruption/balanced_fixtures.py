"""The fixtures of Karpenter's balanced_scoring_test.go (makeInstanceType, makeCandidate,
makeNodePool, makePod): one-offering instance types in test-zone-1, on-demand, and
candidates built straight from them, outside any cluster."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from nodewright.api.nodepool import NodePool
from nodewright.controllers.disruption.balanced import PoolTotals, pool_totals
from nodewright.controllers.disruption.candidates import Candidate, offering_price
from nodewright.scheduling.allocatable import Overhead
from nodewright.scheduling.catalog import InstanceType, Offering
from nodewright.state.statenode import StateNode
from nodewright.state.wellknown import CAPACITY_TYPE_LABEL, INSTANCE_TYPE_LABEL, ZONE_LABEL

ZONE = "test-zone-1"
ON_DEMAND = "on-demand"


def instance_type(name: str, *offerings: tuple[float, str, str, bool]) -> InstanceType:
    """An instance type with (price, zone, capacity type, available) offerings."""
    return InstanceType(
        name=name, labels={INSTANCE_TYPE_LABEL: name},
        capacity={"cpu": 4000, "memory": 16 * 2**30 * 1000, "pods": 110_000},
        overhead=Overhead({}, {}, {}),
        offerings=tuple(Offering(zone, None, capacity, price, available)
                        for price, zone, capacity, available in offerings))


def priced(name: str, price: float) -> InstanceType:
    """makeInstanceType: one available on-demand offering in test-zone-1."""
    return instance_type(name, (price, ZONE, ON_DEMAND, True))


def nodepool(name: str, policy: str = "Balanced") -> NodePool:
    return NodePool.model_validate({
        "apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name},
        "spec": {"template": {"spec": {"nodeClassRef": {
            "group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}}},
            "disruption": {"consolidationPolicy": policy, "consolidateAfter": "0s"}}})


def pod(name: str, deletion_cost: str = "") -> dict[str, Any]:
    """makePod: a running pod, with a pod-deletion-cost annotation when given."""
    annotations = ({"controller.kubernetes.io/pod-deletion-cost": deletion_cost}
                   if deletion_cost else {})
    return {"metadata": {"name": name, "namespace": "default", "annotations": annotations},
            "spec": {}, "status": {"phase": "Running"}}


def pods(prefix: str, count: int, deletion_cost: str = "") -> list[dict[str, Any]]:
    return [pod(f"{prefix}-{i}", deletion_cost) for i in range(count)]


def candidate(name: str, pool: NodePool, it: InstanceType | None,
              moving: Sequence[Mapping[str, Any]] = ()) -> Candidate:
    """makeCandidate: a registered node of `pool` in test-zone-1, on-demand, priced from
    its instance type's offering there (0 without one)."""
    labels = {"karpenter.sh/nodepool": pool.name, ZONE_LABEL: ZONE,
              CAPACITY_TYPE_LABEL: ON_DEMAND, "karpenter.sh/registered": "true"}
    if it is not None:
        labels[INSTANCE_TYPE_LABEL] = it.name
    provider_id = f"fake:///{ZONE}/{name}"
    node = StateNode(provider_id)
    node.node = {"metadata": {"name": name, "labels": labels},
                 "spec": {"providerID": provider_id}}
    node.nodeclaim = {"metadata": {"name": name, "labels": labels},
                      "status": {"providerID": provider_id}}
    return Candidate(node=node, nodepool=pool, instance_type=it, zone=ZONE,
                     capacity_type=ON_DEMAND, price=offering_price(it, ZONE, ON_DEMAND),
                     pods=[dict(p) for p in moving], disruption_cost=float(len(moving)))


def totals(candidates: Iterable[Candidate],
           nodepool_cost: Callable[[str], float] | None = None) -> dict[str, PoolTotals]:
    """computeNodePoolTotals over these candidates as the pools' only nodes (without a
    cost tracker unless given one, as Karpenter's unit tests pass nil)."""
    members = list(candidates)
    by_node = {c.node.node_name: c for c in members}
    return pool_totals(members, [c.node for c in members], nodepool_cost,
                       lambda node_name: list(by_node[node_name].pods))
