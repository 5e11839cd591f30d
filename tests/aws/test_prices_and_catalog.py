"""Prices (Pricing API, spot history, offline fallback) and the live catalog's caching."""

from __future__ import annotations

import json
from typing import Any

from botocore.exceptions import EndpointConnectionError
from botocore.stub import Stubber

from nodewright.cloud.aws.catalog import LiveCatalog
from nodewright.cloud.aws.clients import AwsClients, pricing_region
from nodewright.cloud.aws.pricing import LivePriceSource
from nodewright.cloud.aws.unavailable import UnavailableOfferings
from nodewright.scheduling.karpenter_tables import static_on_demand_prices
from nodewright.scheduling.pricing import OfflinePriceSource
from tests.aws.fake_ec2 import FakeEC2
from tests.aws.world import FakeClock

from .conftest import CallRecorder


def product(instance_type: str, usd: str) -> str:
    return json.dumps(
        {
            "product": {"attributes": {"instanceType": instance_type, "operatingSystem": "Linux"}},
            "terms": {
                "OnDemand": {
                    "T1": {"priceDimensions": {"D1": {"unit": "Hrs", "pricePerUnit": {"USD": usd}}}}
                }
            },
        }
    )


def expected_filters(*query: tuple[str, str]) -> list[dict[str, Any]]:
    """Karpenter's GetProducts filters (pkg/providers/pricing/pricing.go
    fetchOnDemandPricing), then the query's own."""
    return [{"Type": "TERM_MATCH", "Field": name, "Value": value} for name, value in (
        ("regionCode", "us-west-2"), ("serviceCode", "AmazonEC2"), ("preInstalledSw", "NA"),
        ("operatingSystem", "Linux"), ("capacitystatus", "Used"), ("marketoption", "OnDemand"),
        *query)]


SHARED = {"ServiceCode": "AmazonEC2", "MaxResults": 100, "Filters": expected_filters(
    ("tenancy", "Shared"), ("productFamily", "Compute Instance"))}
METAL = {"ServiceCode": "AmazonEC2", "MaxResults": 100, "Filters": expected_filters(
    ("tenancy", "Dedicated"), ("productFamily", "Compute Instance (bare metal)"))}


def test_on_demand_prices_come_from_get_products_and_refresh_every_12_hours(
    clients: AwsClients, clock: FakeClock
) -> None:
    prices = LivePriceSource(clients.pricing, clients.ec2, "us-west-2", clock=clock)
    with Stubber(clients.pricing) as stub:
        stub.add_response(
            "get_products",
            {
                "PriceList": [product("m5.large", "0.0960000000"), product("c5.large", "0.085")],
                "FormatVersion": "aws_v1",
            },
            SHARED,
        )
        stub.add_response("get_products", {"PriceList": [product("m5.metal", "4.608")],
                                           "FormatVersion": "aws_v1"}, METAL)
        assert prices.on_demand("m5.large", "us-west-2") == 0.096
        assert prices.on_demand("m5.metal", "us-west-2") == 4.608
        assert prices.on_demand("c5.large", "us-west-2") == 0.085
        clock.advance(11 * 3600)
        assert prices.on_demand("m5.large", "us-west-2") == 0.096  # no second call yet
        stub.assert_no_pending_responses()

        stub.add_response(
            "get_products",
            {"PriceList": [product("m5.large", "0.1")]},
            SHARED,
        )
        stub.add_response("get_products", {"PriceList": [product("m5.metal", "4.608")]}, METAL)
        clock.advance(3600)
        assert prices.on_demand("m5.large", "us-west-2") == 0.1
        stub.assert_no_pending_responses()


def test_unreachable_pricing_keeps_karpenters_static_prices(
    clients: AwsClients, clock: FakeClock
) -> None:
    """us-west-2 has no static table of its own in Karpenter: us-east-1's stands in."""
    def unreachable(**_: Any) -> None:
        raise EndpointConnectionError(endpoint_url="https://api.pricing.us-east-1.amazonaws.com")

    clients.pricing.meta.events.register_first("before-send.pricing.GetProducts", unreachable)
    prices = LivePriceSource(clients.pricing, clients.ec2, "us-west-2", clock=clock)
    assert prices.on_demand("m5.large", "us-west-2") == static_on_demand_prices(
        "us-east-1")["m5.large"] == 0.096


def test_spot_prices_use_the_latest_entry_per_type_and_zone(
    clients: AwsClients, clock: FakeClock
) -> None:
    from datetime import UTC, datetime

    prices = LivePriceSource(clients.pricing, clients.ec2, "us-west-2", clock=clock)
    with Stubber(clients.ec2) as stub:
        stub.add_response(
            "describe_spot_price_history",
            {
                "SpotPriceHistory": [
                    {
                        "InstanceType": "m5.large",
                        "AvailabilityZone": "us-west-2a",
                        "SpotPrice": "0.04",
                        "Timestamp": datetime(2026, 1, 1, 10, tzinfo=UTC),
                    },
                    {
                        "InstanceType": "m5.large",
                        "AvailabilityZone": "us-west-2a",
                        "SpotPrice": "0.05",
                        "Timestamp": datetime(2026, 1, 1, 11, tzinfo=UTC),
                    },
                ]
            },
        )
        assert prices.spot("m5.large", "us-west-2a") == 0.05
        assert prices.spot("m5.large", "us-west-2b") is None  # the catalog then estimates


def test_pricing_endpoint_region_follows_karpenter() -> None:
    assert pricing_region("us-west-2") == "us-east-1"
    assert pricing_region("ap-southeast-1") == "ap-south-1"
    assert pricing_region("eu-west-1") == "eu-central-1"


def test_instance_type_descriptions_are_read_again_every_12_hours(
    clients: AwsClients, clock: FakeClock, recorder: CallRecorder
) -> None:
    """Karpenter's instance type controller (pkg/controllers/providers/instancetype)
    refreshes the types and their offerings every 12 hours, asking for HVM types of the two
    architectures Kubernetes runs."""
    catalog = LiveCatalog(
        clients.ec2, "us-west-2", OfflinePriceSource(), UnavailableOfferings(clock), clock
    )
    fake = FakeEC2.attach(clients.ec2)
    try:
        first = catalog.instance_types(None, zones={"us-west-2a"})
        clock.advance(11 * 3600)
        catalog.instance_types(None, zones={"us-west-2a"})
        assert len(fake.calls("DescribeInstanceTypes")) == 1
        assert len(fake.calls("DescribeInstanceTypeOfferings")) == 1
        clock.advance(3600)
        catalog.instance_types(None, zones={"us-west-2a"})
        assert len(fake.calls("DescribeInstanceTypes")) == 2
        assert len(fake.calls("DescribeInstanceTypeOfferings")) == 2
        asked = fake.last("DescribeInstanceTypes")
    finally:
        fake.detach()
    assert asked["Filters"] == [
        {"Name": "supported-virtualization-type", "Values": ["hvm"]},
        {"Name": "processor-info.supported-architecture", "Values": ["x86_64", "arm64"]}]
    assert asked["MaxResults"] == 100

    m5 = next(it for it in first if it.name == "m5.large")
    assert m5.zones() == ["us-west-2a"]
    # The other zones EC2 offers it in are listed, unavailable: no subnet there.
    assert {o.zone for o in m5.offerings if o.available} == {"us-west-2a"}
    assert {o.capacity_type for o in m5.offerings} == {"on-demand", "spot"}
