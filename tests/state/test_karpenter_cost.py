"""Karpenter's cost tracker suite, ported: kubernetes-sigs/karpenter v1.14.1
pkg/state/cost/suite_test.go (Describe "ClusterCost"). Each test names its Context and It.

`ClusterCost` is asked whether a NodePool exists and for its instance types, as Karpenter's
asks its client and cloud provider; here two NodePools exist and the cloud offers one type
with a spot (1.50) and an on-demand (3.00) offering in test-zone-1."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import pytest

from nodewright.api.nodeoverlay import NodeOverlay
from nodewright.api.nodepool import NodePool
from nodewright.scheduling.allocatable import Overhead
from nodewright.scheduling.catalog import InstanceType, Offering
from nodewright.scheduling.overlays import build_store
from nodewright.state.cost import ClusterCost, CostTrackingError
from tests.controllers.metric_samples import sample_value
from tests.overlay.karpenter_fixture import nodepool, overlay

POOL, POOL2 = "test-nodepool", "test-nodepool-2"
TYPE = "test-instance"
SPOT = Offering("test-zone-1", None, "spot", 1.50)
ON_DEMAND = Offering("test-zone-1", None, "on-demand", 3.00)


def instance_type(name: str = TYPE, *offerings: Offering) -> InstanceType:
    return InstanceType(name, {"node.kubernetes.io/instance-type": name}, {}, Overhead({}, {}, {}),
                        offerings or (SPOT, ON_DEMAND))


class Cloud:
    """The suite's client and cloud provider: the NodePools that exist, the types offered."""

    def __init__(self) -> None:
        self.pools = {POOL, POOL2}
        self.types: list[InstanceType] = [instance_type()]

    def exists(self, name: str) -> bool:
        return name in self.pools

    def instance_types(self, name: str) -> Sequence[InstanceType]:
        return self.types


@pytest.fixture
def cloud() -> Cloud:
    return Cloud()


@pytest.fixture
def cost() -> ClusterCost:
    return ClusterCost()


def cluster_cost(cost: ClusterCost) -> float:
    """Karpenter's GetClusterCost over the two NodePools these tests use."""
    return cost.nodepool_cost(POOL) + cost.nodepool_cost(POOL2)


def labels(pool: str, offering: Offering, name: str = TYPE) -> dict[str, str]:
    """createTestNodeClaim: the four labels cost tracking needs."""
    return {"karpenter.sh/nodepool": pool, "node.kubernetes.io/instance-type": name,
            "karpenter.sh/capacity-type": offering.capacity_type,
            "topology.kubernetes.io/zone": offering.zone}


def add(cost: ClusterCost, cloud: Cloud, claim: str, pool: str, offering: Offering,
        name: str = TYPE) -> None:
    cost.update_nodeclaim(claim, labels(pool, offering, name), cloud.exists,
                          cloud.instance_types)


# Context("UpdateNodeClaim")

def test_a_spot_nodeclaim_in_an_empty_nodepool(cost: ClusterCost, cloud: Cloud) -> None:
    # It("should update costs correctly for single spot offering to empty nodepool")
    assert cluster_cost(cost) == 0
    add(cost, cloud, "test-nodeclaim", POOL, SPOT)
    assert (cost.nodepool_cost(POOL), cluster_cost(cost)) == pytest.approx((1.50, 1.50))


def test_an_on_demand_nodeclaim_in_an_empty_nodepool(cost: ClusterCost, cloud: Cloud) -> None:
    # It("should update costs correctly for single on-demand offering to empty nodepool")
    add(cost, cloud, "test-nodeclaim", POOL, ON_DEMAND)
    assert (cost.nodepool_cost(POOL), cluster_cost(cost)) == pytest.approx((3.00, 3.00))


