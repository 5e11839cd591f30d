"""How many more nodes each NodePool may start disrupting now, for one reason.

Karpenter's counting: a NodePool's nodes are its managed, initialized machines whose
instance is not already terminating; those not Ready or already being disrupted (marked
for deletion or deleting) use up the budget first. What is left is what a method may
take, and every node it takes lowers it, across methods within a pass.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from nodewright import metrics
from nodewright.api.nodepool import NodePool
from nodewright.cluster import objects
from nodewright.controllers.disruption import metrics as disruption_metrics
from nodewright.controllers.disruption.budgets import UNLIMITED, BudgetLimit, allowed_disruptions
from nodewright.state.statenode import StateNode

INSTANCE_TERMINATING = "InstanceTerminating"


@dataclass
class Room:
    nodepool: str
    reason: str
    nodes: int
    disrupting: int
    limit: BudgetLimit
    left: int

    def take(self) -> bool:
        """Use one disruption; False when none is left."""
        if self.left <= 0:
            return False
        self.left -= 1
        return True

    def describe(self) -> str:
        allowed = "unlimited" if self.limit.allowed >= UNLIMITED else str(self.limit.allowed)
        return (
            f"NodePool {self.nodepool} allows {allowed} {self.reason} disruption(s) of its "
            f"{self.nodes} node(s) and {self.disrupting} are already disrupting "
            f"({self.limit.describe()})"
        )


def _ready(node: StateNode) -> bool:
    return node.node is not None and objects.condition_is_true(node.node, "Ready")


def count_nodes(nodes: Iterable[StateNode]) -> dict[str, tuple[int, int]]:
    """(nodes, disrupting) per NodePool."""
    counts: dict[str, list[int]] = {}
    for node in nodes:
        if not node.managed or not node.initialized or not node.nodepool:
            continue
        assert node.nodeclaim is not None
        if objects.condition_is_true(node.nodeclaim, INSTANCE_TERMINATING):
            continue
        entry = counts.setdefault(node.nodepool, [0, 0])
        entry[0] += 1
        if not _ready(node) or node.is_marked_for_deletion:
            entry[1] += 1
    return {pool: (entry[0], entry[1]) for pool, entry in counts.items()}


def room_by_pool(
    nodes: Iterable[StateNode],
    nodepools: Mapping[str, NodePool],
    reason: str,
    now: datetime,
    counts: Mapping[str, tuple[int, int]] | None = None,
) -> dict[str, Room]:
    """Each NodePool's room; `counts`: `count_nodes(nodes)` when already known."""
    if counts is None:
        counts = count_nodes(nodes)
    rooms: dict[str, Room] = {}
    for name, nodepool in nodepools.items():
        total, disrupting = counts.get(name, (0, 0))
        limit = allowed_disruptions(nodepool.spec.disruption.budgets, reason, total, now)
        rooms[name] = Room(name, reason, total, disrupting, limit,
                           max(limit.allowed - disrupting, 0))
        metrics.NODEPOOLS_ALLOWED_DISRUPTIONS.labels(nodepool=name, reason=reason).set(
            min(limit.allowed, UNLIMITED))
        disruption_metrics.NODES_CONSUMING_BUDGETS.labels(nodepool=name, reason=reason).set(
            disrupting)
    return rooms
