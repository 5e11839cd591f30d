"""Disruption commands and how consolidation decides one.

A command removes some candidates and launches zero or more replacements. Consolidation
(`decide_consolidation`) asks the solver where the candidates' pods would go and accepts:

- delete: every pod fits on the remaining machines;
- replace: every pod fits on the remaining machines plus exactly one new NodeClaim whose
  instance types are narrowed to those strictly cheaper than the candidates together
  (a candidate's own instance type caps the price further in a multi-node command: keeping
  that node would be a cheaper way to the same result). On-demand candidates replaced by a
  NodeClaim that could be spot or on-demand are replaced by spot only (the prices were
  compared as spot); spot candidates are replaced by spot only behind the
  SpotToSpotConsolidation feature gate and, for one node, with at least 15 cheaper types,
  of which the 15 cheapest are kept (so the new node is never immediately replaceable).

Anything else is a `Rejection` with a cause and a sentence that names the pod that would
not fit or the prices compared.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from nodewright.controllers.common import decision_log as ex
from nodewright.controllers.disruption import balanced
from nodewright.controllers.disruption.candidates import Candidate
from nodewright.controllers.disruption.prefilter import hopeless
from nodewright.controllers.disruption.simulation import Simulation, SimulationBase
from nodewright.scheduling.catalog import ON_DEMAND, RESERVED, SPOT, InstanceType
from nodewright.scheduling.launch_filters import has_min_values
from nodewright.scheduling.nodepools import allowed_offerings, min_values_problem
from nodewright.scheduling.requirements import (
    LABEL_CAPACITY_TYPE,
    LABEL_HOSTNAME,
    LABEL_INSTANCE_TYPE,
    Requirement,
    Requirements,
)
from nodewright.scheduling.targets import PlannedNodeClaim

MIN_SPOT_TO_SPOT_TYPES = 15
DELETE = "delete"
REPLACE = "replace"


@dataclass
class Command:
    """What one disruption does. `reason` is the budget reason (Empty, Underutilized,
    Drifted); `consolidation_type` is Karpenter's label ("empty", "multi", "single", or ""
    for drift)."""

    method: str
    reason: str
    consolidation_type: str
    candidates: list[Candidate]
    replacements: list[PlannedNodeClaim] = field(default_factory=list)
    # Static drift: one NodeClaim from each of these static NodePools' templates.
    static_replacements: list[str] = field(default_factory=list)
    created: datetime | None = None
    replacement_names: list[str] = field(default_factory=list)
    initialized: set[str] = field(default_factory=set)
    # consolidationPolicy Balanced: each Balanced NodePool's score of the move.
    scores: Mapping[str, balanced.Score] = field(default_factory=dict)
    # What each replacement is expected to cost (`estimated_price`), when known.
    replacement_estimates: list[float] = field(default_factory=list)
    # The machines the simulation put the candidates' (and other moving) pods on,
    # nominated when the command starts (Karpenter's Results.Record in StartCommand).
    destinations: tuple[str, ...] = ()

    @property
    def decision(self) -> str:
        return REPLACE if self.replacements or self.static_replacements else DELETE

    @property
    def source_price(self) -> float:
        return sum(c.price for c in self.candidates)

    @property
    def savings(self) -> float:
        """Karpenter's EstimatedSavings: the candidates' prices less the replacements'."""
        if len(self.replacement_estimates) == len(self.replacements):
            return self.source_price - sum(self.replacement_estimates)
        return self.source_price - sum(r.price for r in self.replacements)

    def describe(self) -> str:
        names = ", ".join(c.name for c in self.candidates)
        text = f"{self.decision} [{names}]"
        if self.replacements:
            options = ", ".join(self.replacements[0].instance_types[i][0]
                                for i in range(min(3, len(self.replacements[0].instance_types))))
            more = len(self.replacements[0].instance_types) - 3
            text += f" -> {len(self.replacements)} replacement(s) ({options}"
            text += f" and {more} more)" if more > 0 else ")"
        if self.static_replacements:
            text += (f" -> {len(self.static_replacements)} replacement(s) from static "
                     f"NodePool(s) {', '.join(sorted(set(self.static_replacements)))}")
        return f"{text} (savings: ${self.savings:.4f}/h)"


@dataclass(frozen=True)
class Rejection:
    cause: str
    message: str
    # Balanced NodePools' scores of the move, when scoring is what rejected it.
    scores: Mapping[str, balanced.Score] = field(default_factory=dict)