def test_a_second_nodeclaim_of_one_offering_counts_twice(cost: ClusterCost, cloud: Cloud
                                                         ) -> None:
    # It("should update costs correctly for duplicate spot offering to increment count")
    add(cost, cloud, "test-nodeclaim", POOL, SPOT)
    add(cost, cloud, "test-nodeclaim-2", POOL, SPOT)
    assert (cost.nodepool_cost(POOL), cluster_cost(cost)) == pytest.approx((3.00, 3.00))


def test_one_nodeclaim_counts_once(cost: ClusterCost, cloud: Cloud) -> None:
    # (the same NodeClaim seen again, as every event of it is: Karpenter's early return)
    add(cost, cloud, "test-nodeclaim", POOL, SPOT)
    add(cost, cloud, "test-nodeclaim", POOL, SPOT)
    assert cost.nodepool_cost(POOL) == pytest.approx(1.50)


def test_two_offerings_in_one_nodepool(cost: ClusterCost, cloud: Cloud) -> None:
    # It("should update costs correctly for different offering types to same nodepool")
    add(cost, cloud, "test-nodeclaim", POOL, SPOT)
    add(cost, cloud, "test-nodeclaim-ondemand", POOL, ON_DEMAND)
    assert (cost.nodepool_cost(POOL), cluster_cost(cost)) == pytest.approx((4.50, 4.50))


def test_an_offering_in_another_nodepool(cost: ClusterCost, cloud: Cloud) -> None:
    # It("should update costs correctly for offering to different nodepool")
    add(cost, cloud, "test-nodeclaim", POOL, SPOT)
    add(cost, cloud, "test-nodeclaim-ondemand", POOL2, ON_DEMAND)
    assert (cost.nodepool_cost(POOL2), cluster_cost(cost)) == pytest.approx((3.00, 4.50))


# Context("DeleteNodeClaim")

def test_removing_the_only_nodeclaim(cost: ClusterCost, cloud: Cloud) -> None:
    # It("should update costs correctly for single spot offering from nodepool with one
    # offering")
    add(cost, cloud, "test-nodeclaim", POOL, SPOT)
    cost.delete_nodeclaim("test-nodeclaim")
    assert (cost.nodepool_cost(POOL), cluster_cost(cost)) == (0, 0)


def test_removing_one_of_two_nodeclaims_of_an_offering(cost: ClusterCost, cloud: Cloud) -> None:
    # It("should update costs correctly for one instance of duplicate spot offering")
    add(cost, cloud, "test-nodeclaim", POOL, SPOT)
    add(cost, cloud, "test-nodeclaim-2", POOL, SPOT)
    cost.delete_nodeclaim("test-nodeclaim")
    assert (cost.nodepool_cost(POOL), cluster_cost(cost)) == pytest.approx((1.50, 1.50))


def test_removing_spot_from_mixed_offerings(cost: ClusterCost, cloud: Cloud) -> None:
    # It("should update costs correctly for spot offering from nodepool with mixed
    # offerings")
    add(cost, cloud, "test-nodeclaim", POOL, SPOT)
    add(cost, cloud, "test-nodeclaim-ondemand", POOL, ON_DEMAND)
    cost.delete_nodeclaim("test-nodeclaim")
    assert (cost.nodepool_cost(POOL), cluster_cost(cost)) == pytest.approx((3.00, 3.00))


def test_removing_from_one_of_two_nodepools(cost: ClusterCost, cloud: Cloud) -> None:
    # It("should update costs correctly for offering from one of multiple nodepools")
    add(cost, cloud, "test-nodeclaim", POOL, SPOT)
    add(cost, cloud, "test-nodeclaim-ondemand", POOL2, ON_DEMAND)
    cost.delete_nodeclaim("test-nodeclaim")
    assert (cost.nodepool_cost(POOL), cluster_cost(cost)) == pytest.approx((0.0, 3.00))


def test_the_last_offering_removes_the_nodepool_entry(cost: ClusterCost, cloud: Cloud) -> None:
    # It("should update costs correctly for last offering completely removes nodepool
    # entry"): a later price update then only starts an empty entry.
    add(cost, cloud, "test-nodeclaim", POOL, SPOT)
    cost.delete_nodeclaim("test-nodeclaim")
    assert (cost.nodepool_cost(POOL), cluster_cost(cost)) == (0, 0)
    cost.update_offerings(POOL, cloud.types)
    assert cost.nodepool_cost(POOL) == 0


