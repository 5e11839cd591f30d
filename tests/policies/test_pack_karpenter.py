"""The pack's checks of what Karpenter v1.14.1's getting-started CloudFormation sets up
besides the controller's permissions (website/content/en/docs/getting-started/
getting-started-with-karpenter/cloudformation.yaml at the tag): the interruption queue
(KarpenterInterruptionQueue: MessageRetentionPeriod 300; KarpenterInterruptionQueuePolicy:
events.amazonaws.com may SendMessage) and the node role (KarpenterNodeRole: EC2 trust, four
managed policies; its EC2_LINUX access entry from the getting-started guide). The passing
input is the real dev stack (tests/policies/bridge.py); each violating one is that stack
with one thing broken."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from tests.policies.bridge import infra_resources
from tests.policies.engine import evaluate

QUEUE = "aws:sqs/queue:Queue"
QUEUE_POLICY = "aws:sqs/queuePolicy:QueuePolicy"
ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"


def messages(policy: str, resources: list[Any], **config: Any) -> list[str]:
    findings = evaluate(resources, "dev", {policy: config} if config else None, only=policy)
    return [finding.message for finding in findings]


def dev() -> list[Any]:
    return list(infra_resources("dev"))


def with_props(
    resources: list[Any], type_: str, resource_name: str | None, /, **props: Any
) -> list[Any]:
    """The stack with the named resource's props changed (a None value drops the prop)."""
    def change(resource: Any) -> Any:
        if resource.resource_type != type_ or resource_name not in (None, resource.name):
            return resource
        merged = {**resource.props, **props}
        return replace(resource, props={k: v for k, v in merged.items() if v is not None})

    return [change(resource) for resource in resources]


# -- stack-interruption-queue ----------------------------------------------------------------


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_the_example_stacks_queue_is_karpenters(stack: str) -> None:
    findings = evaluate(list(infra_resources(stack)), stack, only="stack-interruption-queue")

    assert findings == []


@pytest.mark.parametrize(("retention", "kept"), [(None, 345_600), (900, 900)])
def test_a_queue_keeping_messages_longer_than_karpenters_300_seconds_is_refused(
    retention: int | None, kept: int
) -> None:
    """MessageRetentionPeriod: 300. Left out, SQS keeps a message four days."""
    resources = with_props(dev(), QUEUE, None, messageRetentionSeconds=retention)

    [message] = messages("stack-interruption-queue", resources)

    assert message.startswith(
        f"the interruption queue 'nodewright-dev-interruption' keeps messages for {kept} s, "
        "more than 300 s")
    assert messages("stack-interruption-queue", resources,
                    maxMessageRetentionSeconds=kept) == []


def test_a_queue_eventbridge_may_not_send_to_is_refused() -> None:
    """KarpenterInterruptionQueuePolicy allows events.amazonaws.com (and sqs.amazonaws.com)
    sqs:SendMessage; without it every EventBridge rule delivers nothing."""
    (policy,) = [r for r in dev() if r.resource_type == QUEUE_POLICY]
    document = json.loads(policy.props["policy"])
    deny_only = {**document, "Statement": [s for s in document["Statement"]
                                           if s["Effect"] == "Deny"]}
    resources = with_props(dev(), QUEUE_POLICY, None, policy=json.dumps(deny_only))

    [message] = messages("stack-interruption-queue", resources)

    assert message.startswith(
        "no queue policy lets EventBridge (events.amazonaws.com) send messages to the "
        "interruption queue 'nodewright-dev-interruption'")
    no_policy = [r for r in dev() if r.resource_type != QUEUE_POLICY]
    assert len(messages("stack-interruption-queue", no_policy)) == 1


def test_a_queue_policy_the_rule_cannot_read_is_not_judged() -> None:
    """A policy document of another shape than JSON text or a mapping is not judged; a
    queue policy resource without one is no policy."""
    resources = with_props(dev(), QUEUE_POLICY, None, policy=None)
    unknown = [r for r in dev() if r.resource_type != QUEUE_POLICY] + [
        replace(r, props={**r.props, "policy": object()})
        for r in dev() if r.resource_type == QUEUE_POLICY]

    assert len(messages("stack-interruption-queue", resources)) == 1  # no policy at all
    assert messages("stack-interruption-queue", unknown) == []


def test_the_controller_reading_a_queue_the_stack_lacks_is_refused() -> None:
    resources = with_props(dev(), QUEUE, None, name="another-queue")

    [message] = messages("stack-interruption-queue", resources)

    assert message.startswith(
        "the controller nodewright-controller reads the interruption queue "
        "'nodewright-dev-interruption', which this stack does not define.")


# -- stack-node-role -------------------------------------------------------------------------


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_the_example_stacks_node_role_is_karpenters(stack: str) -> None:
    assert evaluate(list(infra_resources(stack)), stack, only="stack-node-role") == []


def test_a_node_role_without_a_managed_policy_karpenter_attaches_is_refused() -> None:
    """KarpenterNodeRole's ManagedPolicyArns: AmazonEKS_CNI_Policy, AmazonEKSWorkerNodePolicy,
    AmazonEC2ContainerRegistryPullOnly, AmazonSSMManagedInstanceCore."""
    resources = [r for r in dev() if r.name not in ("node-cni", "node-ssm")]

    [message] = messages("stack-node-role", resources)

    assert message.startswith("the node role NodewrightNode-nodewright-dev lacks the managed "
                              "policies AmazonEKS_CNI_Policy, AmazonSSMManagedInstanceCore.")
    assert messages("stack-node-role", resources, requiredManagedPolicies=[
        "AmazonEKSWorkerNodePolicy", "AmazonEC2ContainerRegistryPullOnly"]) == []


def test_the_broader_registry_policy_stands_for_pull_only() -> None:
    resources = with_props(dev(), ATTACHMENT, "node-ecr-pull",
                           policyArn="arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryReadOnly")

    assert messages("stack-node-role", resources) == []


def test_a_node_role_ec2_may_not_assume_is_refused() -> None:
    """KarpenterNodeRole trusts ec2.${AWS::URLSuffix} with sts:AssumeRole."""
    trust = json.dumps({"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"},
        "Action": "sts:AssumeRole"}]})
    resources = with_props(dev(), "aws:iam/role:Role", "node-role", assumeRolePolicy=trust)

    [message] = messages("stack-node-role", resources)

    assert message.startswith("the node role NodewrightNode-nodewright-dev does not let EC2 "
                              "assume it")


def test_a_node_role_without_a_node_access_entry_is_refused() -> None:
    """Karpenter's getting-started guide gives KarpenterNodeRole an EC2_LINUX access entry;
    a STANDARD one (or none, beside other entries) lets no node join."""
    standard = with_props(dev(), "aws:eks/accessEntry:AccessEntry", "node-role",
                          type="STANDARD")

    [message] = messages("stack-node-role", standard)

    assert message.startswith("the node role NodewrightNode-nodewright-dev has no EC2_LINUX "
                              "(or EC2_WINDOWS) access entry")


def test_a_role_made_outside_the_stack_is_not_judged() -> None:
    outside = [r for r in dev() if r.name not in ("node-role", "node-cni")]

    assert messages("stack-node-role", outside) == []
