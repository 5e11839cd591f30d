"""What the simulated EC2 has to sell: capacity limits and price overrides per offering.

A scenario's `capacity` entries are independent limits: `{instanceType: m5.large,
available: 2}` lets two more m5.large launch, in any zone and capacity type together;
adding `zone` or `capacityType` narrows the offerings the limit covers. An offering
launches while every limit covering it has some left, and each launch uses one from each.
An offering no limit covers never runs out. `prices` entries replace the catalog's
hourly price of the offerings they cover (the most specific entry wins).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

CAPACITY_TYPES: Final = ("on-demand", "spot")
UNLIMITED: Final = float("inf")


class CapacityLike(Protocol):
    """Anything shaped like a capacity entry (the simulator's scenario model is)."""

    @property
    def instance_type(self) -> str: ...
    @property
    def available(self) -> int: ...
    @property
    def zone(self) -> str | None: ...
    @property
    def capacity_type(self) -> str | None: ...


class PriceLike(Protocol):
    @property
    def instance_type(self) -> str: ...
    @property
    def capacity_type(self) -> str: ...
    @property
    def price(self) -> float: ...
    @property
    def zone(self) -> str | None: ...


@dataclass(frozen=True)
class CapacityRule:
    instance_type: str
    available: int
    zone: str | None = None
    capacity_type: str | None = None

    @staticmethod
    def of(entry: CapacityLike) -> CapacityRule:
        return CapacityRule(entry.instance_type, entry.available, entry.zone, entry.capacity_type)

    def covers(self, instance_type: str, zone: str, capacity_type: str) -> bool:
        return (
            self.instance_type == instance_type
            and self.zone in (None, zone)
            and self.capacity_type in (None, capacity_type)
        )


@dataclass(frozen=True)
class PriceOverride:
    instance_type: str
    capacity_type: str
    price: float
    zone: str | None = None

    @staticmethod
    def of(entry: PriceLike) -> PriceOverride:
        return PriceOverride(entry.instance_type, entry.capacity_type, entry.price, entry.zone)

    def covers(self, instance_type: str, zone: str, capacity_type: str) -> bool:
        return (
            self.instance_type == instance_type
            and self.capacity_type == capacity_type
            and self.zone in (None, zone)
        )


class CapacityPool:
    """The remaining launches of each capacity rule."""

    def __init__(self, rules: Sequence[CapacityRule] = ()) -> None:
        self._rules: list[CapacityRule] = []
        self._remaining: list[int] = []
        for rule in rules:
            self.add(rule)

    def add(self, rule: CapacityRule) -> None:
        if rule.available < 0:
            raise ValueError(f"capacity of {rule.instance_type}: available must be >= 0")
        self._rules.append(rule)
        self._remaining.append(rule.available)

    def remaining(self, instance_type: str, zone: str, capacity_type: str) -> float:
        """How many more of this offering can launch (infinity when no rule covers it)."""
        left = [
            self._remaining[index]
            for index, rule in enumerate(self._rules)
            if rule.covers(instance_type, zone, capacity_type)
        ]
        return min(left) if left else UNLIMITED

    def take(self, instance_type: str, zone: str, capacity_type: str) -> bool:
        """Use one launch of the offering; False (nothing used) when it is out of capacity."""
        covering = [
            index
            for index, rule in enumerate(self._rules)
            if rule.covers(instance_type, zone, capacity_type)
        ]
        if any(self._remaining[index] <= 0 for index in covering):
            return False
        for index in covering:
            self._remaining[index] -= 1
        return True


def price_for(
    overrides: Sequence[PriceOverride], instance_type: str, zone: str, capacity_type: str
) -> float | None:
    """The overriding price of an offering: a zone-specific entry beats a region-wide one."""
    best: PriceOverride | None = None
    for override in overrides:
        if override.covers(instance_type, zone, capacity_type) and (
            best is None or (best.zone is None and override.zone is not None)
        ):
            best = override
    return best.price if best is not None else None


def parse_capacity(entries: object, where: str = "capacity") -> list[CapacityRule]:
    """A scenario's `capacity` list; ValueError names the entry and field that is wrong."""
    rules: list[CapacityRule] = []
    for index, entry in enumerate(_entries(entries, where)):
        at = f"{where}[{index}]"
        _only_keys(entry, {"instanceType", "zone", "capacityType", "available"}, at)
        available = entry.get("available")
        if not isinstance(available, int) or isinstance(available, bool) or available < 0:
            raise ValueError(
                f"{at}.available: expected a whole number >= 0 (0 means out of capacity), "
                f"got {available!r}"
            )
        rules.append(
            CapacityRule(
                instance_type=_text(entry, "instanceType", at),
                available=available,
                zone=_optional_text(entry, "zone", at),
                capacity_type=_capacity_type(entry, at, required=False),
            )
        )
    return rules


def parse_prices(entries: object, where: str = "prices") -> list[PriceOverride]:
    """A scenario's `prices` list; ValueError names the entry and field that is wrong."""
    overrides: list[PriceOverride] = []
    for index, entry in enumerate(_entries(entries, where)):
        at = f"{where}[{index}]"
        _only_keys(entry, {"instanceType", "zone", "capacityType", "price"}, at)
        price = entry.get("price")
        if not isinstance(price, int | float) or isinstance(price, bool) or price < 0:
            raise ValueError(f"{at}.price: expected an hourly price in USD >= 0, got {price!r}")
        capacity_type = _capacity_type(entry, at, required=True)
        assert capacity_type is not None
        overrides.append(
            PriceOverride(
                instance_type=_text(entry, "instanceType", at),
                capacity_type=capacity_type,
                price=float(price),
                zone=_optional_text(entry, "zone", at),
            )
        )
    return overrides


def _entries(entries: object, where: str) -> list[Mapping[str, Any]]:
    if entries is None:
        return []
    if not isinstance(entries, list):
        raise ValueError(f"{where}: expected a list, got {type(entries).__name__}")
    for index, entry in enumerate(entries):
        if not isinstance(entry, Mapping):
            raise ValueError(f"{where}[{index}]: expected a mapping, got {entry!r}")
    return list(entries)


def _only_keys(entry: Mapping[str, Any], allowed: set[str], at: str) -> None:
    unknown = sorted(str(key) for key in entry if key not in allowed)
    if unknown:
        raise ValueError(
            f"{at}: unknown key {unknown[0]!r} (allowed: {', '.join(sorted(allowed))})"
        )


def _text(entry: Mapping[str, Any], key: str, at: str) -> str:
    value = entry.get(key)
    if not isinstance(value, str) or not value:
        raise ValueError(f"{at}.{key}: expected a non-empty string, got {value!r}")
    return value


def _optional_text(entry: Mapping[str, Any], key: str, at: str) -> str | None:
    return _text(entry, key, at) if entry.get(key) is not None else None


def _capacity_type(entry: Mapping[str, Any], at: str, *, required: bool) -> str | None:
    value = entry.get("capacityType")
    if value is None and not required:
        return None
    if value not in CAPACITY_TYPES:
        raise ValueError(
            f"{at}.capacityType: expected one of {', '.join(CAPACITY_TYPES)}, got {value!r}"
        )
    return str(value)
