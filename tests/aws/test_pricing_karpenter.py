"""Karpenter's pricing controller suite (pkg/controllers/providers/pricing/suite_test.go,
v1.14.1), ported where it applies: each test names its It/Entry. Karpenter's pricing
provider is `LivePriceSource`; a reconcile of its controller is a refresh (the first read,
then one every 12 hours: `refresh`). GetProducts and DescribeSpotPriceHistory answers are
queued at the boto clients, as the Go suite sets its fake APIs' outputs.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from botocore.awsrequest import AWSResponse

from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.pricing import PRICE_REFRESH_SECONDS, LivePriceSource
from nodewright.scheduling.karpenter_tables import static_on_demand_prices, static_price_regions
from tests.aws.fake_ec2 import FakeEC2
from tests.aws.world import FakeClock

NOW = datetime(2026, 11, 28, 6, 0, tzinfo=UTC)


class Answers:
    """Queued answers for one client's operations (an error when `failing`)."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.outputs: dict[str, list[dict[str, Any]]] = {}
        self.failing: set[str] = set()
        self.calls: dict[str, int] = {}
        client.meta.events.register("before-call.*.*", self._answer)

    def detach(self) -> None:
        self.client.meta.events.unregister("before-call.*.*", self._answer)

    def add(self, operation: str, output: dict[str, Any]) -> None:
        self.outputs.setdefault(operation, []).append(output)

    def _answer(self, model: Any, **_: Any) -> tuple[AWSResponse, dict[str, Any]] | None:
        self.calls[model.name] = self.calls.get(model.name, 0) + 1
        response = AWSResponse("https://aws.amazon.com", 200, {}, None)  # type: ignore[arg-type]
        if model.name in self.failing:
            failed = AWSResponse("https://aws.amazon.com", 500, {}, None)  # type: ignore[arg-type]
            return failed, {"Error": {"Code": "InternalFailure", "Message": "failed"},
                            "ResponseMetadata": {"HTTPStatusCode": 500}}
        queued = self.outputs.get(model.name)
        if not queued:
            return None
        # The last answer stays (Karpenter's Output.Set) unless more pages are queued.
        return response, (queued.pop(0) if len(queued) > 1 else queued[0])


def on_demand_price(instance_type: str, price: float, currency: str = "USD") -> str:
    """fake.NewOnDemandPrice(WithCurrency): one GetProducts PriceList entry."""
    return json.dumps({
        "product": {"attributes": {"instanceType": instance_type}},
        "terms": {"OnDemand": {"T": {"priceDimensions": {"D": {
            "pricePerUnit": {currency: f"{price}"}}}}}},
    })


def spot_price(instance_type: str, zone: str, price: float) -> dict[str, Any]:
    return {"AvailabilityZone": zone, "InstanceType": instance_type, "SpotPrice": f"{price}",
            "Timestamp": NOW}


@pytest.fixture
def pricing(clients: AwsClients) -> Iterator[Answers]:
    answers = Answers(clients.pricing)
    yield answers
    answers.detach()


def products(pricing: Answers, *entries: str, more: bool = False, token: str = "") -> None:
    pricing.add("GetProducts", {"PriceList": list(entries), "FormatVersion": "aws_v1",
                                **({"NextToken": token} if more else {})})


def history(ec2: FakeEC2, *entries: dict[str, Any], token: str = "") -> None:
    ec2.respond("DescribeSpotPriceHistory", {"SpotPriceHistory": list(entries),
                                             **({"NextToken": token} if token else {})})


def source(clients: AwsClients, clock: FakeClock, region: str = "us-west-2",
           **settings: Any) -> LivePriceSource:
    return LivePriceSource(clients.pricing, clients.ec2, region, clock=clock, **settings)


def refresh(prices: LivePriceSource, clock: FakeClock) -> None:
    """The pricing controller's next reconcile: both price lists are read again."""
    clock.advance(PRICE_REFRESH_SECONDS)
    prices.on_demand("c5.large", prices.region)
    prices.spot("c5.large", "us-west-2a")


# --- Context("On-Demand") -------------------------------------------------------------------


def test_offline_on_demand_prices_when_the_pricing_api_fails(
    clients: AwsClients, clock: FakeClock, pricing: Answers, ec2: FakeEC2
) -> None:
    """It("should return static on-demand data if pricing API fails")"""
    pricing.failing.add("GetProducts")
    prices = source(clients, clock)
    price = prices.on_demand("c5.large", "us-west-2")
    assert price is not None and price > 0
    assert price == static_on_demand_prices("us-east-1")["c5.large"]


@pytest.mark.parametrize("partition", ["aws", "aws-us-gov", "aws-cn"])
def test_static_prices_of_every_partition(clients: AwsClients, clock: FakeClock,
                                          pricing: Answers, partition: str) -> None:
    """DescribeTable("should return correct static data for all partitions"), its Entries
    "aws", "aws-us-gov" and "aws-cn": before any answer, each region Karpenter has a table
    for is priced by it (the Pricing API fails here, so only the tables answer)."""
    pricing.failing.add("GetProducts")
    regions = {"aws": ["us-east-1"], "aws-us-gov": ["us-gov-east-1", "us-gov-west-1"],
               "aws-cn": ["cn-north-1"]}[partition]
    assert set(regions) <= static_price_regions()
    for region in regions:
        prices = source(clients, clock, region=region)
        table = static_on_demand_prices(region)
        assert len(table) > 300
        assert all(prices.on_demand(name, region) == price for name, price in table.items())


