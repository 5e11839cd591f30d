"""The debug lines Karpenter v1.14.1 logs about instance types, offerings and prices.

An operator chasing an insufficient-capacity loop or a stale price turns on debug logs and
greps for these messages; each names the Karpenter line it mirrors:
- "removing offering from offerings" (pkg/cache/unavailableofferings.go MarkUnavailable,
  lines 122-149): reason, instance-type, zone, capacity-type, ttl (Go's "3m0s": the
  logger's StringDurationEncoder), placement-group-id and -partition when scoped;
- "discovered instance types" / "discovered offerings for instance types" / "discovered
  zones" (pkg/providers/instancetype/instancetype.go lines 290-295, 334-350), each once per
  change of EC2's answer (its ChangeMonitor);
- "updated on-demand pricing", "updated spot pricing with instance types and offerings",
  and the isolated VPC / GovCloud notes (pkg/providers/pricing/pricing.go lines 193-205,
  252-254, 426-430), once per change.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest

from nodewright.cloud.aws.catalog import DESCRIBE_CACHE_SECONDS, LiveCatalog
from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.unavailable import UnavailableOfferings
from nodewright.scheduling.pricing import OfflinePriceSource
from tests.aws.fake_ec2 import FakeEC2
from tests.aws.test_pricing_karpenter import (
    Answers,
    history,
    on_demand_price,
    products,
    refresh,
    source,
    spot_price,
)
from tests.aws.world import FakeClock


@pytest.fixture
def pricing(clients: AwsClients) -> Iterator[Answers]:
    answers = Answers(clients.pricing)
    yield answers
    answers.detach()


def lines(caplog: pytest.LogCaptureFixture, message: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.getMessage() == message]


def fields(record: logging.LogRecord, *names: str) -> dict[str, Any]:
    return {name: getattr(record, name, None) for name in names}


def test_an_offering_marked_out_is_logged_with_its_reason_and_ttl(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="nodewright.cloud.aws.unavailable")
    unavailable = UnavailableOfferings(clock)
    unavailable.mark_unavailable("m5.large", "us-west-2a", "spot",
                                 "InsufficientInstanceCapacity")
    unavailable.mark_unavailable("c5.large", "us-west-2b", "on-demand",
                                 "InsufficientInstanceCapacity", "pg-0123:2")

    plain, scoped = lines(caplog, "removing offering from offerings")
    assert plain.levelno == logging.DEBUG
    names = ("reason", "instance-type", "zone", "capacity-type", "ttl",
             "placement-group-id", "placement-group-partition")
    assert fields(plain, *names) == {
        "reason": "InsufficientInstanceCapacity", "instance-type": "m5.large",
        "zone": "us-west-2a", "capacity-type": "spot", "ttl": "3m0s",
        "placement-group-id": None, "placement-group-partition": None}
    assert fields(scoped, "placement-group-id", "placement-group-partition") == {
        "placement-group-id": "pg-0123", "placement-group-partition": "2"}


def test_the_instance_types_offerings_and_zones_are_logged_when_ec2_answers_anew(
    clients: AwsClients, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    """Once at the first read; a refresh that answers the same logs nothing again."""
    caplog.set_level(logging.DEBUG, logger="nodewright.cloud.aws.catalog")
    catalog = LiveCatalog(clients.ec2, "us-west-2", OfflinePriceSource(),
                          UnavailableOfferings(clock), clock)
    fake = FakeEC2.attach(clients.ec2)
    try:
        catalog.instance_types(None, zones={"us-west-2a"})
        clock.advance(DESCRIBE_CACHE_SECONDS)
        catalog.instance_types(None, zones={"us-west-2a"})
        assert len(fake.calls("DescribeInstanceTypes")) == 2
    finally:
        fake.detach()

    (types,) = lines(caplog, "discovered instance types")
    (offered,) = lines(caplog, "discovered offerings for instance types")
    (zones,) = lines(caplog, "discovered zones")
    assert types.levelno == offered.levelno == zones.levelno == logging.DEBUG
    assert fields(types, "count")["count"] > 100
    assert fields(offered, "instance-type-count")["instance-type-count"] > 100
    assert {"us-west-2a", "us-west-2b", "us-west-2c"} <= set(fields(zones, "zones")["zones"])


def test_price_updates_are_logged_once_per_change(
    clients: AwsClients, clock: FakeClock, pricing: Answers, ec2: FakeEC2,
    caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="nodewright.cloud.aws.pricing")
    products(pricing, on_demand_price("c98.large", 1.20), on_demand_price("c99.large", 1.23))
    for _ in range(2):  # the first read and the refresh
        history(ec2, spot_price("c99.large", "us-west-2a", 0.5),
                spot_price("c99.large", "us-west-2b", 0.6))
    prices = source(clients, clock)
    prices.on_demand("c99.large", "us-west-2")
    prices.spot("c99.large", "us-west-2a")
    refresh(prices, clock)  # the same answers again: nothing new to tell

    (on_demand,) = lines(caplog, "updated on-demand pricing")
    (spot,) = lines(caplog, "updated spot pricing with instance types and offerings")
    assert on_demand.levelno == spot.levelno == logging.DEBUG
    static = len(prices._static)
    # The static table's types, and the two the Pricing API added.
    assert getattr(on_demand, "instance-type-count") == static + 2
    assert fields(spot, "instance-type-count", "offering-count") == {
        "instance-type-count": static + 1, "offering-count": 2}


@pytest.mark.parametrize(("region", "isolated", "note"), [
    ("us-west-2", True, "running in an isolated VPC, on-demand pricing information will not "
                        "be updated"),
    ("us-gov-west-1", False, "pricing APIs aren't available in AWS GovCloud regions, "
                             "on-demand pricing information will not be updated"),
])
def test_static_on_demand_prices_are_told_once(
    clients: AwsClients, clock: FakeClock, pricing: Answers, ec2: FakeEC2,
    caplog: pytest.LogCaptureFixture, region: str, isolated: bool, note: str
) -> None:
    caplog.set_level(logging.DEBUG, logger="nodewright.cloud.aws.pricing")
    prices = source(clients, clock, region=region, isolated_vpc=isolated)
    prices.on_demand("c5.large", region)
    clock.advance(DESCRIBE_CACHE_SECONDS)
    prices.on_demand("c5.large", region)
    (told,) = lines(caplog, note)
    assert told.levelno == logging.DEBUG
