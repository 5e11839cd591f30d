"""The four disruption methods, in the order the loop tries them, and the validation that
re-checks a consolidation command 15 seconds after it was decided.

- emptiness: every empty candidate past consolidateAfter, as many as the Empty budget
  allows, in one delete command;
- drift: one drifted candidate (empty ones first, then the longest drifted), replaced by
  whatever the solver says its pods need;
- multi-node consolidation: the largest prefix (binary search, at most 100 candidates, a
  1-minute compute budget) of the best-value candidates that can go at once;
- single-node consolidation: the candidates one at a time (3-minute compute budget),
  NodePools interleaved so one large pool does not starve the others. Where results must
  not depend on the machine (the simulator), a count of simulations per pass stands in for
  the compute budget; a pass that stops there starts the next one with the candidates it
  did not reach, as Karpenter puts the NodePools its timed-out pass did not reach first.

Every candidate a method looks at gets a verdict; see `verdicts`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from nodewright.cluster import objects
from nodewright.controllers.disruption import explanations as ex
from nodewright.controllers.disruption import metrics as disruption_metrics
from nodewright.controllers.disruption.budgets import DRIFTED, EMPTY, UNDERUTILIZED
from nodewright.controllers.disruption.candidates import (
    Blocked,
    Candidate,
    CandidateContext,
    consolidation_order,
    drift_order,
    evaluate,
)
from nodewright.controllers.disruption.commands import (
    Command,
    Rejection,
    decide_consolidation,
    still_valid,
)
from nodewright.controllers.disruption.conditions import DRIFTED as DRIFTED_CONDITION
from nodewright.controllers.disruption.conditions import consolidatable_at
from nodewright.controllers.disruption.room import Room, room_by_pool
from nodewright.controllers.disruption.simulation import SimulationBase
from nodewright.controllers.disruption.verdicts import PassVerdicts
from nodewright.state.cluster import ClusterState
from nodewright.state.statenode import StateNode
from nodewright.state.wellknown import INSTANCE_TYPE_LABEL

EMPTY_TYPE = "empty"
MULTI_TYPE = "multi"
SINGLE_TYPE = "single"

MULTI_NODE_MAX_CANDIDATES = 100
MULTI_NODE_TIMEOUT = 60.0
SINGLE_NODE_TIMEOUT = 180.0
# Karpenter's compute budgets as a count of simulations: multi-node consolidation's minute
# pays for a binary search over at most 100 candidates (7 simulations), so at that rate
# single-node consolidation's three minutes pay for 21.
SINGLE_NODE_SIMULATIONS = round(
    SINGLE_NODE_TIMEOUT / (MULTI_NODE_TIMEOUT / math.ceil(math.log2(MULTI_NODE_MAX_CANDIDATES))))


@dataclass(frozen=True)
class MethodOptions:
    spot_to_spot: bool = False
    multi_node_max_candidates: int = MULTI_NODE_MAX_CANDIDATES
    # Compute budgets, in seconds of this process's own work (not simulated time).
    multi_node_timeout: float = MULTI_NODE_TIMEOUT
    single_node_timeout: float = SINGLE_NODE_TIMEOUT
    # The deterministic budget (None: none), for runs that must not depend on the machine.
    single_node_max_simulations: int | None = None


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

    def rooms(self, reason: str) -> dict[str, Room]:
        return room_by_pool(self.state.nodes(), self.context.nodepools, reason, self.now)

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


# ---------------------------------------------------------------------------------------
# Which candidates each method may consider


def _consolidatable(p: Pass, candidate: Candidate, method: str) -> bool:
    """consolidateAfter has passed since the node's recorded last pod event (else a
    verdict): what Karpenter's Consolidatable condition says."""
    ready_at = consolidatable_at(candidate.nodeclaim, candidate.nodepool)
    if ready_at is None:
        p.verdict(candidate.node, method, ex.KEPT, ex.CAUSE_CONSOLIDATION_DISABLED,
                  f"NodePool {candidate.nodepool_name} has consolidation disabled",
                  ex.UNCONSOLIDATABLE)
        return False
    if ready_at > p.now:
        after = candidate.nodepool.spec.disruption.consolidate_after
        p.verdict(candidate.node, method, ex.KEPT, ex.CAUSE_CONSOLIDATE_AFTER,
                  f"consolidateAfter {after} has not passed since the last pod event "
                  f"(consolidatable from {ready_at:%Y-%m-%dT%H:%M:%SZ})", ex.UNCONSOLIDATABLE)
        return False
    return True


def empty_candidates(p: Pass) -> list[Candidate]:
    return [
        c for c in p.candidates()
        if c.empty and _consolidatable(p, c, ex.EMPTINESS)
    ]


