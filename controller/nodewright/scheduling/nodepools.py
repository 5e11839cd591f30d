"""NodePools as the solver sees them: merged requirements, taints, limits and the instance types
each one can launch, checked against the pool's requirements once per solve."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from nodewright.api.nodepool import NodePool
from nodewright.api.quantity import parse_quantity
from nodewright.scheduling.catalog import InstanceType, Offering
from nodewright.scheduling.labels import OFFERED_VALUES
from nodewright.scheduling.offering_labels import OFFERING_VALUES, OfferingCheck
from nodewright.scheduling.pods import Taint
from nodewright.scheduling.requirements import (
    LABEL_CAPACITY_TYPE,
    LABEL_HOSTNAME,
    LABEL_NODEPOOL,
    LABEL_PARTITION,
    LABEL_ZONE,
    LABEL_ZONE_ID,
    Requirement,
    Requirements,
    is_well_known,
)

# Keys an instance type answers through its offerings, not its labels.
OFFERING_KEYS = (LABEL_ZONE, LABEL_CAPACITY_TYPE, LABEL_ZONE_ID, LABEL_PARTITION)
_NOT_FROM_INSTANCE_TYPE = frozenset((*OFFERING_VALUES, LABEL_HOSTNAME, LABEL_NODEPOOL))


@dataclass(frozen=True)
class NodePoolTemplate:
    """Everything about one NodePool that scheduling needs.

    `requirements` already holds the template labels (as single-value requirements)
    and `karpenter.sh/nodepool`. `usage` is what the pool's nodes already use
    (capacity), counted against `limits`.
    """

    name: str
    requirements: Requirements
    instance_types: Sequence[InstanceType]
    taints: tuple[Taint, ...] = ()
    weight: int = 0
    limits: Mapping[str, int] | None = None
    usage: Mapping[str, int] = field(default_factory=dict)
    # MIN_VALUES_POLICY=BestEffort: a NodeClaim whose types cannot meet a minValues
    # launches with fewer values (its minValues lowered to what remains) instead of none.
    relax_min_values: bool = False


def nodepool_template(
    nodepool: NodePool,
    instance_types: Sequence[InstanceType],
    usage: Mapping[str, int] | None = None,
    *,
    relax_min_values: bool = False,
) -> NodePoolTemplate:
    """Adapt a validated `api.NodePool` (limits are parsed to milli-units)."""
    template = nodepool.spec.template
    requirements = Requirements()
    for item in template.spec.requirements:
        requirements.add(
            Requirement.build(item.key, item.operator, item.values or [], item.min_values)
        )
    labels = (template.metadata.labels if template.metadata else None) or {}
    for key, value in sorted(labels.items()):
        requirements.add(Requirement.single(key, value))
    requirements.add(Requirement.single(LABEL_NODEPOOL, nodepool.name))
    taints = tuple(
        Taint(taint.key, taint.value or "", taint.effect) for taint in template.spec.taints or []
    )
    limits = (
        {name: parse_quantity(value) for name, value in nodepool.spec.limits.items()}
        if nodepool.spec.limits is not None
        else None
    )
    return NodePoolTemplate(
        name=nodepool.name,
        requirements=requirements,
        instance_types=instance_types,
        taints=taints,
        weight=nodepool.spec.weight or 0,
        limits=limits,
        usage=dict(usage or {}),
        relax_min_values=relax_min_values,
    )


def labels_compatible(instance_type: InstanceType, requirements: Requirements) -> bool:
    """Whether the instance type's own labels satisfy the requirements (offerings aside)."""
    labels = instance_type.labels
    for key, requirement in requirements.items():
        if key in _NOT_FROM_INSTANCE_TYPE:
            continue
        offered = OFFERED_VALUES.get(key)
        if offered is not None:
            if not any(requirement.has(v) for v in offered):
                return False
            continue
        value = labels.get(key)
        if value is None:
            # A provider label this type lacks (a GPU name on a CPU type): only absence fits.
            if is_well_known(key) and not requirement.allows_absent():
                return False
            continue
        if not requirement.has(value):
            return False
    return True


