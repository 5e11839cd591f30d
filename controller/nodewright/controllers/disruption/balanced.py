"""consolidationPolicy: Balanced (Karpenter's balanced.go): a consolidation move is made
only when what it saves is worth what it disrupts, both measured against its NodePool.

    savings fraction    = savings / the NodePool's total price (all its nodes)
    disruption fraction = the move's disruption cost / the NodePool's total disruption cost
    score               = savings fraction / disruption fraction, approved at >= 1/k (k = 2)

A node's disruption cost is 1 (draining it at all) plus, per pod that would move, max(0,
eviction cost) (1 by default, moved by pod-deletion-cost and priority). Every node of the
pool counts in the totals, candidates or not (a node that is no candidate by all its
pods); the pool's price is what the cost tracker counts for it (the cluster state's
`ClusterCost`, Karpenter's pkg/state/cost), or the candidates' prices while it counts
nothing. A move spanning several NodePools is scored per Balanced NodePool, its net
savings split by each pool's share of the candidates' price; every Balanced pool must
approve. Other policies are not scored. Before simulating, a candidate whose best case
(deleting it outright) cannot pass is skipped.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nodewright.api.nodepool import NodePool
from nodewright.cluster import objects
from nodewright.cluster.events import Event
from nodewright.controllers.common import decision_log as ex
from nodewright.controllers.common.podrules import eviction_cost
from nodewright.controllers.disruption import metrics as disruption_metrics
from nodewright.controllers.disruption.candidates import (
    PER_NODE_DISRUPTION_COST,
    Candidate,
    reschedule_disruption_cost,
)
from nodewright.state import podutil
from nodewright.state.statenode import StateNode

BALANCED = "Balanced"
BALANCED_K = 2


def is_balanced(nodepool: NodePool) -> bool:
    return nodepool.spec.disruption.consolidation_policy == BALANCED


@dataclass(frozen=True)
class PoolTotals:
    cost: float
    disruption_cost: float


@dataclass(frozen=True)
class Score:
    savings_fraction: float
    disruption_fraction: float
    k: int = BALANCED_K

    @property
    def value(self) -> float:
        if self.savings_fraction <= 0:
            return 0.0
        if self.disruption_fraction == 0:
            return math.inf
        return self.savings_fraction / self.disruption_fraction

    @property
    def threshold(self) -> float:
        return 1.0 / self.k

    @property
    def approved(self) -> bool:
        return self.value >= self.threshold

    def describe(self) -> str:
        """Karpenter's ConsolidationApproved message (with < for a rejection)."""
        relation = ">=" if self.approved else "<"
        return (f"score {self.value:.2f} {relation} threshold {self.threshold:.2f} "
                f"(k: {self.k}, savings {self.savings_fraction * 100:.1f}%, "
                f"disruption {self.disruption_fraction * 100:.1f}%)")


def disruption_cost(pods: Iterable[Mapping[str, Any]]) -> float:
    """Karpenter's RescheduleDisruptionCost of a node whose reschedulable pods these are."""
    return reschedule_disruption_cost(list(pods))


def node_disruption_cost(pods: Iterable[Mapping[str, Any]]) -> float:
    """Karpenter's StateNode.DisruptionCost: 1 plus the positive eviction cost of each pod
    on the node that is not a DaemonSet's and has not finished."""
    return PER_NODE_DISRUPTION_COST + sum(
        max(0.0, eviction_cost(pod)) for pod in pods
        if not podutil.is_terminal(pod) and not podutil.is_owned_by_daemonset(pod))


def pool_totals(
    candidates: Sequence[Candidate],
    nodes: Iterable[StateNode],
    nodepool_cost: Callable[[str], float] | None,
    pods_on: Callable[[str], list[Mapping[str, Any]]],
) -> dict[str, PoolTotals]:
    """Karpenter's computeNodePoolTotals, for the Balanced NodePools among `candidates`
    (every candidate of the pass, before any method filters them; the other pools' totals
    are never read). The cost is the NodePool's in the cost tracker (`nodepool_cost`,
    the cluster state's ClusterCost) and, while it has none, the candidates' prices added
    up. The disruption cost counts every node of the pool: a candidate by the pods that
    would move, any other node by all its pods (`node_disruption_cost`)."""
    fallback: dict[str, float] = {}
    by_name: dict[str, Candidate] = {}
    for candidate in candidates:
        if is_balanced(candidate.nodepool):
            pool = candidate.nodepool_name
            fallback[pool] = fallback.get(pool, 0.0) + candidate.price
            by_name[candidate.name] = candidate
    disruption: dict[str, float] = {}
    for node in nodes:
        pool = node.nodepool
        if pool not in fallback:
            continue
        found = by_name.get(node.name)
        cost = (found.reschedule_disruption_cost if found is not None
                else node_disruption_cost(pods_on(node.node_name) if node.node_name else ()))
        disruption[pool] = disruption.get(pool, 0.0) + cost
    totals: dict[str, PoolTotals] = {}
    for pool, summed in fallback.items():
        tracked = nodepool_cost(pool) if nodepool_cost is not None else 0.0
        totals[pool] = PoolTotals(tracked if tracked > 0 else summed, disruption.get(pool, 0.0))
    return totals


