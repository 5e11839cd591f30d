"""Get, list and terminate the instances this cluster owns."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final, cast

from nodewright.cloud.aws import tags as tag_keys
from nodewright.cloud.aws.ec2_batcher import EC2Batcher
from nodewright.cloud.aws.errors import aws_call
from nodewright.cloud.aws.offerings import (
    CAPACITY_TYPE_LABEL,
    PARTITION_LABEL,
    RESERVATION_ID_LABEL,
    RESERVATION_INTERRUPTIBLE_LABEL,
    RESERVATION_LABELS,
    RESERVATION_TYPE_LABEL,
    interruptible_value,
)
from nodewright.cloud.provider import CloudProviderError, Instance, NodeClaimNotFoundError

if TYPE_CHECKING:
    from mypy_boto3_ec2 import EC2Client

LIVE_STATES: Final = ("pending", "running", "stopping", "stopped", "shutting-down")
_PROVIDER_ID = re.compile(r"^aws:///(?P<zone>[^/]*)/(?P<id>i-[0-9a-z]+)$")


def provider_id(zone: str, instance_id: str) -> str:
    return f"aws:///{zone}/{instance_id}"


def instance_id_of(provider_id_value: str) -> str:
    match = _PROVIDER_ID.match(provider_id_value)
    if match is None:
        raise CloudProviderError(
            f"providerID {provider_id_value!r} is not of the form aws:///<zone>/<instance-id>",
            resource=provider_id_value,
        )
    return match["id"]


def zone_of(provider_id_value: str) -> str:
    """The zone a providerID names ("" when it is not an AWS providerID)."""
    match = _PROVIDER_ID.match(provider_id_value)
    return match["zone"] if match else ""


def instance_of(raw: Mapping[str, Any]) -> Instance:
    tags = {str(t["Key"]): str(t["Value"]) for t in raw.get("Tags", []) or []}
    zone = str(raw.get("Placement", {}).get("AvailabilityZone", ""))
    launch_time = raw.get("LaunchTime")
    if not isinstance(launch_time, datetime):
        launch_time = datetime.fromtimestamp(0, UTC)
    capacity_type = "spot" if raw.get("InstanceLifecycle") == "spot" else "on-demand"
    reservation = str(raw.get("CapacityReservationId") or "")
    preference = raw.get("CapacityReservationSpecification", {}).get(
        "CapacityReservationPreference")
    reserved: dict[str, str] = {}
    if reservation and preference == "capacity-reservations-only":
        # Launched into a reservation it targeted (an open reservation's match is on-demand).
        capacity_type = "reserved"
        # As Karpenter, the reservation's kind is read from the instance's lifecycle.
        lifecycle = raw.get("InstanceLifecycle")
        reserved = {
            RESERVATION_ID_LABEL: reservation,
            RESERVATION_TYPE_LABEL: (
                "capacity-block" if lifecycle == "capacity-block" else "default"),
            RESERVATION_INTERRUPTIBLE_LABEL: interruptible_value(
                lifecycle == "interruptible-capacity-reservation"),
        }
    instance_type = str(raw.get("InstanceType", ""))
    placement = raw.get("Placement", {}) or {}
    if placement.get("GroupId"):
        reserved["karpenter.k8s.aws/placement-group-id"] = str(placement["GroupId"])
        if placement.get("PartitionNumber"):
            reserved[PARTITION_LABEL] = str(
                placement["PartitionNumber"])
    return Instance(
        provider_id=provider_id(zone, raw["InstanceId"]),
        instance_id=str(raw["InstanceId"]),
        instance_type=instance_type,
        zone=zone,
        capacity_type=capacity_type,
        image_id=str(raw.get("ImageId", "")),
        state=str(raw.get("State", {}).get("Name", "")),
        launch_time=launch_time,
        subnet_id=str(raw.get("SubnetId", "")),
        security_group_ids=tuple(
            sorted(str(group["GroupId"]) for group in raw.get("SecurityGroups", []) or [])
        ),
        nodeclaim_name=tags.get(tag_keys.NODECLAIM, ""),
        nodepool_name=tags.get(tag_keys.NODEPOOL, ""),
        node_class_name=tags.get(tag_keys.NODECLASS, ""),
        tags=tags,
        instance_profile=str(raw.get("IamInstanceProfile", {}).get("Arn", "")).rsplit("/", 1)[-1],
        labels={
            "node.kubernetes.io/instance-type": instance_type,
            "topology.kubernetes.io/zone": zone,
            "karpenter.sh/capacity-type": capacity_type,
            "karpenter.k8s.aws/instance-tenancy": str(placement.get("Tenancy") or "default"),
            **reserved,
        },
    )


def without_reservation(instance: Instance) -> Instance:
    """The instance as Karpenter reads it with the ReservedCapacity gate off
    (capacityTypeFromInstance): one in a capacity reservation is on-demand, and carries no
    reservation labels."""
    if instance.capacity_type != "reserved":
        return instance
    labels = {key: value for key, value in instance.labels.items()
              if key not in RESERVATION_LABELS}
    labels[CAPACITY_TYPE_LABEL] = "on-demand"
    return replace(instance, capacity_type="on-demand", labels=labels)


def _describe(ec2: EC2Client, resource: str, **request: Any) -> list[Instance]:
    found: list[Instance] = []
    with aws_call("ec2:DescribeInstances", resource):
        for page in ec2.get_paginator("describe_instances").paginate(**request):
            for reservation in page.get("Reservations", []):
                for raw in reservation.get("Instances", []):
                    found.append(instance_of(cast(Mapping[str, Any], raw)))
    return found


def get_instance(batch: EC2Batcher, provider_id_value: str) -> Instance:
    """The live instance, asked of EC2 (DescribeInstances, batched with other look-ups)."""
    instance_id = instance_id_of(provider_id_value)
    try:
        with aws_call("ec2:DescribeInstances", f"instance {instance_id}"):
            found = [instance_of(raw) for raw in batch.describe_instance(instance_id)]
    except NodeClaimNotFoundError:
        found = []
    live = [instance for instance in found if instance.state in LIVE_STATES]
    if not live:
        raise NodeClaimNotFoundError(
            f"ec2:DescribeInstances instance {instance_id}: not found or terminated",
            call="ec2:DescribeInstances",
            resource=f"instance {instance_id}",
        )
    return live[0]


def list_instances(ec2: EC2Client, cluster: str) -> list[Instance]:
    """Every live instance a Karpenter-compatible controller launched for this cluster: the
    ones tagged with a NodePool and an EC2NodeClass and this cluster's EKS name, as
    Karpenter lists them. An instance whose NodeClaim tag was never written, or one that a
    Karpenter installation launched before a migration, is listed too (so garbage
    collection finds it)."""
    filters = [
        {"Name": "tag-key", "Values": [tag_keys.NODEPOOL]},
        {"Name": "tag-key", "Values": [tag_keys.NODECLASS]},
        {"Name": f"tag:{tag_keys.EKS_CLUSTER}", "Values": [cluster]},
        {"Name": "instance-state-name", "Values": list(LIVE_STATES)},
    ]
    found = _describe(ec2, f"cluster {cluster}", Filters=filters, MaxResults=1000)
    # EC2 ANDs the two tag-key filters; the same check here keeps a reader of the list
    # (and an EC2 stand-in that merges filters of one name) from seeing anything else.
    return [instance for instance in found
            if tag_keys.NODEPOOL in instance.tags and tag_keys.NODECLASS in instance.tags
            and instance.tags.get(tag_keys.EKS_CLUSTER) == cluster]


def find_for_nodeclaim(ec2: EC2Client, cluster: str, nodeclaim: str) -> Instance | None:
    """The live instance already launched for this NodeClaim, if any (idempotent create)."""
    filters = [
        {"Name": f"tag:{tag_keys.cluster_tag_key(cluster)}", "Values": ["owned"]},
        {"Name": f"tag:{tag_keys.NODECLAIM}", "Values": [nodeclaim]},
        {"Name": "instance-state-name", "Values": list(LIVE_STATES)},
    ]
    found = _describe(ec2, f"nodeclaim {nodeclaim}", Filters=filters)
    return min(found, key=lambda i: (i.launch_time, i.instance_id)) if found else None


def terminate(batch: EC2Batcher, provider_id_value: str) -> None:
    """Terminate (TerminateInstances, batched); an instance that no longer exists counts as
    terminated."""
    instance_id = instance_id_of(provider_id_value)
    try:
        with aws_call("ec2:TerminateInstances", f"instance {instance_id}"):
            batch.terminate_instance(instance_id)
    except NodeClaimNotFoundError:
        return
