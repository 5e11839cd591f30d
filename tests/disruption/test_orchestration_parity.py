"""The orchestration's clean-up of what a disruption command leaves on the cluster, as
Karpenter v1.14.1 does it.

At the start of every pass, Karpenter's disruption controller takes every machine that no
command in its queue holds and that is not marked for deletion, removes the
`karpenter.sh/disrupted:NoSchedule` taint from its Node and clears the DisruptionReason
condition of its NodeClaim (pkg/controllers/disruption/controller.go lines 137-152,
`state.RequireNoScheduleTaint` and `state.ClearNodeClaimsCondition` in
pkg/controllers/state/statenode.go lines 513-590). The two are independent: a NodeClaim
keeps no DisruptionReason because its Node has lost the taint already.
"""

from __future__ import annotations

from nodewright.cluster import objects
from nodewright.controllers.disruption.verdict_publishing import (
    DISRUPTION_REASON,
    set_nodeclaim_condition,
)
from tests.disruption.test_drift_karpenter import fleet
from tests.harness import World


def test_a_stale_disruption_reason_is_cleared_from_an_untainted_node(world: World) -> None:
    """A command's clean-up removed the taint but lost the race for the NodeClaim (another
    controller wrote its status first), so the NodeClaim still says DisruptionReason
    Underutilized while nothing disrupts it. Static NodePools count such a NodeClaim as
    pending disruption, and `kubectl get nodeclaim -o yaml` shows a disruption that is not
    happening. The next pass clears it, as Karpenter's does."""
    [claim] = fleet(world, 1)
    [node] = world.nodes()
    assert not any(
        t.get("key") == "karpenter.sh/disrupted" for t in node["spec"].get("taints") or []
    )
    assert set_nodeclaim_condition(
        world.cluster,
        claim,
        DISRUPTION_REASON,
        "True",
        world.clock.now(),
        "Underutilized",
        "Underutilized",
    )
    assert objects.condition(world.cluster.get("NodeClaim", claim), DISRUPTION_REASON)

    world.advance(30)

    assert objects.name(world.nodeclaims()[0]) == claim
    assert objects.condition(world.cluster.get("NodeClaim", claim), DISRUPTION_REASON) is None