def consolidation_candidates(p: Pass, method: str) -> list[Candidate]:
    found = []
    for candidate in p.candidates():
        if candidate.empty:
            continue
        policy = candidate.nodepool.spec.disruption.consolidation_policy
        if policy == "WhenEmpty":
            p.verdict(candidate.node, method, ex.KEPT, ex.CAUSE_POLICY,
                      f"NodePool {candidate.nodepool_name} has consolidation policy WhenEmpty, "
                      "but the node is not empty", ex.UNCONSOLIDATABLE)
            continue
        if candidate.instance_type is None:
            type_name = candidate.node.labels.get(INSTANCE_TYPE_LABEL)
            p.verdict(candidate.node, method, ex.KEPT, ex.CAUSE_INSTANCE_TYPE,
                      f"instance type {type_name!r} not found", ex.UNCONSOLIDATABLE)
            continue
        if not candidate.zone or not candidate.capacity_type:
            p.verdict(candidate.node, method, ex.KEPT, ex.CAUSE_INSTANCE_TYPE,
                      "node has no zone or capacity-type label", ex.UNCONSOLIDATABLE)
            continue
        if _consolidatable(p, candidate, method):
            found.append(candidate)
    return found


def drifted_candidates(p: Pass) -> list[Candidate]:
    # Most passes see no drifted NodeClaim: then no machine needs evaluating for drift.
    if not any(node.nodeclaim is not None
               and objects.condition_is_true(node.nodeclaim, DRIFTED_CONDITION)
               for node in p.nodes()):
        return []
    return [
        c for c in p.candidates(eventual=True)
        if objects.condition_is_true(c.nodeclaim, DRIFTED_CONDITION)
    ]


# ---------------------------------------------------------------------------------------
# The methods


def emptiness(p: Pass) -> Command | None:
    candidates = consolidation_order(empty_candidates(p))
    disruption_metrics.ELIGIBLE_NODES.labels(reason=EMPTY.lower()).set(len(candidates))
    rooms = p.rooms(EMPTY)
    chosen = []
    for candidate in candidates:
        room = rooms.get(candidate.nodepool_name)
        if room is None or not room.take():
            p.budget_blocked(candidate, room, ex.EMPTINESS)
            continue
        chosen.append(candidate)
    if not chosen:
        return None
    return Command(ex.EMPTINESS, EMPTY, EMPTY_TYPE, chosen)


def drift(p: Pass) -> Command | None:
    candidates = drifted_candidates(p)
    disruption_metrics.ELIGIBLE_NODES.labels(reason=DRIFTED.lower()).set(len(candidates))
    drifted_at = {
        c.nodeclaim_name: str((objects.condition(c.nodeclaim, DRIFTED_CONDITION) or {}).get(
            "lastTransitionTime", ""))
        for c in candidates
    }
    rooms = p.rooms(DRIFTED)
    for candidate in drift_order(candidates, drifted_at):
        room = rooms.get(candidate.nodepool_name)
        if room is None or room.left <= 0:
            p.budget_blocked(candidate, room, ex.DRIFT)
            continue
        simulation = p.base.simulate([candidate])
        if not simulation.all_scheduled:
            p.verdict(candidate.node, ex.DRIFT, ex.BLOCKED, ex.CAUSE_PODS_DO_NOT_FIT,
                      simulation.describe_failures())
            continue
        return Command(ex.DRIFT, DRIFTED, "", [candidate],
                       list(simulation.new_claims))
    return None


def _rejected(p: Pass, candidate: Candidate, method: str, rejection: Rejection) -> None:
    p.verdict(candidate.node, method, ex.KEPT, rejection.cause, rejection.message,
              ex.UNCONSOLIDATABLE)


def multi_node(p: Pass) -> Command | None:
    candidates = consolidation_order(consolidation_candidates(p, ex.MULTI_NODE))
    disruption_metrics.ELIGIBLE_NODES.labels(reason=UNDERUTILIZED.lower()).set(len(candidates))
    rooms = p.rooms(UNDERUTILIZED)
    # Candidates beyond the budget are left out silently: single-node consolidation looks
    # at each of them and says why.
    allowed = [c for c in candidates
               if (room := rooms.get(c.nodepool_name)) is not None and room.take()]
    if len(allowed) < 2:
        return None
    low, high = 1, min(len(allowed) - 1, p.options.multi_node_max_candidates)
    deadline = time.perf_counter() + p.options.multi_node_timeout
    best: Command | None = None
    while low <= high:
        if time.perf_counter() > deadline:
            disruption_metrics.CONSOLIDATION_TIMEOUTS.labels(consolidation_type=MULTI_TYPE).inc()
            break
        middle = (low + high) // 2
        outcome = decide_consolidation(
            p.base, allowed[: middle + 1], method=ex.MULTI_NODE, consolidation_type=MULTI_TYPE,
            spot_to_spot=p.options.spot_to_spot)
        if isinstance(outcome, Command):
            best = outcome
            low = middle + 1
        else:
            high = middle - 1
    return best


