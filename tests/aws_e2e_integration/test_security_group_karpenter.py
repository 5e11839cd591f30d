"""Karpenter test/suites/integration/security_group_test.go (v1.14.1) on the moto account,
whose cluster has two discovery-tagged security groups here (Karpenter's e2e cluster has
more than one), each with a Name tag."""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.cloud.aws.clients import AwsClients
from tests.aws.world import CLUSTER, World
from tests.aws_e2e.moto_world import node_class

from .moto_env import Env


@pytest.fixture
def groups(clients: AwsClients, world: World) -> list[str]:
    """The cluster's discovery-tagged security groups, named."""
    second = clients.ec2.create_security_group(
        GroupName="demo-cluster", Description="cluster", VpcId=world.vpc_id,
        TagSpecifications=[{"ResourceType": "security-group", "Tags": [
            {"Key": "karpenter.sh/discovery", "Value": CLUSTER}]}])["GroupId"]
    found = [world.security_group, second]
    for index, group in enumerate(found):
        clients.ec2.create_tags(Resources=[group],
                                Tags=[{"Key": "Name", "Value": f"demo-sg-{index}"}])
    return found


def instance_groups(env: Env, node: str) -> set[str]:
    return {g["GroupId"] for g in env.instance_of(node)["SecurityGroups"]}


def test_security_groups_selected_by_id_are_the_instance_s(env: Env, groups: list[str]
                                                            ) -> None:
    """Karpenter test/suites/integration/security_group_test.go It("should use the
    security-group-id selector")."""
    node = env.provision(securityGroupSelectorTerms=[{"id": group} for group in groups])

    assert instance_groups(env, node) == set(groups)


def test_security_groups_selected_by_several_name_tags_are_the_instance_s(
        env: Env, groups: list[str]) -> None:
    """Karpenter test/suites/integration/security_group_test.go It("should use the security
    group selector with multiple tag values")."""
    node = env.provision(securityGroupSelectorTerms=[
        {"tags": {"Name": "demo-sg-0"}}, {"tags": {"Name": "demo-sg-1"}}])

    assert instance_groups(env, node) == set(groups)


def test_the_status_lists_the_discovered_security_groups(env: Env, groups: list[str]) -> None:
    """Karpenter test/suites/integration/security_group_test.go It("should update the
    EC2NodeClass status security groups")."""
    env.apply(node_class())
    conditions = env.settle_node_class()

    status: Any = env.get("EC2NodeClass", "default")["status"]
    assert {group["id"] for group in status["securityGroups"]} == set(groups)
    assert conditions["SecurityGroupsReady"][0] == "True"
    assert conditions["Ready"][0] == "True"


def test_security_group_terms_matching_nothing_leave_the_node_class_not_ready(
        env: Env, groups: list[str]) -> None:
    """Karpenter test/suites/integration/security_group_test.go It("should have the
    NodeClass status as not ready since security groups were not resolved") — the messages
    name the terms (docs/karpenter-differences.md, "Condition and event messages")."""
    env.apply(node_class(securityGroupSelectorTerms=[
        {"tags": {"karpenter.sh/discovery": "invalidName"}}]))
    conditions = env.settle_node_class()

    status, message = conditions["SecurityGroupsReady"]
    assert status == "False" and "invalidName" in message
    status, message = conditions["Ready"]
    assert status == "False"
    assert set(message.split(", ")) == {"ValidationSucceeded=False", "SecurityGroupsReady=False"}
