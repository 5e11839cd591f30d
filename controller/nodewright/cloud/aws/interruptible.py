"""The AWS provider as the controller process runs it: with its SQS interruption queue
where the controllers' wiring looks for one, and the cluster endpoint the operator may
override."""

from __future__ import annotations

from dataclasses import dataclass, replace

from nodewright.cloud.aws.cluster_info import EksCluster
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

    def cluster(self) -> EksCluster:
        described = super().cluster()
        if not self.cluster_endpoint:
            return described
        return replace(described, info=replace(described.info, endpoint=self.cluster_endpoint))
