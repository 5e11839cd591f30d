"""The placement group registration hook holds a Node's registration until EC2 names the
partition its instance landed in.

Ported from aws/karpenter-provider-aws v1.14.1
pkg/cloudprovider/registrationhooks/placementgrouphook_test.go (Describe
"PlacementGroupRegistrationHook"). NodeClaims are launched through the provider (moto, the
placement groups served by tests/aws/test_placement_groups.py's fixture) where Karpenter
builds them by hand; DescribeInstances' answer with a partition number is queued on the fake
EC2 layer, as Karpenter stores it in its fake EC2API. The last story runs the hook inside the
NodeClaim lifecycle's registration."""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.api.nodeclaim import NodeClaim
from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.placement_group_hook import PlacementGroupRegistrationHook
from nodewright.cloud.aws.provider import AwsCloudProvider
from nodewright.cloud.provider import CloudProviderError, Instance, NodeClaimNotFoundError
from nodewright.cluster.memory import InMemoryCluster
from nodewright.controllers.registry import build_controllers
from nodewright.runtime import VirtualClock

from .fake_ec2 import FakeEC2
from .test_placement_groups import GROUP_ID_LABEL, PARTITION_LABEL, RACKS, groups
from .world import node_class, nodeclaim

__all__ = ["groups"]  # the fixture, used by name


def launched_claim(instance: Instance, claim: NodeClaim | None = None) -> dict[str, Any]:
    """The NodeClaim as the launch controller writes it: the instance's labels, its
    providerID."""
    base = (claim or nodeclaim()).model_dump(by_alias=True, exclude_none=True)
    base["metadata"]["labels"] = {**base["metadata"].get("labels", {}), **instance.labels}
    base["status"] = {"providerID": instance.provider_id}
    return base


def ec2_knows_partition(ec2: FakeEC2, instance: Instance, partition: int | None) -> None:
    """DescribeInstances' next answer: the instance in its group, in `partition`."""
    placement: dict[str, Any] = {"AvailabilityZone": instance.zone, "GroupId": "pg-0f0e0d0c"}
    if partition is not None:
        placement["PartitionNumber"] = partition
    ec2.respond("DescribeInstances", {"Reservations": [{"Instances": [{
        "InstanceId": instance.instance_id, "InstanceType": instance.instance_type,
        "Placement": placement, "State": {"Name": "running"},
        "Tags": [{"Key": key, "Value": value} for key, value in instance.tags.items()]}]}]})


def test_no_placement_group_passes_through(provider: AwsCloudProvider) -> None:
    """It("should pass through immediately when EC2NodeClass has no placement group")"""
    instance = provider.create(nodeclaim(), node_class())
    claim = launched_claim(instance)

    assert PlacementGroupRegistrationHook(provider).registered(claim) is None


@pytest.mark.parametrize(("selector", "strategy"), [
    pytest.param({"name": "training"}, "cluster", id="cluster"),
    pytest.param({"id": "pg-05eed000"}, "spread", id="spread"),
])
def test_cluster_and_spread_groups_pass_through(
    provider: AwsCloudProvider, groups: Any, selector: dict[str, str], strategy: str,
) -> None:
    """It("should pass through immediately when EC2NodeClass has a cluster placement group"),
    It("... has a spread placement group") — one test per It (named by the test id): the
    launch labels the group, no partition."""
    groups.add("spread", "pg-05eed000", "spread", SpreadLevel="rack")
    instance = provider.create(nodeclaim(), node_class(placementGroupSelector=selector))
    claim = launched_claim(instance)

    assert GROUP_ID_LABEL in claim["metadata"]["labels"]
    assert PARTITION_LABEL not in claim["metadata"]["labels"]
    assert PlacementGroupRegistrationHook(provider).registered(claim) is None


def test_a_known_partition_passes_through(
    provider: AwsCloudProvider, groups: Any, ec2: FakeEC2,
) -> None:
    """It("should pass through when partition label is already set") — a NodeClaim that
    asked for partition 3 is launched into it and labelled so."""
    instance = provider.create(nodeclaim(requirements=[
        {"key": PARTITION_LABEL, "operator": "In", "values": ["3"]}]),
        node_class(placementGroupSelector=RACKS))
    claim = launched_claim(instance)
    described = len(ec2.calls("DescribeInstances"))

    assert claim["metadata"]["labels"][PARTITION_LABEL] == "3"
    assert PlacementGroupRegistrationHook(provider).registered(claim) is None
    assert len(ec2.calls("DescribeInstances")) == described


