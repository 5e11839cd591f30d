"""Drift rules: why a launched NodeClaim no longer matches what its NodePool would launch.

Checked in Karpenter's order (pkg/controllers/nodeclaim/disruption/drift.go isDrifted,
then the AWS provider's IsDrifted): the NodePool template hash, the NodePool requirements
against the NodeClaim's labels, the instance type still being offered (only an hour after
launch), then the EC2NodeClass hash and last the cloud provider's own checks (AMI,
security groups, subnets, ...), which may call the cloud.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from nodewright.api import hashes
from nodewright.api.ec2nodeclass import EC2NodeClass
from nodewright.api.nodepool import NodePool
from nodewright.scheduling import labels as wellknown
from nodewright.scheduling.catalog import InstanceType
from nodewright.scheduling.requirements import (
    LABEL_CAPACITY_TYPE,
    LABEL_INSTANCE_TYPE,
    LABEL_ZONE,
    Requirement,
    RequirementError,
)

NODEPOOL_DRIFTED = "NodePoolDrifted"
REQUIREMENTS_DRIFTED = "RequirementsDrifted"
NODECLASS_DRIFTED = "NodeClassDrift"
INSTANCE_TYPE_NOT_FOUND = "InstanceTypeNotFound"
CAPACITY_TYPE_RESERVED = "reserved"
CAPACITY_TYPE_ON_DEMAND = "on-demand"

# Instance types are a cloud-generated list: give a new NodeClaim time before judging.
INSTANCE_TYPE_CHECK_AFTER = timedelta(hours=1)

CloudDrift = Callable[[], str | None]


@dataclass(frozen=True)
class Drift:
    reason: str
    message: str


# No verdict: a check could not be made (the catalog or the cloud could not be read), so
# the Drifted condition stays as it is, as Karpenter's Drift reconciler returns the error
# before touching it.
UNDECIDED = Drift("", "drift could not be evaluated")


def template_drift(nodepool: NodePool, annotations: Mapping[str, str]) -> Drift | None:
    """The NodeClaim was made from another version of the NodePool template."""
    stamped = annotations.get(hashes.NODEPOOL_HASH)
    version = annotations.get(hashes.NODEPOOL_HASH_VERSION)
    if stamped is None or version != hashes.NODEPOOL_HASH_VERSION_VALUE:
        return None
    current = hashes.nodepool_hash(nodepool)
    if stamped == current:
        return None
    return Drift(
        NODEPOOL_DRIFTED,
        f"NodePool {nodepool.name} template changed since launch (hash {stamped} -> {current})",
    )


def requirements_drift(nodepool: NodePool, labels: Mapping[str, str]) -> Drift | None:
    """A NodePool requirement the node's labels no longer satisfy (Karpenter's
    Requirements.Compatible of the NodeClaim's labels: a key the node does not carry
    drifts it unless the requirement allows the label to be absent, well-known or not)."""
    for item in nodepool.spec.template.spec.requirements:
        try:
            requirement = Requirement.build(item.key, item.operator, item.values or [])
        except RequirementError:
            continue
        # Karpenter's NewRequirement reads a deprecated key as its current name, on both
        # sides (NewLabelRequirements of the NodeClaim's labels too).
        value = _label_value(labels, requirement.key)
        if value is None:
            if requirement.allows_absent():
                continue
            return Drift(
                REQUIREMENTS_DRIFTED,
                f"NodePool {nodepool.name} requires {requirement.describe()}, "
                f"the node has no {item.key} label",
            )
        if not requirement.has(value):
            return Drift(
                REQUIREMENTS_DRIFTED,
                f"NodePool {nodepool.name} requires {requirement.describe()}, "
                f"the node has {item.key}={value}",
            )
    return None


def _label_value(labels: Mapping[str, str], key: str) -> str | None:
    """The label under `key` (a current name), or under a deprecated name of it."""
    value = labels.get(key)
    if value is not None:
        return value
    return next((v for k, v in labels.items() if wellknown.normalized(k) == key), None)


def node_class_drift(node_class: EC2NodeClass, annotations: Mapping[str, str],
                     ca_bundle: str | None = None) -> Drift | None:
    stamped = annotations.get(hashes.NODECLASS_HASH)
    version = annotations.get(hashes.NODECLASS_HASH_VERSION)
    if stamped is None or version != hashes.NODECLASS_HASH_VERSION_VALUE:
        return None
    current = hashes.node_class_hash(node_class, ca_bundle)
    if stamped == current:
        return None
    return Drift(
        NODECLASS_DRIFTED,
        f"EC2NodeClass {node_class.name} spec changed since launch (hash {stamped} -> {current})",
    )


def instance_type_drift(
    labels: Mapping[str, str], instance_types: Sequence[InstanceType]
) -> Drift | None:
    """The node's instance type, zone and capacity type are no longer offered at all
    (availability aside: an offering out of capacity right now is still offered)."""
    name = labels.get(LABEL_INSTANCE_TYPE)
    found = next((it for it in instance_types if it.name == name), None)
    if name is None or found is None:
        return Drift(INSTANCE_TYPE_NOT_FOUND, f"instance type {name!r} is no longer offered")
    zone, capacity_type = labels.get(LABEL_ZONE), labels.get(LABEL_CAPACITY_TYPE)
    # A reserved node may be demoted to on-demand after launch (its reservation ended):
    # either offering keeps it, and its reservation is the provider's to judge.
    accepted = ({CAPACITY_TYPE_RESERVED, CAPACITY_TYPE_ON_DEMAND}
                if capacity_type == CAPACITY_TYPE_RESERVED else {capacity_type})
    if any(
        (zone is None or offering.zone == zone)
        and (capacity_type is None or offering.capacity_type in accepted)
        for offering in found.offerings
    ):
        return None
    return Drift(
        INSTANCE_TYPE_NOT_FOUND,
        f"{name} is no longer offered as {capacity_type} in {zone}",
    )


def static_drift(
    *,
    nodepool: NodePool,
    annotations: Mapping[str, str],
    labels: Mapping[str, str],
    node_class: EC2NodeClass | None,
    instance_types: Sequence[InstanceType] | None,
    instance_type_due: bool,
    ca_bundle: str | None = None,
) -> Drift | None:
    """The first drift found before the cloud's own checks: a function of its arguments
    alone (`instance_type_due`: the NodeClaim is old enough for the offering check;
    `instance_types` None then: the catalog could not be read, which is UNDECIDED, as
    Karpenter's GetInstanceTypes error). The offering check comes before the EC2NodeClass
    hash, which is the AWS provider's IsDrifted in Karpenter."""
    found = template_drift(nodepool, annotations) or requirements_drift(nodepool, labels)
    if found is None and instance_type_due:
        found = UNDECIDED if instance_types is None else instance_type_drift(
            labels, instance_types)
    if found is None and node_class is not None:
        found = node_class_drift(node_class, annotations, ca_bundle)
    return found


def instance_type_check_due(created: datetime | None, now: datetime) -> bool:
    return created is not None and now - created > INSTANCE_TYPE_CHECK_AFTER


def drift_of(
    *,
    nodepool: NodePool,
    annotations: Mapping[str, str],
    labels: Mapping[str, str],
    node_class: EC2NodeClass | None,
    instance_types: Sequence[InstanceType] | None,
    created: datetime | None,
    now: datetime,
    cloud: CloudDrift | None = None,
) -> Drift | None:
    """The first drift found, or None (UNDECIDED when a check could not be made:
    `instance_types` None while the offering check is due); `cloud` asks the cloud
    provider last."""
    found = static_drift(nodepool=nodepool, annotations=annotations, labels=labels,
                         node_class=node_class, instance_types=instance_types,
                         instance_type_due=instance_type_check_due(created, now))
    return found if found is not None else cloud_drift(cloud)


def cloud_drift(cloud: CloudDrift | None) -> Drift | None:
    reason = cloud() if cloud is not None else None
    return Drift(reason, f"the cloud provider reports {reason}") if reason else None
