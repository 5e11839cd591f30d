"""Karpenter's cloud provider suite (pkg/cloudprovider/suite_test.go, v1.14.1), ported: each
test names its It/Entry. Karpenter's CloudProvider.Create and IsDrifted are
`AwsCloudProvider.create` and `drift_reason` here, on moto. Where Karpenter sets the instance
DescribeInstances returns (its AMI, subnet, security groups), `InstanceView` rewrites what
moto answers, as the Go suite sets DescribeInstancesBehavior's output.

Karpenter reads the node class's resolved values from its status; Nodewright resolves them
itself, so where a Go test writes a status (security groups, subnets) the port changes the
selector terms or the AWS resources they match instead.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from moto.ec2.models import ec2_backends

from nodewright.api.hashes import (
    NODECLASS_HASH,
    NODECLASS_HASH_VERSION,
    NODECLASS_HASH_VERSION_VALUE,
    node_class_hash_annotations,
)
from nodewright.api.nodeclaim import NodeClaim, NodeClaimStatus
from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.drift import (
    AMI_DRIFT,
    NODECLASS_DRIFT,
    SECURITY_GROUP_DRIFT,
    SUBNET_DRIFT,
)
from nodewright.cloud.aws.provider import AwsCloudProvider
from nodewright.cloud.provider import (
    CloudProviderError,
    Instance,
    InsufficientCapacityError,
    NodeClaimNotFoundError,
    NodeClassNotReadyError,
)
from tests.aws.fake_ec2 import FakeEC2
from tests.aws.world import ACCOUNT, X86_IMAGE, World, node_class, nodeclaim

CONTEXT = "context-1234"


class InstanceView:
    """What DescribeInstances says of every instance: moto's answer, with the fields a test
    set replaced (Karpenter's DescribeInstancesBehavior.Output)."""

    def __init__(self, clients: AwsClients) -> None:
        self.fields: dict[str, Any] = {}
        self.empty = False
        clients.ec2.meta.events.register("after-call.ec2.DescribeInstances", self._answer)

    def _answer(self, parsed: dict[str, Any], **_: Any) -> None:
        if self.empty:
            parsed["Reservations"] = []
            return
        for group in parsed.get("Reservations", []):
            for instance in group.get("Instances", []):
                instance.update(copy.deepcopy(self.fields))


def groups(*ids: str) -> list[dict[str, str]]:
    return [{"GroupId": group} for group in ids]


@pytest.fixture
def launched(provider: AwsCloudProvider, clients: AwsClients, world: World) -> Instance:
    """An m5.large (amd64) launched from the default node class."""
    claim = nodeclaim(requirements=[
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.large"]},
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
    ])
    instance = provider.create(claim, node_class())
    assert instance.image_id == X86_IMAGE
    return instance


@pytest.fixture
def view(clients: AwsClients, world: World, launched: Instance) -> InstanceView:
    # moto's CreateFleet does not apply the launch template's security groups (EC2 does).
    found = InstanceView(clients)
    found.fields["SecurityGroups"] = groups(world.security_group)
    return found


def drift_claim(instance: Instance, launched_from: Any = None, **status: Any) -> NodeClaim:
    """The NodeClaim of `instance` as the drift check sees it: provider id, image id,
    instance-type label and the hash annotations of the spec it launched from."""
    claim = nodeclaim()
    claim.metadata.labels = {**(claim.metadata.labels or {}),
                             "node.kubernetes.io/instance-type": instance.instance_type}
    claim.metadata.annotations = node_class_hash_annotations(launched_from or node_class())
    claim.status = NodeClaimStatus(**{"provider_id": instance.provider_id,
                                      "image_id": instance.image_id, **status})
    return claim


# --- Create ---------------------------------------------------------------------------------


def test_a_node_class_that_is_not_ready_refuses_the_launch(
    provider: AwsCloudProvider, world: World
) -> None:
    """It("should return NodeClassNotReady error on creation if NodeClass is not ready"): a
    node class whose subnet selector matches nothing."""
    with pytest.raises(NodeClassNotReadyError):
        provider.create(nodeclaim(), node_class(
            subnetSelectorTerms=[{"tags": {"karpenter.sh/discovery": "nobody"}}]))


def test_a_node_class_whose_tags_fail_validation_refuses_the_launch(
    provider: AwsCloudProvider, world: World
) -> None:
    """It("should return NodeClassNotReady error on creation if NodeClass tag validation
    fails")"""
    wrong = node_class().model_copy(deep=True)
    wrong.spec.tags = {"kubernetes.io/cluster/thewrongcluster": "owned"}
    with pytest.raises(NodeClassNotReadyError):
        provider.create(nodeclaim(), wrong)


def test_no_instance_type_to_launch_is_insufficient_capacity(
    provider: AwsCloudProvider, world: World, ec2: FakeEC2
) -> None:
    """It("should return an ICE error when there are no instance types to launch")"""
    claim = nodeclaim(requirements=[{"key": "node.kubernetes.io/instance-type",
                                     "operator": "In", "values": ["test-instance-type"]}])
    with pytest.raises(InsufficientCapacityError):
        provider.create(claim, node_class())
    assert not ec2.calls("CreateFleet")


def test_the_launched_instance_names_its_image(provider: AwsCloudProvider,
                                               world: World) -> None:
    """It("should set ImageID in the status field of the nodeClaim")"""
    assert provider.create(nodeclaim(), node_class()).image_id == X86_IMAGE


def test_the_launched_instance_is_labelled_with_its_zone_id(
    provider: AwsCloudProvider, clients: AwsClients, world: World
) -> None:
    """It("should return availability zone ID as a label on the nodeClaim"): the zone id of
    the subnet of its zone."""
    instance = provider.create(nodeclaim(), node_class())
    zone = instance.labels["topology.kubernetes.io/zone"]
    subnet = clients.ec2.describe_subnets(SubnetIds=[world.subnets[zone]])["Subnets"][0]
    assert instance.labels["topology.k8s.aws/zone-id"] == subnet["AvailabilityZoneId"]


# --- EC2 Context ----------------------------------------------------------------------------


def test_the_node_class_context_is_set_on_create_fleet(
    provider: AwsCloudProvider, world: World, ec2: FakeEC2
) -> None:
    """Context("EC2 Context") It("should set context on the CreateFleet request if specified
    on the NodePool")"""
    provider.create(nodeclaim(), node_class(context=CONTEXT))
    assert len(ec2.calls("CreateFleet")) == 1
    assert ec2.last("CreateFleet")["Context"] == CONTEXT


def test_no_context_when_min_values_were_relaxed(
    provider: AwsCloudProvider, world: World, ec2: FakeEC2
) -> None:
    """Context("EC2 Context") It("should not set context on the CreateFleet request when min
    values are relaxed even if specified on the NodePool")"""
    claim = nodeclaim()
    claim.metadata.annotations = {"karpenter.sh/nodeclaim-min-values-relaxed": "true"}
    provider.create(claim, node_class(context=CONTEXT))
    assert len(ec2.calls("CreateFleet")) == 1
    assert "Context" not in ec2.last("CreateFleet")


def test_no_context_by_default(provider: AwsCloudProvider, world: World, ec2: FakeEC2) -> None:
    """Context("EC2 Context") It("should default to no EC2 Context")"""
    provider.create(nodeclaim(), node_class())
    assert len(ec2.calls("CreateFleet")) == 1
    assert "Context" not in ec2.last("CreateFleet")


# --- NodeClaim Drift ------------------------------------------------------------------------


def test_a_valid_nodeclaim_has_not_drifted(provider: AwsCloudProvider, launched: Instance,
                                           view: InstanceView) -> None:
    """Context("NodeClaim Drift") It("should not return drifted if the NodeClaim is valid"),
    It("should not return drifted if the security groups match")"""
    assert provider.drift_reason(drift_claim(launched), node_class()) is None


def test_an_image_that_is_not_the_node_classs_drifts(
    provider: AwsCloudProvider, launched: Instance, view: InstanceView
) -> None:
    """Context("NodeClaim Drift") It("should return drifted if the AMI is not valid")"""
    claim = drift_claim(launched, image_id="ami-0123456789abcdef0")
    assert provider.drift_reason(claim, node_class()) == AMI_DRIFT


def test_several_drift_reasons_name_the_node_class_drift(
    provider: AwsCloudProvider, launched: Instance, view: InstanceView
) -> None:
    """Context("NodeClaim Drift") It("should return drifted if there are multiple drift
    reasons"): a changed spec is told first, before any AWS call."""
    view.fields.update(ImageId="ami-0123456789abcdef0", SubnetId="subnet-0123456789abcdef0",
                       SecurityGroups=groups("sg-0123456789abcdef0"))
    claim = drift_claim(launched)
    claim.metadata.annotations = {**(claim.metadata.annotations or {}),
                                  NODECLASS_HASH: "abcdefghijkl"}
    assert provider.drift_reason(claim, node_class()) == NODECLASS_DRIFT


def test_a_subnet_that_is_not_the_node_classs_drifts(
    provider: AwsCloudProvider, launched: Instance, view: InstanceView, world: World
) -> None:
    """Context("NodeClaim Drift") It("should return drifted if the subnet is not valid")"""
    view.fields["SubnetId"] = world.other_subnet
    assert provider.drift_reason(drift_claim(launched), node_class()) == SUBNET_DRIFT


def test_no_subnets_resolved_is_no_drift_verdict(
    provider: AwsCloudProvider, launched: Instance, view: InstanceView
) -> None:
    """Context("NodeClaim Drift") It("should return an error if subnets are empty"):
    Karpenter's IsDrifted errors, which leaves the Drifted condition as it was."""
    nothing = node_class(subnetSelectorTerms=[{"tags": {"karpenter.sh/discovery": "nobody"}}])
    with pytest.raises(CloudProviderError, match="no subnets are discovered"):
        provider.drift_reason(drift_claim(launched), nothing)


def test_no_security_groups_resolved_is_no_drift_verdict(
    provider: AwsCloudProvider, launched: Instance, view: InstanceView
) -> None:
    """Context("NodeClaim Drift") It("should return an error if the security groups are
    empty"): as the subnets' case, an error, not a verdict on the instance's groups."""
    view.fields["SecurityGroups"] = groups("sg-0123456789abcdef0")
    nothing = node_class(securityGroupSelectorTerms=[{"tags": {"team": "nobody"}}])
    with pytest.raises(CloudProviderError, match="no security groups"):
        provider.drift_reason(drift_claim(launched), nothing)


def test_other_instance_security_groups_drift(
    provider: AwsCloudProvider, launched: Instance, view: InstanceView
) -> None:
    """Context("NodeClaim Drift") It("should return drifted if the instance security groups
    doesn't match the discovered values")"""
    view.fields["SecurityGroups"] = groups("sg-0123456789abcdef0")
    assert provider.drift_reason(drift_claim(launched), node_class()) == SECURITY_GROUP_DRIFT


def test_more_instance_security_groups_than_discovered_drift(
    provider: AwsCloudProvider, launched: Instance, view: InstanceView, world: World
) -> None:
    """Context("NodeClaim Drift") It("should return drifted if there are more instance
    security groups present than in the discovered values")"""
    view.fields["SecurityGroups"] = groups("sg-0123456789abcdef0", world.security_group)
    assert provider.drift_reason(drift_claim(launched), node_class()) == SECURITY_GROUP_DRIFT


def test_more_discovered_security_groups_than_the_instances_drift(
    provider: AwsCloudProvider, launched: Instance, view: InstanceView, world: World
) -> None:
    """Context("NodeClaim Drift") It("should return drifted if more security groups are
    present than instance security groups then discovered from nodeclass")"""
    both = node_class(securityGroupSelectorTerms=[{"id": world.security_group},
                                                  {"id": world.other_security_group}])
    assert provider.drift_reason(drift_claim(launched, both), both) == SECURITY_GROUP_DRIFT


def test_no_provider_id_is_no_drift(provider: AwsCloudProvider, launched: Instance,
                                    view: InstanceView) -> None:
    """Context("NodeClaim Drift") It("should error drift if NodeClaim doesn't have provider
    id"): no verdict (Karpenter: an error and no reason)."""
    claim = drift_claim(launched)
    claim.status = NodeClaimStatus()
    assert provider.drift_reason(claim, node_class()) is None


def test_a_missing_instance_is_an_error(provider: AwsCloudProvider, launched: Instance,
                                        view: InstanceView) -> None:
    """Context("NodeClaim Drift") It("should error if the underlying NodeClaim doesn't
    exist")"""
    view.empty = True
    with pytest.raises(NodeClaimNotFoundError):
        provider.drift_reason(drift_claim(launched), node_class())


def test_an_image_that_no_longer_serves_the_instance_type_drifts(
    provider: AwsCloudProvider, launched: Instance, view: InstanceView, world: World
) -> None:
    """Context("NodeClaim Drift") It("should return drifted if the AMI no longer matches the
    existing NodeClaims instance type"): a Custom node class of the amd64 image only, and a
    NodeClaim whose image is the arm64 one."""
    custom = node_class(amiFamily="Custom", amiSelectorTerms=[{"id": X86_IMAGE}])
    claim = drift_claim(launched, custom, image_id=world.arm_image)
    assert provider.drift_reason(claim, custom) == AMI_DRIFT


def test_an_image_of_the_node_class_made_for_other_instance_types_drifts(
    provider: AwsCloudProvider, launched: Instance, view: InstanceView, world: World
) -> None:
    """Ours, Karpenter's isAMIDrifted (pkg/cloudprovider/drift.go): the image must be the one
    the NodeClaim's instance type maps to, not any of the node class's. The node class
    resolves both images; an amd64 m5.large running the arm64 one has drifted."""
    both = node_class(amiFamily="AL2023",
                      amiSelectorTerms=[{"id": X86_IMAGE}, {"id": world.arm_image}])
    assert provider.drift_reason(drift_claim(launched, both), both) is None
    claim = drift_claim(launched, both, image_id=world.arm_image)
    assert provider.drift_reason(claim, both) == AMI_DRIFT


# --- Static Drift Detection -----------------------------------------------------------------


def static_base(world: World) -> dict[str, Any]:
    """Karpenter's Static Drift Detection node class (fake values it never launches)."""
    return {
        "userData": "Fake Userdata",
        "tags": {"fakeKey": "fakeValue"},
        "context": "fake-context",
        "detailedMonitoring": False,
        "amiSelectorTerms": [{"alias": "al2023@latest"}],
        "associatePublicIPAddress": False,
        "metadataOptions": {"httpEndpoint": "disabled", "httpProtocolIPv6": "disabled",
                            "httpPutResponseHopLimit": 1, "httpTokens": "optional"},
        "blockDeviceMappings": [{
            "deviceName": "fakeName", "rootVolume": False,
            "ebs": {"deleteOnTermination": False, "encrypted": False, "iops": 0,
                    "kmsKeyID": "fakeKMSKeyID", "snapshotID": "fakeSnapshot",
                    "throughput": 0, "volumeSize": "2G", "volumeType": "standard"}}],
    }


def merged(base: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """mergo.Merge(WithOverride, WithSliceDeepCopy): maps and the first block device mapping
    are merged field by field, anything else replaced."""
    out = copy.deepcopy(base)
    for key, value in changes.items():
        if key == "blockDeviceMappings":
            first = out[key][0]
            for field, inner in value[0].items():
                if isinstance(inner, dict):
                    first[field] = {**first.get(field, {}), **inner}
                else:
                    first[field] = inner
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = {**out[key], **value}
        else:
            out[key] = value
    return out


STATIC_ENTRIES = [
    pytest.param({"userData": "userdata-test-2"}, id="UserData"),
    pytest.param({"tags": {"keyTag-test-3": "valueTag-test-3"}}, id="Tags"),
    pytest.param({"context": "context-2"}, id="Context"),
    pytest.param({"detailedMonitoring": True}, id="DetailedMonitoring"),
    pytest.param({"instanceStorePolicy": "RAID0"}, id="InstanceStorePolicy"),
    pytest.param({"associatePublicIPAddress": True}, id="AssociatePublicIPAddress"),
    pytest.param({"metadataOptions": {"httpEndpoint": "enabled"}},
                 id="MetadataOptions HTTPEndpoint"),
    pytest.param({"metadataOptions": {"httpProtocolIPv6": "enabled"}},
                 id="MetadataOptions HTTPProtocolIPv6"),
    pytest.param({"metadataOptions": {"httpPutResponseHopLimit": 10}},
                 id="MetadataOptions HTTPPutResponseHopLimit"),
    pytest.param({"metadataOptions": {"httpTokens": "required"}},
                 id="MetadataOptions HTTPTokens"),
    pytest.param({"blockDeviceMappings": [{"deviceName": "map-device-test-3"}]},
                 id="BlockDeviceMapping DeviceName"),
    pytest.param({"blockDeviceMappings": [{"rootVolume": True}]},
                 id="BlockDeviceMapping RootVolume"),
    pytest.param({"blockDeviceMappings": [{"ebs": {"deleteOnTermination": True}}]},
                 id="BlockDeviceMapping DeleteOnTermination"),
    pytest.param({"blockDeviceMappings": [{"ebs": {"encrypted": True}}]},
                 id="BlockDeviceMapping Encrypted"),
    pytest.param({"blockDeviceMappings": [{"ebs": {"iops": 10}}]}, id="BlockDeviceMapping IOPS"),
    pytest.param({"blockDeviceMappings": [{"ebs": {"kmsKeyID": "test"}}]},
                 id="BlockDeviceMapping KMSKeyID"),
    pytest.param({"blockDeviceMappings": [{"ebs": {"snapshotID": "test"}}]},
                 id="BlockDeviceMapping SnapshotID"),
    pytest.param({"blockDeviceMappings": [{"ebs": {"throughput": 10}}]},
                 id="BlockDeviceMapping Throughput"),
    pytest.param({"blockDeviceMappings": [{"ebs": {"volumeType": "io1"}}]},
                 id="BlockDeviceMapping VolumeType"),
    pytest.param({"blockDeviceMappings": [{"ebs": {"volumeSize": "10G"}}]},
                 id="should return drifted when updating blockDeviceMapping volumeSize"),
]


@pytest.mark.parametrize("changes", STATIC_ENTRIES)
def test_a_statically_drifted_spec_field_drifts(
    provider: AwsCloudProvider, launched: Instance, view: InstanceView, world: World,
    changes: dict[str, Any],
) -> None:
    """Context("Static Drift Detection") DescribeTable("should return drifted if a statically
    drifted EC2NodeClass.Spec field is updated"), one test per Entry (named by the test id),
    and It("should return drifted when updating blockDeviceMapping volumeSize")."""
    base = static_base(world)
    claim = drift_claim(launched, node_class(**base))
    assert provider.drift_reason(claim, node_class(**base)) is None

    assert provider.drift_reason(claim, node_class(**merged(base, changes))) == NODECLASS_DRIFT


@pytest.fixture
def tagged(clients: AwsClients, world: World) -> None:
    """The tags the dynamic entries select by, on the world's images, subnets and group."""
    # moto's CreateTags refuses the id of the image it ships; its backend takes it.
    ec2_backends[ACCOUNT][world.region].create_tags([X86_IMAGE, world.arm_image],
                                                    {"ami-key-1": "ami-value-1"})
    clients.ec2.create_tags(Resources=list(world.subnets.values()),
                            Tags=[{"Key": "sn-key-1", "Value": "sn-value-1"}])
    clients.ec2.create_tags(Resources=[world.security_group],
                            Tags=[{"Key": "sg-key", "Value": "sg-value"}])


@pytest.mark.parametrize("changes", [
    pytest.param({"amiFamily": "AL2023",
                  "amiSelectorTerms": [{"tags": {"ami-key-1": "ami-value-1"}}]}, id="AMI Drift"),
    pytest.param({"subnetSelectorTerms": [{"tags": {"sn-key-1": "sn-value-1"}}]},
                 id="Subnet Drift"),
    pytest.param({"securityGroupSelectorTerms": [{"tags": {"sg-key": "sg-value"}}]},
                 id="SecurityGroup Drift"),
])
def test_changed_selector_terms_are_not_static_drift(
    provider: AwsCloudProvider, launched: Instance, view: InstanceView, world: World,
    tagged: None, changes: dict[str, Any],
) -> None:
    """Context("Static Drift Detection") DescribeTable("should not return drifted if dynamic
    fields are updated"), one test per Entry: the new terms resolve to what the instance
    runs with, and terms are not hashed."""
    base = static_base(world)
    claim = drift_claim(launched, node_class(**base))
    assert provider.drift_reason(claim, node_class(**base)) is None

    assert provider.drift_reason(claim, node_class(**merged(base, changes))) is None


def test_no_hash_on_the_nodeclaim_is_no_static_drift(
    provider: AwsCloudProvider, launched: Instance, view: InstanceView
) -> None:
    """Context("Static Drift Detection") It("should not return drifted if
    karpenter.k8s.aws/ec2nodeclass-hash annotation is not present on the NodeClaim")"""
    claim = drift_claim(launched)
    claim.metadata.annotations = {NODECLASS_HASH_VERSION: NODECLASS_HASH_VERSION_VALUE}
    assert provider.drift_reason(claim, node_class(tags={"Test Key": "Test Value"})) is None


def test_another_hash_version_on_the_nodeclaim_is_no_static_drift(
    provider: AwsCloudProvider, launched: Instance, view: InstanceView
) -> None:
    """Context("Static Drift Detection") It("should not return drifted if the NodeClaim's
    karpenter.k8s.aws/ec2nodeclass-hash-version annotation does not match the
    EC2NodeClass's")"""
    claim = drift_claim(launched)
    claim.metadata.annotations = {NODECLASS_HASH: "test-hash-222222",
                                  NODECLASS_HASH_VERSION: "test-hash-version-2"}
    assert provider.drift_reason(claim, node_class()) is None


def test_no_hash_version_on_the_nodeclaim_is_no_static_drift(
    provider: AwsCloudProvider, launched: Instance, view: InstanceView
) -> None:
    """Context("Static Drift Detection") It("should not return drifted if
    karpenter.k8s.aws/ec2nodeclass-hash-version annotation is not present on the
    NodeClaim")"""
    claim = drift_claim(launched)
    claim.metadata.annotations = {NODECLASS_HASH: "test-hash-222222"}
    assert provider.drift_reason(claim, node_class(tags={"Test Key": "Test Value"})) is None


# --- Subnet Compatibility -------------------------------------------------------------------


def zone_a_claim(name: str = "default-abcde") -> NodeClaim:
    return nodeclaim(name, uid=f"uid-{name}", requirements=[
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.large"]},
        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-west-2a"]},
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
    ])


def tagged_subnet(clients: AwsClients, world: World, cidr: str, team: str) -> str:
    return str(clients.ec2.create_subnet(
        VpcId=world.vpc_id, CidrBlock=cidr, AvailabilityZone="us-west-2a",
        TagSpecifications=[{"ResourceType": "subnet",
                            "Tags": [{"Key": "team", "Value": team}]}])["Subnet"]["SubnetId"])


def test_the_fleet_offers_every_zone_through_the_node_classs_subnets(
    provider: AwsCloudProvider, world: World, ec2: FakeEC2
) -> None:
    """Context("Subnet Compatibility") It("should default to the cluster's subnets"): one
    m5.large override per subnet, in its zone."""
    provider.create(nodeclaim(), node_class())
    m5 = {(o.subnet_id, o.zone) for o in ec2.overrides() if o.instance_type == "m5.large"}
    assert m5 == {(subnet, zone) for zone, subnet in world.subnets.items()}


def test_a_zone_launches_into_its_subnet_with_the_most_free_ips(
    provider: AwsCloudProvider, clients: AwsClients, world: World, ec2: FakeEC2
) -> None:
    """Context("Subnet Compatibility") It("should launch instances into subnet with the most
    available IP addresses"): a /28 (11 free) and a /25 (123 free) in one zone."""
    tagged_subnet(clients, world, "10.0.30.0/28", "ml")
    larger = tagged_subnet(clients, world, "10.0.31.0/25", "ml")
    provider.create(zone_a_claim(), node_class(subnetSelectorTerms=[{"tags": {"team": "ml"}}]))
    assert {o.subnet_id for o in ec2.overrides()} == {larger}


def test_launches_between_subnet_refreshes_count_the_ips_they_took(
    provider: AwsCloudProvider, clients: AwsClients, world: World, ec2: FakeEC2
) -> None:
    """Context("Subnet Compatibility") It("should launch instances into subnet with the most
    available IP addresses in-between cache refreshes"): a /27 (27 free) and a /28 (11
    free); the first m5.large (29 pods) takes the /27's IPs, so the next goes to the /28."""
    larger = tagged_subnet(clients, world, "10.0.32.0/27", "ml")
    smaller = tagged_subnet(clients, world, "10.0.33.0/28", "ml")
    spec = node_class(subnetSelectorTerms=[{"tags": {"team": "ml"}}])

    provider.create(zone_a_claim("first"), spec)
    assert {o.subnet_id for o in ec2.overrides()} == {larger}
    provider.create(zone_a_claim("second"), spec)
    assert {o.subnet_id for o in ec2.overrides()} == {smaller}


def test_a_failed_fleet_takes_no_ips(provider: AwsCloudProvider, world: World,
                                     ec2: FakeEC2) -> None:
    """Context("Subnet Compatibility") It("should update in-flight IPs when a CreateFleet
    error occurs"): nothing launched, and the subnet's free IPs are what EC2 said."""
    ec2.fail("CreateFleet", "InternalError", "CreateFleet synthetic error", status=500,
             times=10)
    with pytest.raises(CloudProviderError):
        provider.create(zone_a_claim(), node_class())
    subnet = next(s for s in provider.resolve(node_class()).subnets if s.zone == "us-west-2a")
    assert provider.subnet_ips.free(subnet) == subnet.free_ips
