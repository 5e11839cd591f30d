"""Karpenter v1.14.1 pkg/controllers/metrics/suite_test.go, ported: the offering metrics
controller's availability and price series (karpenter_cloudprovider_instance_type_offering_
available and _price_estimate), per instance type, capacity type and zone, over the
NodePools' node classes, with the ReservedCapacity gate on as the suite has it.

Karpenter's zones test-zone-1a/1b/1c are the world's us-west-2a/b/c, one subnet each; its
fourth zone without a subnet (test-zone-1a-local) is us-west-2d, where EC2 offers most types
and the world has no subnet. As Karpenter's, the catalog lists an offering in every zone
EC2 offers a type in, unavailable (but priced) where the node class has no subnet.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from nodewright import metrics
from nodewright.api.ec2nodeclass import EC2NodeClass
from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.provider import AwsCloudProvider
from nodewright.scheduling.catalog import InstanceType
from nodewright.scheduling.pricing import OfflinePriceSource
from tests.aws.offering_metrics import MetricsCluster, offering_series
from tests.aws.reservations import FakeCapacityReservations, FakeReservation
from tests.aws.world import CLUSTER, FakeClock, World, node_class

AVAILABLE = "karpenter_cloudprovider_instance_type_offering_available"
PRICE = "karpenter_cloudprovider_instance_type_offering_price_estimate"
ZONE_A, ZONE_B, ZONE_C, ZONE_D = "us-west-2a", "us-west-2b", "us-west-2c", "us-west-2d"
RESERVING = {"capacityReservationSelectorTerms": [{"tags": {"team": "ml"}}]}
# The suite's three reservations: cr-foo and cr-bar of m5.large, cr-baz of m5.metal.
RESERVED = {("m5.large", ZONE_A), ("m5.large", ZONE_B), ("m5.metal", ZONE_A)}


@pytest.fixture(autouse=True)
def _fresh_series() -> Iterator[None]:
    """Each test reads only the series its own controller wrote: none that an earlier test
    in this process left (a controller story of another file publishes its own zones)."""
    for gauge in (metrics.OFFERING_AVAILABLE, metrics.OFFERING_PRICE_ESTIMATE):
        gauge.clear()
    yield
    for gauge in (metrics.OFFERING_AVAILABLE, metrics.OFFERING_PRICE_ESTIMATE):
        gauge.clear()


@pytest.fixture
def cluster(clients: AwsClients, world: World, clock: FakeClock) -> MetricsCluster:
    return MetricsCluster(AwsCloudProvider(clients, CLUSTER, clock=clock,
                                           prices=OfflinePriceSource()))


@pytest.fixture
def reservations(clients: AwsClients, world: World) -> FakeCapacityReservations:
    fake = FakeCapacityReservations(clients)
    fake.add(FakeReservation("cr-foo", "m5.large", ZONE_A, available=10, total=10,
                             tags={"team": "ml"}),
             FakeReservation("cr-bar", "m5.large", ZONE_B, available=10, total=10,
                             tags={"team": "ml"}),
             FakeReservation("cr-baz", "m5.metal", ZONE_A, available=10, total=10,
                             tags={"team": "ml"}))
    return fake


def in_zone(world: World, zone: str, name: str = "default") -> EC2NodeClass:
    """A node class whose only subnet is the world's subnet in `zone`."""
    return node_class(name, subnetSelectorTerms=[{"id": world.subnets[zone]}])


def offerings(cluster: MetricsCluster, node_class: EC2NodeClass) -> list[InstanceType]:
    """The instance types the provider offers for the node class (the suite's
    InstanceTypesProvider.List), at least one."""
    types = cluster.provider.get_instance_types(node_class)
    assert types
    return types


def empty(cluster: MetricsCluster, reservation_id: str) -> None:
    """The suite's SetAvailableInstanceCount(id, 0): the reservation has no room left."""
    marker = cluster.provider.capabilities().reservations
    assert marker is not None
    marker.mark_unavailable(reservation_id)


def dims(it: InstanceType, capacity_type: str, zone: str) -> tuple[str, str, str]:
    return (it.name, capacity_type, zone)


# Context("Availability")

def test_availability_metrics_for_instance_types(cluster: MetricsCluster) -> None:
    """It("should expose availability metrics for instance types")"""
    cluster.apply(node_class(), "default")
    cluster.reconcile()
    available = offering_series(AVAILABLE)
    for it in offerings(cluster, node_class()):
        for o in it.offerings:
            assert available[dims(it, o.capacity_type, o.zone)] == (1.0 if o.available
                                                                     else 0.0)


def test_an_offering_is_available_only_where_the_subnets_select(
        cluster: MetricsCluster, world: World) -> None:
    """It("should only mark offering as available if the subnets select on it")"""
    cluster.apply(in_zone(world, ZONE_A), "default")
    cluster.reconcile()
    available = offering_series(AVAILABLE)
    for it in offerings(cluster, in_zone(world, ZONE_A)):
        for o in it.offerings:
            value = available[dims(it, o.capacity_type, o.zone)]
            assert value == (1.0 if o.available and o.zone == ZONE_A else 0.0)
    assert {zone for (_, _, zone), value in available.items() if value} == {ZONE_A}


