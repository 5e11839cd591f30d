"""A spot launch tags its spot instance request the way Karpenter's does, and so passes the
conditions Karpenter's policy (and ours) put on spot-instances-request/*: the request tags
are the launch template's, LaunchTemplateData.TagSpecifications (Karpenter v1.14.1,
pkg/providers/launchtemplate/types.go CreateLaunchTemplateInputBuilder.Build: network
interfaces always, the spot request for a spot template), and CreateFleet tags instance,
volume and fleet (pkg/providers/instance/types.go NewCreateFleetInputBuilder). Against moto:
what the provider sends, and the spot request tags of the launch templates EC2 keeps."""

from __future__ import annotations

from typing import Any

from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.provider import AwsCloudProvider

from .conftest import CallRecorder
from .world import CLUSTER, node_class, nodeclaim

KARPENTER_TEMPLATE_DATA_TAGGED = {"spot": ["network-interface", "spot-instances-request"],
                                  "on-demand": ["network-interface"]}
KARPENTER_FLEET_TAGGED = ["instance", "volume", "fleet"]
# The request tags AllowScopedEC2InstanceActionsWithTags / AllowScopedResourceCreationTagging
# condition on (Karpenter's getting-started CloudFormation), for the cluster `demo`.
POLICY_REQUEST_TAGS = {f"kubernetes.io/cluster/{CLUSTER}": "owned",
                       "eks:eks-cluster-name": CLUSTER}


def _capacity(kind: str) -> list[dict[str, Any]]:
    return [{"key": "node.kubernetes.io/instance-type", "operator": "In",
             "values": ["m5.large"]},
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": [kind]}]


def _tags(spec: dict[str, Any]) -> dict[str, str]:
    return {tag["Key"]: tag["Value"] for tag in spec["Tags"]}


def test_a_spot_launch_tags_its_spot_request_with_the_tags_the_policy_asks_for(
    provider: AwsCloudProvider, recorder: CallRecorder, clients: AwsClients
) -> None:
    provider.create(nodeclaim("spot-abcde", requirements=_capacity("spot")), node_class())

    (fleet,) = recorder.calls_of("ec2:CreateFleet")
    assert fleet["TargetCapacitySpecification"]["DefaultTargetCapacityType"] == "spot"
    assert [s["ResourceType"] for s in fleet["TagSpecifications"]] == KARPENTER_FLEET_TAGGED
    sent = recorder.calls_of("ec2:CreateLaunchTemplate")
    assert sent
    for request in sent:
        specs = request["LaunchTemplateData"]["TagSpecifications"]
        assert [s["ResourceType"] for s in specs] == KARPENTER_TEMPLATE_DATA_TAGGED["spot"]
        # What EC2 keeps, and tags each spot request of the fleet with.
        (version,) = clients.ec2.describe_launch_template_versions(
            LaunchTemplateName=request["LaunchTemplateName"])["LaunchTemplateVersions"]
        (spot_request,) = [s for s in version["LaunchTemplateData"]["TagSpecifications"]
                           if s["ResourceType"] == "spot-instances-request"]
        tags = _tags(spot_request)
        assert POLICY_REQUEST_TAGS.items() <= tags.items()
        assert tags["karpenter.sh/nodepool"] == "default"


def test_an_on_demand_launch_creates_no_spot_request_and_tags_none(
    provider: AwsCloudProvider, recorder: CallRecorder, clients: AwsClients
) -> None:
    provider.create(nodeclaim("od-abcde", requirements=_capacity("on-demand")), node_class())

    (fleet,) = recorder.calls_of("ec2:CreateFleet")
    assert fleet["TargetCapacitySpecification"]["DefaultTargetCapacityType"] == "on-demand"
    assert [s["ResourceType"] for s in fleet["TagSpecifications"]] == KARPENTER_FLEET_TAGGED
    sent = recorder.calls_of("ec2:CreateLaunchTemplate")
    assert sent
    for request in sent:
        assert [s["ResourceType"] for s in request["LaunchTemplateData"]["TagSpecifications"]
                ] == KARPENTER_TEMPLATE_DATA_TAGGED["on-demand"]