def test_static_spot_prices_when_the_spot_price_history_fails(
    clients: AwsClients, clock: FakeClock, pricing: Answers, ec2: FakeEC2
) -> None:
    """Context("Spot") It("should return static spot data if EC2 describeSpotPriceHistory API
    fails"): until a history is read, a type's spot price is its static on-demand price."""
    pricing.failing.add("GetProducts")
    ec2.fail("DescribeSpotPriceHistory", "InternalError")
    price = source(clients, clock).spot("c5.large", "us-west-2a")
    assert price is not None and price > 0
    assert price == static_on_demand_prices("us-east-1")["c5.large"]


def test_a_type_without_any_price_is_unpriced(clients: AwsClients, clock: FakeClock,
                                              pricing: Answers, ec2: FakeEC2) -> None:
    """A type neither the static table nor the Pricing API lists has no on-demand price,
    and no spot price once the history (which does not list it) is read."""
    products(pricing, on_demand_price("c5.large", 0.085))
    history(ec2, spot_price("c5.large", "us-west-2a", 0.03))
    prices = source(clients, clock)
    assert prices.on_demand("c99.large", "us-west-2") is None
    assert prices.spot("c99.large", "us-west-2a") is None
    assert prices.spot("c5.large", "us-west-2a") == 0.03


def test_on_demand_prices_come_from_the_pricing_api(
    clients: AwsClients, clock: FakeClock, pricing: Answers
) -> None:
    """It("should update on-demand pricing with response from the pricing API")"""
    products(pricing, on_demand_price("c98.large", 1.20), on_demand_price("c99.large", 1.23))
    prices = source(clients, clock)
    assert prices.on_demand("c98.large", "us-west-2") == 1.20
    assert prices.on_demand("c99.large", "us-west-2") == 1.23


def test_spot_history_asks_for_both_linux_product_descriptions(
    clients: AwsClients, clock: FakeClock, ec2: FakeEC2
) -> None:
    """It("should query for both `Linux/UNIX` and `Linux/UNIX (Amazon VPC)`")"""
    history(ec2, spot_price("c99.large", "us-west-2a", 1.23))
    source(clients, clock).spot("c99.large", "us-west-2a")
    assert set(ec2.last("DescribeSpotPriceHistory")["ProductDescriptions"]) >= {
        "Linux/UNIX", "Linux/UNIX (Amazon VPC)"}


def test_on_demand_prices_in_the_china_partition_are_in_yuan(
    clients: AwsClients, clock: FakeClock, pricing: Answers
) -> None:
    """It("should update on-demand pricing with response from the pricing API when in the CN
    partition")"""
    products(pricing, on_demand_price("c98.large", 1.20, "CNY"),
             on_demand_price("c99.large", 1.23, "CNY"))
    prices = source(clients, clock, region="cn-north-1")
    assert prices.on_demand("c98.large", "cn-north-1") == 1.20
    assert prices.on_demand("c99.large", "cn-north-1") == 1.23


def test_on_demand_prices_of_every_page(clients: AwsClients, clock: FakeClock,
                                        pricing: Answers) -> None:
    """It("should update pricing when we make multiple paginated calls to the on-demand pricing
    API")"""
    products(pricing, on_demand_price("c94.large", 1.10), on_demand_price("c95.large", 1.20),
             more=True, token="page-2")
    products(pricing, on_demand_price("c96.large", 1.30), on_demand_price("c97.large", 1.40),
             more=True, token="page-3")
    products(pricing, on_demand_price("c98.large", 1.50), on_demand_price("c99.large", 1.60))
    prices = source(clients, clock)
    assert [prices.on_demand(f"c9{n}.large", "us-west-2") for n in range(4, 10)] == [
        1.10, 1.20, 1.30, 1.40, 1.50, 1.60]
    # The three pages of the shared-tenancy query, then the bare-metal query (which gets
    # the last answer again).
    assert pricing.calls["GetProducts"] == 4


def test_on_demand_prices_missing_from_a_later_answer_are_kept(
    clients: AwsClients, clock: FakeClock, pricing: Answers, ec2: FakeEC2
) -> None:
    """Context("On-Demand") It("should maintain previous data when pricing API returns partial
    data")"""
    products(pricing, on_demand_price("c98.large", 1.10), on_demand_price("c99.large", 1.20))
    products(pricing, on_demand_price("c98.large", 1.10))
    prices = source(clients, clock)
    assert prices.on_demand("c99.large", "us-west-2") == 1.20

    refresh(prices, clock)

    assert pricing.calls["GetProducts"] == 4  # two queries (shared, bare metal) per refresh
    assert prices.on_demand("c98.large", "us-west-2") == 1.10
    assert prices.on_demand("c99.large", "us-west-2") == 1.20


