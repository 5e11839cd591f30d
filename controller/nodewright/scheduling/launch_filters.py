"""Karpenter's launch-time instance filters: which of a NodeClaim's compatible, available
offerings one CreateFleet request may carry.

Both clouds run them before building the fleet's overrides, in Karpenter's order
(pkg/providers/instance/filter at v1.14.1): the requests fit the type's allocatable; one
kind of reservation (the cheapest; at equal prices a default reservation, then a capacity
block, then an interruptible one); a single capacity block (CreateFleet takes one); one
reservation per type and zone (the one with the most instances left); no exotic types
(metal, GPUs, accelerators) unless nothing else is left; no spot offering dearer than the cheapest
on-demand one when both are allowed. The exotic and spot filters stand aside for a
NodeClaim with minValues, whose flexibility they would cut. A filter that would leave
nothing leaves everything, except the fit, which leaves nothing: the launch has no
capacity then.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from nodewright.api import quantity
from nodewright.scheduling import allocatable
from nodewright.scheduling import labels as well_known
from nodewright.scheduling.catalog import InstanceType, Offering
from nodewright.scheduling.requirements import Requirements

SPOT: Final = "spot"
ON_DEMAND: Final = "on-demand"
RESERVED: Final = "reserved"
DEFAULT_RESERVATION: Final = "default"
CAPACITY_BLOCK: Final = "capacity-block"
# Equal prices: a default reservation, then a capacity block, then an interruptible default
# reservation (Karpenter's priorities; capacity blocks are never interruptible).
_RESERVATION_PRIORITY: Final = {
    (DEFAULT_RESERVATION, False): 0, (CAPACITY_BLOCK, False): 1, (DEFAULT_RESERVATION, True): 2,
}
EXOTIC_RESOURCES: Final = (
    allocatable.AWS_NEURON,
    allocatable.AWS_NEURON_CORE,
    allocatable.AMD_GPU,
    allocatable.NVIDIA_GPU,
    allocatable.HABANA_GAUDI,
)
FITS: Final = "compatible-available-filter"


@dataclass(frozen=True, slots=True)
class Choice:
    """One offering of one instance type a launch may use."""

    instance_type: InstanceType
    offering: Offering


@dataclass(frozen=True)
class Filtered:
    choices: list[Choice]
    # Filter name -> the instance types it took out (the fit is not listed, as Karpenter).
    rejected: dict[str, list[str]] = field(default_factory=dict)
    # The filter that left nothing (only the fit can), None when something is left.
    emptied_by: str | None = None


_Groups = dict[str, list[Choice]]  # instance type name -> its choices, in the given order
_Filter = Callable[[_Groups, Requirements, Mapping[str, int]], _Groups]


def filter_for_launch(
    choices: Sequence[Choice], requirements: Requirements, requests: Mapping[str, int]
) -> Filtered:
    """`choices` (compatible with the requirements and available) narrowed by every filter."""
    groups: _Groups = {}
    for choice in choices:
        groups.setdefault(choice.instance_type.name, []).append(choice)
    rejected: dict[str, list[str]] = {}
    for name, step in _FILTERS:
        kept = step(groups, requirements, requests)
        if not kept:
            return Filtered([], rejected, name)
        dropped = [type_name for type_name in groups if type_name not in kept]
        if dropped and name != FITS:
            rejected[name] = dropped
        groups = kept
    return Filtered([choice for group in groups.values() for choice in group], rejected)


def allows(requirements: Requirements, capacity_type: str) -> bool:
    requirement = requirements.get(well_known.CAPACITY_TYPE)
    return requirement is None or requirement.has(capacity_type)


def has_min_values(requirements: Requirements) -> bool:
    return any(requirement.min_values is not None for requirement in requirements.values())


def is_exotic(instance_type: InstanceType) -> bool:
    """Metal, or any GPU / accelerator device."""
    if "metal" in instance_type.labels.get(well_known.INSTANCE_SIZE, ""):
        return True
    return any(instance_type.capacity.get(name, 0) > 0 for name in EXOTIC_RESOURCES)


def _fits(groups: _Groups, _: Requirements, requests: Mapping[str, int]) -> _Groups:
    return {name: group for name, group in groups.items()
            if quantity.fits(requests, group[0].instance_type.allocatable)}


def _reserved(group: Sequence[Choice]) -> list[Choice]:
    return [choice for choice in group if choice.offering.capacity_type == RESERVED]


def _reservation_kind(choice: Choice) -> tuple[str, bool]:
    """The reservation type and whether it is interruptible: CreateFleet's market."""
    offering = choice.offering
    return offering.reservation_type or DEFAULT_RESERVATION, offering.reservation_interruptible


