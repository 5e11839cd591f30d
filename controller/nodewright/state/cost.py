"""The cost of each NodePool's NodeClaims, kept up to date as they come and go and as prices
change (Karpenter's ClusterCost, pkg/state/cost/cost.go).

A NodeClaim is counted once it carries the instance type, capacity type, zone and NodePool
labels (its launch writes them), at the price of that offering, and stops counting when it
is gone. Prices are looked up when an offering is first counted and refreshed by
`update_offerings` (the pricing controller's hourly pass, and whenever a NodePool's
instance types are read again). What cannot be counted or uncounted (its NodePool missing,
its instance types unreadable, a NodeClaim removed from a NodePool that has none) raises
`CostTrackingError` and counts in karpenter_nodepools_cost_tracker_errors_total.

Pure bookkeeping: the NodePool's existence and its instance types are asked of the caller.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from nodewright import metrics
from nodewright.scheduling.catalog import InstanceType
from nodewright.state.wellknown import (
    CAPACITY_TYPE_LABEL,
    INSTANCE_TYPE_LABEL,
    NODEPOOL_LABEL,
    ZONE_LABEL,
)

log = logging.getLogger(__name__)

# The labels a NodeClaim needs before it is counted (Karpenter's NecessaryLabels).
NECESSARY_LABELS = (INSTANCE_TYPE_LABEL, CAPACITY_TYPE_LABEL, ZONE_LABEL, NODEPOOL_LABEL)


class CostTrackingError(Exception):
    pass


@dataclass(frozen=True)
class OfferingKey:
    zone: str
    capacity_type: str
    instance_type: str


@dataclass
class _Offering:
    count: int
    price: float  # of one instance


@dataclass
class _NodePoolCost:
    cost: float = 0.0
    offerings: dict[OfferingKey, _Offering] = field(default_factory=dict)


def offering_price(instance_types: Sequence[InstanceType], key: OfferingKey
                   ) -> float | None:
    """The first offering of the named type in that zone and capacity type (Karpenter's
    InstanceType.OfferingPrice), available or not; None when there is none."""
    for instance_type in instance_types:
        if instance_type.name != key.instance_type:
            continue
        for offering in instance_type.offerings:
            if offering.zone == key.zone and offering.capacity_type == key.capacity_type:
                return offering.price
        return None
    return None


class ClusterCost:
    """Per NodePool: the offerings its NodeClaims run on (how many, at what price) and their
    total. Thread-safe: the controllers that feed it and the readers may run at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pools: dict[str, _NodePoolCost] = {}
        self._claims: dict[str, tuple[str, OfferingKey]] = {}

    def update_offerings(self, nodepool: str, instance_types: Sequence[InstanceType]) -> None:
        """New prices for the NodePool's counted offerings (a NodePool not counted yet gets
        an empty entry, as Karpenter's)."""
        with self._lock:
            pool = self._pools.get(nodepool)
            if pool is None:
                self._pools[nodepool] = _NodePoolCost()
                return
            prices: dict[OfferingKey, float] = {}
            for instance_type in instance_types:
                for offering in instance_type.offerings:
                    prices[OfferingKey(offering.zone, offering.capacity_type,
                                       instance_type.name)] = offering.price
            total = 0.0
            for key, counted in pool.offerings.items():
                counted.price = prices.get(key, counted.price)
                total += counted.count * counted.price
            pool.cost = total

    def update_nodeclaim(
        self, name: str, labels: Mapping[str, str],
        nodepool_exists: Callable[[str], bool],
        instance_types: Callable[[str], Sequence[InstanceType]],
    ) -> None:
        """Count a NodeClaim not counted yet. Without all of `NECESSARY_LABELS` it is left
        for a later event (its launch has not labelled it yet). The callbacks run outside
        the tracker's lock (they may wait on the cluster state's or the cloud's)."""
        if any(label not in labels for label in NECESSARY_LABELS):
            return
        nodepool = labels[NODEPOOL_LABEL]
        key = OfferingKey(labels[ZONE_LABEL], labels[CAPACITY_TYPE_LABEL],
                          labels[INSTANCE_TYPE_LABEL])
        with self._lock:
            if name in self._claims:
                return
            pool = self._pools.get(nodepool)
            known = pool is not None and key in pool.offerings
        try:
            price = self._price(nodepool, key, known, nodepool_exists, instance_types)
        except CostTrackingError as error:
            metrics.NODEPOOLS_COST_TRACKER_ERRORS.labels(nodepool=nodepool).inc()
            raise CostTrackingError(f"{error} (nodeclaim {name}, nodepool {nodepool})"
                                    ) from None
        with self._lock:
            if name in self._claims:
                return
            pool = self._pools.setdefault(nodepool, _NodePoolCost())
            counted = pool.offerings.get(key)
            if counted is None:
                counted = _Offering(0, price or 0.0)
                pool.offerings[key] = counted
            counted.count += 1
            pool.cost += counted.price
            self._claims[name] = (nodepool, key)

    def delete_nodeclaim(self, name: str) -> None:
        """Stop counting a NodeClaim that is gone; one never counted changes nothing."""
        with self._lock:
            found = self._claims.get(name)
            if found is None:
                return
            nodepool, key = found
            try:
                self._remove(nodepool, key)
            except CostTrackingError as error:
                metrics.NODEPOOLS_COST_TRACKER_ERRORS.labels(nodepool=nodepool).inc()
                raise CostTrackingError(f"{error} (nodeclaim {name})") from None
            del self._claims[name]

    def delete_nodepool(self, nodepool: str) -> None:
        with self._lock:
            self._claims = {name: found for name, found in self._claims.items()
                            if found[0] != nodepool}
            self._pools.pop(nodepool, None)

    def reset(self) -> None:
        with self._lock:
            self._pools.clear()
            self._claims.clear()

    def nodepool_cost(self, nodepool: str) -> float:
        with self._lock:
            pool = self._pools.get(nodepool)
            return pool.cost if pool is not None else 0.0

    @staticmethod
    def _price(nodepool: str, key: OfferingKey, known: bool,
               nodepool_exists: Callable[[str], bool],
               instance_types: Callable[[str], Sequence[InstanceType]]) -> float | None:
        """The offering's price when it is not counted yet (None when it is, or unknown)."""
        if not nodepool_exists(nodepool):
            raise CostTrackingError(f'NodePool "{nodepool}" not found')
        if known:
            return None
        try:
            types = instance_types(nodepool)
        except Exception as error:
            raise CostTrackingError(
                f'failed to get instance types for nodepool "{nodepool}" while adding '
                f'offering for instance "{key.instance_type}", {error}') from error
        price = offering_price(types, key)
        if price is None:
            log.error("offering price unknown — cost tracking will undercount for this "
                      "nodeclaim until next update: failed to find offering for instance "
                      "%r in zone %r with capacity %r in nodepool %r",
                      key.instance_type, key.zone, key.capacity_type, nodepool)
        return price

    def _remove(self, nodepool: str, key: OfferingKey) -> None:
        where = (f'(instance "{key.instance_type}", zone "{key.zone}", capacity '
                 f'"{key.capacity_type}")')
        pool = self._pools.get(nodepool)
        if pool is None:
            raise CostTrackingError(
                f'attempted to remove offering from nonexistent nodepool "{nodepool}" {where}')
        counted = pool.offerings.get(key)
        if counted is None:
            raise CostTrackingError(
                f'attempted to remove nonexistent offering from nodepool "{nodepool}" {where}')
        counted.count -= 1
        pool.cost -= counted.price
        if counted.count == 0:
            del pool.offerings[key]
        if not pool.offerings:
            del self._pools[nodepool]
