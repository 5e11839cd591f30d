"""Karpenter test/suites/integration/network_interface_test.go (v1.14.1) on the moto
account, whose subnets are private (no public IP on launch): whether the instance gets a
public IP is what its launch template's primary interface asks EC2 for."""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.cloud.aws.clients import AwsClients

from .moto_env import Env


@pytest.mark.parametrize("associate", [
    pytest.param(None, id="AssociatePublicIPAddress not specified by the user while using a "
                          "private subnet"),
    pytest.param(True, id="AssociatePublicIPAddress set true by user while using a private "
                          "subnet"),
])
def test_a_public_ip_is_asked_for_only_when_the_node_class_says_so(
        env: Env, clients: AwsClients, associate: bool | None) -> None:
    """Karpenter test/suites/integration/network_interface_test.go DescribeTable("should
    correctly configure public IP assignment on instances"), both Entries."""
    spec: dict[str, Any] = {} if associate is None else {"associatePublicIPAddress": associate}
    node = env.provision(**spec)

    subnet = env.instance_of(node)["SubnetId"]
    (described,) = clients.ec2.describe_subnets(SubnetIds=[subnet])["Subnets"]
    assert described["MapPublicIpOnLaunch"] is False
    (primary,) = env.template_of_node(node)["NetworkInterfaces"]
    assert primary.get("AssociatePublicIpAddress", False) is bool(associate)