# --- Context("Spot") ------------------------------------------------------------------------


def test_spot_prices_come_from_the_spot_price_history(
    clients: AwsClients, clock: FakeClock, ec2: FakeEC2
) -> None:
    """It("should update spot pricing with response from the pricing API")"""
    history(ec2, spot_price("c99.large", "us-west-2a", 1.23),
            spot_price("c98.large", "us-west-2a", 1.20),
            spot_price("c99.large", "us-west-2b", 1.50),
            spot_price("c98.large", "us-west-2b", 1.10))
    prices = source(clients, clock)
    assert prices.spot("c98.large", "us-west-2b") == 1.10
    assert prices.spot("c99.large", "us-west-2a") == 1.23


def test_spot_prices_are_zonal(clients: AwsClients, clock: FakeClock, ec2: FakeEC2) -> None:
    """It("should update zonal pricing with data from the spot pricing API")"""
    history(ec2, spot_price("c99.large", "us-west-2a", 1.23),
            spot_price("c98.large", "us-west-2a", 1.20))
    prices = source(clients, clock)
    assert prices.spot("c98.large", "us-west-2a") == 1.20
    assert prices.spot("c98.large", "us-west-2b") is None


def test_no_spot_price_in_a_zone_without_one(clients: AwsClients, clock: FakeClock,
                                             ec2: FakeEC2) -> None:
    """It("should respond with false if price doesn't exist in zone")"""
    history(ec2, spot_price("c99.large", "us-west-2a", 1.23))
    assert source(clients, clock).spot("c99.large", "us-west-2b") is None


def test_spot_prices_of_every_page(clients: AwsClients, clock: FakeClock, ec2: FakeEC2) -> None:
    """It("should update zonal pricing when we make multiple paginated calls to the spot
    pricing API")"""
    history(ec2, spot_price("c99.large", "us-west-2a", 1.20),
            spot_price("c98.large", "us-west-2b", 1.30), token="page-2")
    history(ec2, spot_price("c99.large", "us-west-2b", 1.30),
            spot_price("c98.large", "us-west-2c", 1.40), token="page-3")
    history(ec2, spot_price("c99.large", "us-west-2c", 1.40),
            spot_price("c98.large", "us-west-2a", 1.20))
    prices = source(clients, clock)
    for instance_type in ("c98.large", "c99.large"):
        assert [prices.spot(instance_type, f"us-west-2{z}") for z in "abc"] == [1.20, 1.30, 1.40]
    assert len(ec2.calls("DescribeSpotPriceHistory")) == 3


def test_an_isolated_vpc_keeps_offline_on_demand_and_reads_spot(
    clients: AwsClients, clock: FakeClock, pricing: Answers, ec2: FakeEC2
) -> None:
    """It("should return static on-demand data when in isolated-vpc"): the Pricing API is
    not asked (its answer here is wrong on purpose); spot prices still come from EC2."""
    history(ec2, spot_price("c99.large", "us-west-2b", 1.50),
            spot_price("c98.large", "us-west-2b", 1.10))
    products(pricing, on_demand_price("c5.large", 9.99))
    prices = source(clients, clock, isolated_vpc=True)

    assert prices.on_demand("c5.large", "us-west-2") == static_on_demand_prices(
        "us-east-1")["c5.large"]
    assert prices.spot("c98.large", "us-west-2b") == 1.10
    assert "GetProducts" not in pricing.calls


def test_spot_prices_missing_from_a_later_answer_are_kept(
    clients: AwsClients, clock: FakeClock, ec2: FakeEC2, pricing: Answers
) -> None:
    """Context("Spot") It("should maintain previous data when pricing API returns partial
    data")"""
    products(pricing, on_demand_price("c98.large", 1.10))
    history(ec2, spot_price("c98.large", "us-west-2a", 1.20),
            spot_price("c99.large", "us-west-2a", 1.30))
    prices = source(clients, clock)
    assert prices.spot("c98.large", "us-west-2a") == 1.20

    history(ec2, spot_price("c99.large", "us-west-2a", 1.30))
    refresh(prices, clock)

    assert len(ec2.calls("DescribeSpotPriceHistory")) == 2
    assert prices.spot("c98.large", "us-west-2a") == 1.20
    assert prices.spot("c99.large", "us-west-2a") == 1.30


def test_govcloud_keeps_offline_on_demand_prices_without_asking(
    clients: AwsClients, clock: FakeClock, pricing: Answers
) -> None:
    """It("should return static on-demand data when in an AWS GovCloud region"): GetProducts
    is not called, Karpenter's static GovCloud prices stand."""
    products(pricing, on_demand_price("c5.12xlarge", 9.99))
    prices = source(clients, clock, region="us-gov-east-1")

    price = prices.on_demand("c5.12xlarge", "us-gov-east-1")

    assert price == static_on_demand_prices("us-gov-east-1")["c5.12xlarge"]
    assert price != static_on_demand_prices("us-east-1")["c5.12xlarge"]
    assert "GetProducts" not in pricing.calls
