"""What a disruption budget that holds candidates back tells, as Karpenter v1.14.1 tells it.

Every Karpenter method passes over a candidate whose NodePool has no disruptions left
without a word about it: Emptiness.ComputeCommands and MultiNodeConsolidation set
`constrainedByBudgets` (pkg/controllers/disruption/emptiness.go lines 73-77,
multinodeconsolidation.go lines 66-71), Drift and SingleNodeConsolidation `continue`
(drift.go lines 70-75, singlenodeconsolidation.go lines 66-72). The one event is the
NodePool's DisruptionBlocked "No allowed disruptions for disruption reason ... due to
blocking budget" (helpers.go BuildDisruptionBudgetMapping, events/events.go
NodePoolBlockedForDisruptionReason), deduplicated per NodePool and reason for a minute.
"""

from __future__ import annotations

from nodewright.controllers.common import decision_log as ex
from tests.disruption.helpers import decisions
from tests.disruption.test_drift_karpenter import drift, fleet
from tests.harness import World

CLOSED = {"budgets": [{"nodes": "0"}]}


def test_nodes_held_back_by_a_budget_get_no_disruption_blocked_event(world: World) -> None:
    """Three nodes drift under a budget of zero. Nothing is replaced; the NodePool says
    why; the nodes and their NodeClaims get no DisruptionBlocked event of their own (on a
    large fleet that would be two events per held node every few minutes), while the
    decision log still names the budget for each of them."""
    originals = fleet(world, 3, CLOSED)
    drift(world, CLOSED)
    world.advance(600)

    assert {c["metadata"]["name"] for c in world.nodeclaims()} == originals
    pool_notes = [str(e.get("note")) for e in world.events(ex.DISRUPTION_BLOCKED, kind="NodePool")]
    assert any(
        "No allowed disruptions for disruption reason Drifted due to blocking budget" in note
        for note in pool_notes
    ), pool_notes
    for kind in ("Node", "NodeClaim"):
        # (A NodeClaim is told "nodeclaim does not have a node yet" while it launches.)
        about_budgets = [
            e["note"]
            for e in world.events(ex.DISRUPTION_BLOCKED, kind=kind)
            if "budget" in str(e.get("note")).lower()
        ]
        assert about_budgets == [], kind
    held = {d.nodeclaim for d in decisions(world) if d.cause == ex.CAUSE_BUDGET}
    assert held == originals
