"""The plan's outcome (`SchedulingResult`): the NodeClaims to launch, the pods going onto
existing nodes, and the pods that fit nowhere with the reason. A partly filled NodeClaim of
free pods that grew by the efficiency rule is re-planned on its own and the cheaper of the
two kept (`PlanResults`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from nodewright.scheduling.pods import Pod
from nodewright.scheduling.requirements import LABEL_HOSTNAME, Requirement, Requirements
from nodewright.scheduling.reservations import Pinned, pin
from nodewright.scheduling.solver.placement import Placement
from nodewright.scheduling.solver.problem import SchedulingProblem
from nodewright.scheduling.targets import (
    ClaimTarget,
    Narrowed,
    PlannedNodeClaim,
    PoolState,
    finish_claim,
)

# Claims filled less than this (in their fullest resource) are re-planned on their own.
_REPLAN_BELOW_FILL = 0.8


@dataclass(frozen=True)
class SchedulingResult:
    nodeclaims: tuple[PlannedNodeClaim, ...]
    existing: tuple[tuple[str, tuple[str, ...]], ...]
    unschedulable: tuple[tuple[str, str], ...]
    # Pods left for a later simulation because the capacity reservation their NodeClaim
    # would need is used up (strict mode; Karpenter's ReservedOfferingErrors), with why.
    deferred: tuple[tuple[str, str], ...] = ()

    @property
    def hourly_cost(self) -> float:
        return sum(claim.price for claim in self.nodeclaims)

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of `nodewright plan --format json`."""
        return {
            "nodeclaims": [
                {
                    "nodepool": claim.nodepool,
                    "instanceType": claim.instance_type,
                    "instanceTypes": [name for name, _ in claim.instance_types],
                    "capacityType": claim.capacity_type,
                    "zone": claim.zone,
                    "price": claim.price,
                    "priceEstimated": claim.price_estimated,
                    "pods": list(claim.pods),
                    "why": claim.why,
                }
                for claim in self.nodeclaims
            ],
            "existing": [{"node": node, "pods": list(pods)} for node, pods in self.existing],
            "unschedulable": [{"pod": pod, "reason": reason} for pod, reason in self.unschedulable],
            "cost": {"hourly": round(self.hourly_cost, 6)},
        }



