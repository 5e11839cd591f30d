"""Cloud providers behind one protocol: `provider` (the seam), `aws` (boto3), `sim`."""

from nodewright.cloud.provider import (
    CloudProvider,
    CloudProviderError,
    Instance,
    InsufficientCapacityError,
    NodeClaimNotFoundError,
    NodeClassNotReadyError,
    RepairPolicy,
)

__all__ = [
    "CloudProvider",
    "CloudProviderError",
    "Instance",
    "InsufficientCapacityError",
    "NodeClaimNotFoundError",
    "NodeClassNotReadyError",
    "RepairPolicy",
]