# compatible_mask's answers by the identity of the types (kept with the answer, so the ids
# stay theirs) and the requirements: every pass and provisioning round asks again about
# each NodePool's whole catalog, in a new list of the same cached types.
_MASKS: dict[tuple[tuple[int, ...], frozenset[tuple[str, Requirement]]],
             tuple[tuple[InstanceType, ...], tuple[bool, ...]]] = {}
_MASKS_KEPT = 128
# The provisioner and the disruption pass ask from their own workers at once.
_MASKS_LOCK = threading.Lock()


def compatible_mask(instance_types: Iterable[InstanceType],
                    requirements: Requirements) -> tuple[bool, ...]:
    """`labels_compatible` of each type, in order."""
    types = tuple(instance_types)
    key = (tuple(map(id, types)), frozenset(requirements.items()))
    known = _MASKS.get(key)
    if known is not None:
        return known[1]
    mask = tuple(labels_compatible(it, requirements) for it in types)
    with _MASKS_LOCK:
        if len(_MASKS) >= _MASKS_KEPT:
            _MASKS.pop(next(iter(_MASKS)))
        _MASKS[key] = (types, mask)
    return mask


def cheapest_price(instance_type: InstanceType, requirements: Requirements) -> float | None:
    """The lowest price among available offerings the requirements allow, or None."""
    allowed = OfferingCheck(requirements)
    best: float | None = None
    for offering in instance_type.offerings:
        if offering.available and (best is None or offering.price < best) and allowed(offering):
            best = offering.price
    return best


def allowed_offerings(instance_type: InstanceType, requirements: Requirements) -> list[Offering]:
    """The available offerings the requirements allow (zone, capacity type, zone ID,
    partition and the capacity reservation's labels)."""
    allowed = OfferingCheck(requirements)
    return [offering for offering in instance_type.offerings
            if offering.available and allowed(offering)]


def cheapest_offering_of(
    instance_type: InstanceType, requirements: Requirements
) -> tuple[float, str, str] | None:
    """(price, capacity type, zone) of the cheapest allowed offering, ties broken by name."""
    options = [(offering.price, offering.capacity_type, offering.zone)
               for offering in allowed_offerings(instance_type, requirements)]
    return min(options) if options else None


def offering_values(instance_types: Sequence[InstanceType], key: str) -> set[str]:
    values: set[str] = set()
    for instance_type in instance_types:
        for offering in instance_type.offerings:
            if not offering.available:
                continue
            value = {
                LABEL_ZONE: offering.zone,
                LABEL_CAPACITY_TYPE: offering.capacity_type,
                LABEL_ZONE_ID: offering.zone_id,
                LABEL_PARTITION: offering.partition,
            }[key]
            if value is not None:
                values.add(value)
    return values


def distinct_values(instance_types: Sequence[InstanceType], key: str) -> int:
    """How many different values `key` takes across the types (for minValues)."""
    if key in OFFERING_KEYS:
        return len(offering_values(instance_types, key))
    return len({it.labels[key] for it in instance_types if key in it.labels})


def relaxed_min_values(
    instance_types: Sequence[InstanceType], requirements: Requirements
) -> Requirements | None:
    """The requirements with each unmet minValues lowered to the number of values the
    types offer (Karpenter's BestEffort relaxation), or None when every one is met."""
    relaxed = []
    changed = False
    for requirement in requirements.values():
        wanted = requirement.min_values
        if wanted is not None:
            found = distinct_values(instance_types, requirement.key)
            if found < wanted:
                requirement = replace(requirement, min_values=found)
                changed = True
        relaxed.append(requirement)
    return Requirements(relaxed) if changed else None


def min_values_problem(
    instance_types: Sequence[InstanceType], requirements: Requirements
) -> str | None:
    for key in sorted(requirements):
        wanted = requirements[key].min_values
        if wanted is None:
            continue
        found = distinct_values(instance_types, key)
        if found < wanted:
            return f"minValues {wanted} for {key} not met: {found} value(s) remain"
    return None