class PlanResults:
    """The outcome of one plan's placement. `replan` plans a NodeClaim's pods alone (a
    problem of those pods and its NodePool narrowed to the claim's requirements).
    `cutoff`: the cost of the plan this one is compared with; when this plan provably
    cannot cost less, its NodeClaims are not re-planned."""

    def __init__(self, placement: Placement, problem: SchedulingProblem,
                 efficient_growth: bool, cutoff: float | None,
                 replan: Callable[[SchedulingProblem], SchedulingResult]) -> None:
        self.placement = placement
        self.problem = problem
        self.efficient_growth = efficient_growth
        self.cutoff = cutoff
        self.replan = replan

    def build(self, failures: Mapping[str, str]) -> SchedulingResult:
        """`failures`: the reason of each pod that fits nowhere, by pod key."""
        claims: list[PlannedNodeClaim] = []
        failures = dict(failures)
        finished = []
        for target in self.placement.claims():
            planned = finish_claim(target)
            if self.placement.reservations is not None:
                pinned = self._pinned(target, planned)
                if pinned.claim is None:
                    failures.update((pod.key, pinned.reason) for pod in target.pods)
                    continue
                planned = pinned.claim
            finished.append((target, planned))
        if self.cutoff is not None and self._at_least(finished) >= self.cutoff - 1e-9:
            # Re-plans only lower a claim's price, and not below `_replan_floor`: this plan
            # cannot beat the cutoff, so its re-plans would be wasted.
            claims = [planned for _, planned in finished]
        else:
            for target, planned in finished:
                claims.extend(self._finish(target, planned))
        existing = tuple(
            (t.hostname, tuple(p.key for p in t.pods if p.node_name is None))
            for t in self.placement.landed_existing()
        )
        existing = tuple(item for item in existing if item[1])
        deferred = self.placement.deferred
        unschedulable = tuple(sorted((k, v) for k, v in failures.items() if k not in deferred))
        waiting = tuple(sorted((k, v) for k, v in failures.items() if k in deferred))
        return SchedulingResult(tuple(claims), existing, unschedulable, waiting)

    @staticmethod
    def _pinned(claim: ClaimTarget, planned: PlannedNodeClaim) -> Pinned:
        fitting = Narrowed(claim.candidates, claim.start).fitting(claim.used)
        return pin(planned, [c.instance_type for c in fitting], claim.held, claim.kept_out)

    def _replannable(self, claim: ClaimTarget) -> bool:
        pool = claim.pool
        return not (
            not self.efficient_growth
            # A re-plan would count the reservations again from the start.
            or self.placement.reservations is not None
            or pool is None
            or pool.remaining is not None
            or not claim.grew_by_efficiency
            or _fill(claim) >= _REPLAN_BELOW_FILL
            or not all(self.placement.is_free(pod) for pod in claim.pods)
        )

    def _at_least(self, finished: Sequence[tuple[ClaimTarget, PlannedNodeClaim]]) -> float:
        """A lower bound on the plan's cost once `_finish` has re-planned its claims."""
        total = 0.0
        for claim, planned in finished:
            if self._replannable(claim):
                total += min(planned.price, self._replan_floor(claim))
            else:
                total += planned.price
        return total

    def _replan_floor(self, claim: ClaimTarget) -> float:
        """No plan for the claim's pods costs less: per resource, their requests at the
        lowest price per unit of it among the NodePool's types. The re-plan's types are
        among these at no lower price; their whole allocatable is counted, as the re-plan
        may carry fewer DaemonSets (its requirements are narrower)."""
        assert claim.pool is not None
        pool = claim.pool
        need = [0] * len(pool.zero)
        for pod in claim.pods:
            for r, amount in enumerate(self.placement.context(pod).vector):
                need[r] += amount
        floor = 0.0
        for r, amount in enumerate(need):
            if amount <= 0:
                continue
            rate = min((c.price / whole for c in pool.candidates
                        if (whole := c.allocatable[r] + (c.overhead[r] if c.overhead else 0))
                        > 0), default=0.0)
            floor = max(floor, amount * rate)
        return floor

    def _finish(self, claim: ClaimTarget, planned: PlannedNodeClaim) -> list[PlannedNodeClaim]:
        """The planned claim; a partly filled claim of free pods that grew by the efficiency
        rule is re-planned on its own with growth capped by the price of a separate node,
        and the cheaper of the two plans is kept (this trims the last, half-empty node)."""
        pool = claim.pool
        if pool is None or not self._replannable(claim):
            return [planned]
        tail = _tail_problem(planned, pool, self.problem, claim.pods)
        sub = self.replan(tail)
        if sub.unschedulable or sub.hourly_cost >= planned.price - 1e-9:
            return [planned]
        parts = []
        for index, part in enumerate(sub.nodeclaims):
            name = f"{planned.name}-{index}" if index else planned.name
            requirements = Requirements(
                r for key, r in part.requirements.items() if key != LABEL_HOSTNAME
            )
            requirements.add(Requirement.single(LABEL_HOSTNAME, name))
            parts.append(replace(part, name=name, requirements=requirements))
        return parts


def _tail_problem(claim: PlannedNodeClaim, pool: PoolState, problem: SchedulingProblem,
                  pods: Sequence[Pod]) -> SchedulingProblem:
    """The claim's pods alone, on its NodePool narrowed to the claim's requirements."""
    requirements = Requirements(
        r for key, r in claim.requirements.items() if key != LABEL_HOSTNAME
    )
    template = replace(pool.template, requirements=requirements, limits=None, usage={})
    return SchedulingProblem(pods=pods, nodepools=[template], daemonsets=problem.daemonsets)



def _fill(claim: ClaimTarget) -> float:
    """How full the claim's cheapest type is in its fullest resource (0..1)."""
    have = claim.cheapest.allocatable
    return max(
        (used / room for used, room in zip(claim.used, have, strict=True) if room > 0),
        default=1.0,
    )