def test_without_a_provider_id_registration_waits(
    provider: AwsCloudProvider, groups: Any,
) -> None:
    """It("should block registration when providerID is empty for partition placement
    group")"""
    instance = provider.create(nodeclaim(), node_class(placementGroupSelector=RACKS))
    claim = launched_claim(instance)
    claim["status"] = {}

    assert claim["metadata"]["labels"][PARTITION_LABEL] == ""
    assert PlacementGroupRegistrationHook(provider).registered(claim) is not None


def test_the_partition_ec2_names_is_labelled(
    provider: AwsCloudProvider, groups: Any, ec2: FakeEC2,
) -> None:
    """It("should set partition label and proceed when DescribeInstances returns partition
    number")"""
    instance = provider.create(nodeclaim(), node_class(placementGroupSelector=RACKS))
    claim = launched_claim(instance)
    ec2_knows_partition(ec2, instance, 3)

    assert PlacementGroupRegistrationHook(provider).registered(claim) is None
    assert claim["metadata"]["labels"][PARTITION_LABEL] == "3"


def test_an_instance_without_a_partition_number_passes_through(
    provider: AwsCloudProvider, groups: Any,
) -> None:
    """It("should pass through when instance has no partition number (not a partition PG)")
    — a group id label and no partition label."""
    instance = provider.create(nodeclaim(), node_class(placementGroupSelector=RACKS))
    claim = launched_claim(instance)
    del claim["metadata"]["labels"][PARTITION_LABEL]

    assert PlacementGroupRegistrationHook(provider).registered(claim) is None


def test_an_instance_that_is_gone_is_an_error(
    provider: AwsCloudProvider, groups: Any, clients: AwsClients,
) -> None:
    """It("should return error when instance is not found")"""
    instance = provider.create(nodeclaim(), node_class(placementGroupSelector=RACKS))
    claim = launched_claim(instance)
    clients.ec2.terminate_instances(InstanceIds=[instance.instance_id])

    with pytest.raises(NodeClaimNotFoundError):
        PlacementGroupRegistrationHook(provider).registered(claim)


def test_each_nodeclaim_gets_its_own_partition(
    provider: AwsCloudProvider, groups: Any, ec2: FakeEC2,
) -> None:
    """It("should handle multiple partition numbers correctly")"""
    hook = PlacementGroupRegistrationHook(provider)
    for index, partition in enumerate((1, 4, 7)):
        own = nodeclaim(f"claim-{index}", uid=f"6f1c1b7e-1111-4a4a-9c9c-00000000010{index}")
        instance = provider.create(own, node_class(placementGroupSelector=RACKS))
        claim = launched_claim(instance, own)
        ec2_knows_partition(ec2, instance, partition)

        assert hook.registered(claim) is None
        assert claim["metadata"]["labels"][PARTITION_LABEL] == str(partition)


def test_while_ec2_has_not_said_registration_waits(
    provider: AwsCloudProvider, groups: Any, ec2: FakeEC2,
) -> None:
    """Ours (the hook's Requeue branch): the instance is described without a partition yet."""
    instance = provider.create(nodeclaim(), node_class(placementGroupSelector=RACKS))
    claim = launched_claim(instance)
    ec2_knows_partition(ec2, instance, None)

    assert PlacementGroupRegistrationHook(provider).registered(claim) is not None
    assert claim["metadata"]["labels"][PARTITION_LABEL] == ""


def test_a_malformed_provider_id_is_an_error(provider: AwsCloudProvider) -> None:
    """The hook's ParseInstanceID error branch."""
    claim = {"metadata": {"labels": {GROUP_ID_LABEL: "pg-0f0e0d0c", PARTITION_LABEL: ""}},
             "status": {"providerID": "Bad providerID"}}

    with pytest.raises(CloudProviderError):
        PlacementGroupRegistrationHook(provider).registered(claim)


def test_the_aws_provider_offers_the_hook(provider: AwsCloudProvider) -> None:
    """cmd/controller/main.go: the controller registers the hook with the core controllers."""
    assert [hook.name for hook in provider.capabilities().registration_hooks] == [
        "PlacementGroupRegistrationHook"]


def test_the_aws_controllers_register_nodes_through_the_hook(provider: AwsCloudProvider) -> None:
    """The NodeClaim lifecycle the controller process builds asks the hook (outside the state
    lock, as every EC2 call)."""
    clock = VirtualClock()
    lifecycle = build_controllers(InMemoryCluster(clock), provider, clock).lifecycle

    assert [hook.name for hook in lifecycle.registration.hooks] == [
        "PlacementGroupRegistrationHook"]
