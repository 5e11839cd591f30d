"""The offering metrics controller publishes a catalog again only when the cloud hands
back other instance type objects. A catalog it published may be let go and a new one
built in its place; CPython gives a new object the id of a freed one readily, so the
controller must not tell the catalogs apart by their types' ids alone (when collections
run decides when such a catalog dies, so that would make a simulation's series depend on
the collector)."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator

import pytest

from nodewright import metrics
from nodewright.api.ec2nodeclass import EC2NodeClass
from nodewright.controllers.metrics import offerings
from nodewright.scheduling.catalog import InstanceType, Offering, Overhead
from tests.aws.offering_metrics import MetricsCluster
from tests.aws.world import node_class

ZONE = "us-west-2a"


class ChosenCatalog:
    """A cloud whose catalog is the instance types a story hands it."""

    name = "chosen"

    def __init__(self) -> None:
        self.types: list[InstanceType] = []

    def get_instance_types(self, node_class: EC2NodeClass) -> list[InstanceType]:
        return list(self.types)


def m5_large(price: float) -> InstanceType:
    return InstanceType(
        name="m5.large", labels={"node.kubernetes.io/instance-type": "m5.large"},
        capacity={"cpu": 2000, "memory": 8 * 1024 ** 3 * 1000, "pods": 29_000},
        overhead=Overhead(kube_reserved={}, system_reserved={}, eviction_threshold={}),
        offerings=(Offering(zone=ZONE, zone_id=None, capacity_type="on-demand",
                            price=price),))


def made_in_place_of(freed_id: int, make: Callable[[], InstanceType]) -> InstanceType:
    """A new object from `make`, in the freed object's place if the allocator gives it
    (the misses are held meanwhile, so each try takes another free block); the last
    miss when it does not within a few thousand tries."""
    misses = []
    for _ in range(5_000):
        made = make()
        if id(made) == freed_id:
            return made
        misses.append(made)
    return misses[-1]


def evict_built_series() -> None:
    """The module's caches of built series let go of what they hold, as they do in a long
    run once other catalogs have taken their places (they hold the types, by id too)."""
    offerings._BUILT.clear()
    offerings._PER_TYPE.clear()


@pytest.fixture(autouse=True)
def _fresh_series(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(offerings, "_BUILT", {})
    monkeypatch.setattr(offerings, "_PER_TYPE", {})
    metrics.OFFERING_PRICE_ESTIMATE.clear()
    yield
    metrics.OFFERING_PRICE_ESTIMATE.clear()


def test_a_catalog_built_where_a_let_go_one_was_is_published_with_its_prices() -> None:
    cloud = ChosenCatalog()
    cluster = MetricsCluster(cloud)  # type: ignore[arg-type]
    cluster.apply(node_class(), "default")
    cloud.types = [m5_large(0.096)]
    cluster.reconcile()
    assert cluster.controller.price("m5.large", "on-demand", ZONE) == 0.096

    freed_id = id(cloud.types[0])
    cloud.types = []
    evict_built_series()
    gc.collect()
    # The new price's type, held only from here on: if the first one was freed (nothing
    # the controller keeps holds it), it may well take that one's id.
    cloud.types = [made_in_place_of(freed_id, lambda: m5_large(0.12))]
    cluster.reconcile()

    assert cluster.controller.price("m5.large", "on-demand", ZONE) == 0.12
