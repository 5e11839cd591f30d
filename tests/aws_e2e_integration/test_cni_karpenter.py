"""Karpenter test/suites/integration/cni_test.go (v1.14.1) on the moto account: the pods a
node holds, as the NodeClaim and its node carry them and as the user data tells the
kubelet (`maxPods`), against the ENI limits of the instance type EC2 describes."""

from __future__ import annotations

import base64
import re
from typing import Any

from nodewright.cloud.aws.clients import AwsClients
from nodewright.scheduling.allocatable import ProviderSettings

from .moto_env import Env


def network_info(clients: AwsClients, node: dict[str, Any]) -> dict[str, Any]:
    instance_type = node["metadata"]["labels"]["node.kubernetes.io/instance-type"]
    (described,) = clients.ec2.describe_instance_types(InstanceTypes=[instance_type])[
        "InstanceTypes"]
    found: dict[str, Any] = described["NetworkInfo"]
    return found


def pods_of(env: Env, node_name: str) -> tuple[int, int, int]:
    """The node's allocatable pods, its NodeClaim's, and the kubelet's maxPods."""
    node = env.get("Node", node_name)
    (claim,) = env.nodeclaims()
    user_data = base64.b64decode(env.template_of_node(node_name)["UserData"]).decode()
    (max_pods,) = re.findall(r"maxPods: (\d+)", user_data)
    return (int(node["status"]["allocatable"]["pods"]),
            int(claim["status"]["allocatable"]["pods"]), int(max_pods))


def test_max_pods_is_the_eni_limit(env: Env, clients: AwsClients) -> None:
    """Karpenter test/suites/integration/cni_test.go It("should set eni-limited maxPods")."""
    node = env.provision()

    info = network_info(clients, env.get("Node", node))
    limit = info["MaximumNetworkInterfaces"] * (info["Ipv4AddressesPerInterface"] - 1) + 2
    assert pods_of(env, node) == (limit, limit, limit)


def test_the_kubelet_max_pods_wins(env: Env) -> None:
    """Karpenter test/suites/integration/cni_test.go It("should set max pods to 110 if
    maxPods is set in kubelet")."""
    node = env.provision(kubelet={"maxPods": 110})

    assert pods_of(env, node) == (110, 110, 110)


def test_reserved_enis_lower_max_pods(env: Env, clients: AwsClients) -> None:
    """Karpenter test/suites/integration/cni_test.go It("should set maxPods when reservedENIs
    is set") — RESERVED_ENIS=1, the setting the controller starts with."""
    env.cloud.provider_settings = ProviderSettings(reserved_enis=1)
    env.cloud.catalog.provider = env.cloud.provider_settings

    node = env.provision()

    info = network_info(clients, env.get("Node", node))
    limit = (info["MaximumNetworkInterfaces"] - 1) * (info["Ipv4AddressesPerInterface"] - 1) + 2
    assert pods_of(env, node) == (limit, limit, limit)
