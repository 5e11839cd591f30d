"""The roles of a stack follow its partition, as Karpenter's getting-started CloudFormation
does with ${AWS::URLSuffix} and ${AWS::Partition}: in the China regions EC2 assumes roles as
`ec2.amazonaws.com.cn`, so a node role trusting only `ec2.amazonaws.com` leaves every node
there without credentials, and the controller may pass the node role only to that principal.
EKS Pod Identity's principal is `pods.eks.amazonaws.com` in every partition (the China
regions' EKS user guide trusts the same one). The real infra/ program under Pulumi mocks,
with the dev stack (pod identity) in a commercial region, a China region and GovCloud."""

from __future__ import annotations

import json
from typing import Any

import pytest
from infra_harness import RecordedResource, run_program

from infra.iam_roles import node_trust_policy, url_suffix

# (region, partition, the partition's EC2 principal)
PARTITIONS = [
    pytest.param("us-west-2", "aws", "ec2.amazonaws.com", id="aws"),
    pytest.param("cn-north-1", "aws-cn", "ec2.amazonaws.com.cn", id="aws-cn"),
    pytest.param("us-gov-west-1", "aws-us-gov", "ec2.amazonaws.com", id="aws-us-gov"),
]
_RUNS: dict[str, list[RecordedResource]] = {}


def _run(region: str) -> list[RecordedResource]:
    """One mocked run of the dev stack per region, shared by the tests of this module."""
    if region not in _RUNS:
        _RUNS[region] = run_program("dev", {"aws:region": region})
    return _RUNS[region]


def _role_trust(region: str, name: str) -> dict[str, Any]:
    (role,) = [r for r in _run(region) if r.type == "aws:iam/role:Role" and r.name == name]
    trust: dict[str, Any] = json.loads(role.inputs["assumeRolePolicy"])
    return trust


@pytest.mark.parametrize(("region", "partition", "principal"), PARTITIONS)
def test_both_node_roles_trust_the_partitions_ec2(
    region: str, partition: str, principal: str
) -> None:
    for name in ("node-role", "system-node-role"):
        assert _role_trust(region, name)["Statement"] == [{
            "Effect": "Allow", "Principal": {"Service": principal}, "Action": "sts:AssumeRole"}]


@pytest.mark.parametrize(("region", "partition", "principal"), PARTITIONS)
def test_the_controller_role_trusts_pod_identity_of_this_partitions_cluster(
    region: str, partition: str, principal: str
) -> None:
    (statement,) = _role_trust(region, "controller-role")["Statement"]
    assert statement["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert statement["Condition"]["ArnEquals"] == {
        "aws:SourceArn": f"arn:{partition}:eks:{region}:123456789012:cluster/nodewright-dev"}


@pytest.mark.parametrize(("region", "partition", "principal"), PARTITIONS)
def test_the_controller_passes_the_node_role_to_the_partitions_ec2_only(
    region: str, partition: str, principal: str
) -> None:
    statements = [statement for r in _run(region) if r.type == "aws:iam/policy:Policy"
                  for statement in json.loads(r.inputs["policy"])["Statement"]]
    (pass_role,) = [s for s in statements if s["Action"] == ["iam:PassRole"]]
    assert pass_role["Condition"] == {"StringEquals": {"iam:PassedToService": principal}}


@pytest.mark.parametrize(("partition", "suffix"), [
    ("aws", "amazonaws.com"), ("aws-us-gov", "amazonaws.com"), ("aws-cn", "amazonaws.com.cn"),
])
def test_the_url_suffix_is_cloudformations(partition: str, suffix: str) -> None:
    assert url_suffix(partition) == suffix
    assert json.loads(node_trust_policy(partition))["Statement"][0]["Principal"] == {
        "Service": f"ec2.{suffix}"}
