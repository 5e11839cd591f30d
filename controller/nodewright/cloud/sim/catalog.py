"""The simulated region's instance types: the offline catalog with the scenario's prices,
and offerings out of capacity reported unavailable."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace

from nodewright.api.ec2nodeclass import EC2NodeClass
from nodewright.cloud.provider import CloudProviderError
from nodewright.cloud.sim.world import CapacityRule, PriceOverride, price_for
from nodewright.scheduling import allocatable
from nodewright.scheduling.catalog import InstanceType, offline_catalog
from nodewright.scheduling.offline_data import resolve_zones

OfferingKey = tuple[str, str, str]  # (instance type, zone, capacity type)


class SimCatalog:
    """Instance types per node class (kubelet settings change allocatable), priced once."""

    def __init__(
        self, region: str, zones: Sequence[str] | None, prices: Sequence[PriceOverride] = ()
    ) -> None:
        self.region = region
        self.zones: tuple[str, ...] = resolve_zones(region, zones)
        self._prices = tuple(prices)
        self._priced: dict[tuple[object, ...], tuple[InstanceType, ...]] = {}
        # Per node-class settings: the unavailable offerings last asked for and the catalog.
        self._offered: dict[
            tuple[object, ...], tuple[frozenset[OfferingKey], tuple[InstanceType, ...]]
        ] = {}
        self._by_name: dict[str, InstanceType] = {
            it.name: it for it in offline_catalog(region, self.zones)
        }

    def check(self, rules: Sequence[CapacityRule], prices: Sequence[PriceOverride]) -> None:
        """ValueError naming the entry when a rule names a type or zone this region lacks."""
        entries: list[tuple[str, str, str | None]] = [
            (f"capacity[{index}]", rule.instance_type, rule.zone)
            for index, rule in enumerate(rules)
        ] + [
            (f"prices[{index}]", price.instance_type, price.zone)
            for index, price in enumerate(prices)
        ]
        for where, instance_type, zone in entries:
            known = self._by_name.get(instance_type)
            if known is None:
                raise ValueError(
                    f"{where}.instanceType: {instance_type!r} is not an instance type offered "
                    f"in {self.region} zones {', '.join(self.zones)}"
                )
            if zone is not None and zone not in known.zones():
                raise ValueError(
                    f"{where}.zone: {instance_type} is not offered in {zone!r} "
                    f"(offered in: {', '.join(known.zones())})"
                )

    def instance_types(
        self,
        node_class: EC2NodeClass | None,
        unavailable: Collection[OfferingKey] = (),
    ) -> list[InstanceType]:
        """Every instance type for this node class; offerings in `unavailable` are marked
        available=False."""
        return list(self.offered(node_class, unavailable))

    def offered(
        self,
        node_class: EC2NodeClass | None,
        unavailable: Collection[OfferingKey] = (),
    ) -> tuple[InstanceType, ...]:
        """`instance_types` as one shared tuple: the same object for as long as the node
        class's settings and the unavailable offerings stay the same, a new one when they
        change (what is derived from it may be cached by its identity)."""
        key = self._settings_key(node_class)
        blocked_now = frozenset(unavailable)
        cached = self._offered.get(key)
        if cached is not None and cached[0] == blocked_now:
            return cached[1]
        priced = self._priced_catalog(key, node_class)
        if blocked_now:
            blocked: dict[str, set[tuple[str, str]]] = {}
            for name, zone, capacity_type in blocked_now:
                blocked.setdefault(name, set()).add((zone, capacity_type))
            priced = tuple(
                _with_unavailable(it, blocked[it.name]) if it.name in blocked else it
                for it in priced
            )
        self._offered[key] = (blocked_now, priced)
        return priced

    @staticmethod
    def _settings_key(node_class: EC2NodeClass | None) -> tuple[object, ...]:
        try:
            return allocatable.node_settings(None, node_class).cache_key()
        except ValueError as error:
            name = node_class.name if node_class is not None else ""
            raise CloudProviderError(
                f"EC2NodeClass {name}: {error}", resource=f"ec2nodeclass {name}"
            ) from error

    def _priced_catalog(
        self, key: tuple[object, ...], node_class: EC2NodeClass | None
    ) -> tuple[InstanceType, ...]:
        cached = self._priced.get(key)
        if cached is None:
            base = offline_catalog(self.region, self.zones, node_class=node_class)
            cached = tuple(self._apply_prices(it) for it in base)
            self._priced[key] = cached
        return cached

    def _apply_prices(self, instance_type: InstanceType) -> InstanceType:
        if not any(p.instance_type == instance_type.name for p in self._prices):
            return instance_type
        offerings = []
        for offering in instance_type.offerings:
            price = price_for(
                self._prices, instance_type.name, offering.zone, offering.capacity_type
            )
            offerings.append(
                offering
                if price is None
                else replace(offering, price=price, price_estimated=False)
            )
        return replace(instance_type, offerings=tuple(offerings))


def _with_unavailable(instance_type: InstanceType, blocked: set[tuple[str, str]]) -> InstanceType:
    offerings = tuple(
        replace(offering, available=False)
        if (offering.zone, offering.capacity_type) in blocked
        else offering
        for offering in instance_type.offerings
    )
    return replace(instance_type, offerings=offerings)
