"""Live prices as Karpenter's pricing provider keeps them: on-demand prices start as its
static table for the region (us-east-1's where it has none) and are replaced by the Pricing
API's answers; spot prices are the static on-demand ones until the first spot price history
is read, then the history's (a type or zone without one has no spot price). Both are
refreshed every 12 hours; a refresh that fails (an error, or an answer without prices) is
tried again after controller-runtime's backoff, 5 ms doubling to 1,000 s, as Karpenter's
pricing controller returns the error to its rate limiter. A type or zone without a price
is never launched
(`ESTIMATES_UNPRICED`). Isolated VPCs (no Pricing endpoint) and GovCloud (no GovCloud
prices in the Price List API) keep the static on-demand prices."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, ClassVar, Final

from botocore.exceptions import BotoCoreError, ClientError

from nodewright.cloud.aws.clock import Seconds, system_clock
from nodewright.runtime.ratelimit import RECONCILE_BACKOFF
from nodewright.scheduling.karpenter_tables import static_on_demand_prices

if TYPE_CHECKING:
    from mypy_boto3_ec2 import EC2Client
    from mypy_boto3_pricing import PricingClient

PRICE_REFRESH_SECONDS: Final = 12 * 3600.0
# Karpenter's GetProducts filters (besides the region): plain Linux, on-demand ...
ON_DEMAND_FILTERS: Final = (
    ("serviceCode", "AmazonEC2"),
    ("preInstalledSw", "NA"),
    ("operatingSystem", "Linux"),
    ("capacitystatus", "Used"),
    ("marketoption", "OnDemand"),
)
# ... asked twice: virtualised types on shared hardware, and bare-metal types (which the
# Price List API files under Dedicated tenancy).
ON_DEMAND_QUERIES: Final = (
    (("tenancy", "Shared"), ("productFamily", "Compute Instance")),
    (("tenancy", "Dedicated"), ("productFamily", "Compute Instance (bare metal)")),
)

log = logging.getLogger(__name__)


GOVCLOUD_PREFIX: Final = "us-gov-"


def currency_of(region: str) -> str:
    """The currency the Price List API prices a region in (China's regions: yuan)."""
    return "CNY" if region.startswith("cn-") else "USD"


def parse_on_demand(price_list: list[str], currency: str = "USD") -> dict[str, float]:
    """instance type -> price per hour in `currency`, from GetProducts PriceList entries
    (JSON strings)."""
    prices: dict[str, float] = {}
    for entry in price_list:
        product = json.loads(entry)
        instance_type = product.get("product", {}).get("attributes", {}).get("instanceType")
        if not instance_type:
            continue
        for term in product.get("terms", {}).get("OnDemand", {}).values():
            for dimension in term.get("priceDimensions", {}).values():
                price = dimension.get("pricePerUnit", {}).get(currency)
                if price is not None and float(price) > 0:
                    prices[instance_type] = float(price)
    return prices


@dataclass
class LivePriceSource:
    pricing: PricingClient
    ec2: EC2Client
    region: str
    clock: Seconds = system_clock
    refresh_seconds: float = PRICE_REFRESH_SECONDS
    # ISOLATED_VPC: the Pricing API has no VPC endpoint; on-demand prices stay the static
    # ones (spot prices come from EC2, which has one).
    isolated_vpc: bool = False
    # As Karpenter: an offering without a price is unavailable, not estimated.
    ESTIMATES_UNPRICED: ClassVar[bool] = False
    _on_demand: dict[str, float] = field(init=False)
    _static: dict[str, float] = field(init=False)
    _spot: dict[tuple[str, str], float] = field(default_factory=dict)
    _spot_read: bool = False
    _on_demand_at: float | None = None
    _spot_at: float | None = None
    # Failed refreshes in a row: the next one is due after the backoff, not 12 hours.
    _on_demand_failures: int = 0
    _spot_failures: int = 0
    # Bumped whenever an answer of on_demand or spot changes (`version`).
    _version: int = 0
    # What Karpenter's ChangeMonitor last logged: the on-demand prices read (None: none
    # yet), the types with a spot price, whether the no-refresh reason was told.
    _on_demand_logged: dict[str, float] | None = None
    _spot_types_logged: frozenset[str] | None = None
    _static_told: bool = False

    def __post_init__(self) -> None:
        self._static = dict(static_on_demand_prices(self.region))
        self._on_demand = dict(self._static)

    def on_demand(self, instance_type: str, region: str) -> float | None:
        if region != self.region:
            return static_on_demand_prices(region).get(instance_type)
        self._refresh_on_demand()
        return self._on_demand.get(instance_type)

    def spot(self, instance_type: str, zone: str) -> float | None:
        self._refresh_spot()
        if not self._spot_read:
            # Until the history is read, a type's spot price is its static on-demand price.
            return self._static.get(instance_type)
        return self._spot.get((instance_type, zone))

    def version(self) -> int:
        """Changes whenever a price this source answers with changes; a refresh that is due
        is made first (scheduling.pricing.price_version)."""
        self._refresh_on_demand()
        self._refresh_spot()
        return self._version

    def _due(self, last: float | None, failures: int) -> bool:
        """Whether the next refresh is due: 12 hours after one that worked, the
        controller-runtime backoff after `failures` failed ones in a row."""
        wait = RECONCILE_BACKOFF.delay(failures) if failures else self.refresh_seconds
        return last is None or self.clock() - last >= wait

    def _refresh_on_demand(self) -> None:
        # GovCloud: the Pricing API lists no GovCloud prices (Karpenter does not ask there
        # either and keeps its static prices).
        if self.isolated_vpc or self.region.startswith(GOVCLOUD_PREFIX):
            if not self._static_told:
                self._static_told = True
                log.debug("running in an isolated VPC, on-demand pricing information will not "
                          "be updated" if self.isolated_vpc else "pricing APIs aren't "
                          "available in AWS GovCloud regions, on-demand pricing information "
                          "will not be updated")
            return
        if not self._due(self._on_demand_at, self._on_demand_failures):
            return
        self._on_demand_at = self.clock()
        try:
            shared, metal = (self._fetch_on_demand(query) for query in ON_DEMAND_QUERIES)
        except (ClientError, BotoCoreError) as error:
            self._on_demand_failures += 1
            log.warning("pricing:GetProducts unavailable, keeping the last prices: %s", error)
            return
        if not shared or not metal:
            # Karpenter takes neither answer unless both list prices.
            self._on_demand_failures += 1
            log.warning("pricing:GetProducts listed no on-demand prices, keeping the last ones")
            return
        self._on_demand_failures = 0
        # As Karpenter: a type missing from this answer keeps its last price.
        updated = {**self._on_demand, **shared, **metal}
        if updated != self._on_demand:
            self._on_demand = updated
            self._version += 1
        if updated != self._on_demand_logged:
            self._on_demand_logged = updated
            log.debug("updated on-demand pricing", extra={"instance-type-count": len(updated)})

    def _refresh_spot(self) -> None:
        if not self._due(self._spot_at, self._spot_failures):
            return
        self._spot_at = self.clock()
        try:
            found = self._fetch_spot()
        except (ClientError, BotoCoreError) as error:
            self._spot_failures += 1
            log.warning("ec2:DescribeSpotPriceHistory unavailable, keeping the last spot "
                        "prices: %s", error)
            return
        if not found:
            self._spot_failures += 1
            log.warning("ec2:DescribeSpotPriceHistory listed no spot prices, keeping the last "
                        "ones")
            return
        self._spot_failures = 0
        updated = {**self._spot, **found}
        if updated != self._spot or not self._spot_read:
            self._spot = updated
            self._spot_read = True
            self._version += 1
        # Karpenter's ChangeMonitor hashes the types only (its zonal prices are unexported
        # fields), which start as its static table's.
        types = frozenset(self._static) | {name for name, _ in updated}
        if types != self._spot_types_logged:
            self._spot_types_logged = types
            log.debug("updated spot pricing with instance types and offerings",
                      extra={"instance-type-count": len(types), "offering-count": len(found)})

    def _fetch_on_demand(self, query: tuple[tuple[str, str], ...]) -> dict[str, float]:
        filters: list[Any] = [
            {"Type": "TERM_MATCH", "Field": name, "Value": value}
            for name, value in (("regionCode", self.region), *ON_DEMAND_FILTERS, *query)
        ]
        prices: dict[str, float] = {}
        paginator = self.pricing.get_paginator("get_products")
        for page in paginator.paginate(ServiceCode="AmazonEC2", Filters=filters,
                                       PaginationConfig={"PageSize": 100}):
            prices.update(parse_on_demand(list(page.get("PriceList", [])),
                                          currency_of(self.region)))
        return prices

    def _fetch_spot(self) -> dict[tuple[str, str], float]:
        latest: dict[tuple[str, str], tuple[datetime, float]] = {}
        paginator = self.ec2.get_paginator("describe_spot_price_history")
        # Accounts that had EC2-Classic price VPC instances as "Linux/UNIX (Amazon VPC)".
        pages = paginator.paginate(ProductDescriptions=["Linux/UNIX", "Linux/UNIX (Amazon VPC)"],
                                   StartTime=datetime.now(UTC))
        for page in pages:
            for entry in page.get("SpotPriceHistory", []):
                key = (str(entry.get("InstanceType")), str(entry.get("AvailabilityZone")))
                when = entry.get("Timestamp") or datetime.fromtimestamp(0, UTC)
                price = float(entry.get("SpotPrice", "0") or 0)
                if price > 0 and (key not in latest or when > latest[key][0]):
                    latest[key] = (when, price)
        return {key: price for key, (_, price) in latest.items()}
