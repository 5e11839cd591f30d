"""Which machines may be disrupted at all, and what disrupting each would cost.

A candidate is a managed node that registered and initialized, is not being deleted nor
part of a command in flight, is not nominated for pending pods, carries no
`karpenter.sh/do-not-disrupt: "true"` annotation, belongs to a NodePool that exists, and holds no
pod that blocks eviction (do-not-disrupt, or a PodDisruptionBudget that allows nothing).
Drift is an *eventual* disruption: when the NodeClaim has a terminationGracePeriod, pods
do not block it (the drain will be forced when that period ends).

Everything else gets a `Blocked` with the cause and a sentence naming the pod, the PDB or
the annotation, which the loop turns into an explanation.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from nodewright.api.nodepool import NodePool
from nodewright.cluster import objects
from nodewright.cluster.events import EventRecorder
from nodewright.controllers.common import decision_log as ex
from nodewright.controllers.common.podrules import (
    DO_NOT_DISRUPT,
    PdbLimits,
    do_not_disrupt_event,
    do_not_disrupt_until,
    eviction_cost,
)
from nodewright.controllers.nodeclaim.expiration import lifetime_remaining
from nodewright.scheduling.catalog import InstanceType
from nodewright.state import podutil
from nodewright.state.statenode import StateNode
from nodewright.state.wellknown import CAPACITY_TYPE_LABEL, INSTANCE_TYPE_LABEL, ZONE_LABEL

Obj = Mapping[str, Any]
PER_NODE_DISRUPTION_COST = 1.0


@dataclass
class Candidate:
    node: StateNode
    nodepool: NodePool
    instance_type: InstanceType | None
    zone: str
    capacity_type: str
    price: float
    pods: list[Obj]  # the pods that would need a new home
    disruption_cost: float
    details: dict[str, Any] = field(default_factory=dict)
    # `reschedule_disruption_cost`, once known (a pass reads it for every method and sort).
    rescheduling_cost: float | None = field(default=None, compare=False, repr=False)

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def provider_id(self) -> str:
        return self.node.provider_id

    @property
    def nodeclaim(self) -> Obj:
        assert self.node.nodeclaim is not None
        return self.node.nodeclaim

    @property
    def nodeclaim_name(self) -> str:
        return self.node.nodeclaim_name

    @property
    def nodepool_name(self) -> str:
        return self.nodepool.name

    @property
    def empty(self) -> bool:
        """Karpenter's Candidate.IsEmpty: no moving pod adds a positive eviction cost. A node
        whose pods' costs all clamp to zero (very negative priority or pod-deletion-cost)
        counts as empty, and Emptiness deletes it without planning where they go."""
        return not self.pods or self.reschedule_disruption_cost <= PER_NODE_DISRUPTION_COST

    @property
    def has_no_pods(self) -> bool:
        return not self.pods

    @property
    def reschedule_disruption_cost(self) -> float:
        """Karpenter's RescheduleDisruptionCost: 1 for draining the node plus each moving
        pod's eviction cost, clamped at zero (what Balanced scores a move by)."""
        if self.rescheduling_cost is None:
            self.rescheduling_cost = reschedule_disruption_cost(self.pods)
        return self.rescheduling_cost

    @property
    def savings_ratio(self) -> float:
        """Karpenter's SavingsRatio, price per unit of disruption: consolidation looks at
        the best value first."""
        return self.price / self.reschedule_disruption_cost


@dataclass(frozen=True)
class Blocked:
    node: StateNode
    cause: str
    message: str


@dataclass(frozen=True)
class PodsSummary:
    """What evaluating a machine asks of its pods that does not depend on the time."""

    # Active pods with a do-not-disrupt annotation (whether it protects depends on the time).
    annotated: tuple[Obj, ...]
    moving: tuple[Obj, ...]  # the reschedulable ones
    eviction_cost: float  # of the moving pods, added up
    reschedule_cost: float  # Karpenter's RescheduleDisruptionCost of the moving pods


_Summarized = tuple[Sequence[Obj], PodsSummary]
# One pod as a summary reads it: the object, reschedulable, active with a do-not-disrupt
# annotation, its eviction cost (0 when it does not move).
_PodFact = tuple[Obj, bool, bool, float]


def _fact(pod: Obj) -> _PodFact:
    moves = podutil.is_reschedulable(pod)
    return (pod, moves,
            podutil.is_active(pod) and DO_NOT_DISRUPT in objects.annotations(pod),
            eviction_cost(pod) if moves else 0.0)


