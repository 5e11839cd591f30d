"""The placement group an EC2NodeClass's placementGroupSelector names, as Karpenter v1.14's
placementgroup provider finds it: one DescribePlacementGroups call (by id, else by name) for
groups in the `available` state. A group that is not found leaves the node class not Ready
(PlacementGroupReady=False); a found one is launched into and labels its nodes. A partition
group's partitions are offerings of their own, and a launch names the one it targets."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Final

from nodewright.cloud.aws.errors import aws_call
from nodewright.cloud.provider import CloudProviderError

if TYPE_CHECKING:
    from mypy_boto3_ec2 import EC2Client

    from nodewright.api.ec2nodeclass import PlacementGroupSelector
    from nodewright.scheduling.catalog import InstanceType, Offering
    from nodewright.scheduling.requirements import Requirements

PLACEMENT_GROUP_ID_LABEL: Final = "karpenter.k8s.aws/placement-group-id"
PLACEMENT_GROUP_PARTITION_LABEL: Final = "karpenter.k8s.aws/placement-group-partition"
PARTITION: Final = "partition"
# EC2's answers for a name or id it does not know (rather than an empty list).
_UNKNOWN_CODES: Final = frozenset({"InvalidPlacementGroup.Unknown", "InvalidGroup.NotFound",
                                   "InvalidPlacementGroupId.NotFound",
                                   "InvalidPlacementGroupId.Malformed"})


@dataclass(frozen=True)
class PlacementGroup:
    id: str
    name: str
    strategy: str  # cluster | partition | spread
    partition_count: int = 0
    spread_level: str | None = None


def describe_request(selector: PlacementGroupSelector) -> dict[str, Any]:
    request: dict[str, Any] = {"Filters": [{"Name": "state", "Values": ["available"]}]}
    if selector.id:
        request["GroupIds"] = [selector.id]
    elif selector.name:
        request["GroupNames"] = [selector.name]
    return request


def describe(ec2: EC2Client, selector: PlacementGroupSelector) -> PlacementGroup | None:
    """The available group the selector names, or None when EC2 has no such group."""
    wanted = selector.id or selector.name or ""
    try:
        with aws_call("ec2:DescribePlacementGroups", f"placement group {wanted}"):
            found = ec2.describe_placement_groups(**describe_request(selector))
    except CloudProviderError as error:
        if error.code in _UNKNOWN_CODES:
            return None
        raise
    for raw in found.get("PlacementGroups", []):
        return PlacementGroup(
            id=str(raw.get("GroupId", "")),
            name=str(raw.get("GroupName", "")),
            strategy=str(raw.get("Strategy", "")),
            partition_count=int(raw.get("PartitionCount", 0) or 0),
            spread_level=str(raw["SpreadLevel"]) if raw.get("SpreadLevel") else None,
        )
    return None


def partitions_of(group: PlacementGroup | None) -> list[str]:
    """The partitions a launch may target: "1".."N" of a partition group, else none."""
    if group is None or group.strategy != PARTITION or group.partition_count <= 0:
        return []
    return [str(n) for n in range(1, group.partition_count + 1)]


def with_partition_offerings(
    catalog: Sequence[InstanceType], group: PlacementGroup | None,
    unavailable: Callable[[str, Offering, str], bool],
) -> list[InstanceType]:
    """As Karpenter: each offering once per partition of a partition group (an offering
    label, so topology spread over partitions can steer pods); other catalogs unchanged.
    `unavailable(type, offering, partition)`: a capacity error in that partition."""
    partitions = partitions_of(group)
    if not partitions:
        return list(catalog)
    return [
        replace(instance_type, offerings=tuple(
            replace(offering, partition=partition,
                    available=offering.available
                    and not unavailable(instance_type.name, offering, partition))
            for offering in instance_type.offerings
            for partition in partitions
        ))
        for instance_type in catalog
    ]


def target_partition(group: PlacementGroup | None, requirements: Requirements) -> int | None:
    """The partition a NodeClaim launches into: the lowest its requirements allow (EC2
    takes one), or None (EC2 picks) outside partition groups or with no partition asked."""
    allowed = requirements.get(PLACEMENT_GROUP_PARTITION_LABEL)
    if allowed is None or allowed.complement:
        return None
    wanted = [int(p) for p in partitions_of(group) if allowed.has(p)]
    return min(wanted) if wanted else None
