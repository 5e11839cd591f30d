"""The controller's IAM policy lets the AWS provider do its job, and only with its own tags.

Moto does not enforce IAM, so this evaluates the generated policy document against the
tags the provider really sends (fleet, launch template, instance profile), with a small
evaluator for the condition operators the policy uses.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from typing import Any

import pytest

from infra.controller_policy import PolicyTarget, controller_policy_document
from nodewright.cloud.aws import tags as provider_tags
from nodewright.cloud.aws.fleet import TAGGED_RESOURCE_TYPES
from nodewright.cloud.aws.instance_profiles import profile_tags
from nodewright.cloud.aws.launch_templates import LaunchConfig

CLUSTER, REGION, ACCOUNT = "demo", "us-west-2", "123456789012"
POLICY = controller_policy_document(
    PolicyTarget(
        cluster_name=CLUSTER,
        region=REGION,
        partition="aws",
        account_id=ACCOUNT,
        node_role_arn=f"arn:aws:iam::{ACCOUNT}:role/NodewrightNode-{CLUSTER}",
        queue_arn=f"arn:aws:sqs:{REGION}:{ACCOUNT}:{CLUSTER}-interruption",
    )
)


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _context_value(key: str, context: Mapping[str, Any]) -> Any:
    if key.startswith("aws:RequestTag/"):
        return context["request_tags"].get(key.removeprefix("aws:RequestTag/"))
    if key.startswith("aws:ResourceTag/"):
        return context["resource_tags"].get(key.removeprefix("aws:ResourceTag/"))
    if key == "aws:TagKeys":
        return list(context["request_tags"])
    return context.get(key)


def _condition_holds(
    condition: Mapping[str, Mapping[str, Any]], context: Mapping[str, Any]
) -> bool:
    for operator, clauses in condition.items():
        for key, wanted in clauses.items():
            actual = _context_value(key, context)
            allowed = [str(value) for value in _as_list(wanted)]
            if operator == "StringEquals":
                if actual is None or str(actual) not in allowed:
                    return False
            elif operator == "StringLike":
                if actual is None or not any(fnmatch.fnmatchcase(str(actual), p) for p in allowed):
                    return False
            elif operator == "ForAllValues:StringEquals":
                if not all(str(value) in allowed for value in actual or []):
                    return False
            else:
                raise AssertionError(f"the evaluator does not know {operator}")
    return True


def allowed(action: str, resource_arn: str, **context: Any) -> bool:
    context.setdefault("request_tags", {})
    context.setdefault("resource_tags", {})
    context.setdefault("aws:RequestedRegion", REGION)
    for statement in POLICY["Statement"]:
        if statement["Effect"] != "Allow":
            continue
        if not any(fnmatch.fnmatchcase(action, a) for a in _as_list(statement["Action"])):
            continue
        if not any(fnmatch.fnmatchcase(resource_arn, r) for r in _as_list(statement["Resource"])):
            continue
        if _condition_holds(statement.get("Condition", {}), context):
            return True
    return False


def ec2_arn(kind: str, name: str) -> str:
    return f"arn:aws:ec2:{REGION}:{ACCOUNT}:{kind}/{name}"


LAUNCH_CONFIG = LaunchConfig(
    cluster=CLUSTER,
    nodepool="default",
    node_class="default",
    image_id="ami-0123456789abcdef0",
    instance_profile="demo_profile",
    security_group_ids=("sg-0123456789abcdef0",),
    user_data="",
    metadata_options={},
    block_device_mappings=(),
    detailed_monitoring=False,
    associate_public_ip_address=None,
    extra_tags={"team": "platform"},
)
INSTANCE_TAGS = {
    **provider_tags.ownership_tags(CLUSTER),
    provider_tags.NODEPOOL: "default",
    provider_tags.NODECLAIM: "default-abcde",
    provider_tags.NODECLASS: "default",
}


def test_the_provider_may_create_its_launch_templates() -> None:
    tags = LAUNCH_CONFIG.template_tags()
    assert allowed("ec2:CreateLaunchTemplate", ec2_arn("launch-template", "lt-1"),
                   request_tags=tags)
    assert allowed("ec2:CreateTags", ec2_arn("launch-template", "lt-1"), request_tags=tags,
                   **{"ec2:CreateAction": "CreateLaunchTemplate"})


@pytest.mark.parametrize("resource_type", TAGGED_RESOURCE_TYPES)
def test_the_provider_may_launch_with_create_fleet(resource_type: str) -> None:
    assert allowed("ec2:CreateFleet", ec2_arn(resource_type, "x"), request_tags=INSTANCE_TAGS)
    assert allowed("ec2:CreateTags", ec2_arn(resource_type, "x"), request_tags=INSTANCE_TAGS,
                   **{"ec2:CreateAction": "CreateFleet"})


def test_create_fleet_may_use_only_the_clusters_launch_templates() -> None:
    arn = ec2_arn("launch-template", "lt-1")
    assert allowed("ec2:CreateFleet", arn, resource_tags=LAUNCH_CONFIG.template_tags())
    assert not allowed("ec2:CreateFleet", arn, resource_tags={"team": "platform"})


def test_launching_without_the_ownership_tags_is_denied() -> None:
    foreign = {provider_tags.NODEPOOL: "default"}
    assert not allowed("ec2:CreateFleet", ec2_arn("instance", "x"), request_tags=foreign)


def test_the_provider_may_terminate_its_instances_and_delete_its_templates_only() -> None:
    assert allowed("ec2:TerminateInstances", ec2_arn("instance", "i-1"),
                   resource_tags=INSTANCE_TAGS)
    assert not allowed("ec2:TerminateInstances", ec2_arn("instance", "i-2"),
                       resource_tags={"Name": "someone-elses"})
    assert allowed("ec2:DeleteLaunchTemplate", ec2_arn("launch-template", "lt-1"),
                   resource_tags=LAUNCH_CONFIG.template_tags())


def test_the_provider_may_manage_the_instance_profiles_it_creates() -> None:
    tags = profile_tags(CLUSTER, REGION, "default")
    arn = f"arn:aws:iam::{ACCOUNT}:instance-profile/nodewright/{CLUSTER}/demo_abc"
    assert allowed("iam:CreateInstanceProfile", arn, request_tags=tags)
    assert allowed("iam:TagInstanceProfile", arn, request_tags=tags, resource_tags=tags)
    for action in ("iam:AddRoleToInstanceProfile", "iam:RemoveRoleFromInstanceProfile",
                   "iam:DeleteInstanceProfile"):
        assert allowed(action, arn, resource_tags=tags), action
    assert not allowed("iam:DeleteInstanceProfile", arn, resource_tags={"team": "x"})