def _types_by_name(base: SimulationBase, pool: str) -> Mapping[str, InstanceType]:
    context = base.pools.get(pool)
    return context.instance_types if context is not None else {}


def narrow(
    claim: PlannedNodeClaim,
    types: Mapping[str, InstanceType],
    *,
    max_price: float,
    capacity_type: str | None,
) -> PlannedNodeClaim | str:
    """The claim with only instance types strictly cheaper than `max_price` (priced under
    its requirements, restricted to `capacity_type` when given), or why none is left."""
    requirements = Requirements(r for k, r in claim.requirements.items() if k != LABEL_HOSTNAME)
    if capacity_type is not None:
        requirements.add(Requirement.single(LABEL_CAPACITY_TYPE, capacity_type))
    priced: list[tuple[float, str, str]] = []
    for name, _ in claim.instance_types:
        instance_type = types.get(name)
        offering = worst_launch_price(instance_type, requirements) if instance_type else None
        if offering is not None:
            priced.append((offering[0], name, offering[1]))
    priced.sort()
    cheaper = [item for item in priced if item[0] < max_price - 1e-9]
    if not cheaper:
        if not priced:
            return "no instance type is offered for the replacement"
        price, name, kind = priced[0]
        return (f"can't replace with a cheaper node: the cheapest that fits is {name} "
                f"({kind}) at ${price:.4f}/h, the node(s) cost ${max_price:.4f}/h")
    kept = [types[name] for _, name, _ in cheaper]
    problem = min_values_problem(kept, requirements)
    if problem is not None:
        return f"filtering by price: {problem}"
    requirements.add(Requirement(LABEL_INSTANCE_TYPE, False, frozenset(n for _, n, _ in cheaper)))
    return replace(
        claim,
        instance_types=tuple((name, price) for price, name, _ in cheaper),
        capacity_type=cheaper[0][2],
        price=cheaper[0][0],
        requirements=requirements,
    )


def estimated_price(claim: PlannedNodeClaim, types: Mapping[str, InstanceType]) -> float:
    """What a replacement is expected to cost (Karpenter's EstimatedSavings): the cheapest
    available offering its requirements allow of its first (cheapest) instance type; 0 when
    there is none. The price compared when narrowing is the worst launch price instead."""
    first = types.get(claim.instance_types[0][0]) if claim.instance_types else None
    if first is None:
        return 0.0
    prices = [o.price for o in allowed_offerings(first, claim.requirements)]
    return min(prices) if prices else 0.0


def worst_launch_price(instance_type: InstanceType,
                       requirements: Requirements) -> tuple[float, str] | None:
    """Karpenter's WorstLaunchPrice: the dearest allowed offering of the capacity type the
    launch would use (reserved, else spot, else on-demand), and that capacity type."""
    offerings = list(allowed_offerings(instance_type, requirements))
    for capacity_type in (RESERVED, SPOT, ON_DEMAND):
        prices = [o.price for o in offerings if o.capacity_type == capacity_type]
        if prices:
            return max(prices), capacity_type
    return None


def decide_consolidation(
    base: SimulationBase,
    candidates: Sequence[Candidate],
    *,
    method: str,
    consolidation_type: str,
    spot_to_spot: bool,
    totals: Mapping[str, balanced.PoolTotals],
) -> Command | Rejection:
    """The consolidation of `candidates`, or why not; Balanced NodePools score it against
    `totals` (the pass's `pool_totals`)."""
    outcome = _decide(base, candidates, method=method, consolidation_type=consolidation_type,
                      spot_to_spot=spot_to_spot)
    if not isinstance(outcome, Command):
        return outcome
    outcome.replacement_estimates = [
        estimated_price(r, _types_by_name(base, r.nodepool)) for r in outcome.replacements]
    approved, outcome.scores = balanced.approve(outcome.candidates, outcome.savings, totals)
    refused = {pool: score for pool, score in outcome.scores.items() if not score.approved}
    if not approved:
        return Rejection(
            ex.CAUSE_BALANCED,
            "consolidationPolicy Balanced: the savings are not worth the disruption ("
            + "; ".join(f"NodePool {pool}: {score.describe()}"
                        for pool, score in sorted(refused.items())) + ")",
            scores=outcome.scores,
        )
    return outcome


