"""What user data and AMI aliases need to know about the EKS cluster."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from nodewright.cloud.aws.errors import aws_call
from nodewright.cloud.aws.userdata.bootstrap import ClusterInfo

if TYPE_CHECKING:
    from mypy_boto3_eks import EKSClient


@dataclass(frozen=True)
class EksCluster:
    info: ClusterInfo
    kubernetes_version: str


def describe_cluster(eks: EKSClient, name: str) -> EksCluster:
    with aws_call("eks:DescribeCluster", f"cluster {name}"):
        cluster = eks.describe_cluster(name=name)["cluster"]
    network = cluster.get("kubernetesNetworkConfig", {})
    cidr = network.get("serviceIpv4Cidr") or network.get("serviceIpv6Cidr") or "10.100.0.0/16"
    return EksCluster(
        info=ClusterInfo(
            name=name,
            endpoint=str(cluster.get("endpoint", "")),
            ca_bundle=str(cluster.get("certificateAuthority", {}).get("data", "")),
            service_cidr=str(cidr),
        ),
        kubernetes_version=str(cluster.get("version", "")),
    )