class PodFacts:
    """Each machine's `PodsSummary` remembered per set of stored pod objects, and what it
    reads of each pod per pod object: the state replaces a pod's object on each update,
    so the same objects always give the same summary (a machine whose pods changed reads
    again only the pods that did). A pass keeps the summaries it or the pass before
    looked at, and each pod's facts for as long as its object is one of the state's pods,
    so memory follows the cluster's size."""

    def __init__(self) -> None:
        self._current: dict[tuple[int, ...] | int, _Summarized] = {}
        self._previous: dict[tuple[int, ...] | int, _Summarized] = {}
        self._pods: dict[int, _PodFact] = {}

    def begin_pass(self, pods: Mapping[str, Obj]) -> None:
        """`pods`: the state's pod objects by key. The facts of objects no longer among
        them are let go once they are a fair share of those kept."""
        self._previous, self._current = self._current, {}
        if len(self._pods) > len(pods) + len(pods) // 4 + 256:
            live = {id(pod) for pod in pods.values()}
            # A fact holds its object, so an id among the live ones is that object.
            self._pods = {key: fact for key, fact in self._pods.items() if key in live}

    def of(self, pods: Sequence[Obj]) -> PodsSummary:
        # The objects are kept with their summary, so their ids cannot be reused meanwhile.
        # A tuple the state keeps (`kept_pods_on`) is its own key: the same tuple, the
        # same objects.
        key: tuple[int, ...] | int = id(pods) if isinstance(pods, tuple) else tuple(map(id, pods))
        known = self._current.get(key) or self._previous.get(key)
        if known is None:
            known = (pods if isinstance(pods, tuple) else list(pods), self._summarize(pods))
        self._current[key] = known
        return known[1]

    def _summarize(self, pods: Sequence[Obj]) -> PodsSummary:
        """The summary of `pods`, each pod read once while its object lives."""
        facts = []
        for pod in pods:
            # Each fact holds its object, so its id cannot be reused meanwhile.
            fact = self._pods.get(id(pod))
            if fact is None or fact[0] is not pod:
                fact = self._pods[id(pod)] = _fact(pod)
            facts.append(fact)
        costs = [fact[3] for fact in facts if fact[1]]
        return PodsSummary(
            annotated=tuple(fact[0] for fact in facts if fact[2]),
            moving=tuple(fact[0] for fact in facts if fact[1]),
            eviction_cost=sum(costs),
            reschedule_cost=PER_NODE_DISRUPTION_COST + sum(max(0.0, cost) for cost in costs),
        )


@dataclass
class CandidateContext:
    """What deciding on candidates needs beyond the nodes themselves."""

    now: datetime
    nodepools: Mapping[str, NodePool]
    instance_types: Mapping[str, Mapping[str, InstanceType]]
    pdbs: PdbLimits
    pods_on: Callable[[str], Sequence[Obj]]  # the pods bound to a node name
    in_flight: frozenset[str] = frozenset()
    # NodePools that cannot launch now, with why (their nodes are not candidates).
    skipped_pools: Mapping[str, str] = field(default_factory=dict)
    pod_facts: PodFacts = field(default_factory=PodFacts)
    # Where the pods' do-not-disrupt events go (None: the check says nothing).
    recorder: EventRecorder | None = None
    # `offering_price` by (instance type, zone, capacity type), for the pass.
    prices: dict[tuple[int, str, str], tuple[InstanceType, float]] = field(
        default_factory=dict)

    def price(self, instance_type: InstanceType | None, zone: str, capacity_type: str
              ) -> float:
        if instance_type is None:
            return 0.0
        key = (id(instance_type), zone, capacity_type)
        known = self.prices.get(key)
        if known is None or known[0] is not instance_type:
            known = (instance_type, offering_price(instance_type, zone, capacity_type))
            self.prices[key] = known
        return known[1]


def reschedule_disruption_cost(pods: Sequence[Obj]) -> float:
    return PER_NODE_DISRUPTION_COST + sum(max(0.0, eviction_cost(pod)) for pod in pods)


def offering_price(instance_type: InstanceType | None, zone: str, capacity_type: str) -> float:
    """What a running node costs: its offering's price, available or not (a node already
    running is paid for even when no more can be launched); 0 when unknown or NaN."""
    if instance_type is None:
        return 0.0
    prices = [
        o.price
        for o in instance_type.offerings
        if o.zone == zone and o.capacity_type == capacity_type and not math.isnan(o.price)
    ]
    return min(prices) if prices else 0.0