def _one_reservation_type(groups: _Groups, requirements: Requirements,
                          _: Mapping[str, int]) -> _Groups:
    """CreateFleet takes one market: the reservation type (default, capacity block or
    interruptible default) with the cheapest offering, and only its reserved offerings."""
    if not allows(requirements, RESERVED):
        return groups
    reserved = [choice for group in groups.values() for choice in _reserved(group)]
    if not reserved:
        return groups
    cheapest = min(reserved, key=lambda c: (c.offering.price,
                                            _RESERVATION_PRIORITY.get(_reservation_kind(c), 3)))
    kind = _reservation_kind(cheapest)
    kept = {name: [c for c in _reserved(group) if _reservation_kind(c) == kind]
            for name, group in groups.items()}
    return {name: group for name, group in kept.items() if group}


def _one_capacity_block(groups: _Groups, requirements: Requirements,
                        _: Mapping[str, int]) -> _Groups:
    """CreateFleet takes a single capacity block: the cheapest."""
    if not allows(requirements, RESERVED):
        return groups
    typed = [c for group in groups.values() for c in group if c.offering.reservation_type]
    if not typed or typed[0].offering.reservation_type != CAPACITY_BLOCK:
        return groups
    blocks = [c for c in typed if c.offering.reservation_type == CAPACITY_BLOCK]
    cheapest = min(blocks, key=lambda c: c.offering.price)
    return {cheapest.instance_type.name: [cheapest]}


def _one_reservation_per_zone(groups: _Groups, requirements: Requirements,
                              _: Mapping[str, int]) -> _Groups:
    """CreateFleet takes one offering per (type, zone) pool: the reservation with the most
    instances left."""
    if not allows(requirements, RESERVED):
        return groups
    kept: _Groups = {}
    for name, group in groups.items():
        by_zone: dict[str, Choice] = {}
        for choice in _reserved(group):
            current = by_zone.get(choice.offering.zone)
            if current is None or (choice.offering.reservation_capacity
                                   > current.offering.reservation_capacity):
                by_zone[choice.offering.zone] = choice
        if by_zone:
            kept[name] = list(by_zone.values())
    return kept or groups


def _no_exotic(groups: _Groups, requirements: Requirements, _: Mapping[str, int]) -> _Groups:
    if has_min_values(requirements):
        return groups
    generic = {name: group for name, group in groups.items()
               if not is_exotic(group[0].instance_type)}
    return generic or groups


def _no_spot_dearer_than_on_demand(groups: _Groups, requirements: Requirements,
                                   _: Mapping[str, int]) -> _Groups:
    if has_min_values(requirements):
        return groups
    if not (allows(requirements, SPOT) and allows(requirements, ON_DEMAND)):
        return groups
    offerings = [c.offering for group in groups.values() for c in group]
    on_demand = [o.price for o in offerings if o.capacity_type == ON_DEMAND]
    if not on_demand or not any(o.capacity_type == SPOT for o in offerings):
        return groups
    cheapest = min(on_demand)
    kept = {name: [c for c in group
                   if not (c.offering.capacity_type == SPOT and c.offering.price > cheapest)]
            for name, group in groups.items()}
    return {name: group for name, group in kept.items() if group}


_FILTERS: Final[tuple[tuple[str, _Filter], ...]] = (
    (FITS, _fits),
    ("capacity-reservation-type-filter", _one_reservation_type),
    ("capacity-block-filter", _one_capacity_block),
    ("reserved-offering-filter", _one_reservation_per_zone),
    ("exotic-instance-filter", _no_exotic),
    ("spot-offering-filter", _no_spot_dearer_than_on_demand),
)
