"""The live catalog is built once and reused until something it depends on changes
(Karpenter's instance type and offering caches, pkg/providers/instancetype/instancetype.go
List and offering/base_resolver.go): a second call builds nothing, and each change (a price,
an unavailable offering marked or expired, the node class's kubelet, zones or placement,
a new DescribeInstanceTypes answer) gives the catalog a fresh build gives."""

from __future__ import annotations

import json
from dataclasses import fields
from datetime import UTC, datetime
from importlib import resources
from typing import Any

import pytest
from botocore.stub import Stubber

from nodewright.api.ec2nodeclass import EC2NodeClass
from nodewright.cloud.aws.catalog import DESCRIBE_CACHE_SECONDS, LiveCatalog
from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.pricing import LivePriceSource
from nodewright.cloud.aws.unavailable import (
    UNAVAILABLE_OFFERING_TTL_SECONDS,
    UnavailableOfferings,
)
from nodewright.scheduling.allocatable import NodeSettings
from nodewright.scheduling.catalog import InstanceType
from nodewright.scheduling.pricing import OfflinePriceSource, price_identity, price_version
from tests.aws.world import FakeClock, node_class

ZONES = frozenset({"us-west-2a", "us-west-2b"})
ZONE_IDS = {"us-west-2a": "usw2-az1", "us-west-2b": "usw2-az2"}


class ChangingPrices:
    """The offline list prices, some replaced by the test; every change bumps the version."""

    def __init__(self) -> None:
        self._list = OfflinePriceSource()
        self._replaced: dict[str, float] = {}
        self._version = 0

    def set(self, instance_type: str, price: float) -> None:
        self._replaced[instance_type] = price
        self._version += 1

    def on_demand(self, instance_type: str, region: str) -> float | None:
        return self._replaced.get(instance_type) or self._list.on_demand(instance_type, region)

    def spot(self, instance_type: str, zone: str) -> float | None:
        return None

    def version(self) -> int:
        return self._version


class Unversioned(ChangingPrices):
    """The same prices from a source that keeps no version."""

    version = None  # type: ignore[assignment]


@pytest.fixture
def prices() -> ChangingPrices:
    return ChangingPrices()


@pytest.fixture
def catalog(clients: AwsClients, clock: FakeClock, prices: ChangingPrices) -> LiveCatalog:
    return LiveCatalog(clients.ec2, "us-west-2", prices, UnavailableOfferings(clock), clock)


def listed(catalog: LiveCatalog, nc: EC2NodeClass | None = None, *,
           zones: frozenset[str] = ZONES, **placement: Any) -> list[InstanceType]:
    return catalog.instance_types(nc if nc is not None else node_class(), zones=zones,
                                  zone_ids=ZONE_IDS, **placement)


def fresh(catalog: LiveCatalog, nc: EC2NodeClass | None = None, *,
          zones: frozenset[str] = ZONES, **placement: Any) -> list[InstanceType]:
    """What a new catalog, sharing nothing built, lists for the same inputs (the same
    described answers, prices and unavailable offerings)."""
    new = LiveCatalog(catalog.ec2, catalog.region, catalog.prices, catalog.unavailable,
                      catalog.clock)
    return listed(new, nc, zones=zones, **placement)


def by_name(types: list[InstanceType]) -> dict[str, InstanceType]:
    return {it.name: it for it in types}


def same_objects(first: list[InstanceType], second: list[InstanceType]) -> bool:
    return len(first) == len(second) and all(a is b for a, b in zip(first, second, strict=True))


def available(it: InstanceType) -> set[tuple[str, str]]:
    return {(o.zone, o.capacity_type) for o in it.offerings if o.available}


def test_a_second_call_with_nothing_changed_builds_nothing(catalog: LiveCatalog) -> None:
    first = listed(catalog)
    built = catalog.types_built
    assert built == len(first) > 500
    second = listed(catalog)
    assert catalog.types_built == built
    assert second is not first  # a new list: a caller may sort or filter its own
    assert same_objects(first, second)


def test_a_price_update_rebuilds_the_catalog(
    catalog: LiveCatalog, prices: ChangingPrices
) -> None:
    first = listed(catalog)
    prices.set("m5.large", 0.5)
    second = listed(catalog)
    m5 = by_name(second)["m5.large"]
    assert {o.price for o in m5.offerings if o.capacity_type == "on-demand"} == {0.5}
    assert not any(a is b for a, b in zip(first, second, strict=True))
    assert second == fresh(catalog)


