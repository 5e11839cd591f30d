"""The controller's IAM policy document, generated from the AWS provider's action list.

`nodewright.cloud.aws.actions.AWS_ACTIONS` says which actions the controller calls and how
each is scoped; this module turns every scope into least-privilege statements (the same
shape as Karpenter's getting-started CloudFormation). An action in a scope this module has
no rule for is an error, so a new call cannot slip into the policy unscoped.

`controller_policy_documents` splits the statements over the six managed policies of
Karpenter's CloudFormation (NodeLifecycle, IAMIntegration, ...): together they exceed IAM's
6,144-character quota for one managed policy.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from infra.iam_roles import url_suffix
from infra.naming import NODECLAIM_TAG, NODECLASS_TAG, NODEPOOL_TAG, cluster_owned_tag
from nodewright.cloud.aws.actions import AWS_ACTIONS, ActionUse
from nodewright.cloud.aws.instance_profiles import profile_path

Statement = dict[str, Any]

REGION_TAG = "topology.kubernetes.io/region"
EKS_CLUSTER_NAME_TAG = "eks:eks-cluster-name"
# IAM's quota for one customer managed policy, white space not counted.
MANAGED_POLICY_MAX_CHARACTERS: Final = 6144

_LAUNCH_ACTIONS = ("ec2:RunInstances", "ec2:CreateFleet")
_INSTANCE_PROFILE_CREATE = ("iam:CreateInstanceProfile",)
_INSTANCE_PROFILE_TAG = ("iam:TagInstanceProfile",)
_INSTANCE_PROFILE_MUTATE = (
    "iam:AddRoleToInstanceProfile",
    "iam:RemoveRoleFromInstanceProfile",
    "iam:DeleteInstanceProfile",
)
_INSTANCE_PROFILE_READ = ("iam:GetInstanceProfile",)
_INSTANCE_PROFILE_LIST = ("iam:ListInstanceProfiles",)


class UnscopedActionError(ValueError):
    """AWS_ACTIONS holds an action this module does not know how to scope."""


class PolicyTooLargeError(ValueError):
    """A managed policy would exceed IAM's quota (MANAGED_POLICY_MAX_CHARACTERS)."""


# Karpenter's managed policies (KarpenterController<Group>Policy-<cluster>) by group, with
# our statements that stand for the statements of each (tests/aws/test_least_privilege.py
# pairs the Sids).
POLICY_GROUPS: Final[Mapping[str, tuple[str, ...]]] = {
    "NodeLifecycle": (
        "AllowLaunchWithExistingResources", "AllowLaunchWithOwnedLaunchTemplates",
        "AllowScopedCreationWithTags", "AllowTaggingOnCreation", "AllowScopedResourceTagging",
        "AllowScopedDeletion",
    ),
    "IAMIntegration": (
        "AllowPassingNodeRole", "AllowScopedInstanceProfileCreation",
        "AllowScopedInstanceProfileTagging", "AllowScopedInstanceProfileActions",
    ),
    "EKSIntegration": ("AllowClusterDiscovery",),
    "Interruption": ("AllowInterruptionQueueActions",),
    "ResourceDiscovery": (
        "AllowRegionalReadActions", "AllowPublicParameterReads", "AllowPricingReads",
        "AllowListingOwnInstanceProfiles", "AllowInstanceProfileReads",
    ),
    "ZonalShift": ("AllowZonalShiftStatusReadOnly",),
}
_GROUP_OF: Final[Mapping[str, str]] = {
    sid: group for group, sids in POLICY_GROUPS.items() for sid in sids
}


@dataclass(frozen=True)
class PolicyTarget:
    """Everything the policy is scoped to."""

    cluster_name: str
    region: str
    partition: str
    account_id: str
    node_role_arn: str
    queue_arn: str | None


