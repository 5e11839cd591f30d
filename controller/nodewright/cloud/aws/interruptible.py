"""The AWS provider as the controller process runs it: with its SQS interruption queue and
its instance statuses (DescribeInstanceStatus) where the controllers' wiring looks for them,
and the cluster endpoint the operator may override."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from nodewright.cloud.aws.cluster_info import EksCluster
from nodewright.cloud.aws.instance_statuses import InstanceStatusProvider
from nodewright.cloud.aws.interruption_queue import InterruptionQueue
from nodewright.cloud.aws.provider import AwsCloudProvider


@dataclass
class InterruptibleAwsCloud(AwsCloudProvider):
    """The AWS provider with its SQS interruption queue, where the wiring looks for it.
    Short polls: the interruption controller runs on the operator's loop and asks every
    2 s, where a 20 s long poll would hold every other controller up.

    `cluster_endpoint` (CLUSTER_ENDPOINT) replaces the API server URL that
    eks:DescribeCluster reports in what nodes boot with, as Karpenter's setting does."""

    interruption_queue: InterruptionQueue | None = None
    cluster_endpoint: str | None = None
    # What the instance status health checks poll (no queue needed, as in Karpenter).
    instance_statuses: InstanceStatusProvider = field(init=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.instance_statuses = InstanceStatusProvider(self.clients.ec2, self.wall_clock)

    def cluster(self) -> EksCluster:
        described = super().cluster()
        if not self.cluster_endpoint:
            return described
        return replace(described, info=replace(described.info, endpoint=self.cluster_endpoint))
