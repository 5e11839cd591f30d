"""Live prices: on-demand from the Pricing API, spot from DescribeSpotPriceHistory, refreshed
every 12 hours. When a source cannot be reached (isolated VPCs have no Pricing endpoint) the
offline price source answers instead, and the next refresh tries again."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

from botocore.exceptions import BotoCoreError, ClientError

from nodewright.cloud.aws.clock import Seconds, system_clock
from nodewright.scheduling.pricing import OfflinePriceSource, PriceSource

if TYPE_CHECKING:
    from mypy_boto3_ec2 import EC2Client
    from mypy_boto3_pricing import PricingClient

PRICE_REFRESH_SECONDS: Final = 12 * 3600.0
# GetProducts filters for plain Linux on shared hardware (besides the region).
ON_DEMAND_FILTERS: Final = (
    ("operatingSystem", "Linux"),
    ("tenancy", "Shared"),
    ("preInstalledSw", "NA"),
    ("capacitystatus", "Used"),
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
    fallback: PriceSource = field(default_factory=OfflinePriceSource)
    clock: Seconds = system_clock
    refresh_seconds: float = PRICE_REFRESH_SECONDS
    # ISOLATED_VPC: the Pricing API has no VPC endpoint; on-demand prices stay the built-in
    # ones (spot prices come from EC2, which has one).
    isolated_vpc: bool = False
    _on_demand: dict[str, float] = field(default_factory=dict)
    _spot: dict[tuple[str, str], float] = field(default_factory=dict)
    _on_demand_at: float | None = None
    _spot_at: float | None = None

    def on_demand(self, instance_type: str, region: str) -> float | None:
        if region == self.region:
            self._refresh_on_demand()
            if instance_type in self._on_demand:
                return self._on_demand[instance_type]
        return self.fallback.on_demand(instance_type, region)

    def spot(self, instance_type: str, zone: str) -> float | None:
        self._refresh_spot()
        price = self._spot.get((instance_type, zone))
        return price if price is not None else self.fallback.spot(instance_type, zone)

    def _due(self, last: float | None) -> bool:
        return last is None or self.clock() - last >= self.refresh_seconds

    def _refresh_on_demand(self) -> None:
        # GovCloud: the Pricing API lists no GovCloud prices (Karpenter does not ask there
        # either and keeps its static prices).
        if (self.isolated_vpc or self.region.startswith(GOVCLOUD_PREFIX)
                or not self._due(self._on_demand_at)):
            return
        self._on_demand_at = self.clock()
        try:
            # As Karpenter: a type missing from this answer keeps its last price.
            self._on_demand = {**self._on_demand, **self._fetch_on_demand()}
        except (ClientError, BotoCoreError) as error:
            log.warning("pricing:GetProducts unavailable, using offline prices: %s", error)

    def _refresh_spot(self) -> None:
        if not self._due(self._spot_at):
            return
        self._spot_at = self.clock()
        try:
            self._spot = {**self._spot, **self._fetch_spot()}
        except (ClientError, BotoCoreError) as error:
            log.warning("ec2:DescribeSpotPriceHistory unavailable, estimating spot: %s", error)

    def _fetch_on_demand(self) -> dict[str, float]:
        filters: list[Any] = [
            {"Type": "TERM_MATCH", "Field": name, "Value": value}
            for name, value in (("regionCode", self.region), *ON_DEMAND_FILTERS)
        ]
        prices: dict[str, float] = {}
        paginator = self.pricing.get_paginator("get_products")
        for page in paginator.paginate(ServiceCode="AmazonEC2", Filters=filters):
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
