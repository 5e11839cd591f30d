"""Karpenter's instance provider suite (pkg/providers/instance/suite_test.go, v1.14.1): the
fleet error, List and subnet exhaustion Its not ported in tests/aws/test_instance_karpenter.py,
ported here: each test names its It/Entry. Where the Go suite sets CreateFleet's output,
FakeEC2 answers it (`respond`); Karpenter's InstanceProvider.Create is
`AwsCloudProvider.create` with the NodeClaim limited to the Go test's instance type.
"""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.fleet import SPOT_SLR_EVENT
from nodewright.cloud.aws.provider import AwsCloudProvider
from nodewright.cloud.provider import InsufficientCapacityError
from tests.aws.fake_ec2 import FakeEC2
from tests.aws.test_instance_karpenter import claim
from tests.aws.world import CLUSTER, World, node_class, nodeclaim

ZONES = ("us-west-2a", "us-west-2b", "us-west-2c")
NO_ADDRESSES = "InsufficientFreeAddressesInSubnet"


def fleet_errors(*errors: tuple[str, str, str, str]) -> dict[str, Any]:
    """CreateFleet's answer: no instance, one error per (code, type, zone, subnet)."""
    return {"Instances": [], "Errors": [
        {"ErrorCode": code, "ErrorMessage": "injected", "Lifecycle": "on-demand",
         "LaunchTemplateAndOverrides": {"LaunchTemplateSpecification": {},
                                        "Overrides": {"InstanceType": instance_type,
                                                      "AvailabilityZone": zone,
                                                      **({"SubnetId": subnet} if subnet else {})}}}
        for code, instance_type, zone, subnet in errors]}


def test_no_spot_service_linked_role_turns_spot_off(provider: AwsCloudProvider, world: World,
                                                    ec2: FakeEC2) -> None:
    """It("should return an ICE error when spot instances are used and SpotSLR can't be
    created"): every spot offering is out (m5.large's too), on-demand ones are not, and the
    NodeClaim is told why."""
    slr = "AuthFailure.ServiceLinkedRoleCreationNotPermitted"
    ec2.respond("CreateFleet", fleet_errors((slr, "m5.xlarge", "us-west-2a", ""),
                                            (slr, "m5.xlarge", "us-west-2b", "")))

    with pytest.raises(InsufficientCapacityError) as raised:
        provider.create(claim(["m5.xlarge"], ["spot", "on-demand"]), node_class())

    for instance_type in ("m5.xlarge", "m5.large"):
        for zone in ("us-west-2a", "us-west-2b"):
            assert provider.unavailable.is_unavailable(instance_type, zone, "spot")
            assert not provider.unavailable.is_unavailable(instance_type, zone, "on-demand")
    assert SPOT_SLR_EVENT in dict(raised.value.warnings)


def test_the_fleet_quota_is_a_capacity_error_of_its_offering(
    provider: AwsCloudProvider, world: World, ec2: FakeEC2
) -> None:
    """It("should return an ICE error when max fleet count is reached")"""
    ec2.respond("CreateFleet", fleet_errors(("MaxFleetCountExceeded", "m5.xlarge",
                                             "us-west-2a", "")))

    with pytest.raises(InsufficientCapacityError):
        provider.create(claim(["m5.xlarge"], ["spot", "on-demand"]), node_class())

    assert provider.unavailable.is_unavailable("m5.xlarge", "us-west-2a", "spot")
    assert not provider.unavailable.is_unavailable("m5.xlarge", "us-west-2b", "spot")
    assert not any(provider.unavailable.is_unavailable("m5.xlarge", zone, "on-demand")
                   for zone in ("us-west-2a", "us-west-2b"))


def test_list_returns_the_nodepool_instances(provider: AwsCloudProvider, clients: AwsClients,
                                             world: World) -> None:
    """It("should return all NodePool-owned instances from List"): instances tagged with a
    NodePool, a node class and the cluster, not the others (5 and 5 for Karpenter's 20 and
    20)."""
    owned = [{"Key": f"kubernetes.io/cluster/{CLUSTER}", "Value": "owned"},
             {"Key": "karpenter.sh/nodepool", "Value": "default"},
             {"Key": "karpenter.k8s.aws/ec2nodeclass", "Value": "default"},
             {"Key": "eks:eks-cluster-name", "Value": CLUSTER}]

    def run(tags: list[dict[str, str]]) -> list[str]:
        spec: Any = [{"ResourceType": "instance", "Tags": tags}] if tags else []
        found = clients.ec2.run_instances(ImageId="ami-ekslinux", InstanceType="m5.large",
                                          MinCount=5, MaxCount=5, TagSpecifications=spec)
        return [i["InstanceId"] for i in found["Instances"]]

    ours = run(owned)
    run([])

    assert {i.instance_id for i in provider.list()} == set(ours)


def zone_a_subnet(clients: AwsClients, world: World, cidr: str) -> str:
    return str(clients.ec2.create_subnet(
        VpcId=world.vpc_id, CidrBlock=cidr, AvailabilityZone="us-west-2a",
        TagSpecifications=[{"ResourceType": "subnet", "Tags": [
            {"Key": "karpenter.sh/discovery", "Value": CLUSTER}]}])["Subnet"]["SubnetId"])