def _interleaved(candidates: Sequence[Candidate]) -> list[Candidate]:
    by_pool: dict[str, list[Candidate]] = {}
    for candidate in candidates:
        by_pool.setdefault(candidate.nodepool_name, []).append(candidate)
    pools = sorted(by_pool)
    ordered = []
    for index in range(max((len(v) for v in by_pool.values()), default=0)):
        for pool in pools:
            if index < len(by_pool[pool]):
                ordered.append(by_pool[pool][index])
    return ordered


def single_node(p: Pass) -> Command | None:
    candidates = _interleaved(consolidation_order(consolidation_candidates(p, ex.SINGLE_NODE)))
    resume = p.resume
    if resume.mark is not None and resume.mark == p.state_mark:
        # The same cluster as when the last pass stopped: go on where it stopped.
        candidates = [c for c in candidates if c.provider_id not in resume.seen]
    else:
        resume.seen = frozenset()
        candidates.sort(key=lambda c: c.provider_id not in resume.unseen)
    rooms = p.rooms(UNDERUTILIZED)
    deadline = time.perf_counter() + p.options.single_node_timeout
    limit = p.options.single_node_max_simulations
    simulations_before = p.base.simulations
    resume.unseen, resume.mark = frozenset(), None
    for index, candidate in enumerate(candidates):
        spent = p.base.simulations - simulations_before
        if time.perf_counter() > deadline or (limit is not None and spent >= limit):
            disruption_metrics.CONSOLIDATION_TIMEOUTS.labels(
                consolidation_type=SINGLE_TYPE).inc()
            resume.unseen = frozenset(c.provider_id for c in candidates[index:])
            resume.seen |= {c.provider_id for c in candidates[:index]}
            resume.mark = p.state_mark
            p.stopped_early.add(ex.SINGLE_NODE)
            return None
        room = rooms.get(candidate.nodepool_name)
        if room is None or room.left <= 0:
            p.budget_blocked(candidate, room, ex.SINGLE_NODE)
            continue
        outcome = decide_consolidation(
            p.base, [candidate], method=ex.SINGLE_NODE, consolidation_type=SINGLE_TYPE,
            spot_to_spot=p.options.spot_to_spot)
        if isinstance(outcome, Command):
            return outcome
        _rejected(p, candidate, ex.SINGLE_NODE, outcome)
    resume.seen = frozenset()
    return None


MethodFn = Callable[[Pass], Command | None]
METHODS: tuple[tuple[str, MethodFn], ...] = (
    (ex.EMPTINESS, emptiness),
    (ex.DRIFT, drift),
    (ex.MULTI_NODE, multi_node),
    (ex.SINGLE_NODE, single_node),
)
VALIDATED = frozenset({ex.EMPTINESS, ex.MULTI_NODE, ex.SINGLE_NODE})


# ---------------------------------------------------------------------------------------
# Validation


def validate(p: Pass, command: Command) -> Command | str:
    """The command re-decided on the current cluster: the candidates (refreshed) it may
    still disrupt, or why it must be dropped."""
    if command.method == ex.EMPTINESS:
        eligible: Mapping[str, Candidate] = {c.provider_id: c for c in empty_candidates(p)}
    else:
        eligible = {c.provider_id: c for c in consolidation_candidates(p, command.method)}
    fresh = [eligible[c.provider_id] for c in command.candidates if c.provider_id in eligible]
    if command.method != ex.EMPTINESS and len(fresh) != len(command.candidates):
        return (f"{len(command.candidates) - len(fresh)} candidate(s) are no longer valid "
                "(pods or annotations changed)")
    if not fresh:
        return "the candidates are no longer empty or disruptable"
    rooms = p.rooms(command.reason)
    within = []
    for candidate in fresh:
        room = rooms.get(candidate.nodepool_name)
        if room is not None and room.take():
            within.append(candidate)
        elif command.method != ex.EMPTINESS:
            return f"disrupting {candidate.name} would exceed the disruption budget"
    if not within:
        return "the disruption budget no longer allows it"
    if command.method == ex.EMPTINESS:
        return replace(command, candidates=within)
    why = still_valid(replace(command, candidates=within), p.base.simulate(within))
    if why is not None:
        return why
    return replace(command, candidates=within)
