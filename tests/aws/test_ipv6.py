"""IPv6 clusters, as Karpenter v1.14 handles them: the cluster's IP family comes from the
kube-dns Service's address (or, when it cannot be read, EKS's ipFamily), nodes get the IPv6
cluster DNS in every family's user data, and launch templates give the primary interface an
IPv6 address, with ipPrefixCount as IPv6 prefixes."""

from __future__ import annotations

import base64
import tomllib
from typing import Any

import pytest
import yaml

from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.cluster_info import EksCluster
from nodewright.cloud.aws.provider import AwsCloudProvider
from nodewright.cloud.aws.userdata import ClusterInfo, NodeBootstrap, render_user_data
from nodewright.cluster.memory import InMemoryCluster
from nodewright.operator.kube_dns import kube_dns_ip
from nodewright.runtime import VirtualClock
from nodewright.scheduling.pricing import OfflinePriceSource
from tests.aws.world import FakeClock

from .conftest import CallRecorder
from .world import CLUSTER, World, build_world, node_class, nodeclaim

SERVICE_CIDR_V6 = "fd30:1234:5678::/108"
KUBE_DNS_V6 = "fd30:1234:5678::a"


@pytest.fixture
def world(clients: AwsClients) -> World:
    return build_world(clients)


def eks_says_ipv6(clients: AwsClients) -> None:
    """What EKS answers for an IPv6 cluster (moto keeps ipFamily but has no service CIDR)."""

    def answer(parsed: dict[str, Any], **_: Any) -> None:
        parsed["cluster"]["kubernetesNetworkConfig"] = {
            "ipFamily": "ipv6", "serviceIpv6Cidr": SERVICE_CIDR_V6}

    clients.eks.meta.events.register("after-call.eks.DescribeCluster", answer)


def provider_with(clients: AwsClients, clock: FakeClock, dns: str | None) -> AwsCloudProvider:
    return AwsCloudProvider(clients, CLUSTER, clock=clock, prices=OfflinePriceSource(),
                            kube_dns_ip=dns)


def templates(recorder: CallRecorder) -> list[dict[str, Any]]:
    return [call["LaunchTemplateData"] for call in recorder.calls_of("ec2:CreateLaunchTemplate")]


def user_data(data: dict[str, Any]) -> str:
    return base64.b64decode(data["UserData"]).decode()


def test_eks_ipfamily_makes_an_ipv6_cluster_when_kube_dns_is_unknown(
    clients: AwsClients, world: World, clock: FakeClock,
) -> None:
    eks_says_ipv6(clients)

    cluster = provider_with(clients, clock, dns=None).cluster()

    assert cluster.ip_family == "ipv6"
    assert cluster.info.service_cidr == SERVICE_CIDR_V6
    assert cluster.info.dns_ip == KUBE_DNS_V6  # the CIDR's tenth address, as EKS assigns it
    assert cluster.info.ipv6


def test_the_kube_dns_address_decides_as_in_karpenter() -> None:
    described = EksCluster(ClusterInfo("demo", "https://x", "Q0E="), "1.30")

    assert described.with_kube_dns("fd00::a").info.ipv6
    assert not described.with_kube_dns("10.100.0.10").info.ipv6
    assert described.with_kube_dns(None).info.dns_ip is None  # IPv4, bootstrap's own DNS


def test_an_ipv6_launch_template_gives_the_interface_an_ipv6_address_and_prefixes(
    clients: AwsClients, world: World, clock: FakeClock, recorder: CallRecorder,
) -> None:
    eks_says_ipv6(clients)
    provider = provider_with(clients, clock, KUBE_DNS_V6)

    provider.create(nodeclaim(), node_class(ipPrefixCount=2))

    for data in templates(recorder):
        assert "SecurityGroupIds" not in data
        (interface,) = data["NetworkInterfaces"]
        assert interface == {"DeviceIndex": 0, "Groups": [world.security_group],
                             "Ipv6PrefixCount": 2, "PrimaryIpv6": True, "Ipv6AddressCount": 1}
        node_config = yaml.safe_load(
            user_data(data).split("application/node.eks.aws\n\n")[1].split("\n--//")[0])
        assert node_config["spec"]["cluster"]["cidr"] == SERVICE_CIDR_V6
        assert node_config["spec"]["kubelet"]["config"]["clusterDNS"] == [KUBE_DNS_V6]


