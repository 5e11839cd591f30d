"""NodeOverlays applied to instance types (Karpenter's nodeoverlay InstanceTypeStore).

Overlays are taken by weight, highest first (equal weights: the name later in the
alphabet first). An overlay selects, per NodePool, the offerings whose labels (the
instance type's, the offering's zone and capacity type, `karpenter.sh/nodepool` and the
NodePool's template labels) satisfy its requirements. The first overlay to price an
offering sets its price (`price`) or adjusts it (`priceAdjustment`: +/-amount or +/-N%,
never below 0); `capacity` adds extended resources to every instance type with a selected
offering, the first overlay to name a resource winning. Two overlays of the same weight
touching the same offering's price, or the same resource of a type, conflict: the later
one is not applied anywhere (the controller reports it). A NodePool the store was not
built for gets no instance types until it is (Karpenter's "awaiting nodeoverlay
evaluation").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from nodewright.api.nodeoverlay import NodeOverlay
from nodewright.api.nodepool import NodePool
from nodewright.api.quantity import parse_quantity
from nodewright.scheduling.catalog import InstanceType, Offering
from nodewright.scheduling.offering_labels import offering_labels
from nodewright.scheduling.requirements import (
    LABEL_NODEPOOL,
    Requirement,
    Requirements,
)


def ordered(overlays: Iterable[NodeOverlay]) -> list[NodeOverlay]:
    """Highest weight first; equal weights by name, later in the alphabet first."""
    return sorted(overlays, key=lambda o: (o.spec.weight or 0, o.name), reverse=True)


def adjusted_price(price: float, change: str) -> float:
    """Karpenter's AdjustedPrice: an absolute price, or a signed amount or percentage."""
    if not change:
        return price
    if not change.startswith(("+", "-")):
        return float(change)
    if change.endswith("%"):
        result = price * (1 + float(change[:-1]) / 100)
    else:
        result = price + float(change)
    return max(result, 0.0)


def requirements_of(overlay: NodeOverlay) -> Requirements:
    return Requirements(Requirement.build(r.key, r.operator, r.values or [])
                        for r in overlay.spec.requirements)


def selected_offerings(nodepool: NodePool, instance_type: InstanceType,
                       requirements: Requirements) -> list[int]:
    """Indices of the instance type's offerings the overlay selects in this NodePool."""
    template = nodepool.spec.template.metadata
    base = {**instance_type.labels, **((template.labels if template else None) or {}),
            LABEL_NODEPOOL: nodepool.name}
    return [index for index, offering in enumerate(instance_type.offerings)
            if requirements.satisfied_by_labels({**base, **offering_labels(offering)})]


@dataclass
class _Price:
    change: str
    lowest_weight: int


@dataclass
class _Capacity:
    resources: dict[str, int]
    lowest_resources: frozenset[str]
    lowest_weight: int


OfferingKey = tuple[tuple[str, str], ...]


def offering_key(offering: Offering) -> OfferingKey:
    """What names an offering across catalog refreshes: its labels (zone, zone id, capacity
    type, reservation, partition), as Karpenter keys its price updates by the offering's
    requirements. Not its position: a type offered in one more zone, or a reservation
    that expired, moves the others."""
    return tuple(sorted(offering_labels(offering).items()))


@dataclass
class _TypeUpdate:
    prices: dict[OfferingKey, _Price] = field(default_factory=dict)
    capacity: _Capacity | None = None


@dataclass
class OverlayStore:
    """What the overlays do to each NodePool's instance types."""

    updates: dict[str, dict[str, _TypeUpdate]] = field(default_factory=dict)
    evaluated: frozenset[str] = frozenset()
    applied: dict[str, list[str]] = field(default_factory=dict)  # overlay -> NodePools
    # The last answer per pool with the instance types it was asked for: every
    # provisioning and disruption pass asks again for the same catalog objects, and
    # applying the overlays to hundreds of types each time was most of a pass.
    # (Keyed by the pool and the list's length too: a launch asks for its one type.)
    _answers: dict[tuple[str, int], tuple[tuple[InstanceType, ...], list[InstanceType]]] = (
        field(default_factory=dict, repr=False, compare=False))

    def apply(self, pool: str, instance_types: Sequence[InstanceType]
              ) -> list[InstanceType] | None:
        """The pool's instance types with the overlays applied; None when the store was
        built without this NodePool."""
        if pool not in self.evaluated:
            return None
        updates = self.updates.get(pool)
        if not updates:
            return list(instance_types)
        key = (pool, len(instance_types))
        known = self._answers.get(key)
        if known is not None and all(
                a is b for a, b in zip(known[0], instance_types, strict=True)):
            return list(known[1])
        answer = [_applied(it, updates[it.name]) if it.name in updates else it
                  for it in instance_types]
        self._answers[key] = (tuple(instance_types), answer)
        return list(answer)


    def added_resources(self, pool: str) -> frozenset[str]:
        """The extended resources capacity overlays add to some instance type of the pool."""
        return frozenset(name for update in self.updates.get(pool, {}).values()
                         if update.capacity is not None for name in update.capacity.resources)


