"""Capacity reservations in a plan: no more NodeClaims go into a reservation than it has
instances left (the effect of Karpenter's reservation manager).

Reserved offerings are priced near zero, so the solver packs as if a reservation had no
end. This pass then goes over the planned NodeClaims in order. A NodeClaim whose cheapest
offering is in a reservation with an instance left takes that instance and is restricted
to it (`karpenter.sh/capacity-type In [reserved]` and its
`karpenter.k8s.aws/capacity-reservation-id`), so the launch goes there. A NodeClaim whose
reservations are used up is kept out of them (`capacity-reservation-id NotIn [...]`) and
re-priced at its next offering: another reservation, spot or on-demand. A plan no
reservation takes part in is returned as it is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from nodewright.scheduling.catalog import RESERVED, InstanceType, Offering
from nodewright.scheduling.nodepools import (
    NodePoolTemplate,
    allowed_offerings,
    min_values_problem,
)
from nodewright.scheduling.requirements import (
    LABEL_CAPACITY_TYPE,
    LABEL_RESERVATION_ID,
    LABEL_ZONE,
    LABEL_ZONE_ID,
    Requirement,
    Requirements,
)
from nodewright.scheduling.targets import PlannedNodeClaim

_CACHED_COUNTS = 64
# Instances left per reservation, by catalog (the catalog is kept in the value so that its
# id cannot be reused while cached): most catalogs have no reservation at all, and the
# disruption controller solves many times against the same ones.
_COUNTS: dict[int, tuple[Sequence[InstanceType], dict[str, int]]] = {}


def reservation_counts(templates: Iterable[NodePoolTemplate]) -> dict[str, int]:
    """Instances left per reservation the NodePools' catalogs offer. A reservation seen in
    several catalogs (NodePools sharing it, read at different times) counts its least."""
    counts: dict[str, int] = {}
    for template in templates:
        for reservation, left in _catalog_counts(template.instance_types).items():
            counts[reservation] = min(left, counts.get(reservation, left))
    return counts


def _catalog_counts(instance_types: Sequence[InstanceType]) -> dict[str, int]:
    cached = _COUNTS.get(id(instance_types))
    if cached is not None and cached[0] is instance_types:
        return cached[1]
    counts: dict[str, int] = {}
    for instance_type in instance_types:
        for offering in instance_type.offerings:
            if offering.capacity_type != RESERVED or not offering.reservation_id:
                continue
            left = offering.reservation_capacity if offering.available else 0
            counts[offering.reservation_id] = min(left,
                                                  counts.get(offering.reservation_id, left))
    if len(_COUNTS) >= _CACHED_COUNTS:
        _COUNTS.pop(next(iter(_COUNTS)))
    _COUNTS[id(instance_types)] = (instance_types, counts)
    return counts


def _cheapest(offerings: Sequence[Offering]) -> Offering:
    return min(offerings, key=lambda o: (o.price, o.capacity_type, o.zone,
                                         o.reservation_id or ""))


def assign_reservations(
    claims: Sequence[PlannedNodeClaim], templates: Sequence[NodePoolTemplate],
) -> tuple[list[PlannedNodeClaim], list[tuple[str, str]]]:
    """The claims with reservations counted, and the pods of claims that can launch
    nowhere once the reservations they need are used up (with why)."""
    counts = reservation_counts(templates)
    if not counts:
        return list(claims), []
    catalogs: dict[str, Mapping[str, InstanceType]] = {}
    pools = {template.name: template for template in templates}
    result: list[PlannedNodeClaim] = []
    failed: list[tuple[str, str]] = []
    for claim in claims:
        template = pools.get(claim.nodepool)
        if template is None:
            result.append(claim)
            continue
        if claim.nodepool not in catalogs:
            catalogs[claim.nodepool] = {it.name: it for it in template.instance_types}
        catalog = catalogs[claim.nodepool]
        types = [catalog[name] for name, _ in claim.instance_types if name in catalog]
        counted = _count(claim, types, counts)
        if counted is None:
            compatible = sorted(_reservations(types, claim.requirements))
            reason = ("the capacity reservations it may launch into have no instances left: "
                      + ", ".join(compatible))
            failed.extend((pod, reason) for pod in claim.pods)
        else:
            result.append(counted)
    return result, failed


def _reservations(types: Sequence[InstanceType], requirements: Requirements) -> set[str]:
    return {
        offering.reservation_id
        for instance_type in types
        for offering in allowed_offerings(instance_type, requirements)
        if offering.reservation_id
    }


def _count(
    claim: PlannedNodeClaim, types: Sequence[InstanceType], counts: dict[str, int],
) -> PlannedNodeClaim | None:
    """The claim restricted to the reservation it takes an instance of, or kept out of the
    used-up ones; None when nothing is left for it."""
    compatible = _reservations(types, claim.requirements)
    if not compatible:
        return claim
    requirements = claim.requirements
    exhausted = sorted(r for r in compatible if counts.get(r, 0) <= 0)
    if exhausted:
        requirements = _with(requirements, Requirement(LABEL_RESERVATION_ID, True,
                                                       frozenset(exhausted)))
    priced = _priced(types, requirements)
    if not priced:
        return None
    best = _cheapest(allowed_offerings(priced[0][1], requirements))
    if best.reservation_id:
        reserved = _with(_with(requirements, Requirement.single(LABEL_CAPACITY_TYPE, RESERVED)),
                         Requirement.single(LABEL_RESERVATION_ID, best.reservation_id))
        kept = _priced(types, reserved)
        if min_values_problem([it for _, it in kept], reserved) is None:
            counts[best.reservation_id] -= 1
            return _planned(claim, kept, reserved,
                            f"launches into capacity reservation {best.reservation_id}")
        # Its minValues cannot be met inside the reservation: it launches outside all of them.
        requirements = _with(requirements, Requirement(LABEL_RESERVATION_ID, True,
                                                       frozenset(compatible)))
        priced = _priced(types, requirements)
        if not priced:
            return None
    if not exhausted and requirements is claim.requirements:
        return claim
    if exhausted:
        note = f"capacity reservation(s) {', '.join(exhausted)} taken by earlier NodeClaims"
    else:
        note = "its minValues cannot be met inside a capacity reservation"
    return _planned(claim, priced, requirements, note)


def _with(requirements: Requirements, requirement: Requirement) -> Requirements:
    narrowed = requirements.copy()
    narrowed.add(requirement)
    return narrowed


def _priced(
    types: Sequence[InstanceType], requirements: Requirements,
) -> list[tuple[float, InstanceType]]:
    """The types with an allowed offering, cheapest first, each at its cheapest price."""
    priced = []
    for instance_type in types:
        offerings = allowed_offerings(instance_type, requirements)
        if offerings:
            priced.append((min(o.price for o in offerings), instance_type))
    priced.sort(key=lambda entry: (entry[0], entry[1].name))
    return priced


def _single_value(requirement: Requirement | None) -> bool:
    return (
        requirement is not None and not requirement.complement and len(requirement.values) == 1
    )


def _planned(
    claim: PlannedNodeClaim, priced: Sequence[tuple[float, InstanceType]],
    requirements: Requirements, note: str,
) -> PlannedNodeClaim:
    """The claim re-priced under narrowed requirements (as `targets.finish_claim` prices)."""
    best = _cheapest(allowed_offerings(priced[0][1], requirements))
    one_zone = (_single_value(requirements.get(LABEL_ZONE))
                or _single_value(requirements.get(LABEL_ZONE_ID)))
    return replace(
        claim,
        instance_types=tuple((it.name, price) for price, it in priced),
        capacity_type=best.capacity_type,
        zone=best.zone if one_zone else None,
        price=best.price,
        requirements=requirements,
        price_estimated=best.price_estimated,
        why=f"{claim.why}; {note}" if claim.why else note,
    )
