"""The pack against the real infra program: both example stacks pass with no mandatory
violation, and every resource the stack rules look at is really declared by infra/."""

from __future__ import annotations

import pytest

from tests.policies.bridge import camel_props, infra_resources, of_type
from tests.policies.engine import evaluate, mandatory


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_the_example_stacks_have_no_mandatory_violation(stack: str) -> None:
    findings = mandatory(evaluate(infra_resources(stack), stack))

    assert [(f.policy, f.urn, f.message) for f in findings] == []


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_the_stacks_declare_what_the_pack_inspects(stack: str) -> None:
    resources = infra_resources(stack)

    for resource_type in (
        "eks:index:Cluster",
        "aws:sqs/queue:Queue",
        "aws:sqs/queuePolicy:QueuePolicy",
        "aws:iam/policy:Policy",
        "aws:iam/role:Role",
        "aws:cloudwatch/eventRule:EventRule",
        "aws:ec2/tag:Tag",
        "kubernetes:apps/v1:Deployment",
        "kubernetes:karpenter.sh/v1:NodePool",
        "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass",
    ):
        assert of_type(resources, resource_type)


def test_the_bridge_names_properties_like_the_engine() -> None:
    recorded = {
        "sqs_managed_sse_enabled": True,
        "vpc_config": {"endpoint_public_access": False, "public_access_cidrs": []},
        "tags": {"cost_center": "1234"},
        "assumeRolePolicy": "{}",
    }

    assert camel_props(recorded) == {
        "sqsManagedSseEnabled": True,
        "vpcConfig": {"endpointPublicAccess": False, "publicAccessCidrs": []},
        "tags": {"cost_center": "1234"},
        "assumeRolePolicy": "{}",
    }
