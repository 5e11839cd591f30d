"""Karpenter's instance provider suite (pkg/providers/instance/suite_test.go, v1.14.1),
ported where it applies, and the launch-time filters on the AWS path: the CreateFleet request
the provider sends is read from the FakeEC2 recorder, EC2's capacity errors injected by
offering."""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.api.nodeclaim import NodeClaim
from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.provider import AwsCloudProvider
from nodewright.cloud.provider import CloudProviderError, InsufficientCapacityError
from nodewright.scheduling.pricing import OfflinePriceSource
from tests.aws.fake_ec2 import FakeEC2
from tests.aws.reservations import FakeCapacityReservations, FakeReservation
from tests.aws.world import CLUSTER, FakeClock, World, node_class, nodeclaim

ZONES = ("us-west-2a", "us-west-2b", "us-west-2c")


def claim(types: list[str], capacity_types: list[str], name: str = "default-abcde",
          requests: dict[str, str] | None = None) -> Any:
    built = nodeclaim(name, uid=f"uid-{name}", requirements=[
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": types},
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": capacity_types},
    ])
    if requests:
        manifest = built.to_manifest()
        manifest["spec"]["resources"] = {"requests": requests}
        built = NodeClaim.model_validate(manifest)
    return built


class SpotPrices:
    """The offline on-demand list, and spot prices a test chooses."""

    def __init__(self, spot: dict[str, float]) -> None:
        self._on_demand = OfflinePriceSource()
        self._spot = spot

    def on_demand(self, instance_type: str, region: str) -> float | None:
        return self._on_demand.on_demand(instance_type, region)

    def spot(self, instance_type: str, zone: str) -> float | None:
        return self._spot.get(instance_type)


# --- Karpenter's instance suite -------------------------------------------------------------


def test_an_offering_ice_error_everywhere_is_an_insufficient_capacity_error(
    provider: AwsCloudProvider, ec2: FakeEC2
) -> None:
    """It("should return an ICE error when all attempted instance types return an ICE
    error"): spot offerings are marked unavailable first, on-demand ones after the retry."""
    for zone in ZONES:
        ec2.insufficient_capacity("m5.xlarge", zone)

    with pytest.raises(InsufficientCapacityError):
        provider.create(claim(["m5.xlarge"], ["spot", "on-demand"]), node_class())
    assert ec2.last("CreateFleet")["TargetCapacitySpecification"][
        "DefaultTargetCapacityType"] == "spot"
    assert all(provider.unavailable.is_unavailable("m5.xlarge", zone, "spot") for zone in ZONES)
    assert not any(provider.unavailable.is_unavailable("m5.xlarge", zone, "on-demand")
                   for zone in ZONES)

    with pytest.raises(InsufficientCapacityError):
        provider.create(claim(["m5.xlarge"], ["spot", "on-demand"]), node_class())
    assert ec2.last("CreateFleet")["TargetCapacitySpecification"][
        "DefaultTargetCapacityType"] == "on-demand"
    assert all(provider.unavailable.is_unavailable("m5.xlarge", zone, "on-demand")
               for zone in ZONES)


def test_some_offerings_refused_the_fleet_launches_from_the_rest(
    provider: AwsCloudProvider, ec2: FakeEC2
) -> None:
    """Ours, with the same fake: EC2 reports the refused overrides and launches another."""
    ec2.insufficient_capacity("m5.large", "us-west-2a")

    instance = provider.create(claim(["m5.large"], ["on-demand"]), node_class())

    assert instance.zone != "us-west-2a"
    assert provider.unavailable.is_unavailable("m5.large", "us-west-2a", "on-demand")


@pytest.fixture
def reservations(clients: AwsClients) -> FakeCapacityReservations:
    fake = FakeCapacityReservations(clients)
    fake.add(FakeReservation("cr-m5.large-1a-1", "m5.large", "us-west-2a", available=1,
                             tags={"team": "ml"}))
    return fake


RESERVING = {"capacityReservationSelectorTerms": [{"tags": {"team": "ml"}}]}


def test_a_reservation_error_is_insufficient_capacity_and_empties_the_reservation(
    provider: AwsCloudProvider, ec2: FakeEC2, reservations: FakeCapacityReservations
) -> None:
    """It("should return an ICE error when all attempted instance types return a
    ReservedCapacityReservation error")"""
    ec2.insufficient_capacity("m5.large", "us-west-2a", code="ReservationCapacityExceeded")

    with pytest.raises(InsufficientCapacityError):
        provider.create(claim(["m5.large"], ["reserved"]), node_class(**RESERVING))
    assert provider.reservations.count("cr-m5.large-1a-1") == 0