# Context("UpdateOfferings")

def test_a_price_overlay_changes_the_cost(cost: ClusterCost, cloud: Cloud) -> None:
    # It("should recalculate cluster cost appropriately when nodeoverlays change"): +2.5 on
    # the NodePool's offerings takes the spot NodeClaim from 1.50 to 4.00.
    add(cost, cloud, "test-nodeclaim", POOL, SPOT)
    assert cost.nodepool_cost(POOL) == pytest.approx(1.50)
    body = overlay("price", ("karpenter.sh/nodepool", "In", [POOL]), weight=10000,
                   priceAdjustment="+2.5")
    store, conflicting = build_store([NodeOverlay.model_validate(body)], {
        POOL: (NodePool.model_validate(nodepool(POOL)), cloud.types)})
    assert conflicting == []
    overlaid = store.apply(POOL, cloud.types)
    assert overlaid is not None
    cost.update_offerings(POOL, overlaid)
    assert (cost.nodepool_cost(POOL), cluster_cost(cost)) == pytest.approx((4.0, 4.0))


def test_new_cloud_prices_change_every_nodepool_s_cost(cost: ClusterCost, cloud: Cloud) -> None:
    # It("should recalculate cluster cost appropriately when cloud provider updates the price
    # of offerings")
    add(cost, cloud, "test-nodeclaim", POOL, SPOT)
    add(cost, cloud, "test-nodeclaim-ondemand1", POOL, ON_DEMAND)
    add(cost, cloud, "test-nodeclaim-spot2", POOL2, SPOT)
    assert (cost.nodepool_cost(POOL), cost.nodepool_cost(POOL2),
            cluster_cost(cost)) == pytest.approx((4.50, 1.50, 6.00))
    cloud.types = [instance_type(TYPE, Offering("test-zone-1", None, "spot", 2.50), ON_DEMAND)]
    cost.update_offerings(POOL, cloud.types)
    cost.update_offerings(POOL2, cloud.types)
    assert (cost.nodepool_cost(POOL), cost.nodepool_cost(POOL2),
            cluster_cost(cost)) == pytest.approx((5.50, 2.50, 8.00))


def test_an_offering_counted_again_after_it_went_keeps_its_count(cost: ClusterCost,
                                                                 cloud: Cloud) -> None:
    # It("should track count correctly when re-adding an offering after the key was
    # deleted")
    cloud.types = [instance_type("spot-only", SPOT), instance_type("od-only", ON_DEMAND)]
    add(cost, cloud, "anchor", POOL, ON_DEMAND, "od-only")
    assert cluster_cost(cost) == pytest.approx(3.00)
    add(cost, cloud, "spot-first", POOL, SPOT, "spot-only")
    assert cluster_cost(cost) == pytest.approx(4.50)
    cost.delete_nodeclaim("spot-first")
    assert cluster_cost(cost) == pytest.approx(3.00)
    add(cost, cloud, "spot-second", POOL, SPOT, "spot-only")
    assert cluster_cost(cost) == pytest.approx(4.50)
    cost.update_offerings(POOL, cloud.types)
    assert cluster_cost(cost) == pytest.approx(4.50)


# Context("Concurrency")

def _in_threads(count: int, work: list[list[str]], action: object) -> None:
    assert callable(action)
    threads = [threading.Thread(target=lambda names=names: [action(n) for n in names])
               for names in work[:count]]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def test_concurrent_updates(cost: ClusterCost, cloud: Cloud) -> None:
    # It("should be thread-safe with concurrent UpdateNodeClaim calls"): 5 threads x 10
    work = [[f"test-nodeclaim-{t * 10 + j}" for j in range(10)] for t in range(5)]
    _in_threads(5, work, lambda name: add(cost, cloud, name, POOL, SPOT))
    assert cost.nodepool_cost(POOL) == pytest.approx(50 * 1.50)