def score_move(savings: float, cost: float, totals: PoolTotals | None,
               k: int = BALANCED_K) -> Score | None:
    """The move's score against its pool, or None when there is nothing to measure it by
    (Karpenter's zero result, which no threshold approves)."""
    if totals is None or not totals.cost > 0 or not totals.disruption_cost > 0:
        return None
    return Score(savings / totals.cost, cost / totals.disruption_cost, k)


def evaluate(candidates: Sequence[Candidate], savings: float,
             totals: Mapping[str, PoolTotals]) -> dict[str, Score]:
    """Each Balanced NodePool's score of a move removing `candidates` and saving `savings`
    per hour. A pool with nothing to measure against scores 0 (Karpenter's zero result)."""
    by_pool: dict[str, list[Candidate]] = {}
    for candidate in candidates:
        by_pool.setdefault(candidate.nodepool_name, []).append(candidate)
    source = sum(c.price for c in candidates)
    scores: dict[str, Score] = {}
    for pool, members in sorted(by_pool.items()):
        if not is_balanced(members[0].nodepool):
            continue
        share = savings
        if source > 0 and len(by_pool) > 1:
            share = savings * sum(c.price for c in members) / source
        cost = sum(c.reschedule_disruption_cost for c in members)
        scores[pool] = score_move(share, cost, totals.get(pool)) or Score(0.0, 0.0)
    return scores


def approve(candidates: Sequence[Candidate], savings: float,
            totals: Mapping[str, PoolTotals]) -> tuple[bool, dict[str, Score]]:
    """Karpenter's EvaluateBalancedMove: whether every Balanced NodePool of the move
    approves it (a move of nothing is never approved), and each one's score."""
    if not candidates:
        return False, {}
    scores = evaluate(candidates, savings, totals)
    return all(score.approved for score in scores.values()), scores


def can_pass(candidate: Candidate, totals: Mapping[str, PoolTotals]) -> Score | None:
    """None when the candidate may be worth simulating; else the best score it could reach
    (deleting it outright), which is below the threshold."""
    if not is_balanced(candidate.nodepool):
        return None
    score = score_move(candidate.price, candidate.reschedule_disruption_cost,
                       totals.get(candidate.nodepool_name))
    if score is None or score.approved:
        return None
    return score


def record_move(candidates: Sequence[Candidate], scores: Mapping[str, Score],
                approved: bool) -> None:
    """karpenter_consolidation_moves_total per source NodePool of a consolidation move
    (any policy) and karpenter_consolidation_score for the Balanced ones."""
    decision = "approved" if approved else "rejected"
    for pool in sorted({c.nodepool_name for c in candidates}):
        nodepool = next(c.nodepool for c in candidates if c.nodepool_name == pool)
        policy = nodepool.spec.disruption.consolidation_policy
        score = scores.get(pool)
        pool_decision = decision if score is None else (
            "approved" if score.approved else "rejected")
        disruption_metrics.CONSOLIDATION_MOVES.labels(
            decision=pool_decision if len(candidates) == 1 else decision,
            nodepool=pool, policy=policy).inc()
        if score is not None:
            disruption_metrics.CONSOLIDATION_SCORE.labels(
                decision=pool_decision, nodepool=pool, policy=policy).observe(
                    min(score.value, 1e9))


def approved_events(candidates: Sequence[Candidate], scores: Mapping[str, Score],
                    nodepool_of: Callable[[str], Mapping[str, Any] | None]) -> list[Event]:
    """ConsolidationApproved with each approving Balanced NodePool's score: on the node and
    NodeClaim of a single-node move, on the NodePool of a multi-node one. Pools without a
    score (not Balanced) and rejections say nothing (Karpenter: rejections are too many)."""
    found: list[Event] = []
    for pool, score in sorted(scores.items()):
        if not score.approved:
            continue
        if len(candidates) == 1:
            node = candidates[0].node
            regarding = [obj for obj in (node.node, node.nodeclaim) if obj is not None]
        else:
            nodepool = nodepool_of(pool)
            regarding = [nodepool] if nodepool is not None else []
        found.extend(Event(regarding=obj, type="Normal", reason=ex.CONSOLIDATION_APPROVED,
                           note=score.describe(), dedupe_values=(objects.uid(obj),))
                     for obj in regarding)
    return found
