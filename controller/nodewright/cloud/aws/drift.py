"""AWS drift: an instance whose AMI, subnet or security groups are no longer among its
EC2NodeClass's resolved values."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from nodewright.cloud.provider import Instance

AMI_DRIFT = "AMIDrift"
SUBNET_DRIFT = "SubnetDrift"
SECURITY_GROUP_DRIFT = "SecurityGroupDrift"


@dataclass(frozen=True)
class Drift:
    reason: str  # AMIDrift | SubnetDrift | SecurityGroupDrift
    message: str


def drift_of(
    instance: Instance,
    image_ids: Collection[str],
    subnet_ids: Collection[str],
    security_group_ids: Collection[str],
) -> Drift | None:
    """The first way the instance differs from the resolved values, or None. Empty resolved
    values mean "not resolved yet", which is not drift."""
    if image_ids and instance.image_id not in image_ids:
        return Drift(
            AMI_DRIFT,
            f"instance {instance.instance_id} runs {instance.image_id}, resolved AMIs are "
            f"{', '.join(sorted(image_ids))}",
        )
    if subnet_ids and instance.subnet_id not in subnet_ids:
        return Drift(
            SUBNET_DRIFT,
            f"instance {instance.instance_id} is in {instance.subnet_id}, resolved subnets "
            f"are {', '.join(sorted(subnet_ids))}",
        )
    if security_group_ids and set(instance.security_group_ids) != set(security_group_ids):
        return Drift(
            SECURITY_GROUP_DRIFT,
            f"instance {instance.instance_id} has security groups "
            f"{', '.join(sorted(instance.security_group_ids)) or 'none'}, resolved are "
            f"{', '.join(sorted(security_group_ids))}",
        )
    return None