def node_blocker(node: StateNode, context: CandidateContext) -> Blocked | None:
    """Why the machine itself cannot be disrupted now (pods aside)."""
    if node.nodeclaim is None:
        return Blocked(node, ex.CAUSE_NODEPOOL, "node isn't managed by karpenter")
    if node.node is None:
        return Blocked(node, ex.CAUSE_NOT_INITIALIZED, "nodeclaim does not have a node yet")
    if not node.initialized:
        return Blocked(node, ex.CAUSE_NOT_INITIALIZED, "node isn't initialized")
    if node.is_marked_for_deletion or node.provider_id in context.in_flight:
        return Blocked(node, ex.CAUSE_DELETING, "node is deleting or marked for deletion")
    if node.nominated(context.now):
        return Blocked(node, ex.CAUSE_NOMINATED, "node is nominated for a pending pod")
    # As Karpenter's ValidateNodeDisruptable: only "true" on the machine (its Node once
    # registered, which registration copied the NodeClaim's annotations to) blocks; a
    # duration is a pod's setting and means nothing on a node.
    if node.annotations.get(DO_NOT_DISRUPT) == "true":
        return Blocked(node, ex.CAUSE_DO_NOT_DISRUPT,
                       f'disruption is blocked through the "{DO_NOT_DISRUPT}" annotation')
    if not node.nodepool:
        return Blocked(node, ex.CAUSE_NODEPOOL, "node doesn't have the karpenter.sh/nodepool label")
    if node.nodepool not in context.nodepools:
        why = context.skipped_pools.get(node.nodepool, "not found")
        return Blocked(node, ex.CAUSE_NODEPOOL, f"NodePool {node.nodepool}: {why}")
    return None


def pod_blocker(pods: Sequence[Obj], context: CandidateContext) -> tuple[str, str] | None:
    """(cause, message) for the first pod that may not be evicted, or None."""
    for pod in context.pod_facts.of(pods).annotated:
        if context.recorder is not None:
            told = do_not_disrupt_event(pod, context.now)
            if told is not None:
                context.recorder.publish(told)
        protected, how = do_not_disrupt_until(pod, context.now)
        if protected:
            return ex.CAUSE_DO_NOT_DISRUPT, f"pod {objects.key(pod)} has the {how} annotation"
    for pod in pods if context.pdbs else ():
        why = context.pdbs.blocking(pod, context.now)
        if why is not None:
            return ex.CAUSE_PDB, why
    return None


def evaluate(
    node: StateNode, context: CandidateContext, *, eventual: bool = False
) -> Candidate | Blocked:
    """The node as a candidate, or why it cannot be one. `eventual` is drift's class."""
    blocked = node_blocker(node, context)
    if blocked is not None:
        return blocked
    nodepool = context.nodepools[node.nodepool]
    pods = context.pods_on(node.node_name)
    blocker = pod_blocker(pods, context)
    if blocker is not None:
        grace = (node.nodeclaim or {}).get("spec", {}).get("terminationGracePeriod")
        if not (eventual and grace):
            return Blocked(node, blocker[0], blocker[1])
    labels = node.labels
    types = context.instance_types.get(nodepool.name, {})
    instance_type = types.get(labels.get(INSTANCE_TYPE_LABEL, ""))
    zone = labels.get(ZONE_LABEL, "")
    capacity_type = labels.get(CAPACITY_TYPE_LABEL, "")
    summary = context.pod_facts.of(pods)
    assert node.nodeclaim is not None
    return Candidate(
        node=node,
        nodepool=nodepool,
        instance_type=instance_type,
        zone=zone,
        capacity_type=capacity_type,
        price=context.price(instance_type, zone, capacity_type),
        pods=list(summary.moving),
        disruption_cost=summary.eviction_cost * lifetime_remaining(node.nodeclaim, context.now),
        rescheduling_cost=summary.reschedule_cost,
    )


def consolidation_order(candidates: Sequence[Candidate]) -> list[Candidate]:
    """Best value first (Karpenter's sortCandidates: savings ratio descending), then the
    cheaper disruption, then the name (so the same cluster always gives the same order)."""
    return sorted(
        candidates,
        key=lambda c: (-c.savings_ratio, c.disruption_cost, c.name),
    )


def drift_order(candidates: Sequence[Candidate], drifted_at: Mapping[str, str]) -> list[Candidate]:
    """Empty nodes first, then those drifted longest ago (pods moved off a non-empty node
    would otherwise land on an empty drifted one and move twice)."""
    return sorted(
        candidates,
        key=lambda c: (not c.has_no_pods, drifted_at.get(c.nodeclaim_name, ""), c.name),
    )
