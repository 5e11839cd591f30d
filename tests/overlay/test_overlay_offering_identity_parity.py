"""An overlay's price stays on the offerings it selected when the cloud's list of offerings
changes between two evaluations of the overlays.

Karpenter v1.14.1 remembers each price update under the offering's requirements
(pkg/controllers/nodeoverlay/store.go: updateInstanceTypeOffering lines 255-264 and
applyPriceOverlays lines 155-173 key it by `offering.Requirements.String()`), and the store
is applied to whatever instance types the cloud answers at scheduling time (ApplyAll,
lines 61-79). The store is rebuilt only on an overlay, NodePool or node class change, or
after 6 hours, so in between EC2 may start offering a type in one more zone, or a capacity
reservation may go: the overlay must still price the offering it chose, and only that one.
"""

from __future__ import annotations

from tests.overlay.karpenter_fixture import (
    INSTANCE_TYPE,
    ZONE,
    Env,
    instance_type,
    nodepool,
    offering,
    overlay,
)


def test_a_zone_price_stays_in_its_zone_when_the_type_is_offered_in_another_zone() -> None:
    env = Env()
    env.cloud.instance_types = [
        instance_type(
            "m5.large", offering("spot", "zone-a", 0.04), offering("spot", "zone-c", 0.05)
        )
    ]
    env.apply(
        nodepool(),
        overlay(
            "zone-c-discount",
            (INSTANCE_TYPE, "In", ["m5.large"]),
            (ZONE, "In", ["zone-c"]),
            price="0.01",
        ),
    )
    env.reconcile()
    assert [(o.zone, o.price) for o in env.one().offerings] == [("zone-a", 0.04), ("zone-c", 0.01)]

    # EC2 now offers the type in zone-b too; the overlays have not been looked at again.
    env.cloud.instance_types = [
        instance_type(
            "m5.large",
            offering("spot", "zone-a", 0.04),
            offering("spot", "zone-b", 0.045),
            offering("spot", "zone-c", 0.05),
        )
    ]

    it = env.one()
    assert [(o.zone, o.price) for o in it.offerings] == [
        ("zone-a", 0.04),
        ("zone-b", 0.045),
        ("zone-c", 0.01),
    ]
    assert [o.zone for o in it.offerings if o.price_overlaid] == ["zone-c"]


def test_a_price_of_an_offering_that_went_away_lands_nowhere() -> None:
    env = Env()
    env.cloud.instance_types = [
        instance_type(
            "m5.large", offering("on-demand", "zone-a", 0.096), offering("spot", "zone-a", 0.04)
        )
    ]
    env.apply(
        nodepool(),
        overlay(
            "spot-price",
            (INSTANCE_TYPE, "In", ["m5.large"]),
            ("karpenter.sh/capacity-type", "In", ["spot"]),
            price="0.02",
        ),
    )
    env.reconcile()

    # Spot is no longer offered for the type; a new on-demand zone takes the second place.
    env.cloud.instance_types = [
        instance_type(
            "m5.large",
            offering("on-demand", "zone-a", 0.096),
            offering("on-demand", "zone-b", 0.096),
        )
    ]

    assert [(o.zone, o.capacity_type, o.price, o.price_overlaid) for o in env.one().offerings] == [
        ("zone-a", "on-demand", 0.096, False),
        ("zone-b", "on-demand", 0.096, False),
    ]