def controller_policy_document(
    target: PolicyTarget, actions: Sequence[ActionUse] = AWS_ACTIONS
) -> dict[str, Any]:
    statements: list[Statement] = []
    for scope, build in _SCOPE_BUILDERS.items():
        names = [use.action for use in actions if use.scope == scope]
        if names:
            statements.extend(build(target, names))
    unknown = sorted({use.scope for use in actions} - set(_SCOPE_BUILDERS))
    if unknown:
        raise UnscopedActionError(f"AWS_ACTIONS uses scopes with no policy rule: {unknown}")
    return {"Version": "2012-10-17", "Statement": statements}


def controller_policy_documents(
    target: PolicyTarget, actions: Sequence[ActionUse] = AWS_ACTIONS
) -> dict[str, dict[str, Any]]:
    """The policy as Karpenter's managed policies: group -> document, in POLICY_GROUPS order;
    a group with no statement (Interruption without a queue) is left out."""
    grouped: dict[str, list[Statement]] = {}
    for statement in controller_policy_document(target, actions)["Statement"]:
        group = _GROUP_OF.get(statement["Sid"])
        if group is None:
            raise UnscopedActionError(
                f"statement {statement['Sid']} belongs to no managed policy; "
                "add it to POLICY_GROUPS in infra/controller_policy.py"
            )
        grouped.setdefault(group, []).append(statement)
    documents = {group: {"Version": "2012-10-17", "Statement": grouped[group]}
                 for group in POLICY_GROUPS if group in grouped}
    for group, document in documents.items():
        if policy_characters(document) > MANAGED_POLICY_MAX_CHARACTERS:
            raise PolicyTooLargeError(
                f"the {group} policy has {policy_characters(document)} characters, over IAM's "
                f"{MANAGED_POLICY_MAX_CHARACTERS}: split POLICY_GROUPS further"
            )
    return documents


def policy_characters(document: Mapping[str, Any]) -> int:
    """What IAM holds against MANAGED_POLICY_MAX_CHARACTERS: the JSON without white space."""
    return len(json.dumps(document, separators=(",", ":")))


def _arn(target: PolicyTarget, service: str, resource: str, *, account: str = "*",
         region: str | None = None) -> str:
    return (f"arn:{target.partition}:{service}:{target.region if region is None else region}:"
            f"{account}:{resource}")


def _ec2(target: PolicyTarget, resource_type: str) -> str:
    return _arn(target, "ec2", f"{resource_type}/*")


def _request_tags(target: PolicyTarget) -> dict[str, dict[str, Any]]:
    return {
        "StringEquals": {
            f"aws:RequestTag/{cluster_owned_tag(target.cluster_name)}": "owned",
            f"aws:RequestTag/{EKS_CLUSTER_NAME_TAG}": target.cluster_name,
        },
        "StringLike": {f"aws:RequestTag/{NODEPOOL_TAG}": "*"},
    }


def _resource_tags(target: PolicyTarget) -> dict[str, dict[str, Any]]:
    return {
        "StringEquals": {f"aws:ResourceTag/{cluster_owned_tag(target.cluster_name)}": "owned"},
        "StringLike": {f"aws:ResourceTag/{NODEPOOL_TAG}": "*"},
    }


def _split(names: list[str], known: tuple[str, ...]) -> list[str]:
    return [name for name in names if name in known]


def _require_known(scope: str, names: list[str], known: tuple[str, ...]) -> None:
    unknown = [name for name in names if name not in known]
    if unknown:
        raise UnscopedActionError(
            f"no policy rule for {', '.join(unknown)} in scope {scope!r}; "
            "add one in infra/controller_policy.py"
        )


def _describe(target: PolicyTarget, names: list[str]) -> list[Statement]:
    return [{
        "Sid": "AllowRegionalReadActions",
        "Effect": "Allow",
        "Action": names,
        "Resource": "*",
        "Condition": {"StringEquals": {"aws:RequestedRegion": target.region}},
    }]


