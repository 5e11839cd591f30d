"""The managed fleet as `expect` sees it: Nodes of NodePools that are not being deleted,
with their instance type, capacity type, zone, NodePool, price and pods."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from nodewright.cloud.sim.ledger import Ledger
from nodewright.cluster import objects
from nodewright.cluster.memory import InMemoryCluster
from nodewright.sim.timeline import FleetNode
from nodewright.state.wellknown import (
    CAPACITY_TYPE_LABEL,
    INSTANCE_TYPE_LABEL,
    NODEPOOL_LABEL,
    ZONE_LABEL,
)


@dataclass(frozen=True)
class Fleet:
    nodes: tuple[FleetNode, ...]
    pending_pods: int

    def by(self, attribute: str) -> dict[str, int]:
        return dict(sorted(Counter(getattr(node, attribute) for node in self.nodes).items()))

    @property
    def hourly_cost(self) -> float:
        return sum(node.price for node in self.nodes)


def current_fleet(
    cluster: InMemoryCluster, ledger: Ledger, start: datetime, now: datetime
) -> Fleet:
    """Read without copies (the cluster's own objects, never modified here)."""
    prices = {entry.instance_id: entry.price for entry in ledger.entries}
    claims = {
        str((claim.get("status") or {}).get("providerID") or ""): claim
        for claim in cluster.peek_all("NodeClaim")
    }
    pods_on: Counter[str] = Counter()
    pending = 0
    for pod in cluster.peek_all("Pod"):
        node_name = (pod.get("spec") or {}).get("nodeName")
        if node_name:
            pods_on[str(node_name)] += 1
        elif not objects.is_deleting(pod) and (pod.get("status") or {}).get("phase") not in (
                "Succeeded", "Failed"):
            pending += 1
    nodes: list[FleetNode] = []
    for node in cluster.peek_all("Node"):
        labels = objects.labels(node)
        if NODEPOOL_LABEL not in labels or objects.is_deleting(node):
            continue
        provider_id = str((node.get("spec") or {}).get("providerID") or "")
        claim = claims.get(provider_id)
        if claim is not None and objects.is_deleting(claim):
            continue
        created = objects.creation_time(node) or now
        nodes.append(FleetNode(
            name=objects.name(node),
            nodeclaim=objects.name(claim) if claim is not None else "",
            nodepool=labels[NODEPOOL_LABEL],
            instance_type=labels.get(INSTANCE_TYPE_LABEL, ""),
            capacity_type=labels.get(CAPACITY_TYPE_LABEL, ""),
            zone=labels.get(ZONE_LABEL, ""),
            price=prices.get(provider_id.rpartition("/")[2], 0.0),
            age=(now - created).total_seconds(),
            pods=pods_on[objects.name(node)],
        ))
    nodes.sort(key=lambda node: (node.nodepool, node.instance_type, node.name))
    return Fleet(tuple(nodes), pending)


def differences(expected: Mapping[str, int], found: Mapping[str, int]) -> str | None:
    """How a map of counts differs from what was expected (keys not listed must be 0)."""
    wanted = {key: count for key, count in expected.items()}
    actual = {key: count for key, count in found.items() if count}
    if {k: v for k, v in wanted.items() if v} == actual:
        return None
    return f"expected {_counts(wanted)}, found {_counts(actual)}"


def _counts(counts: Mapping[str, int]) -> str:
    return "{" + ", ".join(f"{key}: {value}" for key, value in sorted(counts.items())) + "}"
