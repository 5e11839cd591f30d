"""Capacity reservations in the simulated EC2: selected by the node class's terms, launched
into first, full ones fall back, an instance's end frees its place, a capacity block's end
reclaims its instances."""

from __future__ import annotations

from datetime import timedelta

from nodewright.cloud.sim import SimulatedEC2
from nodewright.cloud.sim.reservations import SimReservation
from nodewright.runtime import VirtualClock

from .conftest import node_class, nodeclaim

ANY = ("reserved", "spot", "on-demand")
TERMS = [{"tags": {"team": "ml"}}]


def ec2_with(clock: VirtualClock, *reservations: SimReservation) -> SimulatedEC2:
    return SimulatedEC2(clock, reservations=reservations)


def test_a_reservation_is_used_first_and_a_full_one_falls_back_to_spot() -> None:
    clock = VirtualClock()
    ec2 = ec2_with(clock, SimReservation("cr-1", "m5.large", "us-east-1a", 1,
                                         tags={"team": "ml"}))
    reserving = node_class(capacityReservationSelectorTerms=TERMS)

    first = ec2.create(nodeclaim("a", types=("m5.large", "c5.large"), capacity_types=ANY),
                       reserving)
    second = ec2.create(nodeclaim("b", types=("m5.large", "c5.large"), capacity_types=ANY),
                        reserving)

    assert (first.capacity_type, first.instance_type, first.zone) == (
        "reserved", "m5.large", "us-east-1a")
    assert first.labels["karpenter.k8s.aws/capacity-reservation-id"] == "cr-1"
    assert first.labels["karpenter.k8s.aws/capacity-reservation-type"] == "default"
    assert second.capacity_type == "spot"
    (status,) = ec2.resolve(reserving).capacity_reservations
    assert (status.id, status.available_count) == ("cr-1", 0)

    ec2.delete(first.provider_id)
    third = ec2.create(nodeclaim("c", types=("m5.large",), capacity_types=ANY), reserving)
    assert third.capacity_type == "reserved"


def test_reservations_are_used_only_when_selected_and_allowed() -> None:
    clock = VirtualClock()
    ec2 = ec2_with(clock, SimReservation("cr-1", "m5.large", "us-east-1a", 3,
                                         tags={"team": "ml"}))
    unselected = ec2.create(nodeclaim("a", types=("m5.large",), capacity_types=ANY),
                            node_class())
    not_allowed = ec2.create(nodeclaim("b", types=("m5.large",)),
                             node_class(capacityReservationSelectorTerms=TERMS))
    other_team = node_class(capacityReservationSelectorTerms=[{"tags": {"team": "web"}}])
    assert ec2.resolve(other_team).capacity_reservations == ()
    assert (unselected.capacity_type, not_allowed.capacity_type) == ("spot", "on-demand")


def test_a_capacity_block_reclaims_its_instances_when_it_ends() -> None:
    clock = VirtualClock()
    ends = clock.now() + timedelta(hours=1)
    ec2 = ec2_with(clock, SimReservation("cr-block", "m5.large", "us-east-1a", 2,
                                         reservation_type="capacity-block", end=ends,
                                         tags={"team": "ml"}))
    reserving = node_class(capacityReservationSelectorTerms=TERMS)
    instance = ec2.create(nodeclaim("a", types=("m5.large",), capacity_types=ANY), reserving)
    assert instance.labels["karpenter.k8s.aws/capacity-reservation-type"] == "capacity-block"

    clock.advance(20 * 60 + 1)  # within 40 minutes of the end: no more launches into it
    later = ec2.create(nodeclaim("b", types=("m5.large",), capacity_types=ANY), reserving)
    assert later.capacity_type == "spot"
    assert ec2.get(instance.provider_id).state in ("pending", "running")

    clock.advance(40 * 60)  # the end: EC2 takes the block's instance back
    assert ec2.get(instance.provider_id).state == "shutting-down"
    assert ec2.get(later.provider_id).state == "running"
    assert ec2.resolve(reserving).capacity_reservations == ()
