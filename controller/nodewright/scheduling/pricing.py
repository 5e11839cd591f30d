"""Instance prices: the PriceSource interface, the offline list-price table and estimates.

The AWS provider backs PriceSource with the Pricing API and spot price history. Offline,
`OfflinePriceSource` reads Nodewright's own on-demand table (data/ondemand-list-prices.json;
GovCloud and China from Karpenter's generated tables) and has no spot data; the catalog then
uses the documented estimates below (docs/pricing.md).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any, Protocol

from nodewright.scheduling import karpenter_tables
from nodewright.scheduling.ec2_info import InstanceTypeFacts, category_and_generation

_TABLE_FILE = "ondemand-list-prices.json"
_BURSTABLE_SIZES = {"nano": 1 / 16, "micro": 1 / 8, "small": 1 / 4, "medium": 1 / 2}
_SIZE = re.compile(r"^(\d*)xlarge$")
_METAL_SIZE = re.compile(r"^metal-(\d+)xl$")

# Spot price as a share of on-demand, per instance category, when there is no spot history.
# These are long-run typical discounts, deliberately conservative (see docs/pricing.md).
SPOT_SHARE_BY_CATEGORY: dict[str, float] = {"c": 0.40, "m": 0.40, "r": 0.35, "t": 0.35, "g": 0.45}
DEFAULT_SPOT_SHARE = 0.40

# On-demand price of a region relative to us-east-1, used only for estimates (docs/pricing.md).
REGION_PRICE_FACTORS: dict[str, float] = {
    "us-east-1": 1.0, "us-east-2": 1.0, "us-west-2": 1.0, "us-west-1": 1.17,
    "ca-central-1": 1.10, "eu-west-1": 1.11, "eu-west-2": 1.16, "eu-west-3": 1.16,
    "eu-central-1": 1.20, "eu-north-1": 1.06, "ap-south-1": 1.05, "ap-southeast-1": 1.25,
    "ap-southeast-2": 1.25, "ap-northeast-1": 1.29, "ap-northeast-2": 1.23, "sa-east-1": 1.59,
}
DEFAULT_REGION_PRICE_FACTOR = 1.20

# Linear price model for types missing from the table (fitted to c5/m5/r5 list prices).
PRICE_PER_VCPU = 0.037
PRICE_PER_GIB = 0.00275
PRICE_PER_GPU_GIB = 0.036
PRICE_PER_ACCELERATOR = 0.25
ARM64_PRICE_SHARE = 0.80


class PriceSource(Protocol):
    """Hourly prices in USD; None means "not known here".

    What the catalog does then is the source's to say (`estimates_unpriced`): a source with
    an `ESTIMATES_UNPRICED = False` attribute (the live AWS prices) has the offering marked
    unavailable, as Karpenter does; the others (offline tables, test fakes) have it
    estimated and marked so.
    """

    def on_demand(self, instance_type: str, region: str) -> float | None: ...

    def spot(self, instance_type: str, zone: str) -> float | None: ...


def price_version(prices: PriceSource) -> int | None:
    """A number that changes whenever any price `prices` answers with may have changed
    (Karpenter's SeqNum, for the prices): a catalog built at one version is the catalog at
    the same version. None: the source keeps no version, so nothing built from it may be
    reused. A source offers one with a `version()` method."""
    version = getattr(prices, "version", None)
    return int(version()) if callable(version) else None


def price_identity(prices: PriceSource) -> Hashable | None:
    """What two sources that answer every price alike have in common: at the same
    `price_version`, what was built from one serves the other. None: the source's prices
    are its own. A source offers one with an `identity()` method."""
    identity = getattr(prices, "identity", None)
    found: Hashable | None = identity() if callable(identity) else None
    return found


@dataclass(frozen=True, slots=True)
class FamilyPrices:
    """One family's row: the .large price with linear sizes, or an explicit price per size."""

    large: float | None
    metal_size: str | None
    sizes: Mapping[str, float]

    def price(self, size: str) -> float | None:
        if size in self.sizes:
            return self.sizes[size]
        if self.large is None:
            return None
        if size == "metal" and self.metal_size is not None:
            size = self.metal_size
        metal = _METAL_SIZE.match(size)
        if metal:
            size = f"{metal[1]}xlarge"
        multiple = _size_multiple(size)
        return None if multiple is None else round(self.large * multiple, 6)


class OfflinePriceSource:
    """On-demand list prices from Nodewright's table; no spot data (spot is estimated)."""

    def __init__(self, table: Mapping[str, Any] | None = None) -> None:
        self._bundled = table is None
        data = table if table is not None else _bundled_table()
        self._regions = frozenset(data.get("listPriceRegions", ()))
        self._families = {
            family: FamilyPrices(
                large=row.get("large"),
                metal_size=row.get("metal"),
                sizes=dict(row.get("sizes", {})),
            )
            for family, row in data.get("families", {}).items()
        }

    @property
    def regions(self) -> frozenset[str]:
        return self._regions

    def families(self) -> list[str]:
        return sorted(self._families)

    def on_demand(self, instance_type: str, region: str) -> float | None:
        if region not in self._regions and region in karpenter_tables.static_price_regions():
            # GovCloud and China: Karpenter's generated tables list their own prices.
            return karpenter_tables.static_on_demand_prices(region).get(instance_type)
        if region not in self._regions or "." not in instance_type:
            return None
        family, size = instance_type.split(".", 1)
        row = self._families.get(family)
        return row.price(size) if row is not None else None

    def spot(self, instance_type: str, zone: str) -> float | None:
        return None

    def version(self) -> int:
        """Its prices never change (`price_version`)."""
        return 0

    def identity(self) -> str | None:
        """Every source of the bundled table answers alike (`price_identity`); a subclass
        may answer otherwise, and a table given is the caller's own."""
        return "offline-bundled" if self._bundled and type(self) is OfflinePriceSource else None

    def base_price(self, instance_type: str) -> float | None:
        """The list price in the list-price regions, wherever the caller is."""
        return self.on_demand(instance_type, next(iter(sorted(self._regions)), ""))


def estimates_unpriced(prices: PriceSource) -> bool:
    """Whether the catalog estimates the prices `prices` lacks (else: unavailable)."""
    return bool(getattr(prices, "ESTIMATES_UNPRICED", True))


def estimate_on_demand(facts: InstanceTypeFacts, region: str) -> float:
    """An on-demand price for a type or region the table lacks.

    The table's list price scaled by the region's factor when the family is listed, else the
    linear model (vCPU, memory, GPU memory, accelerators; arm64 at 80 %) scaled the same way.
    """
    factor = REGION_PRICE_FACTORS.get(region, DEFAULT_REGION_PRICE_FACTOR)
    listed = _default_source().base_price(facts.name)
    if listed is not None:
        return round(listed * factor, 6)
    price = PRICE_PER_VCPU * facts.vcpus + PRICE_PER_GIB * facts.memory_mib / 1024
    price += sum(PRICE_PER_GPU_GIB * gpu.count * gpu.memory_mib / 1024 for gpu in facts.gpus)
    accelerators = facts.neuron_devices or facts.inference_accelerators
    price += PRICE_PER_ACCELERATOR * sum(device.count for device in accelerators)
    if facts.architecture == "arm64":
        price *= ARM64_PRICE_SHARE
    return round(price * factor, 6)


def estimate_spot(facts: InstanceTypeFacts, on_demand_price: float) -> float:
    """Spot as a fixed share of on-demand for the type's category (SPOT_SHARE_BY_CATEGORY)."""
    parts = category_and_generation(facts.name)
    category = parts[0] if parts else ""
    share = SPOT_SHARE_BY_CATEGORY.get(category, DEFAULT_SPOT_SHARE)
    return round(on_demand_price * share, 6)


def _size_multiple(size: str) -> float | None:
    """How many .large a size is worth: xlarge 2, 12xlarge 24, medium 1/2, nano 1/16."""
    if size == "large":
        return 1.0
    if size in _BURSTABLE_SIZES:
        return _BURSTABLE_SIZES[size]
    match = _SIZE.match(size)
    if match is None:
        return None
    return 2.0 * int(match[1] or "1")


@functools.cache
def _bundled_table() -> dict[str, Any]:
    text = resources.files("nodewright.scheduling").joinpath("data", _TABLE_FILE).read_text()
    table: dict[str, Any] = json.loads(text)
    return table


@functools.cache
def _default_source() -> OfflinePriceSource:
    return OfflinePriceSource()
