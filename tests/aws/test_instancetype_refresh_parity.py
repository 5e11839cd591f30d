"""A failed refresh of the instance types keeps the types read before, as Karpenter's does.

Karpenter v1.14.1 refreshes DescribeInstanceTypes and DescribeInstanceTypeOfferings in its
providers.instancetype singleton (pkg/controllers/providers/instancetype/controller.go,
Reconcile lines 43-60). UpdateInstanceTypes and UpdateInstanceTypeOfferings
(pkg/providers/instancetype/instancetype.go lines 282-286 and 320-324) return the error of a
failed page before they touch `instanceTypesInfo` / `instanceTypesOffering`, so List goes on
answering with the types read 12 hours before, and controller-runtime's backoff (5 ms
doubling to 1,000 s) asks again. Only a first read that fails leaves nothing to list.
"""

from __future__ import annotations

import pytest

from nodewright.cloud.aws.catalog import DESCRIBE_CACHE_SECONDS, LiveCatalog
from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.unavailable import UnavailableOfferings
from nodewright.cloud.provider import CloudProviderError
from nodewright.runtime.ratelimit import RECONCILE_BACKOFF
from nodewright.scheduling.pricing import OfflinePriceSource
from tests.aws.fake_ec2 import FakeEC2
from tests.aws.world import FakeClock

ZONES = {"us-west-2a"}


def live_catalog(clients: AwsClients, clock: FakeClock) -> LiveCatalog:
    return LiveCatalog(clients.ec2, "us-west-2", OfflinePriceSource(),
                       UnavailableOfferings(clock), clock)


@pytest.mark.parametrize("operation", ["DescribeInstanceTypes", "DescribeInstanceTypeOfferings"])
def test_a_refresh_that_fails_keeps_the_types_read_before(
    clients: AwsClients, clock: FakeClock, operation: str
) -> None:
    """Twelve hours on, EC2 throttles the refresh: the node class still gets the types
    read before (not an error that stops provisioning), EC2 is not asked again at once,
    and a second later, past the backoff, the refresh is asked again and read."""
    catalog = live_catalog(clients, clock)
    fake = FakeEC2.attach(clients.ec2)
    try:
        first = [it.name for it in catalog.instance_types(None, zones=ZONES)]
        assert "m5.large" in first

        clock.advance(DESCRIBE_CACHE_SECONDS)
        fake.fail(operation, "RequestLimitExceeded", times=1)
        assert [it.name for it in catalog.instance_types(None, zones=ZONES)] == first
        asked = len(fake.calls(operation))
        assert [it.name for it in catalog.instance_types(None, zones=ZONES)] == first
        assert len(fake.calls(operation)) == asked  # not asked again at once

        clock.advance(RECONCILE_BACKOFF.delay(1) * 2)
        assert [it.name for it in catalog.instance_types(None, zones=ZONES)] == first
        assert len(fake.calls(operation)) == asked + 1
        # Read: kept another 12 hours.
        clock.advance(RECONCILE_BACKOFF.maximum)
        catalog.instance_types(None, zones=ZONES)
        assert len(fake.calls(operation)) == asked + 1
    finally:
        fake.detach()


def test_a_first_read_that_fails_has_nothing_to_keep(clients: AwsClients,
                                                     clock: FakeClock) -> None:
    """Before any answer there is nothing to list: the failure is the listing's."""
    catalog = live_catalog(clients, clock)
    fake = FakeEC2.attach(clients.ec2)
    try:
        fake.fail("DescribeInstanceTypes", "RequestLimitExceeded", times=1)
        with pytest.raises(CloudProviderError, match="DescribeInstanceTypes"):
            catalog.instance_types(None, zones=ZONES)
        assert catalog.instance_types(None, zones=ZONES)
    finally:
        fake.detach()
