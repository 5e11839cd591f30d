"""Offerings in zones the node class has no subnet in, as Karpenter v1.14.1 lists them
(pkg/providers/instancetype/offering/base_resolver.go: an offering for every zone of the
region where EC2 offers types, Available only where the zone is among the instance type's
zones, which types.go computeRequirements intersects with the subnets' zones).

The world's node class here has one subnet, in us-west-2a; EC2 (moto) offers m5.large in
us-west-2a to 2d. Those other zones' offerings are listed, priced, and never available: no
launch, no scheduling domain, no reservation and no overlay price makes them usable."""

from __future__ import annotations

import pytest

from nodewright.api.ec2nodeclass import EC2NodeClass
from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.provider import AwsCloudProvider
from nodewright.cloud.provider import InsufficientCapacityError
from nodewright.controllers.nodeclaim.drift import instance_type_drift
from nodewright.scheduling import labels
from nodewright.scheduling.catalog import InstanceType
from nodewright.scheduling.daemons import type_intersects
from nodewright.scheduling.nodepools import offering_values
from nodewright.scheduling.requirements import Requirement, Requirements
from tests.aws.reservations import FakeCapacityReservations, FakeReservation
from tests.aws.world import World, node_class, nodeclaim

ZONE_A, ZONE_B, ZONE_C, ZONE_D = "us-west-2a", "us-west-2b", "us-west-2c", "us-west-2d"
ALL_ZONES = {ZONE_A, ZONE_B, ZONE_C, ZONE_D}


def in_zone_a(world: World, **spec: object) -> EC2NodeClass:
    return node_class(subnetSelectorTerms=[{"id": world.subnets[ZONE_A]}], **spec)


def of_type(provider: AwsCloudProvider, klass: EC2NodeClass, name: str) -> InstanceType:
    return next(it for it in provider.get_instance_types(klass) if it.name == name)


def test_every_zone_ec2_offers_a_type_in_is_listed(
        provider: AwsCloudProvider, world: World) -> None:
    m5 = of_type(provider, in_zone_a(world), "m5.large")
    assert {o.zone for o in m5.offerings} == ALL_ZONES
    assert m5.zones() == [ZONE_A]
    for o in m5.offerings:
        assert o.available == (o.zone == ZONE_A)
        assert o.no_subnet == (o.zone != ZONE_A)
        assert o.price > 0
    # The zone id is known (and a requirement) only where a subnet is, as Karpenter's.
    assert {o.zone for o in m5.offerings if o.zone_id} == {ZONE_A}
    on_demand = {o.price for o in m5.offerings if o.capacity_type == "on-demand"}
    assert len(on_demand) == 1


def test_a_type_ec2_offers_only_outside_the_subnets_stays_out(
        provider: AwsCloudProvider, world: World) -> None:
    """trn1n.32xlarge is offered in us-west-2d only: with no subnet there it has no zone."""
    names = {it.name for it in provider.get_instance_types(in_zone_a(world))}
    assert "m5.large" in names
    assert "trn1n.32xlarge" not in names


def test_scheduling_sees_only_the_subnets_zones(
        provider: AwsCloudProvider, world: World) -> None:
    types = provider.get_instance_types(in_zone_a(world))
    assert offering_values(types, labels.ZONE) == {ZONE_A}
    m5 = of_type(provider, in_zone_a(world), "m5.large")
    in_b = Requirements([Requirement.single(labels.ZONE, ZONE_B)])
    assert not type_intersects(m5, in_b)
    cheapest = m5.cheapest_offering()
    assert cheapest is not None and cheapest.zone == ZONE_A


def test_a_launch_goes_only_to_the_subnets_zone(
        provider: AwsCloudProvider, world: World) -> None:
    instance = provider.create(nodeclaim(), in_zone_a(world))
    assert instance.zone == ZONE_A
    assert instance.subnet_id == world.subnets[ZONE_A]


def test_a_launch_asking_for_a_zone_without_a_subnet_finds_no_offering(
        provider: AwsCloudProvider, world: World) -> None:
    claim = nodeclaim(requirements=[
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.large"]},
        {"key": labels.ZONE, "operator": "In", "values": [ZONE_B]}])
    with pytest.raises(InsufficientCapacityError, match="no available offering"):
        provider.create(claim, in_zone_a(world))


def test_a_reservation_outside_the_subnets_stays_unavailable(
        clients: AwsClients, provider: AwsCloudProvider, world: World) -> None:
    """As Karpenter's reserved offering: Available needs the reservation's zone among the
    type's zones (the subnets' zones)."""
    reservations = FakeCapacityReservations(clients)
    reservations.add(
        FakeReservation("cr-a", "m5.large", ZONE_A, available=5, total=5, tags={"t": "r"}),
        FakeReservation("cr-b", "m5.large", ZONE_B, available=5, total=5, tags={"t": "r"}))
    klass = in_zone_a(world, capacityReservationSelectorTerms=[{"tags": {"t": "r"}}])
    m5 = of_type(provider, klass, "m5.large")
    reserved = {o.reservation_id: o for o in m5.offerings if o.capacity_type == "reserved"}
    assert reserved["cr-a"].available
    assert not reserved["cr-b"].available
    assert reserved["cr-b"].zone_id is None


def test_a_node_in_a_zone_whose_subnet_is_gone_is_not_instance_type_drift(
        provider: AwsCloudProvider, world: World) -> None:
    """Karpenter's instanceTypeNotFound reads every offering, available or not: the type is
    still offered in us-west-2b, so the node's drift is the provider's (its subnet)."""
    types = provider.get_instance_types(in_zone_a(world))
    node_labels = {labels.INSTANCE_TYPE: "m5.large", labels.ZONE: ZONE_B,
                   labels.CAPACITY_TYPE: "on-demand"}
    assert instance_type_drift(node_labels, types) is None
    gone = {**node_labels, labels.INSTANCE_TYPE: "trn1n.32xlarge", labels.ZONE: ZONE_D}
    assert instance_type_drift(gone, types) is not None
