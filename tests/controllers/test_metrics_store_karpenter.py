"""Karpenter's metrics store and cloud provider error labels, ported: kubernetes-sigs/karpenter
v1.14.1 pkg/metrics/suite_test.go ("Store") and pkg/cloudprovider/metrics/cloudprovider_test.go
("Cloudprovider"). Each test names its file, Context and It.

Karpenter's `metrics.Store` is our `metrics.Store`: gauge series owned by a key, `Update`
replacing the key's series (those it no longer has removed), `Delete` removing them. Its
`ReplaceAll` is what the node metrics controller does on each pass (the one place
Karpenter calls it): the store becomes the series of the nodes of this pass, every other
node's gone; here that controller runs over a cluster state fed the Nodes.
`GetErrorTypeLabelValue` is `cloud.metered.error_label`, the `error` label the metered
cloud provider puts on karpenter_cloudprovider_errors_total."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, Gauge

from nodewright import metrics
from nodewright.cloud.metered import MeteredCloud, error_label
from nodewright.cloud.provider import (
    InsufficientCapacityError,
    NodeClaimNotFoundError,
    NodeClassNotReadyError,
)
from nodewright.controllers.metrics.nodes import NodeMetrics
from nodewright.runtime import VirtualClock, WatchEvent
from nodewright.state import ClusterState
from tests.controllers.metric_samples import series, total

REGISTRY = CollectorRegistry()
GAUGE_1 = Gauge("test_gauge_1", "A gauge of the store's tests.", ["label_1", "label_2"],
                registry=REGISTRY)
GAUGE_2 = Gauge("test_gauge_2", "Another gauge of the store's tests.", ["label_1", "label_2"],
                registry=REGISTRY)
KEY = "default/test"


@pytest.fixture(autouse=True)
def empty_gauges() -> Iterator[None]:
    GAUGE_1.clear()
    GAUGE_2.clear()
    yield


def found(name: str, **labels: str) -> float | None:
    """FindMetricWithLabelValues: the value of the series with these labels, or None."""
    return REGISTRY.get_sample_value(name, labels)


def both(label: str, first: float = 3.65, second: float = 5.3) -> list[Any]:
    return [(GAUGE_1, {"label_1": label, "label_2": label}, first),
            (GAUGE_2, {"label_1": label, "label_2": label}, second)]


# -- pkg/metrics/suite_test.go, Context("Update") ---------------------------------------------


def test_an_update_creates_the_keys_series() -> None:
    """pkg/metrics Context("Update") It("should create metrics when calling update")."""
    store = metrics.Store()
    store.update(KEY, both("test"))
    assert found("test_gauge_1", label_1="test", label_2="test") == 3.65
    assert found("test_gauge_2", label_1="test", label_2="test") == 5.3


def test_an_update_removes_the_series_the_key_no_longer_has() -> None:
    """pkg/metrics Context("Update") It("should delete metrics when calling update")."""
    store = metrics.Store()
    store.update(KEY, both("test"))
    store.update(KEY, both("test_2"))
    assert found("test_gauge_1", label_1="test", label_2="test") is None
    assert found("test_gauge_2", label_1="test", label_2="test") is None
    assert found("test_gauge_1", label_1="test_2", label_2="test_2") == 3.65
    assert found("test_gauge_2", label_1="test_2", label_2="test_2") == 5.3


def test_the_same_labels_in_another_order_are_the_same_series() -> None:
    """pkg/metrics Context("Update") It("should consider metrics equal with the same
    labels")."""
    store = metrics.Store()
    store.update(KEY, both("test"))
    flipped = [(GAUGE_1, {"label_2": "test", "label_1": "test"}, 4.5),
               (GAUGE_2, {"label_2": "test", "label_1": "test"}, 6.9)]
    store.update(KEY, flipped)
    assert found("test_gauge_1", label_1="test", label_2="test") == 4.5
    assert found("test_gauge_2", label_1="test", label_2="test") == 6.9


# -- Context("Delete") ------------------------------------------------------------------------


def test_deleting_a_key_removes_its_series() -> None:
    """pkg/metrics Context("Delete") It("should delete metrics by key")."""
    store = metrics.Store()
    store.update(KEY, both("test"))
    assert found("test_gauge_1", label_1="test", label_2="test") is not None
    store.delete(KEY)
    assert found("test_gauge_1", label_1="test", label_2="test") is None
    assert found("test_gauge_2", label_1="test", label_2="test") is None


def test_deleting_an_unknown_key_does_nothing() -> None:
    """pkg/metrics Context("Delete") It("should delete the metrics if key didn't previously
    exist")."""
    store = metrics.Store()
    store.update("default/other", both("other"))
    store.delete(KEY)
    assert store.keys() == {"default/other"}
    assert found("test_gauge_1", label_1="other", label_2="other") == 3.65


# -- Context("ReplaceAll"): the node metrics controller's pass --------------------------------


def a_node(name: str, cpu: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {}},
            "spec": {"providerID": f"aws:///us-west-2a/{name}"},
            "status": {"allocatable": {"cpu": cpu, "memory": "1Gi", "pods": "10"}}}