def test_concurrent_deletes(cost: ClusterCost, cloud: Cloud) -> None:
    # It("should be thread-safe with concurrent DeleteNodeClaim calls"): 25 threads x 10
    work = [[f"test-nodeclaim-{t * 10 + j}" for j in range(10)] for t in range(25)]
    for names in work:
        for name in names:
            add(cost, cloud, name, POOL, SPOT)
    assert cost.nodepool_cost(POOL) == pytest.approx(250 * 1.50)
    _in_threads(25, work, cost.delete_nodeclaim)
    assert cost.nodepool_cost(POOL) == 0


def test_reads_while_nodeclaims_come_and_go(cost: ClusterCost, cloud: Cloud) -> None:
    # It("should handle concurrent updates while reading costs"): readers never see a
    # negative cost while a writer adds and removes ten NodeClaims (until it is done,
    # rather than for two seconds).
    done = threading.Event()
    seen: list[float] = []

    def read() -> None:
        while not done.is_set():
            seen.extend((cost.nodepool_cost(POOL), cluster_cost(cost)))

    readers = [threading.Thread(target=read) for _ in range(2)]
    for reader in readers:
        reader.start()
    names = [f"test-nodeclaim-{i}" for i in range(10)]
    for name in names:
        add(cost, cloud, name, POOL, SPOT)
    for name in names:
        cost.delete_nodeclaim(name)
    done.set()
    for reader in readers:
        reader.join()
    assert seen and min(seen) >= 0
    assert cluster_cost(cost) == 0


# What fails is counted (the error counter of cost.go).

def _errors(pool: str) -> float:
    value = sample_value("karpenter_nodepools_cost_tracker_errors_total",
                                              {"nodepool": pool})
    return value or 0.0


def test_a_nodeclaim_of_a_missing_nodepool_is_an_error(cost: ClusterCost, cloud: Cloud) -> None:
    before = _errors("gone")
    with pytest.raises(CostTrackingError, match='NodePool "gone" not found'):
        add(cost, cloud, "orphan", "gone", SPOT)
    assert _errors("gone") == before + 1
    assert cluster_cost(cost) == 0


def test_unreadable_instance_types_are_an_error(cost: ClusterCost, cloud: Cloud) -> None:
    def broken(name: str) -> Sequence[InstanceType]:
        raise RuntimeError("DescribeInstanceTypes throttled")

    before = _errors(POOL)
    with pytest.raises(CostTrackingError, match="failed to get instance types"):
        cost.update_nodeclaim("test-nodeclaim", labels(POOL, SPOT), cloud.exists, broken)
    assert _errors(POOL) == before + 1


def test_an_unlabelled_nodeclaim_waits_and_an_unknown_one_goes_quietly(cost: ClusterCost,
                                                                       cloud: Cloud) -> None:
    cost.update_nodeclaim("unlaunched", {"karpenter.sh/nodepool": POOL}, cloud.exists,
                          cloud.instance_types)
    cost.delete_nodeclaim("never-counted")
    assert cluster_cost(cost) == 0
    add(cost, cloud, "unlaunched", POOL, SPOT)  # its launch labelled it
    assert cluster_cost(cost) == pytest.approx(1.50)


def test_a_deleted_nodepool_is_forgotten(cost: ClusterCost, cloud: Cloud) -> None:
    add(cost, cloud, "test-nodeclaim", POOL, SPOT)
    add(cost, cloud, "test-nodeclaim-2", POOL2, ON_DEMAND)
    cost.delete_nodepool(POOL)
    assert (cost.nodepool_cost(POOL), cluster_cost(cost)) == pytest.approx((0.0, 3.00))
    cost.delete_nodeclaim("test-nodeclaim")  # no longer tracked: nothing to remove
    assert cluster_cost(cost) == pytest.approx(3.00)
