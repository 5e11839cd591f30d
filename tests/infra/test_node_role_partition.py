"""The node roles trust the EC2 principal of the stack's partition, as Karpenter's
getting-started CloudFormation does (KarpenterNodeRole: `ec2.${AWS::URLSuffix}`): in the
China regions EC2 assumes roles as `ec2.amazonaws.com.cn`, and a role trusting only
`ec2.amazonaws.com` leaves every node there without credentials. The real infra/ program
under Pulumi mocks, with the dev stack moved to a China region and to GovCloud."""

from __future__ import annotations

import json

import pytest
from infra_harness import run_program

from infra.iam_roles import node_trust_policy, url_suffix


@pytest.mark.parametrize(("region", "principal"), [
    pytest.param("cn-north-1", "ec2.amazonaws.com.cn", id="aws-cn"),
    pytest.param("us-gov-west-1", "ec2.amazonaws.com", id="aws-us-gov"),
])
def test_both_node_roles_trust_the_partitions_ec2(region: str, principal: str) -> None:
    roles = {r.name: json.loads(r.inputs["assumeRolePolicy"])
             for r in run_program("dev", {"aws:region": region})
             if r.type == "aws:iam/role:Role" and r.name in ("node-role", "system-node-role")}

    assert roles.keys() == {"node-role", "system-node-role"}
    for trust in roles.values():
        assert trust["Statement"] == [{"Effect": "Allow", "Principal": {"Service": principal},
                                       "Action": "sts:AssumeRole"}]


@pytest.mark.parametrize(("partition", "suffix"), [
    ("aws", "amazonaws.com"), ("aws-us-gov", "amazonaws.com"), ("aws-cn", "amazonaws.com.cn"),
])
def test_the_url_suffix_is_cloudformations(partition: str, suffix: str) -> None:
    assert url_suffix(partition) == suffix
    assert json.loads(node_trust_policy(partition))["Statement"][0]["Principal"] == {
        "Service": f"ec2.{suffix}"}
