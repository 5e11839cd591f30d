"""What nodes are told about the cluster when the operator's settings say it, as Karpenter's
CLUSTER_ENDPOINT, CLUSTER_CA_BUNDLE and EKS_CONTROL_PLANE do: each given setting replaces
what eks:DescribeCluster would say, and with all of them given (and the kube-dns address
known) DescribeCluster is not called at all, so a cluster whose control plane is not EKS's,
or a role without eks:DescribeCluster, still launches nodes."""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Final

from nodewright.cloud.aws.cluster_info import EksCluster
from nodewright.cloud.aws.userdata.bootstrap import ClusterInfo
from nodewright.cloud.provider import CloudProviderError

# Without EKS, the service CIDR nodeadm is told is the kube-dns address's /16 (IPv4) or
# /108 (IPv6), what EKS assigns; nodeadm only derives the DNS address from it, and nodes
# are given the kube-dns address itself.
IPV4_SERVICE_PREFIX: Final = 16
IPV6_SERVICE_PREFIX: Final = 108


@dataclass(frozen=True)
class ClusterSettings:
    endpoint: str | None = None  # CLUSTER_ENDPOINT
    ca_bundle: str | None = None  # CLUSTER_CA_BUNDLE (base64 PEM)
    # EKS_CONTROL_PLANE: the Kubernetes version comes from EKS. Off (Karpenter's default in
    # the operator), it comes from the API server, when `server_version` can ask it.
    eks_control_plane: bool = True
    server_version: Callable[[], str] | None = None

    def version_from_server(self) -> bool:
        return not self.eks_control_plane and self.server_version is not None

    def needs_eks(self, kube_dns_ip: str | None) -> bool:
        """Whether eks:DescribeCluster must be asked for something the settings leave out."""
        return (not self.endpoint or not self.ca_bundle or not self.version_from_server()
                or kube_dns_ip is None)

    def over(self, described: EksCluster) -> EksCluster:
        """EKS's answer with each given setting in its place."""
        info = described.info
        if self.endpoint:
            info = replace(info, endpoint=self.endpoint)
        if self.ca_bundle:
            info = replace(info, ca_bundle=self.ca_bundle)
        version = (self._server_version() if self.version_from_server()
                   else described.kubernetes_version)
        return replace(described, info=info, kubernetes_version=version)

    def _server_version(self) -> str:
        assert self.server_version is not None
        try:
            return self.server_version()
        except Exception as error:  # the API server's answer, whatever went wrong
            raise CloudProviderError(f"reading the Kubernetes version from the API server "
                                     f"(EKS_CONTROL_PLANE is false): {error}",
                                     resource="kubernetes version") from error

    def without_eks(self, name: str, kube_dns_ip: str) -> EksCluster:
        """The cluster from the settings alone (`needs_eks` is False)."""
        assert self.endpoint and self.ca_bundle and self.server_version
        address = ipaddress.ip_address(kube_dns_ip)
        prefix = IPV6_SERVICE_PREFIX if address.version == 6 else IPV4_SERVICE_PREFIX
        cidr = str(ipaddress.ip_network(f"{address}/{prefix}", strict=False))
        return EksCluster(
            info=ClusterInfo(name=name, endpoint=self.endpoint, ca_bundle=self.ca_bundle,
                             service_cidr=cidr, dns_ip=kube_dns_ip),
            kubernetes_version=self._server_version(),
            ip_family="ipv6" if address.version == 6 else "ipv4",
        )
