"""Karpenter test/suites/ipv6/suite_test.go (v1.14.1), on the moto account made an IPv6
cluster: EKS reports the ipv6 family and its service CIDR (`eks_says_ipv6`), the
kube-dns Service has an IPv6 address (the operator reads it: the provider is given it),
the NodePool launches c5.large.

Karpenter's first two Its then read the Node's IPv6 InternalIP, which the kubelet and the
VPC CNI of a real IPv6 node report; here what Nodewright does for it is read instead: the
node boots with the IPv6 cluster DNS and service CIDR, and its instance's primary
interface is asked for an IPv6 address. moto gives instances no IPv6 address whatever the
launch template says: the third It's "IPv6 primary" is read from the launch template the
instance was launched from, as EC2 applies it."""

from __future__ import annotations

import base64
from typing import Any

import pytest
import yaml

from nodewright.cloud.aws.clients import AwsClients
from tests.aws.test_ipv6 import KUBE_DNS_V6, SERVICE_CIDR_V6, eks_says_ipv6
from tests.aws.world import World
from tests.aws_e2e.moto_world import MotoCluster, node_class, node_pool, pod

USER_DNS = "fd30:1234:5678::53"


@pytest.fixture
def env(clients: AwsClients, world: World) -> MotoCluster:
    eks_says_ipv6(clients)
    return MotoCluster(clients, kube_dns_ip=KUBE_DNS_V6)


def c5_large() -> dict[str, Any]:
    return node_pool(requirements=[
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
        {"key": "karpenter.k8s.aws/instance-category", "operator": "Exists"},
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["c5.large"]}])


def launched(env: MotoCluster, **class_spec: Any) -> dict[str, Any]:
    """The pod runs on one node; the launch template data its instance was launched from."""
    env.apply(node_class(**class_spec), c5_large(), pod("p"))
    assert env.run_until(lambda: env.healthy("p")), env.errors
    assert len(env.nodes()) == 1
    instance = env.instance_of(env.node_of("p"))
    assert instance["InstanceType"] == "c5.large"
    ec2 = env.clients.ec2
    data = [ec2.describe_launch_template_versions(
        LaunchTemplateId=t["LaunchTemplateId"], Versions=["$Latest"])[
        "LaunchTemplateVersions"][0]["LaunchTemplateData"]
        for t in ec2.describe_launch_templates()["LaunchTemplates"]]
    (used,) = [d for d in data if d["ImageId"] == instance["ImageId"]
               and d.get("UserData") == ec2.describe_instance_attribute(
                   InstanceId=instance["InstanceId"], Attribute="userData")[
                   "UserData"]["Value"]]
    return dict(used)


def node_config(data: dict[str, Any]) -> dict[str, Any]:
    text = base64.b64decode(data["UserData"]).decode()
    found: dict[str, Any] = yaml.safe_load(
        text.split("application/node.eks.aws\n\n")[1].split("\n--//")[0])
    return found


def test_an_ipv6_node_boots_with_the_discovered_kube_dns(env: MotoCluster) -> None:
    """Karpenter test/suites/ipv6/suite_test.go It("should provision an IPv6 node by
    discovering kube-dns IPv6")."""
    data = launched(env)

    config = node_config(data)
    assert config["spec"]["cluster"]["cidr"] == SERVICE_CIDR_V6
    assert config["spec"]["kubelet"]["config"]["clusterDNS"] == [KUBE_DNS_V6]


def test_an_ipv6_node_boots_with_the_kubelet_s_cluster_dns(env: MotoCluster) -> None:
    """Karpenter test/suites/ipv6/suite_test.go It("should provision an IPv6 node by
    discovering kubeletConfig kube-dns IP")."""
    data = launched(env, kubelet={"clusterDNS": [USER_DNS]})

    config = node_config(data)
    assert config["spec"]["cluster"]["cidr"] == SERVICE_CIDR_V6
    assert config["spec"]["kubelet"]["config"]["clusterDNS"] == [USER_DNS]


def test_the_primary_interface_gets_a_primary_ipv6_address(env: MotoCluster) -> None:
    """Karpenter test/suites/ipv6/suite_test.go It("should provision a static IPv6 prefix
    with node launch and set IPv6 as primary in the primary network interface")."""
    data = launched(env, kubelet={"clusterDNS": [USER_DNS]})

    (primary,) = [i for i in data["NetworkInterfaces"]
                  if i.get("DeviceIndex") == 0 and i.get("NetworkCardIndex", 0) == 0]
    assert primary["Ipv6AddressCount"] == 1
    assert primary["PrimaryIpv6"] is True
