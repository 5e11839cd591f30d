"""The tags a registered NodeClaim's instance gets (Karpenter's nodeclaim tagging
controller, pkg/controllers/nodeclaim/tagging): `Name` = the Node's name,
`karpenter.sh/nodeclaim` and `eks:eks-cluster-name`, each only where the instance does not
carry that key yet (a node class's own `Name` stays), in one CreateTags call. The IAM
statement that allows it is Karpenter's AllowScopedResourceTagging (infra/controller_policy.py):
the cluster's instances, those three keys only. The NodeClaim's annotations that record it
are the controller's (controllers/nodeclaim/tagging.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from nodewright.cloud.aws import tags as tag_keys
from nodewright.cloud.aws.errors import aws_call
from nodewright.cloud.provider import Instance

if TYPE_CHECKING:
    from mypy_boto3_ec2 import EC2Client

def registration_tags(node_name: str, nodeclaim: str, cluster: str) -> dict[str, str]:
    return {tag_keys.NAME: node_name, tag_keys.NODECLAIM: nodeclaim,
            tag_keys.EKS_CLUSTER: cluster}


def missing_tags(instance: Instance, wanted: Mapping[str, str]) -> dict[str, str]:
    """What `wanted` adds: keys the instance already has keep their value."""
    return {key: value for key, value in wanted.items() if key not in instance.tags}


def create_tags(ec2: EC2Client, instance_id: str, tags: Mapping[str, str]) -> None:
    """One CreateTags call; an instance EC2 no longer knows raises NodeClaimNotFoundError."""
    with aws_call("ec2:CreateTags", f"instance {instance_id}"):
        ec2.create_tags(Resources=[instance_id], Tags=cast(Any, tag_keys.as_aws(tags)))
