"""Typed Pulumi components for Karpenter v1 resources, validated by nodewright.api."""

from infra.components.ec2nodeclass import EC2NodeClass, EC2NodeClassArgs
from infra.components.errors import InvalidResourceError
from infra.components.nodepool import NodePool, NodePoolArgs

__all__ = [
    "EC2NodeClass",
    "EC2NodeClassArgs",
    "InvalidResourceError",
    "NodePool",
    "NodePoolArgs",
]
