"""The simulated EC2 launches a NodePool's NodeClaims as its NodeOverlays price them, as
the AWS provider does (the overlaid prices become the fleet's priorities: prioritized
on-demand, capacity-optimized-prioritized spot), and bills EC2's own prices."""

from __future__ import annotations

from nodewright.controllers.options import ControllerOptions
from tests.harness import NODE_CLASS, World, node_pool
from tests.overlay.test_nodeoverlay_stories import overlay
from tests.static.helpers import workload

TYPES = ["c5.large", "m5.large", "m5.2xlarge"]


def _launched_with(*overlays: dict[str, object]) -> World:
    world = World(options=ControllerOptions(node_overlay=True))
    world.apply(NODE_CLASS, node_pool(types=TYPES), *overlays)
    world.apply(workload("app", 1, "1"))
    assert world.settle()
    return world


def test_without_an_overlay_the_cheapest_type_launches() -> None:
    assert _launched_with().instance_types() == ["c5.large"]


def test_an_overlay_that_makes_a_large_type_cheapest_launches_it_billed_at_ec2s_price() -> None:
    plain = _launched_with()
    world = _launched_with(overlay("discounted", types=["m5.2xlarge"], price="0.001"))

    assert world.instance_types() == ["m5.2xlarge"]
    # Launched so at once: not a c5.large first that consolidation then replaced.
    assert [entry.instance_type for entry in world.cloud.ledger().entries] == ["m5.2xlarge"]
    now = world.clock.now()
    # EC2 charges m5.2xlarge's on-demand price, four times the m5.large's and more than the
    # c5.large the plain world launched: the overlay steered the choice, not the bill.
    assert world.cloud.hourly_cost(now) > plain.cloud.hourly_cost(plain.clock.now()) > 0.01