def test_an_offering_is_available_when_any_nodepool_has_it_available(
        cluster: MetricsCluster, world: World) -> None:
    """It("should mark offerings as available as long as one NodePool marks it as
    available"): three NodePools, each of a node class with a subnet in one zone."""
    for zone, name in ((ZONE_A, "default"), (ZONE_B, "second"), (ZONE_C, "third")):
        cluster.apply(in_zone(world, zone, name), name)
    cluster.reconcile()
    available = offering_series(AVAILABLE)
    for it in offerings(cluster, in_zone(world, ZONE_A)):
        for o in it.offerings:
            if o.zone == ZONE_A:  # the other zones are the other NodePools' to open
                assert available[dims(it, o.capacity_type, o.zone)] == (1.0 if o.available
                                                                         else 0.0)
    assert {zone for (_, _, zone), value in available.items() if value} == {
        ZONE_A, ZONE_B, ZONE_C}


def reserved_series(metric: str) -> dict[tuple[str, str], float]:
    """The metric's reserved series, per (instance type, zone)."""
    return {(name, zone): value for (name, capacity_type, zone), value
            in offering_series(metric).items() if capacity_type == "reserved"}


def test_reservation_availability_is_injected(
        cluster: MetricsCluster, reservations: FakeCapacityReservations) -> None:
    """It("should inject reservation availability when selecting on a capacity
    reservation"): the three reservations are available; one emptied reads 0 while the
    others stay 1; once the node class selects none of them, all three read 0 (the
    reserved series of every zone a type is offered in are kept at 0, not dropped)."""
    cluster.apply(node_class(**RESERVING), "default")
    cluster.reconcile()
    available = offering_series(AVAILABLE)
    reserved = set()
    for it in offerings(cluster, node_class(**RESERVING)):
        for o in it.offerings:
            if o.capacity_type == "reserved" and available[dims(it, "reserved", o.zone)] == 1:
                reserved.add((it.name, o.zone))
    assert reserved == RESERVED

    empty(cluster, "cr-foo")
    cluster.reconcile()
    series = reserved_series(AVAILABLE)
    assert {key: series[key] for key in RESERVED} == {
        ("m5.large", ZONE_A): 0.0, ("m5.large", ZONE_B): 1.0, ("m5.metal", ZONE_A): 1.0}

    cluster.apply(node_class())  # status.capacityReservations emptied
    cluster.reconcile()
    assert not any(o.capacity_type == "reserved" for it in offerings(cluster, node_class())
                   for o in it.offerings)
    series = reserved_series(AVAILABLE)
    assert {key: series.get(key) for key in RESERVED} == dict.fromkeys(RESERVED, 0.0)


# Context("Pricing")

def test_price_metrics_for_instance_types(cluster: MetricsCluster) -> None:
    """It("should expose pricing metrics for instance types")"""
    cluster.apply(node_class(), "default")
    cluster.reconcile()
    prices = offering_series(PRICE)
    for it in offerings(cluster, node_class()):
        for o in it.offerings:
            assert prices[dims(it, o.capacity_type, o.zone)] == o.price


def test_reservation_prices_are_injected(
        cluster: MetricsCluster, reservations: FakeCapacityReservations) -> None:
    """It("should inject reservation pricing when selecting on a capacity reservation"):
    each reservation has a price; an emptied one keeps it (the offering exists, it is
    only unavailable); once the node class selects none, their prices read 0."""
    cluster.apply(node_class(**RESERVING), "default")
    cluster.reconcile()
    prices = offering_series(PRICE)
    priced = set()
    for it in offerings(cluster, node_class(**RESERVING)):
        for o in it.offerings:
            if o.capacity_type == "reserved" and prices[dims(it, "reserved", o.zone)] > 0:
                priced.add((it.name, o.zone))
    assert priced == RESERVED

    empty(cluster, "cr-foo")
    cluster.reconcile()
    series = reserved_series(PRICE)
    assert all(series[key] > 0 for key in RESERVED)

    cluster.apply(node_class())  # status.capacityReservations emptied
    cluster.reconcile()
    series = reserved_series(PRICE)
    assert {key: series.get(key) for key in RESERVED} == dict.fromkeys(RESERVED, 0.0)


def test_offerings_without_a_subnet_still_have_a_price(
        cluster: MetricsCluster, world: World) -> None:
    """It("should expose pricing metrics for offerings even if no subnets select on it"):
    with one subnet, in us-west-2a, the other zones' offerings are listed unavailable and
    each has its price series. The suite's price source lacks some prices (their series
    read 0); the offline one prices every offering, listed or estimated, so each reads its
    price, above 0, in all four zones."""
    cluster.apply(in_zone(world, ZONE_A), "default")
    cluster.reconcile()
    prices = offering_series(PRICE)
    priced_zones = set()
    for it in offerings(cluster, in_zone(world, ZONE_A)):
        assert it.zones() == [ZONE_A]
        for o in it.offerings:
            value = prices[dims(it, o.capacity_type, o.zone)]
            assert value == o.price
            assert value > 0
            if o.zone != ZONE_A:
                assert not o.available
            priced_zones.add(o.zone)
    assert priced_zones == {ZONE_A, ZONE_B, ZONE_C, ZONE_D}
