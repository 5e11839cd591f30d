"""An offering without a price is never launched when prices come from AWS, as in Karpenter
(pkg/providers/instancetype/offering/base_resolver.go: Available needs hasPrice); a NodeOverlay
that sets the type's price makes it available. Offline price sources (the CLI, the
simulator) estimate instead and mark the price estimated (docs/pricing.md).

The preview-type Its are Karpenter's pkg/providers/instancetype/suite_test.go, Context
"Preview instance type pricing" (p5e.48xlarge, absent from every price table)."""

from __future__ import annotations

from typing import Any, ClassVar

from nodewright.api.nodeoverlay import NodeOverlay
from nodewright.api.nodepool import NodePool
from nodewright.scheduling.catalog import InstanceType, build_catalog
from nodewright.scheduling.offline_data import instance_types
from nodewright.scheduling.overlays import build_store
from tests.overlay.karpenter_fixture import INSTANCE_TYPE, nodepool, overlay

ZONES = ("us-east-1a", "us-east-1b")
PREVIEW = "p5e.48xlarge"


class LivePrices:
    """Prices as the live AWS source answers them: these types only, no estimates."""

    ESTIMATES_UNPRICED: ClassVar[bool] = False

    def __init__(self, on_demand: dict[str, float], spot: dict[tuple[str, str], float]) -> None:
        self._on_demand, self._spot = on_demand, spot

    def on_demand(self, instance_type: str, region: str) -> float | None:
        return self._on_demand.get(instance_type)

    def spot(self, instance_type: str, zone: str) -> float | None:
        return self._spot.get((instance_type, zone))


class OfflinePrices(LivePrices):
    ESTIMATES_UNPRICED: ClassVar[bool] = True


def catalog(prices: Any, names: tuple[str, ...] = ("m5.large", PREVIEW),
            unavailable: frozenset[tuple[str, str, str]] = frozenset(),
            subnet_zones: tuple[str, ...] | None = None) -> dict[str, InstanceType]:
    infos = [info for info in instance_types() if info["InstanceType"] in names]
    offerings = [{"InstanceType": info["InstanceType"], "Location": zone}
                 for info in infos for zone in ZONES]
    built = build_catalog(infos, offerings, "us-east-1", prices, unavailable=unavailable,
                          subnet_zones=subnet_zones)
    return {it.name: it for it in built}


def available(it: InstanceType) -> list[tuple[str, str]]:
    return [(o.zone, o.capacity_type) for o in it.offerings if o.available]


def overlaid(types: dict[str, InstanceType], **spec: Any) -> dict[str, InstanceType]:
    body = overlay("preview-price", (INSTANCE_TYPE, "In", [PREVIEW]), **spec)
    store, conflicting = build_store([NodeOverlay.model_validate(body)], {
        "default": (NodePool.model_validate(nodepool()), list(types.values()))})
    assert conflicting == []
    applied = store.apply("default", list(types.values()))
    assert applied is not None
    return {it.name: it for it in applied}


LIVE = LivePrices({"m5.large": 0.096}, {("m5.large", "us-east-1a"): 0.03})


def test_an_unpriced_type_has_no_available_offering() -> None:
    """It("should not mark offerings as available for unpriced instance types without a
    NodeOverlay")"""
    types = catalog(LIVE)
    assert available(types[PREVIEW]) == []
    assert all(o.unpriced for o in types[PREVIEW].offerings)


def test_a_zone_without_a_spot_price_has_no_spot_offering() -> None:
    """Karpenter's SpotPrice answers false for a zone the history does not list: that
    offering is unavailable, the on-demand ones and the priced zone stay."""
    assert available(catalog(LIVE)["m5.large"]) == [
        ("us-east-1a", "on-demand"), ("us-east-1a", "spot"), ("us-east-1b", "on-demand")]


def test_an_overlay_price_makes_an_unpriced_type_available() -> None:
    """It("should mark offerings as available when a NodeOverlay defines a price for an
    unpriced instance type")"""
    preview = overlaid(catalog(LIVE), price="98.32")[PREVIEW]
    assert sorted(available(preview)) == sorted(
        (zone, capacity_type) for zone in ZONES for capacity_type in ("on-demand", "spot"))
    assert {o.price for o in preview.offerings} == {98.32}


def test_a_price_adjustment_does_not_price_an_unpriced_type() -> None:
    """Karpenter's GetOverlayPrice reads only a set price; an adjustment of nothing stays
    nothing."""
    assert available(overlaid(catalog(LIVE), priceAdjustment="+10%")[PREVIEW]) == []


def test_an_overlay_price_does_not_revive_an_offering_out_of_capacity() -> None:
    ice = frozenset({(PREVIEW, "us-east-1a", "on-demand")})
    preview = overlaid(catalog(LIVE, unavailable=ice), price="98.32")[PREVIEW]
    assert ("us-east-1a", "on-demand") not in available(preview)
    assert ("us-east-1b", "on-demand") in available(preview)


def test_an_overlay_price_does_not_open_a_zone_without_a_subnet() -> None:
    """The unpriced type's offerings where the node class has no subnet are listed, as
    Karpenter lists every zone, but a price from an overlay makes only the subnet's zone
    available (Karpenter's Available also needs the zone among the type's zones)."""
    types = catalog(LIVE, subnet_zones=("us-east-1a",))
    assert {o.zone for o in types[PREVIEW].offerings} == set(ZONES)
    preview = overlaid(types, price="98.32")[PREVIEW]
    assert sorted(available(preview)) == [("us-east-1a", "on-demand"), ("us-east-1a", "spot")]


def test_offline_prices_estimate_what_they_lack() -> None:
    """Offline (no AWS to ask) the catalog estimates a missing price and marks it so."""
    preview = catalog(OfflinePrices({}, {}))[PREVIEW]
    assert len(available(preview)) == 4
    assert all(o.price_estimated and o.price > 0 and not o.unpriced
               for o in preview.offerings)
