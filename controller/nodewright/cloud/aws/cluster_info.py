"""What user data and AMI aliases need to know about the EKS cluster."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Final

from nodewright.cloud.aws.errors import aws_call
from nodewright.cloud.aws.userdata.bootstrap import ClusterInfo

if TYPE_CHECKING:
    from mypy_boto3_eks import EKSClient

# EKS gives kube-dns this address of the service CIDR (10.100.0.10, fd30:...::a), which is
# also what bootstrap.sh and nodeadm derive when told nothing else.
DNS_HOST_INDEX: Final = 10


@dataclass(frozen=True)
class EksCluster:
    info: ClusterInfo
    kubernetes_version: str
    # kubernetesNetworkConfig.ipFamily: "ipv4" or "ipv6".
    ip_family: str = "ipv4"

    def with_kube_dns(self, kube_dns_ip: str | None) -> EksCluster:
        """The cluster as nodes should see it, given the kube-dns Service's cluster IP (what
        Karpenter reads at start-up). Without it, an IPv6 cluster (by EKS's ipFamily) still
        gets its IPv6 DNS address, the service CIDR's tenth host, as EKS assigns it."""
        dns_ip = kube_dns_ip
        if dns_ip is None and self.ip_family == "ipv6":
            dns_ip = default_dns_ip(self.info.service_cidr)
        if dns_ip is None:
            return self
        return replace(self, info=replace(self.info, dns_ip=dns_ip))


def default_dns_ip(service_cidr: str) -> str | None:
    try:
        network = ipaddress.ip_network(service_cidr, strict=False)
    except ValueError:
        return None
    return str(network[DNS_HOST_INDEX]) if network.num_addresses > DNS_HOST_INDEX else None


def describe_cluster(eks: EKSClient, name: str) -> EksCluster:
    with aws_call("eks:DescribeCluster", f"cluster {name}"):
        cluster = eks.describe_cluster(name=name)["cluster"]
    network = cluster.get("kubernetesNetworkConfig", {})
    ip_family = str(network.get("ipFamily") or "ipv4").lower()
    if ip_family == "ipv6":
        cidr = network.get("serviceIpv6Cidr") or network.get("serviceIpv4Cidr")
    else:
        cidr = network.get("serviceIpv4Cidr") or network.get("serviceIpv6Cidr")
    return EksCluster(
        info=ClusterInfo(
            name=name,
            endpoint=str(cluster.get("endpoint", "")),
            ca_bundle=str(cluster.get("certificateAuthority", {}).get("data", "")),
            # Empty when EKS names none: AL2023 user data then refuses to render.
            service_cidr=str(cidr or ""),
        ),
        kubernetes_version=str(cluster.get("version", "")),
        ip_family=ip_family,
    )