def _create_tagged(target: PolicyTarget, names: list[str]) -> list[Statement]:
    creates = [name for name in names if name != "ec2:CreateTags"]
    owned = [_ec2(target, kind) for kind in (
        "fleet", "instance", "volume", "network-interface", "launch-template",
        # A spot launch's request, tagged by the launch template (as Karpenter's policy).
        "spot-instances-request",
    )]
    statements: list[Statement] = []
    launches = _split(creates, _LAUNCH_ACTIONS)
    if launches:
        statements.append({
            "Sid": "AllowLaunchWithExistingResources",
            "Effect": "Allow",
            "Action": launches,
            "Resource": [
                _arn(target, "ec2", "image/*", account=""),
                _arn(target, "ec2", "snapshot/*", account=""),
                _ec2(target, "security-group"),
                _ec2(target, "subnet"),
                _ec2(target, "capacity-reservation"),
                # An EC2NodeClass's placementGroupSelector: the launch templates name the group.
                _ec2(target, "placement-group"),
            ],
        })
        statements.append({
            "Sid": "AllowLaunchWithOwnedLaunchTemplates",
            "Effect": "Allow",
            "Action": launches,
            "Resource": _ec2(target, "launch-template"),
            "Condition": _resource_tags(target),
        })
    if creates:
        statements.append({
            "Sid": "AllowScopedCreationWithTags",
            "Effect": "Allow",
            "Action": creates,
            "Resource": owned,
            "Condition": _request_tags(target),
        })
    if "ec2:CreateTags" in names:
        on_create = _request_tags(target)
        on_create["StringEquals"]["ec2:CreateAction"] = [name.split(":", 1)[1] for name in creates]
        statements.append({
            "Sid": "AllowTaggingOnCreation",
            "Effect": "Allow",
            "Action": "ec2:CreateTags",
            "Resource": owned,
            "Condition": on_create,
        })
        # NodeClaims that shared one fleet (the CreateFleet batcher) each tag their instance
        # with their own Name and karpenter.sh/nodeclaim afterwards: Karpenter's
        # AllowScopedResourceTagging, on the cluster's instances and those keys only.
        statements.append({
            "Sid": "AllowScopedResourceTagging",
            "Effect": "Allow",
            "Action": "ec2:CreateTags",
            "Resource": _ec2(target, "instance"),
            "Condition": {
                **_resource_tags(target),
                "StringEqualsIfExists": {
                    f"aws:RequestTag/{EKS_CLUSTER_NAME_TAG}": target.cluster_name},
                "ForAllValues:StringEquals": {
                    "aws:TagKeys": [EKS_CLUSTER_NAME_TAG, NODECLAIM_TAG, "Name"]},
            },
        })
    return statements


def _mutate_tagged(target: PolicyTarget, names: list[str]) -> list[Statement]:
    return [{
        "Sid": "AllowScopedDeletion",
        "Effect": "Allow",
        "Action": names,
        "Resource": [_ec2(target, "instance"), _ec2(target, "launch-template")],
        "Condition": _resource_tags(target),
    }]


def _pass_role(target: PolicyTarget, names: list[str]) -> list[Statement]:
    # The partition's EC2 principal, the one the node role trusts (infra/iam_roles.py).
    service = f"ec2.{url_suffix(target.partition)}"
    return [{
        "Sid": "AllowPassingNodeRole",
        "Effect": "Allow",
        "Action": names,
        "Resource": target.node_role_arn,
        "Condition": {"StringEquals": {"iam:PassedToService": service}},
    }]


