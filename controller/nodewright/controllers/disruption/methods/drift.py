"""Drift: one drifted candidate (empty ones first, then the longest drifted), replaced by
whatever the solver says its pods need."""

from __future__ import annotations

from nodewright.cluster import objects
from nodewright.controllers.common import decision_log as ex
from nodewright.controllers.disruption import metrics as disruption_metrics
from nodewright.controllers.disruption.budgets import DRIFTED
from nodewright.controllers.disruption.candidates import Candidate, drift_order
from nodewright.controllers.disruption.commands import Command
from nodewright.controllers.disruption.methods.disruption_pass import Pass
from nodewright.controllers.nodeclaim.disruption_conditions import DRIFTED as DRIFTED_CONDITION


def drifted_candidates(p: Pass, *, static: bool = False) -> list[Candidate]:
    """Drifted candidates of dynamic NodePools, or with `static` of static ones."""
    # Most passes see no drifted NodeClaim: then no machine needs evaluating for drift.
    if not any(node.nodeclaim is not None
               and objects.condition_is_true(node.nodeclaim, DRIFTED_CONDITION)
               for node in p.nodes()):
        return []
    return [
        c for c in p.candidates(eventual=True)
        if objects.condition_is_true(c.nodeclaim, DRIFTED_CONDITION)
        and c.nodepool.is_static == static
    ]


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
        simulation = p.base.simulate([candidate], consolidation=False)
        if not simulation.all_scheduled:
            p.verdict(candidate.node, ex.DRIFT, ex.BLOCKED, ex.CAUSE_PODS_DO_NOT_FIT,
                      simulation.describe_failures())
            continue
        return Command(ex.DRIFT, DRIFTED, "", [candidate], list(simulation.new_claims),
                       destinations=simulation.destinations(p.base.is_virtual))
    return None