def _decide(
    base: SimulationBase,
    candidates: Sequence[Candidate],
    *,
    method: str,
    consolidation_type: str,
    spot_to_spot: bool,
) -> Command | Rejection:
    moving, _ = base.moving(pod for c in candidates for pod in c.pods)
    why = hopeless(candidates, moving, base.free, base.offers)
    if why is not None:
        return Rejection(ex.CAUSE_NO_CHEAPER, why)
    simulation = base.simulate(candidates)
    if not simulation.all_scheduled:
        return Rejection(ex.CAUSE_PODS_DO_NOT_FIT, simulation.describe_failures())
    claims = list(simulation.new_claims)
    command = Command(method, "Underutilized", consolidation_type, list(candidates),
                      destinations=simulation.destinations(base.is_virtual))
    if not claims:
        return command
    if len(claims) > 1:
        return Rejection(ex.CAUSE_TOO_MANY_REPLACEMENTS,
                         f"can't remove without creating {len(claims)} nodes")
    claim = claims[0]
    types = _types_by_name(base, claim.nodepool)
    max_price = sum(c.price for c in candidates)
    if len(candidates) > 1:
        own_types = {c.instance_type.name: c.price for c in candidates if c.instance_type}
        for name, _ in claim.instance_types:
            if name in own_types:
                max_price = min(max_price, own_types[name])
    capacity = claim.requirements.get(LABEL_CAPACITY_TYPE)
    allows_spot = capacity is None or capacity.has(SPOT)
    all_spot = all(c.capacity_type == SPOT for c in candidates)
    if all_spot and allows_spot:
        return _spot_to_spot(command, claim, types, max_price, spot_to_spot)
    allows_on_demand = capacity is None or capacity.has(ON_DEMAND)
    narrowed = narrow(claim, types, max_price=max_price,
                      capacity_type=SPOT if allows_spot and allows_on_demand else None)
    if isinstance(narrowed, str):
        return Rejection(ex.CAUSE_NO_CHEAPER, narrowed)
    command.replacements = [narrowed]
    return command


def _spot_to_spot(command: Command, claim: PlannedNodeClaim, types: Mapping[str, InstanceType],
                  max_price: float, enabled: bool) -> Command | Rejection:
    if not enabled:
        return Rejection(ex.CAUSE_SPOT_TO_SPOT,
                         "SpotToSpotConsolidation is disabled, can't replace a spot node with "
                         "a spot node")
    narrowed = narrow(claim, types, max_price=max_price, capacity_type=SPOT)
    if isinstance(narrowed, str):
        return Rejection(ex.CAUSE_NO_CHEAPER, narrowed)
    if len(command.candidates) == 1:
        found = len(narrowed.instance_types)
        if found < MIN_SPOT_TO_SPOT_TYPES:
            return Rejection(
                ex.CAUSE_SPOT_TO_SPOT,
                f"SpotToSpotConsolidation requires {MIN_SPOT_TO_SPOT_TYPES} cheaper instance "
                f"type options than the current candidate to consolidate, got {found}",
            )
        keep = MIN_SPOT_TO_SPOT_TYPES
        if has_min_values(narrowed.requirements):
            # As Karpenter: as many of the cheapest as minValues needs, if more than 15.
            ordered = [types[name] for name, _ in narrowed.instance_types]
            keep = max(keep, next((n for n in range(1, len(ordered) + 1)
                                   if min_values_problem(ordered[:n], narrowed.requirements)
                                   is None), len(ordered)))
        kept = narrowed.instance_types[:keep]
        requirements = narrowed.requirements.copy()
        requirements.add(Requirement(LABEL_INSTANCE_TYPE, False, frozenset(n for n, _ in kept)))
        narrowed = replace(narrowed, instance_types=kept, requirements=requirements)
    command.replacements = [narrowed]
    return command


def still_valid(command: Command, simulation: Simulation) -> str | None:
    """Why a re-simulation no longer supports the command, or None (Karpenter's rules: the
    same number of replacements, and the command's instance types a subset of what the
    solver would now launch: it does no price filtering, so it may offer more)."""
    if not simulation.all_scheduled:
        return simulation.describe_failures()
    claims = list(simulation.new_claims)
    if not claims and not command.replacements:
        return None
    if len(claims) != 1 or not command.replacements:
        return "scheduling simulation produced new results"
    wanted = {name for name, _ in command.replacements[0].instance_types}
    offered = {name for name, _ in claims[0].instance_types}
    if not wanted <= offered:
        return "scheduling simulation produced new results"
    return None
