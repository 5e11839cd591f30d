"""Capacity reservations, as Karpenter v1.14 selects, prices, launches into and falls back from
them (cases after its capacityreservation provider, nodeclass and instance suites). moto has
no capacity reservations: DescribeCapacityReservations is answered by tests/aws/reservations."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from nodewright.api.ec2nodeclass import CapacityReservationSelectorTerm
from nodewright.cloud.aws import capacity_reservations
from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.instances import instance_of
from nodewright.cloud.aws.node_class_resolution import resolve_node_class
from nodewright.cloud.aws.provider import AwsCloudProvider
from nodewright.scheduling.pricing import OfflinePriceSource

from .conftest import CallRecorder
from .fleet_injector import fake_response
from .reservations import FakeCapacityReservations, FakeReservation
from .reserving import NOW, TERMS, ZONE, fake, provider
from .test_launch import fleet_overrides, launch_template_user_data
from .world import ACCOUNT, CLUSTER, K8S_VERSION, FakeClock, World, node_class
from .world import nodeclaim as make_nodeclaim

__all__ = ["fake", "provider"]  # the fixtures of tests/aws/reserving.py

ANY_CAPACITY = ["reserved", "spot", "on-demand"]


def nodeclaim(name: str = "default-abcde", uid: str = "6f1c1b7e-1111-4a4a-9c9c-000000000001",
              capacity_types: list[str] | None = None) -> Any:
    return make_nodeclaim(name=name, uid=uid, requirements=[
        {"key": "node.kubernetes.io/instance-type", "operator": "In",
         "values": ["m5.large", "c5.large"]},
        {"key": "karpenter.sh/capacity-type", "operator": "In",
         "values": capacity_types or ANY_CAPACITY},
    ])


def term(**fields: Any) -> CapacityReservationSelectorTerm:
    return CapacityReservationSelectorTerm.model_validate(fields)


def test_terms_become_queries_of_active_reservations() -> None:
    queries = capacity_reservations.queries([
        term(id="cr-1"),
        term(tags={"team": "ml", "env": "*"}, ownerID=ACCOUNT, instanceMatchCriteria="open"),
    ])
    active = {"Name": "state", "Values": ["active"]}
    assert queries == [
        {"CapacityReservationIds": ["cr-1"], "Filters": [active]},
        {"Filters": [active, {"Name": "owner-id", "Values": [ACCOUNT]},
                     {"Name": "tag-key", "Values": ["env"]},
                     {"Name": "tag:team", "Values": ["ml"]},
                     {"Name": "instance-match-criteria", "Values": ["open"]}],
         "MaxResults": 1000},
    ]


def test_describe_keeps_selected_active_unexpired_reservations_once(
    clients: AwsClients, fake: FakeCapacityReservations
) -> None:
    fake.add(
        FakeReservation("cr-b", "m5.large", ZONE, tags={"team": "ml"}),
        FakeReservation("cr-a", "c5.large", ZONE, tags={"team": "ml"}, criteria="open"),
        FakeReservation("cr-old", "m5.large", ZONE, tags={"team": "ml"},
                        reservation_type="capacity-block", end=NOW - timedelta(minutes=1)),
        FakeReservation("cr-gone", "m5.large", ZONE, tags={"team": "ml"}, state="cancelled"),
        FakeReservation("cr-other", "m5.large", ZONE, tags={"team": "web"}),
    )
    found = capacity_reservations.describe(
        clients.ec2, [term(tags={"team": "ml"}), term(id="cr-b"), term(id="cr-missing")], NOW)
    assert [r.id for r in found] == ["cr-a", "cr-b"]
    assert found[0].match_criteria == "open" and found[1].available_count == 1


def test_the_node_class_status_lists_reservations_and_a_block_expiring_40_minutes_early(
    clients: AwsClients, world: World, fake: FakeCapacityReservations
) -> None:
    fake.add(
        FakeReservation("cr-odcr", "m5.large", ZONE, tags={"team": "ml"}),
        FakeReservation("cr-block", "p5.48xlarge", ZONE, tags={"team": "ml"},
                        reservation_type="capacity-block", end=NOW + timedelta(minutes=39)),
    )
    resolution = resolve_node_class(
        clients, node_class(capacityReservationSelectorTerms=TERMS), cluster=CLUSTER,
        kubernetes_version=K8S_VERSION, now=NOW)
    status = resolution.to_status(NOW).to_manifest()
    assert status["capacityReservations"] == [
        {"availabilityZone": ZONE, "endTime": "2026-11-26T12:39:00Z", "id": "cr-block",
         "instanceMatchCriteria": "targeted", "instanceType": "p5.48xlarge",
         "ownerID": ACCOUNT, "reservationType": "capacity-block", "interruptible": False,
         "state": "expiring"},
        {"availabilityZone": ZONE, "id": "cr-odcr", "instanceMatchCriteria": "targeted",
         "instanceType": "m5.large", "ownerID": ACCOUNT, "reservationType": "default",
         "interruptible": False, "state": "active"},
    ]
    assert {c["type"]: c["status"] for c in status["conditions"]}[
        "CapacityReservationsReady"] == "True"


def test_a_reservation_is_a_near_free_reserved_offering_while_it_has_room(
    provider: AwsCloudProvider, fake: FakeCapacityReservations
) -> None:
    fake.add(FakeReservation("cr-1", "m5.large", ZONE, available=2, tags={"team": "ml"}))
    catalog = provider.get_instance_types(node_class(capacityReservationSelectorTerms=TERMS))
    m5 = next(it for it in catalog if it.name == "m5.large")
    (reserved,) = [o for o in m5.offerings if o.capacity_type == "reserved"]
    on_demand = next(o for o in m5.offerings if o.capacity_type == "on-demand" and o.zone == ZONE)
    assert (reserved.zone, reserved.reservation_id, reserved.available) == (ZONE, "cr-1", True)
    assert reserved.price == pytest.approx(on_demand.price / 10_000_000)
    c5 = next(it for it in catalog if it.name == "c5.large")
    assert all(o.capacity_type != "reserved" for o in c5.offerings)


def test_a_reservation_is_launched_first_and_its_overflow_falls_back(
    provider: AwsCloudProvider, fake: FakeCapacityReservations, recorder: CallRecorder,
    clients: AwsClients,
) -> None:
    fake.add(FakeReservation("cr-1", "m5.large", ZONE, available=1, tags={"team": "ml"}))
    reserving = node_class(capacityReservationSelectorTerms=TERMS)

    first = provider.create(nodeclaim(), reserving)

    request = recorder.calls_of("ec2:CreateFleet")[0]
    assert request["TargetCapacitySpecification"]["DefaultTargetCapacityType"] == "on-demand"
    assert fleet_overrides(request) == [("m5.large", ZONE)]
    assert first.capacity_type == "reserved"
    assert first.labels["karpenter.k8s.aws/capacity-reservation-id"] == "cr-1"
    assert first.labels["karpenter.k8s.aws/capacity-reservation-type"] == "default"
    template = _template_data(clients, request)
    assert template["CapacityReservationSpecification"] == {
        "CapacityReservationPreference": "capacity-reservations-only",
        "CapacityReservationTarget": {"CapacityReservationId": "cr-1"},
    }

    second = provider.create(
        nodeclaim("default-fghij", "6f1c1b7e-1111-4a4a-9c9c-000000000002"), reserving)

    assert second.capacity_type == "spot"
    overflow = recorder.calls_of("ec2:CreateFleet")[1]
    assert overflow["TargetCapacitySpecification"]["DefaultTargetCapacityType"] == "spot"
    # Launches outside a reservation opt out of open ones: only selected reservations are used.
    assert _template_data(clients, overflow)["CapacityReservationSpecification"] == {
        "CapacityReservationPreference": "none"}
    assert launch_template_user_data(clients)


def test_a_reservation_that_answers_with_a_capacity_error_counts_as_empty(
    provider: AwsCloudProvider, fake: FakeCapacityReservations, clients: AwsClients,
) -> None:
    fake.add(FakeReservation("cr-1", "m5.large", ZONE, available=5, tags={"team": "ml"}))
    reserving = node_class(capacityReservationSelectorTerms=TERMS)

    def ice(**_: Any) -> Any:
        clients.ec2.meta.events.unregister("before-call.ec2.CreateFleet", ice)
        return fake_response(200, {"Errors": [{
            "ErrorCode": "ReservationCapacityExceeded",
            "ErrorMessage": "no room",
            "LaunchTemplateAndOverrides": {"Overrides": {
                "InstanceType": "m5.large", "AvailabilityZone": ZONE}}}], "Instances": []})

    clients.ec2.meta.events.register("before-call.ec2.CreateFleet", ice)
    with pytest.raises(Exception, match="InsufficientCapacity"):
        provider.create(nodeclaim(), reserving)

    assert provider.reservations.count("cr-1") == 0
    retried = provider.create(nodeclaim(), reserving)
    assert retried.capacity_type == "spot"


def test_a_capacity_block_launches_in_its_own_market_until_it_expires(
    provider: AwsCloudProvider, fake: FakeCapacityReservations, recorder: CallRecorder,
    clients: AwsClients,
) -> None:
    fake.add(FakeReservation("cr-block", "m5.large", ZONE, available=2, tags={"team": "ml"},
                             reservation_type="capacity-block",
                             end=NOW + timedelta(hours=2)))

    def launched(**_: Any) -> Any:  # moto's CreateFleet knows no capacity-block market
        clients.ec2.meta.events.unregister("before-call.ec2.CreateFleet", launched)
        return fake_response(200, {"Errors": [], "Instances": [{
            "InstanceIds": ["i-0123456789abcdef0"], "InstanceType": "m5.large",
            "LaunchTemplateAndOverrides": {"Overrides": {
                "InstanceType": "m5.large", "AvailabilityZone": ZONE}}}]})

    clients.ec2.meta.events.register("before-call.ec2.CreateFleet", launched)
    instance = provider.create(nodeclaim(), node_class(capacityReservationSelectorTerms=TERMS))

    request = recorder.calls_of("ec2:CreateFleet")[0]
    assert request["TargetCapacitySpecification"]["DefaultTargetCapacityType"] == (
        "capacity-block")
    assert "OnDemandOptions" not in request
    assert _template_data(clients, request)["InstanceMarketOptions"] == {
        "MarketType": "capacity-block"}
    assert instance.labels["karpenter.k8s.aws/capacity-reservation-type"] == "capacity-block"


def test_an_expiring_capacity_block_is_not_launched_into(
    clients: AwsClients, world: World, fake: FakeCapacityReservations, clock: FakeClock,
) -> None:
    fake.add(FakeReservation("cr-block", "m5.large", ZONE, available=2, tags={"team": "ml"},
                             reservation_type="capacity-block",
                             end=NOW + timedelta(minutes=30)))
    provider = AwsCloudProvider(clients, CLUSTER, clock=clock, prices=OfflinePriceSource(),
                                wall_clock=lambda: NOW)
    instance = provider.create(nodeclaim(), node_class(capacityReservationSelectorTerms=TERMS))
    assert instance.capacity_type == "spot"


def test_without_reserved_in_the_requirements_reservations_are_left_alone(
    provider: AwsCloudProvider, fake: FakeCapacityReservations,
) -> None:
    fake.add(FakeReservation("cr-1", "m5.large", ZONE, available=3, tags={"team": "ml"}))
    instance = provider.create(nodeclaim(capacity_types=["on-demand"]),
                               node_class(capacityReservationSelectorTerms=TERMS))
    assert instance.capacity_type == "on-demand"
    assert provider.reservations.count("cr-1") == 3


def _template_data(clients: AwsClients, request: dict[str, Any]) -> dict[str, Any]:
    name = request["LaunchTemplateConfigs"][0]["LaunchTemplateSpecification"][
        "LaunchTemplateName"]
    versions = clients.ec2.describe_launch_template_versions(LaunchTemplateName=name)
    data: dict[str, Any] = versions["LaunchTemplateVersions"][0]["LaunchTemplateData"]
    return data


def test_a_planned_nodeclaim_launches_into_its_reservation_and_the_overflow_stays_out(
    provider: AwsCloudProvider, fake: FakeCapacityReservations, recorder: CallRecorder,
) -> None:
    # What the scheduler writes (nodewright.scheduling.reservations): a NodeClaim holding
    # an instance of cr-2 is restricted to it; one planned after the reservations were
    # counted out is kept out of them, though EC2 still has room in both.
    fake.add(FakeReservation("cr-1", "m5.large", ZONE, available=3, tags={"team": "ml"}))
    fake.add(FakeReservation("cr-2", "c5.large", ZONE, available=2, tags={"team": "ml"}))
    reserving = node_class(capacityReservationSelectorTerms=TERMS)
    catalog = provider.get_instance_types(reserving)
    left = {o.reservation_id: o.reservation_capacity
            for it in catalog for o in it.offerings if o.reservation_id}
    assert left == {"cr-1": 3, "cr-2": 2}
    types = {"key": "node.kubernetes.io/instance-type", "operator": "In",
             "values": ["m5.large", "c5.large"]}

    into_cr2 = provider.create(make_nodeclaim(name="default-aaaaa", uid="uid-a", requirements=[
        types,
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["reserved"]},
        {"key": "karpenter.k8s.aws/capacity-reservation-id", "operator": "In",
         "values": ["cr-2"]},
    ]), reserving)
    outside = provider.create(make_nodeclaim(name="default-bbbbb", uid="uid-b", requirements=[
        types,
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ANY_CAPACITY},
        {"key": "karpenter.k8s.aws/capacity-reservation-id", "operator": "NotIn",
         "values": ["cr-1", "cr-2"]},
    ]), reserving)

    assert (into_cr2.capacity_type, into_cr2.instance_type) == ("reserved", "c5.large")
    assert into_cr2.labels["karpenter.k8s.aws/capacity-reservation-id"] == "cr-2"
    assert outside.capacity_type == "spot"
    assert "karpenter.k8s.aws/capacity-reservation-id" not in outside.labels
    assert [c["TargetCapacitySpecification"]["DefaultTargetCapacityType"]
            for c in recorder.calls_of("ec2:CreateFleet")] == ["on-demand", "spot"]


@pytest.mark.parametrize(("lifecycle", "kind", "interruptible"), [
    (None, "default", "false"),
    ("capacity-block", "capacity-block", "false"),
    ("interruptible-capacity-reservation", "default", "true"),
])
def test_a_described_reserved_instance_names_its_reservation_kind(
    lifecycle: str | None, kind: str, interruptible: str
) -> None:
    """As Karpenter's NewInstance (pkg/providers/instance/types.go): an instance listed from
    EC2 in a reservation it targeted is reserved capacity, and its InstanceLifecycle says
    whether the reservation is a capacity block or interruptible."""
    raw: dict[str, Any] = {
        "InstanceId": "i-0123456789abcdef0", "InstanceType": "m5.large",
        "Placement": {"AvailabilityZone": ZONE}, "State": {"Name": "running"},
        "CapacityReservationId": "cr-1",
        "CapacityReservationSpecification": {
            "CapacityReservationPreference": "capacity-reservations-only"},
    }
    if lifecycle:
        raw["InstanceLifecycle"] = lifecycle

    instance = instance_of(raw)

    assert instance.capacity_type == "reserved"
    assert instance.labels["karpenter.k8s.aws/capacity-reservation-id"] == "cr-1"
    assert instance.labels["karpenter.k8s.aws/capacity-reservation-type"] == kind
    assert instance.labels["karpenter.k8s.aws/capacity-reservation-interruptible"] == interruptible