def test_a_source_without_a_version_is_read_at_every_call(
    clients: AwsClients, clock: FakeClock
) -> None:
    prices = Unversioned()
    catalog = LiveCatalog(clients.ec2, "us-west-2", prices, UnavailableOfferings(clock), clock)
    assert price_version(prices) is None
    listed(catalog)
    prices.set("m5.large", 0.5)  # no version to tell the catalog
    m5 = by_name(listed(catalog))["m5.large"]
    assert {o.price for o in m5.offerings if o.capacity_type == "on-demand"} == {0.5}


def test_an_offering_marked_unavailable_rebuilds_only_its_type(catalog: LiveCatalog) -> None:
    """Karpenter's per-type SeqNum: the other types are the very same objects."""
    first = by_name(listed(catalog))
    built = catalog.types_built
    catalog.unavailable.mark_unavailable("m5.xlarge", "us-west-2a", "spot", "ICE")
    second = by_name(listed(catalog))
    assert catalog.types_built == built + 1
    assert ("us-west-2a", "spot") not in available(second["m5.xlarge"])
    assert [name for name in second if second[name] is not first[name]] == ["m5.xlarge"]
    assert list(second.values()) == fresh(catalog)


def test_an_expired_unavailable_offering_is_available_again(
    catalog: LiveCatalog, clock: FakeClock
) -> None:
    catalog.unavailable.mark_unavailable("m5.xlarge", "us-west-2a", "spot", "ICE")
    assert ("us-west-2a", "spot") not in available(by_name(listed(catalog))["m5.xlarge"])
    clock.advance(UNAVAILABLE_OFFERING_TTL_SECONDS)
    again = listed(catalog)
    assert ("us-west-2a", "spot") in available(by_name(again)["m5.xlarge"])
    assert again == fresh(catalog)


def test_a_capacity_type_or_zone_marked_out_rebuilds_every_type(
    catalog: LiveCatalog, clock: FakeClock
) -> None:
    first = listed(catalog)
    catalog.unavailable.mark_capacity_type_unavailable("spot", "no spot role")
    second = listed(catalog)
    assert not any(a is b for a, b in zip(first, second, strict=True))
    assert all(o.capacity_type != "spot" for it in second for o in it.offerings if o.available)
    catalog.unavailable.mark_zone_unavailable("us-west-2b", "on-demand", "subnets full")
    third = listed(catalog)
    assert not any(a is b for a, b in zip(second, third, strict=True))
    assert all(o.zone == "us-west-2a" for it in third for o in it.offerings if o.available)
    assert third == fresh(catalog)


def test_a_placement_group_failure_counts_in_that_groups_catalog_only(
    catalog: LiveCatalog,
) -> None:
    """A capacity error inside a placement group counts for launches into it only."""
    grouped = by_name(listed(catalog, placement_strategy="spread", placement_group="pg-1"))
    catalog.unavailable.mark_unavailable("m5.xlarge", "us-west-2a", "on-demand", "ICE",
                                         placement_group="pg-1")
    regrouped = by_name(listed(catalog, placement_strategy="spread", placement_group="pg-1"))
    assert ("us-west-2a", "on-demand") not in available(regrouped["m5.xlarge"])
    assert [name for name in regrouped if regrouped[name] is not grouped[name]] == ["m5.xlarge"]
    ungrouped = by_name(listed(catalog))
    assert ("us-west-2a", "on-demand") in available(ungrouped["m5.xlarge"])
    assert list(regrouped.values()) == fresh(catalog, placement_strategy="spread",
                                             placement_group="pg-1")


def test_each_node_class_change_gives_its_own_catalog(catalog: LiveCatalog) -> None:
    """A change of kubelet, zones or placement is a different catalog; going back finds the
    first one again, unbuilt."""
    base = listed(catalog)
    kubelet = node_class(kubelet={"maxPods": 20})
    with_kubelet = listed(catalog, kubelet)
    assert {it.capacity["pods"] for it in with_kubelet} == {20_000}
    assert with_kubelet == fresh(catalog, kubelet)
    one_zone = listed(catalog, zones=frozenset({"us-west-2a"}))
    assert all(it.zones() == ["us-west-2a"] for it in one_zone)
    assert one_zone == fresh(catalog, zones=frozenset({"us-west-2a"}))
    cluster = listed(catalog, placement_strategy="cluster", placement_group="pg-1")
    assert len(cluster) < len(base)
    assert cluster == fresh(catalog, placement_strategy="cluster", placement_group="pg-1")
    built = catalog.types_built
    assert same_objects(listed(catalog), base)
    assert same_objects(listed(catalog, kubelet), with_kubelet)
    assert catalog.types_built == built


