"""One pass of the disruption loop over a consistent view of the cluster, the methods'
options and compute budgets, and where the last single-node pass stopped."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from nodewright.controllers.common import decision_log as ex
from nodewright.controllers.disruption.balanced import PoolTotals, pool_totals
from nodewright.controllers.disruption.budget_room import Room, count_nodes, room_by_pool
from nodewright.controllers.disruption.candidates import (
    Blocked,
    Candidate,
    CandidateContext,
    evaluate,
)
from nodewright.controllers.disruption.simulation import SimulationBase
from nodewright.controllers.disruption.verdict_publishing import PassVerdicts
from nodewright.state.cluster import ClusterState
from nodewright.state.statenode import StateNode

MULTI_NODE_MAX_CANDIDATES = 100
MULTI_NODE_TIMEOUT = 60.0
SINGLE_NODE_TIMEOUT = 180.0
# Karpenter's compute budgets as a count of simulations: multi-node consolidation's minute
# pays for a binary search over at most 100 candidates (7 simulations), so at that rate
# single-node consolidation's three minutes pay for 21.
SINGLE_NODE_SIMULATIONS = round(
    SINGLE_NODE_TIMEOUT / (MULTI_NODE_TIMEOUT / math.ceil(math.log2(MULTI_NODE_MAX_CANDIDATES))))


# A candidate as consolidation sees it: None, or (cause, message) of why it is kept.
Screened = tuple[Candidate, tuple[str, str] | None]


@dataclass(frozen=True)
class MethodOptions:
    spot_to_spot: bool = False
    multi_node_max_candidates: int = MULTI_NODE_MAX_CANDIDATES
    # Compute budgets, in seconds of this process's own work (not simulated time).
    multi_node_timeout: float = MULTI_NODE_TIMEOUT
    single_node_timeout: float = SINGLE_NODE_TIMEOUT
    # The deterministic budget (None: none), for runs that must not depend on the machine.
    single_node_max_simulations: int | None = None
    # MIN_VALUES_POLICY=BestEffort: replacements may relax minValues as provisioning does.
    relax_min_values: bool = False
    # PREFERENCE_POLICY=Ignore: simulations drop the moving pods' preferences.
    ignore_preferences: bool = False


@dataclass
class Resume:
    """Where the last single-node pass stopped: the candidates (provider IDs) it did not
    reach, and those judged since the cluster last changed (`mark`, the controller's
    consolidation mark), which the same cluster would judge the same way again."""

    unseen: frozenset[str] = frozenset()
    seen: frozenset[str] = frozenset()
    mark: object = None


@dataclass
class Pass:
    """One pass of the loop over a consistent view of the cluster."""

    now: datetime
    state: ClusterState
    base: SimulationBase
    context: CandidateContext
    verdicts: PassVerdicts
    options: MethodOptions
    resume: Resume = field(default_factory=Resume)
    # What consolidation's answer depends on (set by the controller), see `Resume`.
    state_mark: object = None
    # Methods that ran out of their budget before looking at every candidate.
    stopped_early: set[str] = field(default_factory=set)
    _graceful: dict[str, Candidate | Blocked] = field(default_factory=dict)
    _eventual: dict[str, Candidate | Blocked] = field(default_factory=dict)
    _pool_totals: Mapping[str, PoolTotals] | None = None
    _node_counts: Mapping[str, tuple[int, int]] | None = None
    # Consolidation's screening of the candidates and its order (methods/consolidation.py).
    consolidation: tuple[list[Screened], list[Candidate]] | None = None

    def nodes(self) -> list[StateNode]:
        return [n for n in self.state.nodes() if n.managed and not n.is_marked_for_deletion]

    def evaluated(self, eventual: bool = False) -> list[Candidate | Blocked]:
        cache = self._eventual if eventual else self._graceful
        if not cache:
            for node in sorted(self.nodes(), key=lambda n: n.name):
                cache[node.provider_id] = evaluate(node, self.context, eventual=eventual)
        return list(cache.values())

    def candidates(self, eventual: bool = False) -> list[Candidate]:
        return [c for c in self.evaluated(eventual) if isinstance(c, Candidate)]

    def pool_totals(self) -> Mapping[str, PoolTotals]:
        """What Balanced NodePools measure a consolidation against (Karpenter's
        GetCandidatesWithTotals): every candidate of the pass, every node of the cluster,
        each NodePool's cost from the cost tracker."""
        if self._pool_totals is None:
            self._pool_totals = pool_totals(self.candidates(), self.state.nodes(),
                                            self.state.cost.nodepool_cost,
                                            self.state.pods_on)
        return self._pool_totals

    def rooms(self, reason: str) -> dict[str, Room]:
        """Fresh rooms (a method takes from them) from the nodes counted once per pass."""
        if self._node_counts is None:
            self._node_counts = count_nodes(self.state.nodes())
        return room_by_pool((), self.context.nodepools, reason, self.now, self._node_counts)

    def verdict(self, node: StateNode, method: str, outcome: str, cause: str, message: str,
                event_reason: str = ex.DISRUPTION_BLOCKED) -> None:
        self.verdicts.add(node, method, outcome, cause, message, event_reason)

    def report_blocked(self) -> None:
        """Verdicts for every machine that cannot be a candidate at all."""
        for item in self.evaluated():
            if isinstance(item, Blocked):
                self.verdict(item.node, "disruption", ex.BLOCKED, item.cause, item.message)

    def blocked_signature(self) -> frozenset[tuple[str, str]]:
        return frozenset((item.node.provider_id, item.cause) for item in self.evaluated()
                         if isinstance(item, Blocked))

    def budget_blocked(self, candidate: Candidate, room: Room | None, method: str) -> None:
        text = room.describe() if room is not None else "its NodePool has no budget room"
        self.verdict(candidate.node, method, ex.BLOCKED, ex.CAUSE_BUDGET,
                     f"disruption budget: {text}")
