"""The placement group registration hook (Karpenter's PlacementGroupRegistrationHook,
pkg/cloudprovider/registrationhooks): a NodeClaim launched into a partition placement group
without a partition asked for is labelled `karpenter.k8s.aws/placement-group-partition: ""`
at launch, as EC2 picks the partition and only DescribeInstances says which. Its Node keeps
the karpenter.sh/unregistered taint until the hook has read the partition and written it on
the NodeClaim (synced to the Node), so a topology spread over partitions never counts the
node in the wrong one."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Protocol

from nodewright.cloud.aws.instances import instance_id_of
from nodewright.cloud.aws.placement_groups import (
    PLACEMENT_GROUP_ID_LABEL,
    PLACEMENT_GROUP_PARTITION_LABEL,
)
from nodewright.cloud.provider import Instance

# Karpenter answers Requeue (its rate limiter's short backoff) while EC2 has not said.
PARTITION_RECHECK_SECONDS: Final = 2.0


class InstanceGetter(Protocol):
    def get(self, provider_id: str) -> Instance: ...


class PlacementGroupRegistrationHook:
    name = "PlacementGroupRegistrationHook"

    def __init__(self, instances: InstanceGetter) -> None:
        self.instances = instances

    def registered(self, nodeclaim: dict[str, Any]) -> float | None:
        """None when the NodeClaim may register (no partition to wait for, or now known
        and labelled); else when to ask again. A malformed providerID or an instance that
        is gone raises (the registration logs it and keeps the hook pending)."""
        metadata: dict[str, Any] = nodeclaim.setdefault("metadata", {})
        labels: Mapping[str, str] = metadata.get("labels") or {}
        if PLACEMENT_GROUP_ID_LABEL not in labels:
            return None
        if labels.get(PLACEMENT_GROUP_PARTITION_LABEL, "unset") != "":
            return None  # no partition label (not a partition group), or already known
        provider_id = str((nodeclaim.get("status") or {}).get("providerID") or "")
        if not provider_id:
            return PARTITION_RECHECK_SECONDS
        instance_id_of(provider_id)
        partition = self.instances.get(provider_id).labels.get(PLACEMENT_GROUP_PARTITION_LABEL)
        if not partition:
            return PARTITION_RECHECK_SECONDS
        metadata["labels"] = {**labels, PLACEMENT_GROUP_PARTITION_LABEL: partition}
        return None