def test_only_so_many_catalogs_are_kept(catalog: LiveCatalog) -> None:
    catalog.catalogs_kept = 2
    first = listed(catalog, node_class(kubelet={"maxPods": 10}))
    listed(catalog, node_class(kubelet={"maxPods": 11}))
    listed(catalog, node_class(kubelet={"maxPods": 12}))  # the maxPods 10 one goes
    built = catalog.types_built
    again = listed(catalog, node_class(kubelet={"maxPods": 10}))
    assert catalog.types_built == built + len(first)
    assert again == first and not same_objects(again, first)


def test_an_unchanged_describe_refresh_keeps_the_catalog_a_changed_one_rebuilds(
    catalog: LiveCatalog, clients: AwsClients, clock: FakeClock
) -> None:
    """Karpenter's ChangeMonitor on the DescribeInstanceTypes answer: the same answer keeps
    every cached catalog, a different one flushes them."""
    first = listed(catalog)
    clock.advance(DESCRIBE_CACHE_SECONDS)
    assert same_objects(listed(catalog), first)

    def drop_m5_large(parsed: dict[str, Any], **_: Any) -> None:
        parsed["InstanceTypes"] = [t for t in parsed.get("InstanceTypes", [])
                                   if t["InstanceType"] != "m5.large"]

    clients.ec2.meta.events.register("after-call.ec2.DescribeInstanceTypes", drop_m5_large)
    try:
        clock.advance(DESCRIBE_CACHE_SECONDS)
        third = listed(catalog)
        assert "m5.large" not in by_name(third)
        assert not any(a is b for a, b in zip(first, third, strict=False))
        assert third == fresh(catalog)
    finally:
        clients.ec2.meta.events.unregister("after-call.ec2.DescribeInstanceTypes",
                                           drop_m5_large)


def test_node_settings_cache_key_covers_every_setting() -> None:
    """A setting missing from the key would hand one node class another's catalog."""
    assert len(NodeSettings().cache_key()) == len(fields(NodeSettings))


# --- The live prices' version ----------------------------------------------------------------


def on_demand_answer(instance_type: str, usd: str) -> dict[str, Any]:
    return {"PriceList": [json.dumps({
        "product": {"attributes": {"instanceType": instance_type}},
        "terms": {"OnDemand": {"T": {"priceDimensions": {"D": {"pricePerUnit": {"USD": usd}}}}}},
    })], "FormatVersion": "aws_v1"}


def spot_answer(usd: str) -> dict[str, Any]:
    return {"SpotPriceHistory": [{"InstanceType": "m5.large", "AvailabilityZone": "us-west-2a",
                                  "SpotPrice": usd, "Timestamp": datetime(2026, 1, 1, tzinfo=UTC)}]}


def test_live_prices_change_their_version_only_when_a_price_changes(
    clients: AwsClients, clock: FakeClock
) -> None:
    prices = LivePriceSource(clients.pricing, clients.ec2, "us-west-2", clock=clock)
    with Stubber(clients.pricing) as pricing, Stubber(clients.ec2) as ec2:
        def answers(on_demand: str, spot: str) -> None:
            pricing.add_response("get_products", on_demand_answer("m5.large", on_demand))
            pricing.add_response("get_products", on_demand_answer("m5.metal", "4.608"))
            ec2.add_response("describe_spot_price_history", spot_answer(spot))

        answers("0.096", "0.04")
        first = prices.version()
        assert prices.on_demand("m5.large", "us-west-2") == 0.096
        assert prices.version() == first  # nothing due, nothing asked
        answers("0.096", "0.04")
        clock.advance(12 * 3600)
        assert prices.version() == first  # asked again, the same answers
        answers("0.1", "0.04")
        clock.advance(12 * 3600)
        assert prices.version() != first
        assert prices.on_demand("m5.large", "us-west-2") == 0.1
        second = prices.version()
        answers("0.1", "0.03")
        clock.advance(12 * 3600)
        assert prices.version() != second
        assert prices.spot("m5.large", "us-west-2a") == 0.03
        pricing.assert_no_pending_responses()
        ec2.assert_no_pending_responses()


# --- The unavailable offerings' sequence numbers and snapshot ---------------------------------