def _applied(instance_type: InstanceType, update: _TypeUpdate) -> InstanceType:
    offerings = instance_type.offerings if not update.prices else tuple(
        _priced(offering, price.change)
        if (price := update.prices.get(offering_key(offering))) is not None else offering
        for offering in instance_type.offerings)
    if update.capacity is None or not update.capacity.resources:
        return replace(instance_type, offerings=offerings)
    capacity = {**instance_type.capacity, **update.capacity.resources}
    return replace(instance_type, offerings=offerings, capacity=capacity,
                   capacity_overlaid=True)


def _priced(offering: Offering, change: str) -> Offering:
    """The offering at the overlay's price. An offering unavailable only for want of a price
    becomes available when the overlay sets one outright (Karpenter's GetOverlayPrice in
    the AWS provider's offering resolver); an adjustment has nothing to adjust there."""
    absolute = bool(change) and not change.startswith(("+", "-"))
    if offering.unpriced and not absolute:
        return offering
    return replace(offering, price=adjusted_price(offering.price, change), price_overlaid=True,
                   available=offering.available or offering.unpriced, unpriced=False)


def build_store(
    overlays: Iterable[NodeOverlay],
    pools: Mapping[str, tuple[NodePool, Sequence[InstanceType]]],
) -> tuple[OverlayStore, list[str]]:
    """The store for these NodePools (with their instance types as the cloud offers them)
    from the valid overlays, and the names of the overlays that conflict."""
    store = OverlayStore(evaluated=frozenset(pools))
    conflicting: list[str] = []
    for overlay in ordered(overlays):
        requirements = requirements_of(overlay)
        weight = overlay.spec.weight or 0
        selections = {
            name: [(it, selected_offerings(nodepool, it, requirements)) for it in types]
            for name, (nodepool, types) in pools.items()
        }
        if any(_conflicts(store, name, it, picked, overlay, weight)
               for name, chosen in selections.items() for it, picked in chosen if picked):
            conflicting.append(overlay.name)
            continue
        for name, chosen in selections.items():
            for it, picked in chosen:
                if picked:
                    _store(store, name, it, picked, overlay, weight)
                    if name not in store.applied.setdefault(overlay.name, []):
                        store.applied[overlay.name].append(name)
    return store, conflicting


def _price_change(overlay: NodeOverlay) -> str | None:
    return overlay.spec.price if overlay.spec.price is not None else overlay.spec.price_adjustment


def _conflicts(store: OverlayStore, pool: str, it: InstanceType, picked: list[int],
               overlay: NodeOverlay, weight: int) -> bool:
    update = store.updates.get(pool, {}).get(it.name)
    if update is None:
        return False
    if _price_change(overlay) is not None and any(
            (known := update.prices.get(offering_key(it.offerings[index]))) is not None
            and known.lowest_weight == weight for index in picked):
        return True
    capacity = update.capacity
    return bool(overlay.spec.capacity and capacity is not None
                and capacity.lowest_weight == weight
                and capacity.lowest_resources & set(overlay.spec.capacity))


def _store(store: OverlayStore, pool: str, it: InstanceType, picked: list[int],
           overlay: NodeOverlay, weight: int) -> None:
    update = store.updates.setdefault(pool, {}).setdefault(it.name, _TypeUpdate())
    change = _price_change(overlay)
    if change is not None:
        for index in picked:
            key = offering_key(it.offerings[index])
            known = update.prices.get(key)
            if known is None:
                update.prices[key] = _Price(change, weight)
            else:
                known.lowest_weight = weight
    if overlay.spec.capacity:
        amounts = {name: parse_quantity(value) for name, value in overlay.spec.capacity.items()}
        if update.capacity is None:
            update.capacity = _Capacity(dict(amounts), frozenset(amounts), weight)
        else:
            for name, amount in amounts.items():
                update.capacity.resources.setdefault(name, amount)
            update.capacity.lowest_resources = frozenset(amounts)
            update.capacity.lowest_weight = weight
