"""A price refresh that fails is tried again soon, as Karpenter's pricing controller does.

Karpenter v1.14.1 pkg/controllers/providers/pricing/controller.go (Reconcile, lines 44-61)
runs UpdateSpotPricing and UpdateOnDemandPricing and, when either fails, returns the error:
its singleton controller (awslabs/operatorpkg singleton.AsReconciler) hands the error to
controller-runtime's rate limiter, which asks again after 5 ms, doubling to 1,000 s. Only a
reconcile that worked waits the 12 hours (`RequeueAfter: 12 * time.Hour`). So a Pricing API
hiccup at start-up costs Karpenter seconds of static prices, not half a day; nor does an
answer without prices (pkg/providers/pricing/pricing.go: "no on-demand pricing found",
"no spot pricing found" are errors too).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.pricing import PRICE_REFRESH_SECONDS
from nodewright.runtime.ratelimit import RECONCILE_BACKOFF
from nodewright.scheduling.karpenter_tables import static_on_demand_prices
from tests.aws.fake_ec2 import FakeEC2
from tests.aws.test_pricing_karpenter import (
    Answers,
    history,
    on_demand_price,
    products,
    source,
    spot_price,
)
from tests.aws.world import FakeClock

STATIC_C5 = static_on_demand_prices("us-east-1")["c5.large"]


@pytest.fixture
def pricing(clients: AwsClients) -> Iterator[Answers]:
    answers = Answers(clients.pricing)
    yield answers
    answers.detach()


def test_on_demand_prices_are_asked_again_soon_after_the_pricing_api_failed(
    clients: AwsClients, clock: FakeClock, pricing: Answers, ec2: FakeEC2
) -> None:
    """The Pricing API fails at start-up: the static price answers meanwhile, and a
    second later (past the first backoffs) the API is asked again and its price is used;
    then the next ask waits the 12 hours again."""
    history(ec2, spot_price("c5.large", "us-west-2a", 0.03))
    pricing.failing.add("GetProducts")
    prices = source(clients, clock)
    assert prices.on_demand("c5.large", "us-west-2") == STATIC_C5
    assert prices.on_demand("c5.large", "us-west-2") == STATIC_C5  # not asked at once

    pricing.failing.discard("GetProducts")
    products(pricing, on_demand_price("c5.large", 0.5))
    clock.advance(1.0)

    assert prices.on_demand("c5.large", "us-west-2") == 0.5
    asked = pricing.calls["GetProducts"]
    clock.advance(RECONCILE_BACKOFF.maximum)
    prices.on_demand("c5.large", "us-west-2")
    assert pricing.calls["GetProducts"] == asked  # a refresh that worked waits 12 hours
    clock.advance(PRICE_REFRESH_SECONDS)
    prices.on_demand("c5.large", "us-west-2")
    assert pricing.calls["GetProducts"] > asked


def test_an_on_demand_answer_without_prices_is_asked_again_soon(
    clients: AwsClients, clock: FakeClock, pricing: Answers, ec2: FakeEC2
) -> None:
    """An answer that lists no price is a failed refresh too."""
    history(ec2, spot_price("c5.large", "us-west-2a", 0.03))
    products(pricing)
    prices = source(clients, clock)
    assert prices.on_demand("c5.large", "us-west-2") == STATIC_C5

    pricing.outputs.clear()
    products(pricing, on_demand_price("c5.large", 0.5))
    clock.advance(1.0)

    assert prices.on_demand("c5.large", "us-west-2") == 0.5


def test_spot_prices_are_asked_again_soon_after_the_history_failed(
    clients: AwsClients, clock: FakeClock, pricing: Answers, ec2: FakeEC2
) -> None:
    """Until a spot price history is read, spot is priced at the static on-demand price:
    a history that failed once is read a second later, not after 12 hours."""
    products(pricing, on_demand_price("c5.large", 0.085))
    ec2.fail("DescribeSpotPriceHistory", "InternalError", status=400)
    prices = source(clients, clock)
    assert prices.spot("c5.large", "us-west-2a") == STATIC_C5

    history(ec2, spot_price("c5.large", "us-west-2a", 0.03))
    clock.advance(1.0)

    assert prices.spot("c5.large", "us-west-2a") == 0.03


def test_the_backoff_grows_while_the_pricing_api_keeps_failing(
    clients: AwsClients, clock: FakeClock, pricing: Answers, ec2: FakeEC2
) -> None:
    """controller-runtime's per-item backoff doubles with each failure in a row, up to
    1,000 s: after ten failures the next ask waits 2.56 s, and never more than 1,000 s."""
    history(ec2, spot_price("c5.large", "us-west-2a", 0.03))
    pricing.failing.add("GetProducts")
    prices = source(clients, clock)
    prices.on_demand("c5.large", "us-west-2")
    for failures in range(1, 10):
        asked = pricing.calls["GetProducts"]
        clock.advance(RECONCILE_BACKOFF.delay(failures) * 1.01)
        prices.on_demand("c5.large", "us-west-2")
        assert pricing.calls["GetProducts"] > asked
    asked = pricing.calls["GetProducts"]
    clock.advance(RECONCILE_BACKOFF.delay(10) / 2)
    prices.on_demand("c5.large", "us-west-2")
    assert pricing.calls["GetProducts"] == asked
    clock.advance(RECONCILE_BACKOFF.maximum)
    prices.on_demand("c5.large", "us-west-2")
    assert pricing.calls["GetProducts"] > asked