@pytest.mark.parametrize(("extra_subnets", "exhausted", "zone_a_unavailable"), [
    pytest.param(0, 1, True, id="zone unavailable when 1 subnet gets ICEd with 1 subnet in zone"),
    pytest.param(2, 1, False, id="zone available when only 1 subnet gets ICEd with multiple "
                                 "subnets in zone"),
    pytest.param(2, 3, True, id="zone unavailable when all subnets in zone get ICEd"),
])
def test_a_full_subnet_takes_its_zone_only_when_it_is_the_last(
    provider: AwsCloudProvider, clients: AwsClients, world: World, ec2: FakeEC2,
    extra_subnets: int, exhausted: int, zone_a_unavailable: bool,
) -> None:
    """DescribeTable("should handle subnet IP exhaustion correctly"), one test per Entry:
    every type's zone a offerings (on-demand) are out only when none of its subnets has
    addresses left; zones b and c stay."""
    zone_a = [world.subnets["us-west-2a"],
              *(zone_a_subnet(clients, world, f"10.0.{40 + n}.0/24")
                for n in range(extra_subnets))]
    ec2.respond("CreateFleet", fleet_errors(*((NO_ADDRESSES, "m5.xlarge", "us-west-2a", subnet)
                                              for subnet in zone_a[:exhausted])))

    with pytest.raises(InsufficientCapacityError):
        provider.create(claim(["m5.xlarge"], ["on-demand"]), node_class())

    for instance_type in ("m5.xlarge", "m5.large", "c5.large"):
        assert provider.unavailable.is_unavailable(
            instance_type, "us-west-2a", "on-demand") is zone_a_unavailable
        assert not provider.unavailable.is_unavailable(instance_type, "us-west-2b", "on-demand")
        assert not provider.unavailable.is_unavailable(instance_type, "us-west-2c", "on-demand")


def test_a_full_subnet_is_passed_over_by_the_next_launch(
    provider: AwsCloudProvider, clients: AwsClients, world: World, ec2: FakeEC2
) -> None:
    """It("should deprioritize subnets on subsequent launches after subnet IP exhaustion"): a
    /26 (59 free) and a /24 (251 free) in one zone; the /24 is chosen, EC2 finds it full,
    and the next launch goes to the /26."""
    smaller = zone_a_subnet(clients, world, "10.0.50.0/26")
    spec = node_class(subnetSelectorTerms=[{"id": world.subnets["us-west-2a"]},
                                           {"id": smaller}])
    ec2.respond("CreateFleet", fleet_errors((NO_ADDRESSES, "m5.xlarge", "us-west-2a",
                                             world.subnets["us-west-2a"])))

    with pytest.raises(InsufficientCapacityError):
        provider.create(claim(["m5.xlarge"], ["on-demand"]), spec)
    assert {o.subnet_id for o in ec2.overrides()} == {world.subnets["us-west-2a"]}

    instance = provider.create(claim(["m5.xlarge"], ["on-demand"], name="again"), spec)

    assert {o.subnet_id for o in ec2.overrides()} == {smaller}
    assert instance.subnet_id == smaller


def test_a_zone_marked_unavailable_offers_nothing(provider: AwsCloudProvider,
                                                  world: World) -> None:
    """instancetype/suite_test.go It("should not return a zone when marking a zone as
    unavailable in the Insufficient Capacity Error Cache"): Karpenter marks each subnet of
    the zone; here the zone is marked for each capacity type (what a zone's last full subnet
    does)."""
    def zones_offered() -> set[str]:
        return {o.zone for it in provider.get_instance_types(node_class())
                for o in it.offerings if o.available}

    assert zones_offered() == set(ZONES)
    for capacity_type in ("on-demand", "spot"):
        provider.unavailable.mark_zone_unavailable("us-west-2a", capacity_type, NO_ADDRESSES)

    assert zones_offered() == {"us-west-2b", "us-west-2c"}


def test_truncation_that_breaks_min_values_is_a_capacity_error(
    provider: AwsCloudProvider, world: World, ec2: FakeEC2,
) -> None:
    """It("should return an ICE error when instance type truncation fails minValues
    validation"): 50 zones asked, three offered; nothing is launched."""
    claim = nodeclaim(requirements=[{"key": "topology.kubernetes.io/zone",
                                     "operator": "Exists", "minValues": 50}])
    with pytest.raises(InsufficientCapacityError, match="truncating instance types"):
        provider.create(claim, node_class())
    assert ec2.calls("CreateFleet") == []


def test_min_values_met_within_the_cheapest_sixty_types_launch(
    provider: AwsCloudProvider, world: World, ec2: FakeEC2,
) -> None:
    """Ours, the other side of Truncate: three zones asked, three offered."""
    claim = nodeclaim(requirements=[{"key": "topology.kubernetes.io/zone",
                                     "operator": "Exists", "minValues": 3},
                                    {"key": "karpenter.sh/capacity-type", "operator": "In",
                                     "values": ["on-demand"]}])
    assert provider.create(claim, node_class()).instance_id
