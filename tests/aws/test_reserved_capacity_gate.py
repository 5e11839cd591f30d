"""FEATURE_GATES=ReservedCapacity=false on the AWS provider, end to end, as Karpenter v1.14.1
has it: the node class's capacity reservations are not looked up (no reserved offering, no
CapacityReservationsReady), launch templates use the open launch mode (no
CapacityReservationSpecification, so EC2 may match open ODCRs as before native reservation
support: pkg/providers/launchtemplate/types.go LaunchModeOpen), and an instance running
in a reservation is an on-demand one (pkg/providers/instance/types.go
capacityTypeFromInstance). The requests are read as sent, through tests/aws/fake_ec2.py.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from nodewright import metrics
from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.provider import AwsCloudProvider
from nodewright.scheduling.pricing import OfflinePriceSource
from tests.aws.fake_ec2 import FakeEC2
from tests.aws.offering_metrics import offering_series, publish
from tests.aws.reservations import FakeCapacityReservations, FakeReservation
from tests.aws.world import CLUSTER, FakeClock, World, node_class, nodeclaim

RESERVING = {"capacityReservationSelectorTerms": [{"tags": {"team": "ml"}}]}
RESERVATION_ID = "karpenter.k8s.aws/capacity-reservation-id"
AVAILABLE = "karpenter_cloudprovider_instance_type_offering_available"
PRICE = "karpenter_cloudprovider_instance_type_offering_price_estimate"


@pytest.fixture
def reservations(clients: AwsClients, world: World) -> FakeCapacityReservations:
    fake = FakeCapacityReservations(clients)
    fake.add(FakeReservation("cr-m5large1a", "m5.large", "us-west-2a", available=4, total=4,
                             tags={"team": "ml"}))
    return fake


def provider_with(clients: AwsClients, clock: FakeClock, *,
                  reserved_capacity: bool) -> AwsCloudProvider:
    return AwsCloudProvider(clients, CLUSTER, clock=clock, prices=OfflinePriceSource(),
                            reserved_capacity=reserved_capacity)


def template_of_an_on_demand_launch(clients: AwsClients, clock: FakeClock, ec2: FakeEC2, *,
                                    reserved_capacity: bool) -> dict[str, Any]:
    provider = provider_with(clients, clock, reserved_capacity=reserved_capacity)
    provider.create(nodeclaim(), node_class(**RESERVING))
    (data, *_) = ec2.template_data()
    return data


def test_with_the_gate_on_an_on_demand_launch_opts_out_of_open_reservations(
        clients: AwsClients, clock: FakeClock, ec2: FakeEC2,
        reservations: FakeCapacityReservations) -> None:
    """pkg/providers/launchtemplate/suite_test.go DescribeTable("should set the capacity
    reservation specification according to the capacity reservation feature flag"),
    Entry("enabled")"""
    data = template_of_an_on_demand_launch(clients, clock, ec2, reserved_capacity=True)
    assert data["CapacityReservationSpecification"] == {"CapacityReservationPreference": "none"}


def test_with_the_gate_off_launch_templates_use_the_open_launch_mode(
        clients: AwsClients, clock: FakeClock, ec2: FakeEC2,
        reservations: FakeCapacityReservations) -> None:
    """pkg/providers/launchtemplate/suite_test.go DescribeTable("should set the capacity
    reservation specification according to the capacity reservation feature flag"),
    Entry("disabled"): Karpenter's CreateLaunchTemplateInputBuilder with LaunchModeOpen
    sends neither a CapacityReservationSpecification nor a reservation's
    InstanceMarketOptions."""
    data = template_of_an_on_demand_launch(clients, clock, ec2, reserved_capacity=False)
    assert "CapacityReservationSpecification" not in data
    assert "InstanceMarketOptions" not in data
    assert reservations.requests == []  # the reservations were never looked up


def test_with_the_gate_off_a_reservation_is_no_offering(
        clients: AwsClients, clock: FakeClock, reservations: FakeCapacityReservations) -> None:
    """pkg/controllers/metrics/suite_test.go, Context "Availability" and Context "Pricing":
    It("should not expose the reserved capacity type if feature gate isn't enabled"). The
    metrics controller publishes an availability and a price series for every offering of
    the node class, and none of them is reserved, though the node class selects an active
    reservation with room (as the gate on shows)."""
    def published(reserved_capacity: bool) -> set[str]:
        provider = provider_with(clients, clock, reserved_capacity=reserved_capacity)
        types = publish(provider, node_class(**RESERVING),
                        reserved_capacity=reserved_capacity)
        assert types
        offerings = {(it.name, o.capacity_type, o.zone) for it in types for o in it.offerings}
        for metric in (AVAILABLE, PRICE):
            assert offerings <= offering_series(metric).keys(), metric
        return {o.capacity_type for it in types if it.name == "m5.large" for o in it.offerings}

    assert "reserved" in published(True)
    metrics.OFFERING_AVAILABLE.clear()
    metrics.OFFERING_PRICE_ESTIMATE.clear()

    assert published(False) == {"on-demand", "spot"}
    for metric in (AVAILABLE, PRICE):
        assert {capacity_type for _, capacity_type, _ in offering_series(metric)} == {
            "on-demand", "spot"}, metric


def test_with_the_gate_off_the_node_class_has_no_reservation_condition(
        clients: AwsClients, clock: FakeClock, reservations: FakeCapacityReservations) -> None:
    provider = provider_with(clients, clock, reserved_capacity=False)
    resolution = provider.resolve(node_class(**RESERVING))
    conditions = {c.type: c.status for c in resolution.conditions()}
    assert "CapacityReservationsReady" not in conditions
    assert conditions["Ready"] == "True"
    assert resolution.capacity_reservations == ()


def reserved_instance(ec2: FakeEC2, preference: str | None) -> str:
    """DescribeInstances answers with one instance of the cluster in the reservation cr-foo
    (`preference`: the CapacityReservationPreference it was launched with)."""
    raw: dict[str, Any] = {
        "InstanceId": "i-0123456789abcdef0", "InstanceType": "m5.large",
        "State": {"Name": "running"}, "LaunchTime": datetime(2026, 11, 28, tzinfo=UTC),
        "Placement": {"AvailabilityZone": "us-west-2a"},
        "PrivateDnsName": "ip-10-0-0-1.us-west-2.compute.internal",
        "CapacityReservationId": "cr-foo",
        "Tags": [{"Key": f"kubernetes.io/cluster/{CLUSTER}", "Value": "owned"},
                 {"Key": "karpenter.sh/nodepool", "Value": "default"},
                 {"Key": "karpenter.k8s.aws/ec2nodeclass", "Value": "default"},
                 {"Key": "eks:eks-cluster-name", "Value": CLUSTER}],
    }
    if preference is not None:
        raw["CapacityReservationSpecification"] = {"CapacityReservationPreference": preference}
    ec2.respond("DescribeInstances", {"Reservations": [{"Instances": [raw]}]})
    return str(raw["InstanceId"])


def test_an_instance_in_an_open_reservation_is_on_demand_without_the_gate(
        clients: AwsClients, clock: FakeClock, ec2: FakeEC2, world: World) -> None:
    """pkg/providers/instance/suite_test.go It("should treat instances which launched into
    open ODCRs as on-demand when the ReservedCapacity gate is disabled")"""
    instance_id = reserved_instance(ec2, preference=None)
    (found,) = provider_with(clients, clock, reserved_capacity=False).list()
    assert instance_id in found.provider_id
    assert found.labels["karpenter.sh/capacity-type"] == "on-demand"
    assert RESERVATION_ID not in found.labels


def test_an_instance_that_targeted_its_reservation_is_on_demand_without_the_gate(
        clients: AwsClients, clock: FakeClock, ec2: FakeEC2, world: World) -> None:
    """The same for an instance launched while the gate was on (capacity-reservations-only):
    Karpenter's capacityTypeFromInstance asks the gate before the preference, so after
    the gate is turned off its NodeClaim reads on-demand (and the demotion controller
    relabels it)."""
    reserved_instance(ec2, preference="capacity-reservations-only")
    (gated,) = provider_with(clients, clock, reserved_capacity=True).list()
    assert (gated.capacity_type, gated.labels[RESERVATION_ID]) == ("reserved", "cr-foo")

    reserved_instance(ec2, preference="capacity-reservations-only")
    (ungated,) = provider_with(clients, clock, reserved_capacity=False).list()
    assert ungated.capacity_type == "on-demand"
    assert ungated.labels["karpenter.sh/capacity-type"] == "on-demand"
    assert not {key for key in ungated.labels if key.startswith(
        "karpenter.k8s.aws/capacity-reservation")}
