"""Which offerings a NodeClaim may launch into: pure selection over the catalog."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from nodewright.scheduling import labels as wellknown
from nodewright.scheduling.catalog import InstanceType
from nodewright.scheduling.launch_filters import Choice as Choice
from nodewright.scheduling.offering_labels import OfferingCheck
from nodewright.scheduling.offering_labels import interruptible_value as interruptible_value
from nodewright.scheduling.requirements import Requirements

# The offering labels, defined once in scheduling/labels.py.
ZONE_LABEL: Final = wellknown.ZONE
ZONE_ID_LABEL: Final = wellknown.ZONE_ID
CAPACITY_TYPE_LABEL: Final = wellknown.CAPACITY_TYPE
ARCH_LABEL: Final = wellknown.ARCH
SPOT: Final = "spot"
ON_DEMAND: Final = "on-demand"
RESERVED: Final = "reserved"
RESERVATION_ID_LABEL: Final = wellknown.RESERVATION_ID
RESERVATION_TYPE_LABEL: Final = wellknown.RESERVATION_TYPE
RESERVATION_INTERRUPTIBLE_LABEL: Final = wellknown.RESERVATION_INTERRUPTIBLE
# The reservation labels an offering (and a NodeClaim launched into it) carries.
RESERVATION_LABELS: Final = (RESERVATION_ID_LABEL, RESERVATION_TYPE_LABEL,
                             RESERVATION_INTERRUPTIBLE_LABEL)
PARTITION_LABEL: Final = wellknown.PLACEMENT_GROUP_PARTITION
TENANCY_LABEL: Final = "karpenter.k8s.aws/instance-tenancy"
DEFAULT_TENANCY: Final = "default"
DEDICATED_TENANCY: Final = "dedicated"


def _compatible(requirements: Requirements, labels: Mapping[str, str]) -> bool:
    """Requirements on keys these labels define must accept the label's value; keys the
    labels do not define (nodepool, custom labels) are the NodeClaim's own business."""
    return all(
        requirements[key].matches_label(value)
        for key, value in labels.items()
        if key in requirements
    )


def launchable(
    catalog: Sequence[InstanceType],
    requirements: Requirements,
    zones: Sequence[str],
    architectures: Sequence[str],
) -> list[Choice]:
    """Available offerings compatible with the requirements, in zones we have a subnet in,
    for architectures we have an image for. An offering that is not a reservation has no
    reservation labels: requirements needing one rule it out."""
    choices: list[Choice] = []
    allowed = OfferingCheck(requirements)
    for instance_type in catalog:
        if instance_type.labels.get(ARCH_LABEL) not in architectures:
            continue
        if not _compatible(requirements, instance_type.labels):
            continue
        for offering in instance_type.offerings:
            if offering.available and offering.zone in zones and allowed(offering):
                choices.append(Choice(instance_type, offering))
    return choices


def capacity_type_for(choices: Sequence[Choice]) -> str | None:
    """As Karpenter: a reservation when the NodeClaim allows one and one has room, else spot
    when allowed and available, else on-demand."""
    kinds = {choice.offering.capacity_type for choice in choices}
    if RESERVED in kinds:
        return RESERVED
    if SPOT in kinds:
        return SPOT
    if ON_DEMAND in kinds:
        return ON_DEMAND
    return None


def tenancy_for(requirements: Requirements) -> str:
    """As Karpenter: shared hardware ("default") whenever the NodeClaim allows it, dedicated
    only when that is all it allows."""
    allowed = requirements.get(TENANCY_LABEL)
    if allowed is None or allowed.has(DEFAULT_TENANCY) or not allowed.has(DEDICATED_TENANCY):
        return DEFAULT_TENANCY
    return DEDICATED_TENANCY
