"""Karpenter test/suites/integration/metrics_test.go (v1.14.1) on the moto account: the
offering metrics the controllers publish once a node class and a NodePool exist, counted
against what EC2 describes, with Karpenter's slack (100 types that may lack an offering in
some zone, 200 for spot). EC2 lists only the types of its region; moto lists some it offers
in no zone of us-west-2, so the types counted are those EC2 offers in the region, less the
a1 and mac families no AL2023 image boots (Karpenter's default NodePool leaves a1 out for
that reason; the mac types are macOS only)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from nodewright import metrics
from nodewright.cloud.aws.clients import AwsClients
from tests.aws.offering_metrics import offering_series
from tests.aws.world import World
from tests.aws_e2e.moto_world import node_class, node_pool

from .moto_env import Env

PRICE = "karpenter_cloudprovider_instance_type_offering_price_estimate"
AVAILABLE = "karpenter_cloudprovider_instance_type_offering_available"
CAPACITY_TYPES = 3  # on-demand, spot and reserved


@pytest.fixture(autouse=True)
def _fresh_series() -> Iterator[None]:
    """Only the series this story's controllers write."""
    for gauge in (metrics.OFFERING_AVAILABLE, metrics.OFFERING_PRICE_ESTIMATE):
        gauge.clear()
    yield
    for gauge in (metrics.OFFERING_AVAILABLE, metrics.OFFERING_PRICE_ESTIMATE):
        gauge.clear()


def region_type_count(clients: AwsClients) -> int:
    pages = clients.ec2.get_paginator("describe_instance_type_offerings").paginate(
        LocationType="region")
    offered = {o["InstanceType"] for page in pages for o in page["InstanceTypeOfferings"]}
    return len({name for name in offered if not name.startswith(("a1.", "mac"))})


def published(env: Env) -> None:
    env.apply(node_class(), node_pool())
    assert env.run_until(lambda: bool(offering_series(AVAILABLE)), timeout=120)


def test_every_offering_has_a_price_estimate(env: Env, clients: AwsClients) -> None:
    """Karpenter test/suites/integration/metrics_test.go It("should expose
    karpenter_cloudprovider_instance_type_offering_price_estimate metrics")."""
    types = region_type_count(clients)
    zones = len(clients.ec2.describe_availability_zones()["AvailabilityZones"])

    published(env)

    prices = offering_series(PRICE)
    assert len(prices) > (types - 100) * zones * CAPACITY_TYPES
    priced = sum(1 for value in prices.values() if value > 0)
    assert priced > (types - 100) * zones + (types - 200) * zones


def test_every_offering_in_a_selected_zone_is_available(
        env: Env, clients: AwsClients, world: World) -> None:
    """Karpenter test/suites/integration/metrics_test.go It("should expose
    karpenter_cloudprovider_instance_type_offering_available metrics")."""
    types = region_type_count(clients)
    selected_zones = len(world.subnets)

    published(env)

    available = offering_series(AVAILABLE)
    assert len(available) > (types - 100) * selected_zones * CAPACITY_TYPES
    offered = sum(1 for value in available.values() if value > 0)
    assert offered > (types - 100) * selected_zones + (types - 200) * selected_zones
