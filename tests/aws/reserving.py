"""What the reservation tests share: the wall clock reservations are judged at, the zone
and selector terms, and their fixtures (`fake`: the DescribeCapacityReservations fake,
`provider`: the provider reading that wall clock). A test module imports the fixtures it
uses by name."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Final

import pytest

from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.provider import AwsCloudProvider
from nodewright.scheduling.pricing import OfflinePriceSource

from .reservations import FakeCapacityReservations
from .world import CLUSTER, FakeClock, World

NOW: Final = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
ZONE: Final = "us-west-2a"
TERMS: Final = [{"tags": {"team": "ml"}}]


@pytest.fixture
def fake(clients: AwsClients) -> FakeCapacityReservations:
    return FakeCapacityReservations(clients)


@pytest.fixture
def provider(clients: AwsClients, world: World, clock: FakeClock) -> AwsCloudProvider:
    return AwsCloudProvider(clients, CLUSTER, clock=clock, prices=OfflinePriceSource(),
                            wall_clock=lambda: NOW)
