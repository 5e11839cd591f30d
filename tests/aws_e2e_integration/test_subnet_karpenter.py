"""Karpenter test/suites/integration/subnet_test.go (v1.14.1) on the moto account: three
discovery-tagged subnets, one per zone, named here."""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.cloud.aws.clients import AwsClients
from tests.aws.world import World
from tests.aws_e2e.moto_world import node_class, node_pool

from .moto_env import Env, replace_requirements

ZONE = "topology.kubernetes.io/zone"


@pytest.fixture
def named(clients: AwsClients, world: World) -> list[str]:
    """The discovery-tagged subnets, by zone, each with a Name tag."""
    ordered = [world.subnets[zone] for zone in sorted(world.subnets)]
    for index, subnet in enumerate(ordered):
        clients.ec2.create_tags(Resources=[subnet],
                                Tags=[{"Key": "Name", "Value": f"demo-subnet-{index}"}])
    return ordered


def test_the_subnet_selected_by_id_is_the_instance_s(env: Env, world: World) -> None:
    """Karpenter test/suites/integration/subnet_test.go It("should use the subnet-id
    selector")."""
    chosen = world.subnets[f"{world.region}b"]

    node = env.provision(subnetSelectorTerms=[{"id": chosen}])

    assert env.instance_of(node)["SubnetId"] == chosen


def test_subnets_selected_by_several_name_tags_hold_the_instance(
        env: Env, named: list[str]) -> None:
    """Karpenter test/suites/integration/subnet_test.go It("should use the subnet tag
    selector with multiple tag values")."""
    node = env.provision(subnetSelectorTerms=[
        {"tags": {"Name": "demo-subnet-0"}}, {"tags": {"Name": "demo-subnet-2"}}])

    assert env.instance_of(node)["SubnetId"] in {named[0], named[2]}


def test_a_zone_the_node_pool_requires_gets_that_zone_s_subnet(env: Env, world: World) -> None:
    """Karpenter test/suites/integration/subnet_test.go It("should use a subnet within the
    AZ requested")."""
    zone = f"{world.region}c"
    pool = replace_requirements(node_pool(), {"key": ZONE, "operator": "In", "values": [zone]})

    node = env.provision(pool=pool)

    assert env.instance_of(node)["SubnetId"] == world.subnets[zone]


def test_the_status_lists_the_discovered_subnets(env: Env, world: World) -> None:
    """Karpenter test/suites/integration/subnet_test.go It("should have the NodeClass
    status for subnets")."""
    env.apply(node_class())
    conditions = env.settle_node_class()

    status: Any = env.get("EC2NodeClass", "default")["status"]
    assert {subnet["id"] for subnet in status["subnets"]} == set(world.subnets.values())
    assert conditions["SubnetsReady"][0] == "True"
    assert conditions["Ready"][0] == "True"


def test_subnet_terms_matching_nothing_leave_the_node_class_not_ready(env: Env) -> None:
    """Karpenter test/suites/integration/subnet_test.go It("should have the NodeClass status
    as not ready since subnets were not resolved") — the messages name the terms
    (docs/karpenter-differences.md, "Condition and event messages")."""
    env.apply(node_class(subnetSelectorTerms=[{"tags": {"karpenter.sh/discovery": "invalidName"}}]))
    conditions = env.settle_node_class()

    status, message = conditions["SubnetsReady"]
    assert status == "False" and "invalidName" in message
    status, message = conditions["Ready"]
    assert status == "False"
    assert set(message.split(", ")) == {"ValidationSucceeded=False", "SubnetsReady=False"}