def test_throttling_does_not_empty_a_reservation(
    provider: AwsCloudProvider, ec2: FakeEC2, reservations: FakeCapacityReservations
) -> None:
    """It("should not mark capacity reservations unavailable for RequestLimitExceeded
    CreateFleet errors")"""
    ec2.insufficient_capacity("m5.large", "us-west-2a", code="RequestLimitExceeded")

    with pytest.raises(CloudProviderError) as raised:
        provider.create(claim(["m5.large"], ["reserved"]), node_class(**RESERVING))
    assert not isinstance(raised.value, InsufficientCapacityError)
    assert provider.reservations.count("cr-m5.large-1a-1") == 1


def test_on_demand_fleets_use_lowest_price(provider: AwsCloudProvider, ec2: FakeEC2) -> None:
    """It("should use lowest price allocation stragaty by default for on-demand
    nodeclaims")"""
    provider.create(claim(["m5.large"], ["on-demand"]), node_class())
    request = ec2.last("CreateFleet")
    assert request["OnDemandOptions"] == {"AllocationStrategy": "lowest-price"}
    assert "SpotOptions" not in request


def test_spot_fleets_use_price_capacity_optimized(provider: AwsCloudProvider,
                                                  ec2: FakeEC2) -> None:
    """It("should use price capacity optimized allocation stragaty by default for spot
    nodeclaims")"""
    provider.create(claim(["m5.large"], ["spot"]), node_class())
    request = ec2.last("CreateFleet")
    assert request["SpotOptions"] == {"AllocationStrategy": "price-capacity-optimized"}
    assert "OnDemandOptions" not in request


# --- the launch-time filters on the AWS path (ours) -----------------------------------------


def test_a_generic_nodeclaim_sends_no_metal_type_to_create_fleet(
    provider: AwsCloudProvider, ec2: FakeEC2
) -> None:
    """Karpenter's exotic-instance filter before the overrides: price-capacity-optimized
    never sees the metal type while an ordinary one fits."""
    provider.create(claim(["m5.large", "m5.metal"], ["on-demand"]), node_class())
    assert ec2.instance_types() == {"m5.large"}


def test_a_metal_type_is_launched_when_it_is_all_that_is_allowed(
    provider: AwsCloudProvider, ec2: FakeEC2
) -> None:
    provider.create(claim(["m5.metal"], ["on-demand"]), node_class())
    assert ec2.instance_types() == {"m5.metal"}


def test_types_too_small_for_the_requests_are_left_out(
    provider: AwsCloudProvider, ec2: FakeEC2
) -> None:
    """Karpenter's compatible-available filter: the NodeClaim's requests fit the type."""
    provider.create(claim(["t3.medium", "m5.xlarge"], ["on-demand"],
                          requests={"memory": "8Gi"}), node_class())
    assert ec2.instance_types() == {"m5.xlarge"}


def test_requests_no_type_fits_launch_nothing(provider: AwsCloudProvider, ec2: FakeEC2) -> None:
    with pytest.raises(InsufficientCapacityError, match="unavailable during launch"):
        provider.create(claim(["t3.medium"], ["on-demand"], requests={"cpu": "64"}),
                        node_class())
    assert ec2.calls("CreateFleet") == []


def test_spot_dearer_than_the_cheapest_on_demand_is_not_offered(
    clients: AwsClients, world: World, clock: FakeClock, ec2: FakeEC2
) -> None:
    """Karpenter's spot-offering filter: m5.xlarge spot at $1 is dearer than t3.medium
    on-demand, so the spot fleet carries t3.medium only."""
    provider = AwsCloudProvider(clients, CLUSTER, clock=clock,
                                prices=SpotPrices({"t3.medium": 0.01, "m5.xlarge": 1.0}))

    provider.create(claim(["t3.medium", "m5.xlarge"], ["spot", "on-demand"]), node_class())

    request = ec2.last("CreateFleet")
    assert request["TargetCapacitySpecification"]["DefaultTargetCapacityType"] == "spot"
    assert ec2.instance_types() == {"t3.medium"}
