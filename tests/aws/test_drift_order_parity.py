"""The AWS provider's drift reasons in Karpenter v1.14.1's order, and its errors where it
cannot judge (aws/karpenter-provider-aws pkg/cloudprovider/drift.go isNodeClassDrifted
44-82: the EC2NodeClass hash, then the AMI, then the first of security groups, subnet,
capacity reservation and placement group; isAMIDrifted 96-98, areSecurityGroupsDrifted
131-134, isSubnetDrifted 113-116 return errors when nothing is resolved).

A NodeClaim that drifted in two ways is told by the first; the reason is what
`kubectl get nodeclaims` shows in the Drifted condition and what the disruption
decision names.
"""

from __future__ import annotations

import pytest

from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.drift import AMI_DRIFT, SECURITY_GROUP_DRIFT
from nodewright.cloud.aws.placement_groups import PLACEMENT_GROUP_ID_LABEL
from nodewright.cloud.aws.provider import AwsCloudProvider
from nodewright.cloud.provider import CloudProviderError, Instance
from tests.aws import test_cloudprovider_karpenter as suite
from tests.aws.test_cloudprovider_karpenter import InstanceView, drift_claim, groups
from tests.aws.world import World, node_class

# The suite's fixtures: an m5.large launched from the default node class, and the view of
# DescribeInstances a story rewrites.
launched = suite.launched
view = suite.view


def test_security_groups_are_told_before_the_subnet(
    provider: AwsCloudProvider, launched: Instance, view: InstanceView, world: World
) -> None:
    """drifted := FindOrElse([securitygroupDrifted, subnetDrifted, ...]): an instance in
    another subnet with other security groups is SecurityGroupDrift."""
    view.fields.update(SubnetId=world.other_subnet,
                       SecurityGroups=groups(world.other_security_group))
    assert provider.drift_reason(drift_claim(launched), node_class()) == SECURITY_GROUP_DRIFT


def test_the_ami_is_told_before_the_placement_group(
    provider: AwsCloudProvider, launched: Instance, view: InstanceView
) -> None:
    """isAMIDrifted runs before the instance is read and before isPlacementGroupDrifted:
    a NodeClaim launched into a group the node class no longer names, running an image
    the node class no longer resolves, is AMIDrift."""
    claim = drift_claim(launched, image_id="ami-0123456789abcdef0")
    claim.metadata.labels = {**(claim.metadata.labels or {}),
                             PLACEMENT_GROUP_ID_LABEL: "pg-0a1b2c3d"}
    assert provider.drift_reason(claim, node_class()) == AMI_DRIFT


def test_no_ami_resolved_is_an_error_not_a_verdict(
    provider: AwsCloudProvider, launched: Instance, view: InstanceView, clients: AwsClients
) -> None:
    """isAMIDrifted: "no amis exist given constraints" is an error, which leaves the
    Drifted condition as it was; the instance's subnet and groups are not judged."""
    nothing = node_class(amiFamily="AL2023",
                         amiSelectorTerms=[{"tags": {"team": "nobody-has-this-image"}}])
    view.fields["SecurityGroups"] = groups("sg-0123456789abcdef0")
    with pytest.raises(CloudProviderError, match="no amis"):
        provider.drift_reason(drift_claim(launched, nothing), nothing)
