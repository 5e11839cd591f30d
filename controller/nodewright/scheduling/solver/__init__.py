"""The provisioning solver: place pending pods on existing nodes and on new NodeClaims.

Order of work, as Karpenter does it: pods largest first (cpu, then memory); each pod
tries existing nodes, then the NodeClaims opened so far, then a new NodeClaim from the
highest-weight NodePool that can take it. A pod that fits nowhere has its preferences
relaxed one at a time and is tried again; what still fits nowhere gets a reason.
Pods no topology rule ties to any other ("free" pods) go after the rest, cpu-heavy and
memory-heavy ones alternating so that the NodeClaims they fill stay balanced.

A NodeClaim keeps every instance type that could still hold all its pods (see
`targets.Narrowed`); when it is done, the types are ordered by their cheapest allowed
offering and the first one is what would launch. A NodeClaim grows into a pricier type
only when that costs no more than a separate node for the pod or the bigger type is
among the most cost-efficient (`growth`). Each distinct pod shape keeps the list of
targets it has not found permanently closed, so identical pods never re-check them.

The stages, one module each (docs/design/scheduling.md draws the map):
- setup: `problem` (the input), `setup` (built once per problem), `pools` (each
  NodePool's types, domains and limits), `existing_nodes` (the nodes there are);
- placement: `plan` (one plan's order of work), `placement` (first fit, one pod at a
  time), `fit` (does a target take a pod), `free_pods` (the free pods packed together),
  `order` and `preferences` (the order pods go in, the preferences dropped);
- topology: `topology` (domains offered, allowed, counted as pods land), `context`
  (what is worked out once per pod shape);
- results: `results` (the outcome, with under-filled NodeClaims re-planned alone).
"""

from __future__ import annotations

import time

from nodewright.scheduling.solver.existing_nodes import PreparedNodes
from nodewright.scheduling.solver.order import balanced_order
from nodewright.scheduling.solver.plan import Solver
from nodewright.scheduling.solver.preferences import ignore_preferences, relax
from nodewright.scheduling.solver.problem import SchedulingProblem
from nodewright.scheduling.solver.results import SchedulingResult
from nodewright.scheduling.solver.setup import Setup
from nodewright.scheduling.solver.zones import zone_constraints

__all__ = [
    "PreparedNodes",
    "SchedulingProblem",
    "SchedulingResult",
    "Setup",
    "Solver",
    "_Setup",
    "_Solver",
    "balanced_order",
    "ignore_preferences",
    "relax",
    "solve",
    "zone_constraints",
]

# The names `Setup` and `Solver` had when they were private to one module (tests still
# import them so).
_Setup = Setup
_Solver = Solver


def solve(problem: SchedulingProblem, prepared: PreparedNodes | None = None,
          deadline: float | None = None) -> SchedulingResult:
    """Plan the problem. Untied pods that fit nowhere yet are packed together (`packing`).
    When no pod is tied to another (no topology, no host ports), the pods are also
    planned greedily, in the balanced and in Karpenter's plain order, and the cheapest of
    the three plans is kept: the packer wins on catalogs with many small types of
    different shapes; the greedy balanced order can win when every type has the same
    price per unit (the packer's LP is degenerate there and its rounding wastes). A first
    plan that needs no NodeClaim is kept without the cross-check: nothing costs less.

    `prepared` (optional) holds the existing nodes of a larger problem this one was cut
    from by taking nodes away with their bound pods; nodes found there are not worked out
    again. The plan is the same with or without it.

    `deadline` (seconds of wall time, the operator's SOLVE_DEADLINE; None for none): past
    it the packer stops improving its plans and the greedy cross-check is skipped. Every
    pod that can be placed still is, but the plan then depends on the machine's speed and
    load, so the simulator never sets one."""
    due = None if deadline is None else time.monotonic() + deadline
    setup = Setup(problem, prepared)
    solver = Solver(problem, setup=setup, due=due)
    result = solver.run(balanced=True)
    # A plan with no new NodeClaim and no pod waiting for a reservation cannot be beaten
    # (prices are never negative): the cross-check would only confirm it. A consolidation
    # that deletes is such a plan.
    if solver.all_free and len(problem.pods) > 1 and (result.nodeclaims or result.deferred):
        for balanced in (True, False):
            if due is not None and time.monotonic() >= due:
                break
            greedy = Solver(problem, pack_free=False, setup=setup, due=due,
                            cutoff=result.hourly_cost).run(balanced=balanced)
            # A plan that leaves more pods waiting for reservations is not cheaper.
            if (len(greedy.deferred), greedy.hourly_cost) < (
                    len(result.deferred), result.hourly_cost - 1e-9):
                result = greedy
    return result

