"""The controller policy follows AWS_ACTIONS and refuses actions it cannot scope."""

from __future__ import annotations

import fnmatch
from typing import Any

import pytest

from infra.controller_policy import PolicyTarget, UnscopedActionError, controller_policy_document
from nodewright.cloud.aws.actions import ActionUse

TARGET = PolicyTarget(
    cluster_name="demo", region="cn-north-1", partition="aws-cn", account_id="111122223333",
    node_role_arn="arn:aws-cn:iam::111122223333:role/NodewrightNode-demo", queue_arn=None,
)


def test_arns_follow_the_partition_and_no_queue_means_no_queue_statement() -> None:
    document = controller_policy_document(TARGET)
    sids = {statement["Sid"] for statement in document["Statement"]}
    assert "AllowInterruptionQueueActions" not in sids
    pass_role = next(s for s in document["Statement"] if s["Sid"] == "AllowPassingNodeRole")
    assert pass_role["Condition"]["StringEquals"]["iam:PassedToService"] == "ec2.amazonaws.com.cn"
    cluster = next(s for s in document["Statement"] if s["Sid"] == "AllowClusterDiscovery")
    assert cluster["Resource"] == "arn:aws-cn:eks:cn-north-1:111122223333:cluster/demo"


def test_a_new_instance_profile_action_must_get_a_rule_first() -> None:
    actions = (ActionUse("iam:UpdateAssumeRolePolicy", "instance-profile", "not scoped yet"),)
    with pytest.raises(UnscopedActionError, match="iam:UpdateAssumeRolePolicy"):
        controller_policy_document(TARGET, actions)


def test_an_unknown_scope_is_refused() -> None:
    actions = (ActionUse("s3:GetObject", "bucket", "no such scope"),)  # type: ignore[arg-type]
    with pytest.raises(UnscopedActionError, match="bucket"):
        controller_policy_document(TARGET, actions)


# Karpenter v1.14.1 getting-started CloudFormation, statement AllowScopedEC2InstanceAccessActions:
# the existing, untagged resources RunInstances and CreateFleet may use, with no condition.
KARPENTER_LAUNCH_RESOURCES = (
    "image", "snapshot", "security-group", "subnet", "capacity-reservation", "placement-group",
)


@pytest.mark.parametrize("kind", KARPENTER_LAUNCH_RESOURCES)
@pytest.mark.parametrize("action", ["ec2:RunInstances", "ec2:CreateFleet"])
def test_launches_may_use_every_existing_resource_karpenter_allows(kind: str, action: str) -> None:
    """A node class with a placementGroupSelector launches into an existing placement group:
    without placement-group/* in the policy EC2 would deny every such CreateFleet."""
    account = "" if kind in ("image", "snapshot") else "111122223333"
    arn = f"arn:aws-cn:ec2:cn-north-1:{account}:{kind}/{kind}-0123"
    granting = [
        statement for statement in controller_policy_document(TARGET)["Statement"]
        if action in statement["Action"] and "Condition" not in statement
        and any(fnmatch.fnmatchcase(arn, pattern) for pattern in statement["Resource"])
    ]
    assert [statement["Sid"] for statement in granting] == ["AllowLaunchWithExistingResources"]


# Karpenter v1.14.1 getting-started CloudFormation: spot-instances-request/* is granted in
# AllowScopedEC2InstanceActionsWithTags and AllowScopedResourceCreationTagging only, both with
# the request tags its launch templates put on spot requests
# (pkg/providers/launchtemplate/types.go, LaunchTemplateData.TagSpecifications).
KARPENTER_REQUEST_TAGS = {
    "StringEquals": {
        "aws:RequestTag/kubernetes.io/cluster/demo": "owned",
        "aws:RequestTag/eks:eks-cluster-name": "demo",
    },
    "StringLike": {"aws:RequestTag/karpenter.sh/nodepool": "*"},
}
KARPENTER_SPOT_REQUEST_GRANTS = {
    ("ec2:CreateFleet", "ec2:CreateLaunchTemplate", "ec2:RunInstances"): KARPENTER_REQUEST_TAGS,
    ("ec2:CreateTags",): {
        "StringEquals": {**KARPENTER_REQUEST_TAGS["StringEquals"],
                         "ec2:CreateAction": ["RunInstances", "CreateFleet",
                                              "CreateLaunchTemplate"]},
        "StringLike": KARPENTER_REQUEST_TAGS["StringLike"],
    },
}


def test_spot_requests_are_granted_only_with_karpenters_request_tags() -> None:
    """A spot launch creates a spot instance request, tagged by its launch template: the
    policy lets launches create and tag it only when the request carries the cluster's
    ownership tag, its eks:eks-cluster-name and a NodePool, exactly Karpenter's conditions,
    and no statement grants it without them."""
    arn = "arn:aws-cn:ec2:cn-north-1:111122223333:spot-instances-request/sir-0123"
    granting = {
        actions: s.get("Condition")
        for s in controller_policy_document(TARGET)["Statement"]
        # EC2 writes: the reads (Describe*, Resource "*") create and tag nothing.
        if (actions := _ec2_writes(s["Action"]))
        and any(fnmatch.fnmatchcase(arn, pattern) for pattern in (
            [s["Resource"]] if isinstance(s["Resource"], str) else s["Resource"]))
    }
    assert {actions: _normalized(condition) for actions, condition in granting.items()} == {
        actions: _normalized(condition)
        for actions, condition in KARPENTER_SPOT_REQUEST_GRANTS.items()}


def _ec2_writes(actions: str | list[str]) -> tuple[str, ...]:
    return tuple(sorted(a for a in ([actions] if isinstance(actions, str) else actions)
                        if a.startswith("ec2:") and not a.startswith("ec2:Describe")))


def _normalized(condition: dict[str, Any] | None) -> Any:
    """A condition with its value lists order-free (IAM reads them as sets)."""
    if condition is None:
        return None
    return {op: {key: sorted(value) if isinstance(value, list) else value
                 for key, value in keys.items()} for op, keys in condition.items()}