def test_without_prefixes_an_ipv6_interface_still_gets_its_address(
    clients: AwsClients, world: World, clock: FakeClock, recorder: CallRecorder,
) -> None:
    provider_with(clients, clock, KUBE_DNS_V6).create(nodeclaim(), node_class())

    for data in templates(recorder):
        (interface,) = data["NetworkInterfaces"]
        assert (interface["PrimaryIpv6"], interface["Ipv6AddressCount"]) == (True, 1)
        assert "Ipv4PrefixCount" not in interface and "Ipv6PrefixCount" not in interface


def test_an_ipv4_cluster_keeps_ipv4_prefixes_and_gets_the_kube_dns_address(
    clients: AwsClients, world: World, clock: FakeClock, recorder: CallRecorder,
) -> None:
    provider_with(clients, clock, "10.100.0.10").create(
        nodeclaim(), node_class(ipPrefixCount=1, amiSelectorTerms=[{"alias": "al2@latest"}]))

    for data in templates(recorder):
        (interface,) = data["NetworkInterfaces"]
        assert interface["Ipv4PrefixCount"] == 1 and "PrimaryIpv6" not in interface
        text = user_data(data)
        assert "--dns-cluster-ip '10.100.0.10'" in text and "--ip-family" not in text


def test_the_users_cluster_dns_wins_over_the_discovered_one(
    clients: AwsClients, world: World, clock: FakeClock, recorder: CallRecorder,
) -> None:
    provider_with(clients, clock, "10.100.0.10").create(
        nodeclaim(), node_class(kubelet={"clusterDNS": ["169.254.20.10"]}))

    assert all("- 169.254.20.10" in user_data(data) and "10.100.0.10" not in user_data(data)
               for data in templates(recorder))


IPV6_CLUSTER = ClusterInfo("demo", "https://x.eks.amazonaws.com", "Q0E=", SERVICE_CIDR_V6,
                           dns_ip=KUBE_DNS_V6)


def ipv6_bootstrap() -> NodeBootstrap:
    return NodeBootstrap.build(IPV6_CLUSTER, labels={"team": "a"}, max_pods=29)


def test_al2_boots_with_the_ipv6_family_and_dns() -> None:
    text = render_user_data("AL2", ipv6_bootstrap())
    assert "--ip-family ipv6 \\\n--dns-cluster-ip 'fd30:1234:5678::a' \\\n" in text


def test_bottlerocket_and_windows_get_the_ipv6_dns() -> None:
    settings = tomllib.loads(render_user_data("Bottlerocket", ipv6_bootstrap()))["settings"]
    assert settings["kubernetes"]["cluster-dns-ip"] == KUBE_DNS_V6
    assert render_user_data("Windows2022", ipv6_bootstrap()).endswith(
        f" -DNSClusterIP '{KUBE_DNS_V6}'\n</powershell>")


def test_al2023_tells_nodeadm_the_ipv6_service_cidr_and_dns() -> None:
    text = render_user_data("AL2023", ipv6_bootstrap())
    node_config = yaml.safe_load(text.split("application/node.eks.aws\n\n")[1].split("\n--//")[0])
    assert node_config["spec"]["cluster"]["cidr"] == SERVICE_CIDR_V6
    assert node_config["spec"]["kubelet"]["config"]["clusterDNS"] == [KUBE_DNS_V6]
    assert node_config["spec"]["kubelet"]["config"]["maxPods"] == 29  # unchanged by IPv6


def kube_dns_service(cluster_ip: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "kube-dns", "namespace": "kube-system"},
            "spec": {"clusterIP": cluster_ip, "ports": [{"port": 53}]}}


@pytest.mark.parametrize(("service", "found"), [
    (kube_dns_service("fd30:1234:5678::a"), "fd30:1234:5678::a"),
    (kube_dns_service("10.100.0.10"), "10.100.0.10"),
    (kube_dns_service("None"), None),  # a headless Service has no address to give nodes
    (None, None),
])
def test_the_operator_reads_the_kube_dns_address(
    service: dict[str, Any] | None, found: str | None,
) -> None:
    cluster = InMemoryCluster(VirtualClock())
    if service is not None:
        cluster.create(service)
    assert kube_dns_ip(cluster) == found
