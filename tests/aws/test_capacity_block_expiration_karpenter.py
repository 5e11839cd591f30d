"""Karpenter's capacity reservation expiration suite
(pkg/controllers/capacityreservation/expiration/suite_test.go, v1.14.1), ported: each test
names its It. The controller reads the NodeClaims' reservations from EC2 through the AWS
provider (`AwsCloudProvider.describe_reservations`: DescribeCapacityReservations by id, the
fake of tests/aws/reservations.py), as Karpenter's reads them through its capacity
reservation provider; the NodeClaims carry only the reservation id label, as in the Go
suite."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.provider import AwsCloudProvider
from nodewright.cluster.memory import InMemoryCluster
from nodewright.controllers.capacityreservation.expiration import CapacityBlockExpiration
from nodewright.runtime.clock import VirtualClock
from nodewright.scheduling.pricing import OfflinePriceSource
from tests.aws.reservations import FakeCapacityReservations, FakeReservation
from tests.aws.world import CLUSTER, FakeClock

OWNER = "012345678901"


@pytest.fixture
def wall() -> VirtualClock:
    return VirtualClock()


def reservation(ident: str, end: datetime, reservation_type: str = "default",
                interruptible: bool = False) -> FakeReservation:
    """Karpenter's makeCapacityReservation: an active targeted m5.large reservation."""
    return FakeReservation(ident, "m5.large", "us-west-2a", available=1, total=1,
                           owner=OWNER, reservation_type=reservation_type, end=end,
                           interruptible=interruptible)


def nodeclaim(reservation_id: str) -> dict[str, Any]:
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
            "metadata": {"name": reservation_id, "labels": {
                "karpenter.k8s.aws/capacity-reservation-id": reservation_id}},
            "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                      "name": "default"}, "requirements": []}}


def reconciled(clients: AwsClients, wall: VirtualClock,
               *reservations: FakeReservation) -> set[str]:
    """Apply one NodeClaim per reservation, reconcile the controller once: the NodeClaims
    left."""
    FakeCapacityReservations(clients).add(*reservations)
    provider = AwsCloudProvider(clients, CLUSTER, clock=FakeClock(),
                                prices=OfflinePriceSource(), wall_clock=wall.now)
    cluster = InMemoryCluster(wall)
    for entry in reservations:
        cluster.create(nodeclaim(entry.id))
    CapacityBlockExpiration(cluster, wall, provider).reconcile("")
    return {str(c["metadata"]["name"]) for c in cluster.list("NodeClaim")}


def test_nodeclaims_of_an_expiring_capacity_block_are_deleted(
        clients: AwsClients, wall: VirtualClock) -> None:
    """It("should delete nodeclaims associated with expiring capacity-block reservations")"""
    now = wall.now()
    left = reconciled(clients, wall,
                      reservation("cr-expiring", now + timedelta(minutes=39), "capacity-block"),
                      reservation("cr-active", now + timedelta(minutes=60), "capacity-block"))
    assert left == {"cr-active"}


def test_standard_reservations_in_the_expiration_window_keep_their_nodeclaims(
        clients: AwsClients, wall: VirtualClock) -> None:
    """It("should not delete nodeclaims associated with standard capacity reservations
    within the capacity block expiration window")"""
    now = wall.now()
    left = reconciled(clients, wall,
                      reservation("cr-default", now + timedelta(minutes=39)),
                      reservation("cr-default-interruptible", now + timedelta(minutes=39),
                                  interruptible=True))
    assert left == {"cr-default", "cr-default-interruptible"}


def test_each_reservation_is_asked_for_by_id_at_most_once_a_minute(
        clients: AwsClients, wall: VirtualClock) -> None:
    """The look-up Karpenter's List makes for id terms (one active-state query per id),
    cached a minute as its reservation cache is."""
    fake = FakeCapacityReservations(clients)
    fake.add(reservation("cr-block", wall.now() + timedelta(hours=5), "capacity-block"))
    ticks = FakeClock()
    provider = AwsCloudProvider(clients, CLUSTER, clock=ticks, prices=OfflinePriceSource(),
                                wall_clock=wall.now)
    for _ in range(3):
        (found,) = provider.describe_reservations(["cr-block", "cr-unknown"])
        assert found.id == "cr-block"
    assert [r["CapacityReservationIds"] for r in fake.requests] == [["cr-block"], ["cr-unknown"]]
    assert fake.requests[0]["Filters"] == [{"Name": "state", "Values": ["active"]}]
    ticks.advance(61)
    provider.describe_reservations(["cr-block"])
    assert len(fake.requests) == 3
