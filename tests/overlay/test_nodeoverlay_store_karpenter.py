"""Karpenter's NodeOverlay store tests, ported: kubernetes-sigs/karpenter v1.14.1
pkg/controllers/nodeoverlay/store_test.go. Each story names its Describe and It or Entry.

Karpenter fills its internal store with the controller's update methods; ours is built by
`build_store` from overlays, as the controller builds it. What Karpenter checks with
pointer identity (a field shared with the cloud's instance type, or copied because an
overlay changed it) is object identity here: our instance types and offerings are frozen,
so sharing is safe and a change makes a new object.
"""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.api.nodeoverlay import NodeOverlay
from nodewright.api.nodepool import NodePool
from nodewright.scheduling.catalog import InstanceType
from nodewright.scheduling.overlays import OverlayStore, build_store
from tests.overlay.karpenter_fixture import (
    GI,
    INSTANCE_TYPE,
    ZONE,
    instance_type,
    nodepool,
    offering,
    overlay,
)

MI = 1024 ** 2 * 1000  # a mebibyte in milli-units


def store_for(types: list[InstanceType], *overlays: dict[str, Any],
              pools: tuple[str, ...] = ("default",)) -> OverlayStore:
    models = [NodeOverlay.model_validate(body) for body in overlays]
    store, conflicting = build_store(models, {
        name: (NodePool.model_validate(nodepool(name)), types) for name in pools})
    assert conflicting == []
    return store


def applied(store: OverlayStore, it: InstanceType, pool: str = "default") -> InstanceType:
    found = store.apply(pool, [it])
    assert found is not None
    (result,) = found
    return result


def m5_large_one_offering() -> InstanceType:
    return instance_type("m5.large", offering("on-demand", "us-west-2a", 0.096))


def first_offering_price(value: str) -> dict[str, Any]:
    """An overlay changing the price of the first offering of Karpenter's default fake
    instance type (spot in test-zone-1) only."""
    return overlay("price", (INSTANCE_TYPE, "In", ["m5.large"]), (ZONE, "In", ["test-zone-1"]),
                   ("karpenter.sh/capacity-type", "In", ["spot"]), priceAdjustment=value)


HUGEPAGES = overlay("capacity", (INSTANCE_TYPE, "In", ["m5.large"]),
                    capacity={"hugepages-2Mi": "100Mi"})

SCENARIOS = [
    ("no overlays - everything shared", m5_large_one_offering, [], True, True),
    ("price overlay only - offerings copied, others shared",
     lambda: instance_type("m5.large"), [first_offering_price("+0.01")], False, True),
    ("capacity overlay only - capacity copied, others shared", m5_large_one_offering,
     [HUGEPAGES], True, False),
    ("both overlays - only modified fields copied", lambda: instance_type("m5.large"),
     [first_offering_price("+0.01"), HUGEPAGES], False, False),
]


@pytest.mark.parametrize(("entry", "make", "overlays", "shared_offering", "shared_capacity"),
                         SCENARIOS, ids=[row[0] for row in SCENARIOS])
def test_apply_copies_only_what_an_overlay_changes(
        entry: str, make: Any, overlays: list[dict[str, Any]], shared_offering: bool,
        shared_capacity: bool) -> None:
    """Describe("Store Apply Selective Copy") DescribeTable("should handle different
    overlay scenarios"), each Entry by its text."""
    it = make()
    result = applied(store_for([it], *overlays), it)
    assert result.labels is it.labels  # Karpenter's Requirements: shared
    assert result.overhead is it.overhead
    assert (result.offerings[0] is it.offerings[0]) == shared_offering
    assert (result.capacity is it.capacity) == shared_capacity


def test_a_price_overlay_changes_only_its_offerings() -> None:
    """Describe("Store Apply Correctness") Context("with price overlay") It("should
    correctly apply price overlay to specific offerings")."""
    it = instance_type("m5.large", offering("on-demand", "us-west-2a", 0.096),
                       offering("on-demand", "us-west-2b", 0.096))
    store = store_for([it], overlay("first", (ZONE, "In", ["us-west-2a"]),
                                    priceAdjustment="+0.01"))
    result = applied(store, it)
    assert result.offerings[0].price == pytest.approx(0.106)
    assert result.offerings[0].price_overlaid
    assert result.offerings[1].price == 0.096
    assert result.offerings[1] is it.offerings[1]
    assert it.offerings[0].price == 0.096  # the cloud's instance type is untouched


def test_a_capacity_overlay_adds_a_resource() -> None:
    """Describe("Store Apply Correctness") Context("with capacity overlay") It("should
    correctly apply capacity overlay")."""
    it = instance_type("m5.large", resources={"memory": 8 * GI, "cpu": 2000})
    result = applied(store_for([it], HUGEPAGES), it)
    assert result.capacity["hugepages-2Mi"] == 100 * MI
    assert result.capacity["memory"] == 8 * GI
    assert "hugepages-2Mi" not in it.capacity


def test_each_nodepool_gets_its_own_overlays() -> None:
    """Describe("Store Apply Isolation Between NodePools") It("should apply different
    overlays to different node pools")."""
    it = m5_large_one_offering()
    store = store_for(
        [it],
        overlay("pool-a", ("karpenter.sh/nodepool", "In", ["nodepool-a"]),
                priceAdjustment="+10%"),
        overlay("pool-b", ("karpenter.sh/nodepool", "In", ["nodepool-b"]),
                priceAdjustment="-5%"),
        pools=("nodepool-a", "nodepool-b"))
    a = applied(store, it, "nodepool-a")
    b = applied(store, it, "nodepool-b")
    assert a.offerings[0].price == pytest.approx(0.1056, abs=0.0001)
    assert b.offerings[0].price == pytest.approx(0.0912, abs=0.0001)
    assert it.offerings[0].price == 0.096
    assert a.offerings[0] is not b.offerings[0]


def test_an_unevaluated_nodepool_gets_nothing() -> None:
    """Describe("Store Apply Unevaluated NodePool") It("should return error for
    unevaluated node pool"): None is Karpenter's UnevaluatedNodePoolError."""
    it = instance_type("m5.large")
    assert store_for([it]).apply("unevaluated", [it]) is None


def test_overlays_through_the_store() -> None:
    """Describe("NodeOverlay Store Integration") It("should integrate overlays through the
    public interface")."""
    large = instance_type("m5.large", offering("on-demand", "us-west-2a", 0.096),
                          offering("spot", "us-west-2a", 0.0288),
                          resources={"memory": 8 * GI, "cpu": 2000})
    xlarge = instance_type("m5.xlarge", offering("on-demand", "us-west-2a", 0.192),
                           resources={"memory": 16 * GI, "cpu": 4000})
    store = store_for([large, xlarge], overlay("hugepages", (INSTANCE_TYPE, "In", ["m5.large"]),
                                               weight=100, capacity={"hugepages-2Mi": "100Mi"}))
    found = store.apply("default", [large, xlarge])
    assert found is not None
    assert "hugepages-2Mi" in found[0].capacity
    assert "hugepages-2Mi" not in found[1].capacity
    assert "hugepages-2Mi" not in large.capacity
