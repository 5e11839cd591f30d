"""The AWS provider as the controller process runs it: with its SQS interruption queue and
its instance statuses (DescribeInstanceStatus) among its capabilities,
and what the operator's settings say about the cluster (CLUSTER_ENDPOINT, CLUSTER_CA_BUNDLE,
EKS_CONTROL_PLANE)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from nodewright.cloud.aws.cluster_info import EksCluster
from nodewright.cloud.aws.cluster_settings import ClusterSettings
from nodewright.cloud.aws.instance_statuses import InstanceStatusProvider
from nodewright.cloud.aws.interruption_queue import InterruptionQueue
from nodewright.cloud.aws.provider import AwsCloudProvider
from nodewright.cloud.capabilities import CloudCapabilities


@dataclass
class InterruptibleAwsCloud(AwsCloudProvider):
    """The AWS provider with its SQS interruption queue among its capabilities.
    Short polls: the interruption controller runs on the operator's loop and asks every
    2 s, where a 20 s long poll would hold every other controller up.

    `cluster_endpoint` (CLUSTER_ENDPOINT) and `cluster_ca_bundle` (CLUSTER_CA_BUNDLE) replace
    what eks:DescribeCluster reports in what nodes boot with, as Karpenter's settings do;
    with `eks_control_plane` off the version is the API server's (`server_version`)."""

    interruption_queue: InterruptionQueue | None = None
    cluster_endpoint: str | None = None
    # CLUSTER_CA_BUNDLE, EKS_CONTROL_PLANE and the API server's version (cluster_settings).
    cluster_ca_bundle: str | None = None
    eks_control_plane: bool = True
    server_version: Callable[[], str] | None = None
    # What the instance status health checks poll (no queue needed, as in Karpenter).
    instance_statuses: InstanceStatusProvider = field(init=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.instance_statuses = InstanceStatusProvider(self.clients.ec2, self.wall_clock)

    def capabilities(self) -> CloudCapabilities:
        return replace(super().capabilities(), interruption_queue=self.interruption_queue,
                       instance_statuses=self.instance_statuses)

    def cluster(self) -> EksCluster:
        """EKS's answer under the settings, kept as long as EKS's (5 minutes): the API
        server's version too is read again at most that often (Karpenter's version
        controller)."""
        key = f"settings:{self.cluster_name}"
        cached = self._cluster.get(key)
        if cached is None:
            settings = ClusterSettings(self.cluster_endpoint, self.cluster_ca_bundle,
                                       self.eks_control_plane, self.server_version)
            if settings.needs_eks(self.kube_dns_ip):
                cached = settings.over(super().cluster())
            else:
                assert self.kube_dns_ip is not None
                cached = settings.without_eks(self.cluster_name, self.kube_dns_ip)
            self._cluster.put(key, cached)
        return cached
