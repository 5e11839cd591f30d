"""How many NodeClaims a NodePool has in each state (Karpenter's NodePoolState), read
from the state cache on every call rather than kept in step with it.

- active: launched or launching, not being deleted, not part of a disruption command;
- pending disruption: a disruption command holds it (its DisruptionReason condition is
  set) but has not marked it for deletion yet;
- deleting: being deleted, or marked for deletion by a command whose replacements exist.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from nodewright.api.nodepool import NodePool
from nodewright.api.quantity import parse_quantity
from nodewright.cluster import objects
from nodewright.state import ClusterState
from nodewright.state.wellknown import NODEPOOL_LABEL

DISRUPTION_REASON = "DisruptionReason"
INSTANCE_TERMINATING = "InstanceTerminating"


@dataclass(frozen=True)
class NodeCounts:
    active: int = 0
    deleting: int = 0
    pending_disruption: int = 0

    @property
    def total(self) -> int:
        return self.active + self.deleting + self.pending_disruption


def pool_claims(state: ClusterState, pool: str) -> Iterator[Mapping[str, Any]]:
    for claim in state.nodeclaims():
        if objects.labels(claim).get(NODEPOOL_LABEL) == pool:
            yield claim


def is_deleting(state: ClusterState, claim: Mapping[str, Any]) -> bool:
    if objects.is_deleting(claim) or objects.condition_is_true(claim, INSTANCE_TERMINATING):
        return True
    machine = state.node_for_nodeclaim(objects.name(claim))
    return machine is not None and machine.is_marked_for_deletion


def node_counts(state: ClusterState, pool: str) -> NodeCounts:
    active = deleting = pending = 0
    for claim in pool_claims(state, pool):
        if is_deleting(state, claim):
            deleting += 1
        elif objects.condition_is_true(claim, DISRUPTION_REASON):
            pending += 1
        else:
            active += 1
    return NodeCounts(active, deleting, pending)


def node_limit(nodepool: NodePool) -> int | None:
    """limits.nodes as a count, or None when unlimited: Go's Quantity.Value(), which
    rounds a fraction up ("1500m" allows 2 nodes)."""
    raw = (nodepool.spec.limits or {}).get("nodes")
    return None if raw is None else -(-parse_quantity(raw) // 1000)


def room_under_limit(nodepool: NodePool, counts: NodeCounts, wanted: int) -> int:
    """How many of `wanted` new NodeClaims limits.nodes allows (Karpenter's
    ReserveNodeCount: every NodeClaim the pool has counts, deleting ones too)."""
    limit = node_limit(nodepool)
    if limit is None:
        return max(wanted, 0)
    return max(0, min(wanted, limit - counts.total))
