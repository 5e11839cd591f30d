"""The tag keys the provider writes and filters on."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

NODEPOOL: Final = "karpenter.sh/nodepool"
NODECLAIM: Final = "karpenter.sh/nodeclaim"
NODECLASS: Final = "karpenter.k8s.aws/ec2nodeclass"
EKS_CLUSTER: Final = "eks:eks-cluster-name"
REGION: Final = "topology.kubernetes.io/region"
NAME: Final = "Name"


def cluster_tag_key(cluster: str) -> str:
    return f"kubernetes.io/cluster/{cluster}"


def ownership_tags(cluster: str) -> dict[str, str]:
    """The tags that mark a resource as this cluster's (IAM conditions rely on them)."""
    return {cluster_tag_key(cluster): "owned", EKS_CLUSTER: cluster}


def as_aws(tags: Mapping[str, str]) -> list[dict[str, str]]:
    return [{"Key": key, "Value": value} for key, value in sorted(tags.items())]