def _instance_profile(target: PolicyTarget, names: list[str]) -> list[Statement]:
    _require_known("instance-profile", names, _INSTANCE_PROFILE_CREATE + _INSTANCE_PROFILE_TAG
                   + _INSTANCE_PROFILE_MUTATE + _INSTANCE_PROFILE_READ + _INSTANCE_PROFILE_LIST)
    owner = cluster_owned_tag(target.cluster_name)
    request = {f"aws:RequestTag/{owner}": "owned",
               f"aws:RequestTag/{EKS_CLUSTER_NAME_TAG}": target.cluster_name,
               f"aws:RequestTag/{REGION_TAG}": target.region}
    resource = {f"aws:ResourceTag/{owner}": "owned", f"aws:ResourceTag/{REGION_TAG}": target.region}
    profiles = f"arn:{target.partition}:iam::{target.account_id}:instance-profile/*"
    rules: list[tuple[str, tuple[str, ...], str, dict[str, Any] | None]] = [
        ("AllowScopedInstanceProfileCreation", _INSTANCE_PROFILE_CREATE, profiles, {
            "StringEquals": request,
            "StringLike": {f"aws:RequestTag/{NODECLASS_TAG}": "*"},
        }),
        ("AllowScopedInstanceProfileTagging", _INSTANCE_PROFILE_TAG, profiles, {
            "StringEquals": {**resource, **request},
            "StringLike": {
                f"aws:ResourceTag/{NODECLASS_TAG}": "*",
                f"aws:RequestTag/{NODECLASS_TAG}": "*",
            },
        }),
        ("AllowScopedInstanceProfileActions", _INSTANCE_PROFILE_MUTATE, profiles, {
            "StringEquals": resource,
            "StringLike": {f"aws:ResourceTag/{NODECLASS_TAG}": "*"},
        }),
        ("AllowInstanceProfileReads", _INSTANCE_PROFILE_READ, profiles, None),
        # IAM authorizes ListInstanceProfiles against instance-profile<PathPrefix>, and the
        # controller lists its own cluster's folder alone (Karpenter grants every path).
        ("AllowListingOwnInstanceProfiles", _INSTANCE_PROFILE_LIST,
         f"arn:{target.partition}:iam::{target.account_id}:instance-profile"
         f"{profile_path(target.cluster_name)}*", None),
    ]
    statements: list[Statement] = []
    for sid, known, resource_arn, condition in rules:
        actions = _split(names, known)
        if not actions:
            continue
        statement: Statement = {"Sid": sid, "Effect": "Allow", "Action": actions,
                                "Resource": resource_arn}
        if condition is not None:
            statement["Condition"] = condition
        statements.append(statement)
    return statements


def _cluster(target: PolicyTarget, names: list[str]) -> list[Statement]:
    return [{
        "Sid": "AllowClusterDiscovery",
        "Effect": "Allow",
        "Action": names,
        "Resource": _arn(target, "eks", f"cluster/{target.cluster_name}",
                         account=target.account_id),
    }]


def _queue(target: PolicyTarget, names: list[str]) -> list[Statement]:
    if target.queue_arn is None:
        return []  # interruption handling is off: no queue to read
    return [{
        "Sid": "AllowInterruptionQueueActions",
        "Effect": "Allow",
        "Action": names,
        "Resource": target.queue_arn,
    }]


def _ssm(target: PolicyTarget, names: list[str]) -> list[Statement]:
    return [{
        "Sid": "AllowPublicParameterReads",
        "Effect": "Allow",
        "Action": names,
        "Resource": _arn(target, "ssm", "parameter/aws/service/*", account=""),
    }]


def _pricing(target: PolicyTarget, names: list[str]) -> list[Statement]:
    # The Pricing API has no resource-level permissions.
    return [{"Sid": "AllowPricingReads", "Effect": "Allow", "Action": names, "Resource": "*"}]


def _zonal_shift(target: PolicyTarget, names: list[str]) -> list[Statement]:
    """ENABLE_ZONAL_SHIFT: the cluster's zonal shifts, and no other resource's (Karpenter's
    ZonalShiftPolicy)."""
    cluster = _arn(target, "eks", f"cluster/{target.cluster_name}", account=target.account_id)
    return [{
        "Sid": "AllowZonalShiftStatusReadOnly",
        "Effect": "Allow",
        "Action": names,
        "Resource": "*",
        "Condition": {"StringEquals": {"arc-zonal-shift:ResourceIdentifier": cluster}},
    }]


_SCOPE_BUILDERS = {
    "describe": _describe,
    "create-tagged": _create_tagged,
    "mutate-tagged": _mutate_tagged,
    "pass-role": _pass_role,
    "instance-profile": _instance_profile,
    "cluster": _cluster,
    "queue": _queue,
    "ssm": _ssm,
    "pricing": _pricing,
    "zonal-shift": _zonal_shift,
}
