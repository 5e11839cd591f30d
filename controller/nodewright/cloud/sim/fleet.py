"""Which offerings a simulated CreateFleet request carries and the order EC2 tries them.

This is the choice Karpenter's AWS provider and EC2 make together: the NodeClaim's
compatible, available offerings whose instance type fits its resource requests; exotic
types (metal, GPUs, accelerators) only when nothing else fits; spot when the NodeClaim
allows it and any spot offering is available, on-demand otherwise; spot offerings dearer
than the cheapest on-demand one left out when both are allowed; at most 60 instance types,
cheapest first. On-demand fleets use lowest-price; spot fleets price-capacity-optimized,
which picks, among the offerings priced close to the cheapest, the one with the most
capacity left. Exact ties are broken by the simulation's seeded random generator.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from typing import Final

from nodewright.cloud.aws.offerings import Choice, capacity_type_for
from nodewright.scheduling import allocatable, quantity
from nodewright.scheduling import labels as well_known
from nodewright.scheduling.catalog import InstanceType, Offering
from nodewright.scheduling.requirements import Requirements

MAX_INSTANCE_TYPES: Final = 60
SPOT: Final = "spot"
ON_DEMAND: Final = "on-demand"
# price-capacity-optimized weighs capacity among offerings at most this much dearer than
# the cheapest one left (EC2 does not publish its band; a fifth keeps the cheapest pools
# in play while letting deeper pools win).
PRICE_BAND: Final = 0.20
EXOTIC_RESOURCES: Final = (
    allocatable.NVIDIA_GPU,
    allocatable.AMD_GPU,
    allocatable.AWS_NEURON,
    allocatable.AWS_NEURON_CORE,
    allocatable.HABANA_GAUDI,
)

Remaining = Callable[[str, str, str], float]  # (type, zone, capacity type) -> launches left


def eligible(
    catalog: Sequence[InstanceType],
    requirements: Requirements,
    requests: Mapping[str, int],
    zones: Sequence[str],
) -> list[Choice]:
    """Available offerings, in the given zones, compatible with the requirements, on types
    that fit the requests; then Karpenter's exotic-type and dear-spot filters."""
    types = [
        it
        for it in catalog
        if _labels_compatible(requirements, it.labels)
        and quantity.fits(requests, it.allocatable)
    ]
    screen = not _has_min_values(requirements)
    if screen:
        types = [it for it in types if not _is_exotic(it)] or types
    allowed_zones = set(zones)
    choices = [
        Choice(it, offering)
        for it in types
        for offering in it.offerings
        if offering.available
        and offering.zone in allowed_zones
        and _labels_compatible(requirements, _offering_labels(offering))
    ]
    return _drop_spot_dearer_than_on_demand(choices, requirements) if screen else choices


def capacity_type(choices: Sequence[Choice]) -> str | None:
    """Spot when any eligible offering is spot, else on-demand; None when nothing is left."""
    return capacity_type_for(choices)


def overrides(choices: Sequence[Choice], chosen_capacity_type: str) -> list[Choice]:
    """The fleet's overrides: offerings of the capacity type on the 60 instance types with
    the cheapest offering, every zone of those types kept."""
    of_type = [c for c in choices if c.offering.capacity_type == chosen_capacity_type]
    best: dict[str, float] = {}
    for choice in of_type:
        name = choice.instance_type.name
        best[name] = min(choice.offering.price, best.get(name, choice.offering.price))
    kept = set(sorted(best, key=lambda name: (best[name], name))[:MAX_INSTANCE_TYPES])
    return [c for c in of_type if c.instance_type.name in kept]


def launch_order(
    candidates: Sequence[Choice], remaining: Remaining, rng: random.Random
) -> list[Choice]:
    """The order a fleet tries its overrides; the first with capacity launches."""
    ordered = sorted(candidates, key=lambda c: (c.instance_type.name, c.offering.zone))
    tie_break = {id(c): rng.random() for c in ordered}
    if not ordered or ordered[0].offering.capacity_type != SPOT:
        return sorted(ordered, key=lambda c: (c.offering.price, tie_break[id(c)]))
    return _price_capacity_optimized(ordered, remaining, tie_break)


def _price_capacity_optimized(
    candidates: list[Choice], remaining: Remaining, tie_break: Mapping[int, float]
) -> list[Choice]:
    left = list(candidates)
    order: list[Choice] = []
    while left:
        floor = min(c.offering.price for c in left)
        band = [c for c in left if c.offering.price <= floor * (1 + PRICE_BAND)]
        pick = min(
            band,
            key=lambda c: (
                -remaining(c.instance_type.name, c.offering.zone, c.offering.capacity_type),
                c.offering.price,
                tie_break[id(c)],
            ),
        )
        order.append(pick)
        left.remove(pick)
    return order


def _has_min_values(requirements: Requirements) -> bool:
    return any(requirement.min_values is not None for requirement in requirements.values())


def _is_exotic(instance_type: InstanceType) -> bool:
    if "metal" in instance_type.labels.get(well_known.INSTANCE_SIZE, ""):
        return True
    return any(instance_type.capacity.get(name, 0) > 0 for name in EXOTIC_RESOURCES)


def _labels_compatible(requirements: Requirements, labels: Mapping[str, str]) -> bool:
    """Requirements on keys these labels define must accept their value; other keys (the
    NodePool's own labels) are not the instance's business."""
    return all(
        requirement.matches_label(labels[key])
        for key, requirement in requirements.items()
        if key in labels
    )


def _offering_labels(offering: Offering) -> dict[str, str]:
    labels = {well_known.ZONE: offering.zone, well_known.CAPACITY_TYPE: offering.capacity_type}
    if offering.zone_id:
        labels[well_known.ZONE_ID] = offering.zone_id
    return labels


def _drop_spot_dearer_than_on_demand(
    choices: list[Choice], requirements: Requirements
) -> list[Choice]:
    key = well_known.CAPACITY_TYPE
    allowed = requirements.get(key)
    if allowed is not None and not (allowed.has(SPOT) and allowed.has(ON_DEMAND)):
        return choices
    on_demand = [c.offering.price for c in choices if c.offering.capacity_type == ON_DEMAND]
    if not on_demand or not any(c.offering.capacity_type == SPOT for c in choices):
        return choices
    cheapest = min(on_demand)
    return [
        c
        for c in choices
        if not (c.offering.capacity_type == SPOT and c.offering.price > cheapest)
    ]