def test_every_mark_and_every_expiry_moves_the_sequence_numbers(clock: FakeClock) -> None:
    """Karpenter's UnavailableOfferings.SeqNum (pkg/cache/unavailableofferings.go): bumped on
    MarkUnavailable and on eviction; a capacity type or zone moves every type's number."""
    unavailable = UnavailableOfferings(clock)
    start, m5, c5 = (unavailable.seqnum(), unavailable.type_seqnum("m5.large"),
                     unavailable.type_seqnum("c5.large"))
    unavailable.mark_unavailable("m5.large", "us-west-2a", "spot", "ICE")
    marked = unavailable.seqnum()
    assert marked != start
    assert unavailable.type_seqnum("m5.large") != m5
    assert unavailable.type_seqnum("c5.large") == c5
    clock.advance(UNAVAILABLE_OFFERING_TTL_SECONDS - 1)
    assert unavailable.seqnum() == marked
    clock.advance(1)
    assert unavailable.seqnum() != marked  # expired, without anyone asking about it
    c5 = unavailable.type_seqnum("c5.large")
    unavailable.mark_zone_unavailable("us-west-2b", "spot", "subnets full")
    assert unavailable.type_seqnum("c5.large") != c5


def test_a_snapshot_answers_as_the_cache_did_when_taken(clock: FakeClock) -> None:
    unavailable = UnavailableOfferings(clock)
    unavailable.mark_unavailable("m5.large", "us-west-2a", "spot", "ICE")
    unavailable.mark_unavailable("c5.large", "us-west-2a", "on-demand", "ICE", "pg-1")
    unavailable.mark_capacity_type_unavailable("reserved", "test")
    unavailable.mark_zone_unavailable("us-west-2c", "on-demand", "subnets full")
    asked = [(name, zone, capacity_type)
             for name in ("m5.large", "c5.large")
             for zone in ("us-west-2a", "us-west-2b", "us-west-2c")
             for capacity_type in ("spot", "on-demand", "reserved")]
    for group in (None, "pg-1", "pg-2"):
        snapshot = unavailable.snapshot(group)
        assert [snapshot(*key) for key in asked] == [
            unavailable.is_unavailable(*key, group) for key in asked]
    # 6 reserved, 2 on-demand in us-west-2c, m5.large spot and c5.large in pg-1 in us-west-2a
    assert sum(unavailable.snapshot("pg-1")(*key) for key in asked) == 10


# --- Shared by the catalogs of one process ---------------------------------------------------


def bundled_table() -> dict[str, Any]:
    """The table OfflinePriceSource reads by default, read again: the same prices, given."""
    data = resources.files("nodewright.scheduling").joinpath("data", "ondemand-list-prices.json")
    table: dict[str, Any] = json.loads(data.read_text())
    return table


def offline(clients: AwsClients, clock: FakeClock,
            unavailable: UnavailableOfferings | None = None) -> LiveCatalog:
    """A provider's catalog priced from the bundled offline table."""
    return LiveCatalog(clients.ec2, "us-west-2", OfflinePriceSource(),
                       unavailable or UnavailableOfferings(clock), clock)


def test_a_second_provider_given_the_same_inputs_lists_the_first_ones_types(
    clients: AwsClients, clock: FakeClock
) -> None:
    """Nothing but its inputs decides a catalog: with the bundled prices and no offering out,
    another catalog of the process builds none and lists what a build of its own lists."""
    first = listed(offline(clients, clock))
    second = offline(clients, clock)
    again = listed(second)
    assert second.types_built == 0
    assert same_objects(again, first)
    own_prices = LiveCatalog(clients.ec2, "us-west-2", OfflinePriceSource(bundled_table()),
                             UnavailableOfferings(clock), clock)
    assert listed(own_prices) == again
    assert own_prices.types_built == len(again)


def test_a_catalog_with_an_offering_out_builds_its_own(
    clients: AwsClients, clock: FakeClock
) -> None:
    shared = by_name(listed(offline(clients, clock)))
    unavailable = UnavailableOfferings(clock)
    unavailable.mark_unavailable("m5.xlarge", "us-west-2a", "spot", "ICE")
    own = offline(clients, clock, unavailable)
    types = by_name(listed(own))
    assert own.types_built == len(types)
    assert ("us-west-2a", "spot") not in available(types["m5.xlarge"])
    assert ("us-west-2a", "spot") in available(shared["m5.xlarge"])
    assert ("us-west-2a", "spot") in available(
        by_name(listed(offline(clients, clock)))["m5.xlarge"])


def test_only_the_bundled_offline_prices_name_an_identity() -> None:
    """A source whose prices may be its own (a table given, a subclass, a live source)
    shares nothing it built."""

    class Cheaper(OfflinePriceSource):
        def on_demand(self, instance_type: str, region: str) -> float | None:
            return 0.001

    assert price_identity(OfflinePriceSource()) == price_identity(OfflinePriceSource())
    assert price_identity(OfflinePriceSource()) is not None
    assert price_identity(OfflinePriceSource(bundled_table())) is None
    assert price_identity(Cheaper()) is None
    assert price_identity(ChangingPrices()) is None