def allocatable_cpu(node_name: str) -> float | None:
    """The node's karpenter_nodes_allocatable cpu series, None when it has none."""
    labels = {"node_name": node_name, "resource_type": "cpu"}
    if not series("karpenter_nodes_allocatable", **labels):
        return None
    return total("karpenter_nodes_allocatable", **labels)


def test_a_pass_replaces_every_nodes_series() -> None:
    """pkg/metrics Context("ReplaceAll") It("should replace all metrics"): a node gone and
    two new ones between two passes."""
    clock = VirtualClock()
    state = ClusterState(clock)
    controller = NodeMetrics(clock, state)
    state.observe(WatchEvent("ADDED", a_node("store-test", "1")))  # type: ignore[arg-type]
    controller.reconcile("")
    assert allocatable_cpu("store-test") == 1.0
    state.observe(WatchEvent("DELETED", a_node("store-test", "1")))  # type: ignore[arg-type]
    for name, cpu in (("store-test2", "2"), ("store-test3", "3")):
        state.observe(WatchEvent("ADDED", a_node(name, cpu)))  # type: ignore[arg-type]
    controller.reconcile("")
    assert allocatable_cpu("store-test") is None
    assert allocatable_cpu("store-test2") == 2.0
    assert allocatable_cpu("store-test3") == 3.0


def test_a_pass_over_no_node_leaves_no_node_series() -> None:
    """pkg/metrics Context("ReplaceAll") It("should replace with an empty store")."""
    clock = VirtualClock()
    state = ClusterState(clock)
    controller = NodeMetrics(clock, state)
    state.observe(WatchEvent("ADDED", a_node("store-empty", "1")))  # type: ignore[arg-type]
    controller.reconcile("")
    assert allocatable_cpu("store-empty") == 1.0
    state.observe(WatchEvent("DELETED", a_node("store-empty", "1")))  # type: ignore[arg-type]
    controller.reconcile("")
    assert allocatable_cpu("store-empty") is None
    assert series("karpenter_nodes_current_lifetime_seconds", node_name="store-empty") == []


# -- pkg/cloudprovider/metrics/cloudprovider_test.go ------------------------------------------


class FailingCloud:
    """A cloud provider whose Get fails with the error it is given."""

    name = "aws"

    def __init__(self, error: Exception) -> None:
        self.error = error

    def get(self, provider_id: str) -> Any:
        raise self.error


def error_counted(error: Exception) -> str:
    """The `error` label the metered cloud counts a failed Get under."""
    labels = {"controller": "nodeclaim.lifecycle", "method": "Get", "provider": "aws"}
    before = {s["error"]: total("karpenter_cloudprovider_errors_total", **labels, error=s["error"])
              for s in series("karpenter_cloudprovider_errors_total", **labels)}
    cloud = MeteredCloud(FailingCloud(error), "nodeclaim.lifecycle")  # type: ignore[arg-type]
    with pytest.raises(type(error)):
        cloud.get("aws:///us-west-2a/i-0123456789abcdef0")
    grown = [s["error"] for s in series("karpenter_cloudprovider_errors_total", **labels)
             if total("karpenter_cloudprovider_errors_total", **labels, error=s["error"])
             > before.get(s["error"], 0.0)]
    assert len(grown) == 1
    assert grown[0] == error_label(error)
    return grown[0]


def test_a_nodeclaim_not_found_is_recognized() -> None:
    """Cloudprovider Context("when the error is known") It("nodeclaim not found should be
    recognized")."""
    assert error_counted(NodeClaimNotFoundError("not found")) == "NodeClaimNotFoundError"


def test_insufficient_capacity_is_recognized() -> None:
    """Cloudprovider Context("when the error is known") It("insufficient capacity should be
    recognized")."""
    assert error_counted(InsufficientCapacityError("not enough capacity")) == (
        "InsufficientCapacityError")


def test_a_node_class_not_ready_is_recognized() -> None:
    """Cloudprovider Context("when the error is known") It("nodeclass not ready should be
    recognized")."""
    assert error_counted(NodeClassNotReadyError("not ready")) == "NodeClassNotReadyError"


def test_an_unknown_error_has_an_empty_label() -> None:
    """Cloudprovider Context("when the error is unknown") It("should always return empty
    string")."""
    assert error_counted(RuntimeError("this is an error we don't know about")) == ""
