"""CapacityReservationDrift, as Karpenter v1.14.1's isCapacityReservationDrifted
(pkg/cloudprovider/drift.go): a reserved instance drifts when its reservation is no longer
one of its EC2NodeClass's; one that fell back to on-demand (its reservation gone) does not.
Ported from pkg/cloudprovider/suite_test.go (It names in each test)."""

from __future__ import annotations

from typing import Any

from nodewright.api.nodeclaim import NodeClaimStatus
from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.drift import CAPACITY_RESERVATION_DRIFT
from nodewright.cloud.aws.provider import AwsCloudProvider

from .reservations import FakeCapacityReservations, FakeReservation
from .reserving import TERMS, ZONE, fake, provider
from .world import World, node_class, nodeclaim

__all__ = ["fake", "provider"]  # the fixtures of tests/aws/reserving.py


class InstanceReservation:
    """What DescribeInstances says of the instance's reservation (moto keeps none)."""

    def __init__(self, clients: AwsClients, security_group: str) -> None:
        self.reservation: str | None = None
        self.security_group = security_group
        clients.ec2.meta.events.register("after-call.ec2.DescribeInstances", self._answer)

    def _answer(self, parsed: dict[str, Any], **_: Any) -> None:
        for group in parsed.get("Reservations", []):
            for instance in group.get("Instances", []):
                # moto's CreateFleet does not apply the template's groups (EC2 does).
                instance["SecurityGroups"] = [{"GroupId": self.security_group}]
                if self.reservation is None:
                    instance.pop("CapacityReservationId", None)
                    instance["CapacityReservationSpecification"] = {
                        "CapacityReservationPreference": "none"}
                else:
                    instance["CapacityReservationId"] = self.reservation
                    instance["CapacityReservationSpecification"] = {
                        "CapacityReservationPreference": "capacity-reservations-only"}


def reserved_claim(provider: AwsCloudProvider) -> Any:
    claim = nodeclaim(requirements=[
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.large"]},
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["reserved"]},
    ])
    instance = provider.create(claim, node_class(capacityReservationSelectorTerms=TERMS))
    assert instance.capacity_type == "reserved"
    claim.status = NodeClaimStatus(provider_id=instance.provider_id)
    return claim


def test_a_nodeclaim_drifts_when_its_reservation_is_not_the_node_classs(
    provider: AwsCloudProvider, fake: FakeCapacityReservations, clients: AwsClients,
    world: World,
) -> None:
    """cloudprovider/suite_test.go: It("should dynamically drift nodeclaims for capacity
    reservations")."""
    fake.add(FakeReservation("cr-foo", "m5.large", ZONE, available=1, tags={"team": "ml"}))
    described = InstanceReservation(clients, world.security_group)
    claim = reserved_claim(provider)
    reserving = node_class(capacityReservationSelectorTerms=TERMS)

    described.reservation = "cr-foo"
    assert provider.drift_reason(claim, reserving) is None

    described.reservation = "cr-bar"
    assert provider.drift_reason(claim, reserving) == CAPACITY_RESERVATION_DRIFT


def test_a_nodeclaim_that_fell_back_to_on_demand_does_not_drift(
    provider: AwsCloudProvider, fake: FakeCapacityReservations, clients: AwsClients,
    world: World,
) -> None:
    """cloudprovider/suite_test.go: It("should not drift when capacity reservation falls back
    to on-demand")."""
    fake.add(FakeReservation("cr-foo", "m5.large", ZONE, available=1, tags={"team": "ml"}))
    described = InstanceReservation(clients, world.security_group)
    claim = reserved_claim(provider)

    described.reservation = None
    assert provider.drift_reason(claim, node_class(capacityReservationSelectorTerms=TERMS)) is None


def test_dropping_the_reservation_selector_drifts_reserved_nodeclaims(
    provider: AwsCloudProvider, fake: FakeCapacityReservations, clients: AwsClients,
    world: World,
) -> None:
    fake.add(FakeReservation("cr-foo", "m5.large", ZONE, available=1, tags={"team": "ml"}))
    described = InstanceReservation(clients, world.security_group)
    claim = reserved_claim(provider)
    described.reservation = "cr-foo"

    assert provider.drift_reason(claim, node_class()) == CAPACITY_RESERVATION_DRIFT
