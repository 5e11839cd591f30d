"""Karpenter's EC2NodeClass capacity reservation reconciler tests
(pkg/controllers/nodeclass/capacityreservation_test.go, v1.14.1) and its capacity
reservation provider suite (pkg/providers/capacityreservation/suite_test.go), ported: each
test names its It/Entry. Karpenter's reconcile is `resolve_node_class` (at a given time), its status
`Resolution.to_status()`; EC2's DescribeCapacityReservations is the fake of
tests/aws/reservations.py, holding the Go suite's eight reservations (their ids without the
dots and dashes the CRD's id pattern refuses: Karpenter's suite turns that validation off).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from nodewright.api.ec2nodeclass import CapacityReservationStatus
from nodewright.cloud.aws.capacity_reservations import Availability, Reservation
from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.node_class_resolution import Resolution, resolve_node_class
from nodewright.cloud.aws.provider import AwsCloudProvider
from nodewright.scheduling.pricing import OfflinePriceSource
from tests.aws.reservations import FakeCapacityReservations, FakeReservation
from tests.aws.world import ACCOUNT, CLUSTER, K8S_VERSION, FakeClock, World, node_class

NOW = datetime(2026, 11, 28, 7, 0, tzinfo=UTC)
SELF = ACCOUNT
ALT = "012345678901"
DISCOVERY = {"karpenter.sh/discovery": "test-cluster"}
CAPACITY_BLOCK = {"reservation-type": "capacity-block"}
INTERRUPTIBLE = {"reservation-interruptible": "true"}


def karpenters_reservations() -> list[FakeReservation]:
    return [
        FakeReservation("cr-m5large1a1", "m5.large", "us-west-2a", available=10,
                        owner=SELF, interruptible=False),
        FakeReservation("cr-m5large1a2", "m5.large", "us-west-2a", available=10,
                        owner=SELF, tags=dict(DISCOVERY), interruptible=False),
        FakeReservation("cr-p548xlarge1a", "p5.48xlarge", "us-west-2a", available=2,
                        owner=ALT, tags=dict(CAPACITY_BLOCK), reservation_type="capacity-block",
                        end=NOW + timedelta(hours=24), interruptible=False),
        FakeReservation("cr-m5large1b1", "m5.large", "us-west-2b", available=15,
                        owner=SELF, interruptible=False),
        FakeReservation("cr-m5large1b2", "m5.large", "us-west-2b", available=15,
                        owner=ALT, tags=dict(DISCOVERY), interruptible=False),
        FakeReservation("cr-m5large1a3", "m5.large", "us-west-2a", available=5,
                        owner=SELF, criteria="open", interruptible=False),
        FakeReservation("cr-im5large1a1", "m5.large", "us-west-2a", available=10,
                        owner=SELF, criteria="open", tags=dict(INTERRUPTIBLE),
                        interruptible=True),
        FakeReservation("cr-nilinterruptible", "m5.large", "us-west-2a", available=5,
                        owner=SELF),
    ]


@pytest.fixture
def fake(clients: AwsClients, world: World) -> FakeCapacityReservations:
    reservations = FakeCapacityReservations(clients)
    reservations.add(*karpenters_reservations())
    return reservations


def reconcile(clients: AwsClients, *terms: dict[str, Any],
              now: datetime = NOW) -> Resolution:
    return resolve_node_class(clients, node_class(capacityReservationSelectorTerms=list(terms)),
                              cluster=CLUSTER, kubernetes_version=K8S_VERSION,
                              with_instance_profile=False, now=now)


def reserved(resolution: Resolution, now: datetime = NOW) -> list[CapacityReservationStatus]:
    ready = next(c for c in resolution.conditions() if c.type == "CapacityReservationsReady")
    assert ready.status == "True"
    return list(resolution.to_status(now).capacity_reservations or [])


def ids(resolution: Resolution, now: datetime = NOW) -> set[str]:
    return {r.id for r in reserved(resolution, now)}


def test_a_reservation_without_the_interruptible_field(clients: AwsClients,
                                                       fake: FakeCapacityReservations) -> None:
    """It("should handle capacity reservations with nil Interruptible field")"""
    [status] = reserved(reconcile(clients, {"id": "cr-nilinterruptible"}))
    assert status.id == "cr-nilinterruptible" and not status.interruptible


def test_a_reservation_by_id(clients: AwsClients, fake: FakeCapacityReservations) -> None:
    """It("should resolve capacity reservations by ID")"""
    [status] = reserved(reconcile(clients, {"id": "cr-m5large1a1"}))
    assert status.to_manifest() == {
        "availabilityZone": "us-west-2a", "id": "cr-m5large1a1",
        "instanceMatchCriteria": "targeted", "instanceType": "m5.large", "ownerID": SELF,
        "reservationType": "default", "state": "active", "interruptible": False}


def test_reservations_by_tags(clients: AwsClients, fake: FakeCapacityReservations) -> None:
    """It("should resolve capacity reservations by tags")"""
    assert ids(reconcile(clients, {"tags": DISCOVERY})) == {"cr-m5large1a2",
                                                            "cr-m5large1b2"}


def test_reservations_by_tags_and_owner(clients: AwsClients,
                                        fake: FakeCapacityReservations) -> None:
    """It("should resolve capacity reservations by tags + owner")"""
    assert ids(reconcile(clients, {"tags": DISCOVERY, "ownerID": SELF})) == {"cr-m5large1a2"}


def test_open_reservations(clients: AwsClients, fake: FakeCapacityReservations) -> None:
    """It("should resolve capacity reservations by instance match criteria 'open'")"""
    found = reserved(reconcile(clients, {"instanceMatchCriteria": "open"}))
    assert {r.id for r in found} == {"cr-m5large1a3", "cr-im5large1a1"}
    assert {r.instance_match_criteria for r in found} == {"open"}


def test_targeted_reservations(clients: AwsClients, fake: FakeCapacityReservations) -> None:
    """It("should resolve capacity reservations by instance match criteria 'targeted'")"""
    found = reserved(reconcile(clients, {"instanceMatchCriteria": "targeted"}))
    assert {r.id for r in found} == {"cr-m5large1a1", "cr-m5large1a2",
                                     "cr-p548xlarge1a", "cr-m5large1b1",
                                     "cr-m5large1b2", "cr-nilinterruptible"}
    assert {r.instance_match_criteria for r in found} == {"targeted"}


def test_targeted_reservations_with_tags(clients: AwsClients,
                                         fake: FakeCapacityReservations) -> None:
    """It("should resolve capacity reservations by instance match criteria with tags")"""
    found = reserved(reconcile(clients, {"instanceMatchCriteria": "targeted", "tags": DISCOVERY}))
    assert {r.id for r in found} == {"cr-m5large1a2", "cr-m5large1b2"}


def test_targeted_reservations_with_tags_and_owner(clients: AwsClients,
                                                   fake: FakeCapacityReservations) -> None:
    """It("should resolve capacity reservations by instance match criteria with tags and
    owner")"""
    [status] = reserved(reconcile(clients, {"instanceMatchCriteria": "targeted",
                                            "tags": DISCOVERY, "ownerID": SELF}))
    assert (status.id, status.instance_match_criteria, status.owner_id) == (
        "cr-m5large1a2", "targeted", SELF)


def test_an_expired_reservation_leaves_the_status(clients: AwsClients,
                                                  fake: FakeCapacityReservations) -> None:
    """It("should exclude expired capacity reservations")"""
    fake.reservations[0].end = NOW + timedelta(hours=1)
    assert ids(reconcile(clients, {"id": "cr-m5large1a1"})) == {"cr-m5large1a1"}

    later = NOW + timedelta(hours=2)
    assert ids(reconcile(clients, {"id": "cr-m5large1a1"}, now=later), later) == set()


@pytest.mark.parametrize("state", ["expired", "cancelled", "pending", "failed", "scheduled",
                                   "payment-pending", "payment-failed", "assessing",
                                   "delayed", "unsupported"])
def test_a_reservation_that_is_not_active_is_left_out(clients: AwsClients,
                                                      fake: FakeCapacityReservations,
                                                      state: str) -> None:
    """DescribeTable("should exclude non-active capacity reservations"): its Entries are
    generated from EC2's states (one test per state but active)."""
    fake.reservations[0].state = state
    assert ids(reconcile(clients, {"id": "cr-m5large1a1"})) == set()


def test_a_capacity_block(clients: AwsClients, fake: FakeCapacityReservations) -> None:
    """It("should discover capacity block reservations")"""
    [status] = reserved(reconcile(clients, {"tags": CAPACITY_BLOCK}))
    assert (status.id, status.reservation_type, status.state) == (
        "cr-p548xlarge1a", "capacity-block", "active")


def test_a_capacity_block_is_expiring_forty_minutes_before_its_end(
    clients: AwsClients, fake: FakeCapacityReservations
) -> None:
    """It("should mark capacity blocks as expiring 40 minutes prior to their endDate")"""
    fake.reservations[2].end = NOW + timedelta(minutes=40)
    [status] = reserved(reconcile(clients, {"tags": CAPACITY_BLOCK}))
    assert (status.id, status.reservation_type, status.state) == (
        "cr-p548xlarge1a", "capacity-block", "expiring")


def test_a_default_reservation_is_never_expiring(clients: AwsClients,
                                                 fake: FakeCapacityReservations) -> None:
    """It("shouldn't mark default capacity reservations as expiring 40 minutes prior to their
    endDate")"""
    for reservation in fake.reservations:
        reservation.end = NOW + timedelta(minutes=40)
    found = reserved(reconcile(clients, {"tags": DISCOVERY}))
    assert len(found) == 2
    assert {(r.reservation_type, r.state) for r in found} == {("default", "active")}


def test_the_node_class_is_ready_with_its_reservations(clients: AwsClients,
                                                       fake: FakeCapacityReservations) -> None:
    """DescribeTable("should update status condition on nodeClass as Ready")
    Entry("when reserved capacity feature flag is enabled"): eight conditions, Ready true."""
    resolution = resolve_node_class(clients, node_class(), cluster=CLUSTER,
                                    kubernetes_version=K8S_VERSION, now=NOW)
    conditions = resolution.to_status(NOW).conditions or []
    assert len(conditions) == 8
    assert next(c for c in conditions if c.type == "Ready").status == "True"


def test_without_the_reserved_capacity_gate_no_reservation_is_reconciled(
        clients: AwsClients, fake: FakeCapacityReservations) -> None:
    """DescribeTable("should update status condition on nodeClass as Ready")
    Entry("when reserved capacity feature flag is disabled"): seven conditions, Ready true;
    the capacity reservation reconciler does not run (pkg/controllers/nodeclass/
    controller.go), so even a node class selecting reservations resolves none and EC2 is
    not asked."""
    selecting = node_class(capacityReservationSelectorTerms=[{"tags": DISCOVERY}])
    resolution = resolve_node_class(clients, selecting, cluster=CLUSTER,
                                    kubernetes_version=K8S_VERSION, now=NOW,
                                    reserved_capacity=False)
    status = resolution.to_status(NOW)
    conditions = status.conditions or []
    assert len(conditions) == 7
    assert "CapacityReservationsReady" not in {c.type for c in conditions}
    assert next(c for c in conditions if c.type == "Ready").status == "True"
    assert status.capacity_reservations is None
    assert fake.requests == []


def test_an_interruptible_reservation(clients: AwsClients,
                                      fake: FakeCapacityReservations) -> None:
    """It("should discover interruptible reservations")"""
    [status] = reserved(reconcile(clients, {"tags": INTERRUPTIBLE}))
    assert (status.id, status.interruptible, status.state) == ("cr-im5large1a1", True,
                                                               "active")


# --- pkg/providers/capacityreservation/suite_test.go: Context("Availability Cache") ---------


def test_listing_reservations_syncs_their_availability(
    clients: AwsClients, fake: FakeCapacityReservations
) -> None:
    """It("should sync availability cache when listing reservations")"""
    provider = AwsCloudProvider(clients, CLUSTER, clock=FakeClock(),
                                prices=OfflinePriceSource(), wall_clock=lambda: NOW)
    found = provider.resolve(node_class(capacityReservationSelectorTerms=[{"tags": DISCOVERY}]))
    assert {r.id for r in found.capacity_reservations} == {"cr-m5large1a2", "cr-m5large1b2"}
    assert provider.reservations.count("cr-m5large1a2") == 10
    assert provider.reservations.count("cr-m5large1b2") == 15


def five_left() -> Availability:
    availability = Availability()
    availability.sync([Reservation("cr-test", "m5.large", "us-west-2a", SELF, "targeted",
                                   "default", available_count=5)])
    return availability


def test_a_launch_takes_one_from_its_reservation() -> None:
    """It("should decrement availability when reservation is marked as launched")"""
    availability = five_left()
    availability.mark_launched("cr-test-2")
    assert availability.count("cr-test") == 5
    availability.mark_launched("cr-test")
    assert availability.count("cr-test") == 4


def test_a_termination_gives_one_back_to_its_reservation() -> None:
    """It("should increment availability when reservation is marked as terminated")"""
    availability = five_left()
    availability.mark_terminated("cr-test-2")
    assert availability.count("cr-test") == 5
    availability.mark_terminated("cr-test")
    assert availability.count("cr-test") == 6
