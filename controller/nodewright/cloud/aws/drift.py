"""AWS drift: a NodeClaim launched from an EC2NodeClass spec that has changed since
(NodeClassDrift, by the hash annotation), or an instance whose AMI, subnet, security groups or
capacity reservation are no longer among its EC2NodeClass's resolved values."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from nodewright.api.ec2nodeclass import EC2NodeClass
from nodewright.api.hashes import (
    NODECLASS_HASH,
    NODECLASS_HASH_VERSION,
    node_class_hash_annotations,
)
from nodewright.cloud.aws.offerings import RESERVATION_ID_LABEL
from nodewright.cloud.provider import CloudProviderError, Instance

NODECLASS_DRIFT = "NodeClassDrift"
AMI_DRIFT = "AMIDrift"
SUBNET_DRIFT = "SubnetDrift"
SECURITY_GROUP_DRIFT = "SecurityGroupDrift"
CAPACITY_RESERVATION_DRIFT = "CapacityReservationDrift"


@dataclass(frozen=True)
class Drift:
    reason: str  # NodeClassDrift | AMIDrift | SubnetDrift | SecurityGroupDrift
    message: str


def static_drift(annotations: Mapping[str, str], node_class: EC2NodeClass) -> Drift | None:
    """NodeClassDrift when the NodeClaim's EC2NodeClass hash differs from the current spec's.

    Only hashes of the same version are compared: a NodeClaim stamped by another hash
    version (or not at all) is not drifted by it (it gets re-stamped instead), as in
    Karpenter. Costs no AWS call, so it is checked first.
    """
    current = node_class_hash_annotations(node_class)
    stamped = annotations.get(NODECLASS_HASH)
    if stamped is None or annotations.get(NODECLASS_HASH_VERSION) != current[
        NODECLASS_HASH_VERSION
    ]:
        return None
    if stamped == current[NODECLASS_HASH]:
        return None
    return Drift(
        NODECLASS_DRIFT,
        f"EC2NodeClass {node_class.name} spec changed since launch "
        f"(hash {stamped} -> {current[NODECLASS_HASH]})",
    )


def drift_of(
    instance: Instance,
    image_ids: Collection[str],
    subnet_ids: Collection[str],
    security_group_ids: Collection[str],
) -> Drift | None:
    """The first way the instance differs from the resolved values, or None, in Karpenter's
    order (pkg/cloudprovider/drift.go isNodeClassDrifted: the AMI, then the security
    groups, then the subnet). Nothing resolved is no verdict: CloudProviderError, as
    Karpenter's isAMIDrifted ("no amis exist given constraints"), areSecurityGroupsDrifted
    and isSubnetDrifted return an error, which leaves the Drifted condition as it was."""
    if not image_ids:
        raise CloudProviderError("calculating ami drift, no amis exist given constraints",
                                 resource=f"instance {instance.instance_id}")
    if instance.image_id not in image_ids:
        return Drift(
            AMI_DRIFT,
            f"instance {instance.instance_id} runs {instance.image_id}, resolved AMIs are "
            f"{', '.join(sorted(image_ids))}",
        )
    if not security_group_ids:
        raise CloudProviderError(
            "calculating securitygroup drift, no security groups are present in the status",
            resource=f"instance {instance.instance_id}")
    if not subnet_ids:
        raise CloudProviderError("calculating subnet drift, no subnets are discovered",
                                 resource=f"instance {instance.instance_id}")
    if set(instance.security_group_ids) != set(security_group_ids):
        return Drift(
            SECURITY_GROUP_DRIFT,
            f"instance {instance.instance_id} has security groups "
            f"{', '.join(sorted(instance.security_group_ids)) or 'none'}, resolved are "
            f"{', '.join(sorted(security_group_ids))}",
        )
    if instance.subnet_id not in subnet_ids:
        return Drift(
            SUBNET_DRIFT,
            f"instance {instance.instance_id} is in {instance.subnet_id}, resolved subnets "
            f"are {', '.join(sorted(subnet_ids))}",
        )
    return None


def reservation_drift(instance: Instance, reservation_ids: Collection[str]) -> Drift | None:
    """CapacityReservationDrift (Karpenter's isCapacityReservationDrifted): a reserved
    instance whose reservation is no longer among the node class's resolved ones (its
    selector changed, or the reservation stopped matching). An instance that fell back to
    on-demand has no reservation, so it does not drift (the demotion handles it)."""
    reservation = instance.labels.get(RESERVATION_ID_LABEL)
    if instance.capacity_type != "reserved" or not reservation:
        return None
    if reservation in reservation_ids:
        return None
    return Drift(
        CAPACITY_RESERVATION_DRIFT,
        f"instance {instance.instance_id} runs in capacity reservation {reservation}, the "
        f"node class's are {', '.join(sorted(reservation_ids)) or 'none'}",
    )
