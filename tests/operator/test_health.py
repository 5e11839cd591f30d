"""Health that tells the truth (issue #28): /healthz fails when a long-lived thread of the
process has died (the leader election campaign, the Event writer) or the Event queue stops
moving; the campaign survives an unexpected error instead of ending silently; the watch
event buffer and the transport's wait log are bounded, dropping the oldest."""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any

import pytest

from nodewright.cluster.api import ClusterAPI, Object
from nodewright.cluster.kube.informer import Subscription
from nodewright.cluster.memory import InMemoryCluster
from nodewright.operator import health
from nodewright.operator.events import EventWriter
from nodewright.operator.leader import LeaderElector
from nodewright.runtime.clock import SystemClock
from nodewright.runtime.reconciler import WatchEvent
from tests.controllers.metric_samples import sample_value
from tests.kube.waiting import eventually
from tests.operator.test_fencing import event_about
from tests.operator.world import FAST_LEASE, LockedCluster, RealTimeWorld


class Flaky:
    """A lease client whose first reads fail with what is not an API error (a bug in a
    library, a malformed answer)."""

    def __init__(self, inner: ClusterAPI, failures: int) -> None:
        self.inner = inner
        self.failures = failures

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def get(self, kind: str, name: str, namespace: str | None = None) -> Object:
        if self.failures > 0:
            self.failures -= 1
            raise KeyError("content-type")
        return self.inner.get(kind, name, namespace)


def dropped(buffer: str) -> float:
    return sample_value("nodewright_buffer_dropped_total", {"buffer": buffer}) or 0.0


def test_the_campaign_survives_an_unexpected_error_and_logs_it(
        caplog: pytest.LogCaptureFixture) -> None:
    cluster = LockedCluster(InMemoryCluster(SystemClock()), threading.RLock())
    elector = LeaderElector(Flaky(cluster, failures=2), name="lease", namespace="default",
                            identity="first", timing=FAST_LEASE)
    elector.start()
    try:
        eventually(elector.is_leader, "the candidate to lead once its reads work")
        assert elector.alive()
    finally:
        elector.stop(release=False, timeout=5)
    failures = [r for r in caplog.records if "trying to take the leader Lease" in r.message]
    assert len(failures) == 2 and all(r.exc_info for r in failures)


def test_a_campaign_that_dies_fails_healthz(world: RealTimeWorld) -> None:
    from nodewright.operator.process import Operator, OperatorSettings
    from tests.operator.world import FAST_CONTROLLERS

    settings = OperatorSettings(identity="first", lease_namespace="kube-system",
                                timing=FAST_LEASE, controllers=FAST_CONTROLLERS,
                                idle_interval=0.01)
    operator = Operator(world.cluster, world.cloud, settings, world_lock=world.lock)

    def broken_kick(*args: object) -> None:
        raise RuntimeError("a bug when it starts leading")

    operator.controllers.kick = broken_kick  # type: ignore[method-assign]
    operator.start()
    world.operators.append(operator)
    assert operator.elector is not None
    elector = operator.elector
    eventually(lambda: not elector.alive(), "the campaign to die")
    assert operator.healthy() == "the leader election thread has died"


def test_an_event_writer_that_dies_fails_healthz(world: RealTimeWorld) -> None:
    operator = world.operator("first", leader_elect=False)
    assert operator.healthy() is None
    # The writer thread ends without being stopped (as an error escaping it would end it).
    operator.events._queue.put(None)
    eventually(lambda: operator.healthy() is not None, "/healthz to fail")
    assert operator.healthy() == "the event writer thread has died"


class Hanging:
    """A cluster whose Event writes hang until released (an API server that accepted the
    connection and never answers)."""

    def __init__(self, inner: ClusterAPI) -> None:
        self.inner = inner
        self.release = threading.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def create(self, obj: Object) -> Object:
        self.release.wait(30)
        return self.inner.create(obj)

    def patch(self, kind: str, name: str, patch: Mapping[str, Any],
              namespace: str | None = None, *, subresource: str | None = None) -> Object:
        self.release.wait(30)
        return self.inner.patch(kind, name, patch, namespace, subresource=subresource)


def test_an_event_queue_that_stops_moving_fails_healthz_past_its_budget() -> None:
    cluster = LockedCluster(InMemoryCluster(SystemClock()), threading.RLock())
    node = cluster.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    hanging = Hanging(cluster)
    writer = EventWriter(hanging)
    writer.start()
    budget = 0.05
    try:
        assert health.stuck_queue({"event writer": writer.stuck_for}, budget) is None
        writer.submit(event_about(node, "Nominated"))
        writer.submit(event_about(node, "Unconsolidatable"))
        problem = eventually(
            lambda: health.stuck_queue({"event writer": writer.stuck_for}, budget),
            "the stuck Event queue to be reported")
        assert "the event writer has had work for" in problem
    finally:
        hanging.release.set()
        writer.stop(timeout=5)
    assert writer.written == 2
    assert health.stuck_queue({"event writer": writer.stuck_for}, budget) is None


def test_an_event_that_breaks_the_writer_is_logged_and_the_next_one_written(
        caplog: pytest.LogCaptureFixture) -> None:
    cluster = LockedCluster(InMemoryCluster(SystemClock()), threading.RLock())
    node = cluster.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    writer = EventWriter(cluster)
    correlate = writer.correlator.correlate

    def breaks_on_the_first(body: dict[str, Any]) -> Any:
        if body["reason"] == "Broken":
            raise TypeError("a bug in the correlator")
        return correlate(body)

    writer.correlator.correlate = breaks_on_the_first  # type: ignore[method-assign]
    writer.start()
    writer.submit(event_about(node, "Broken"))
    writer.submit(event_about(node, "Nominated"))
    assert writer.stop(timeout=5)
    assert [e["reason"] for e in cluster.list("Event")] == ["Nominated"]
    assert any("writing an event failed" in r.message and r.levelno == logging.ERROR
               for r in caplog.records)


def test_the_watch_event_buffer_drops_the_oldest_past_its_capacity_and_counts_them() -> None:
    subscription = Subscription(capacity=3)
    before = dropped("watch_events")
    for number in range(5):
        subscription.push(WatchEvent("ADDED", {"kind": "Node",
                                               "metadata": {"name": f"n{number}"}}))
    assert [e.object["metadata"]["name"] for e in subscription.take()] == ["n2", "n3", "n4"]
    assert dropped("watch_events") - before == 2
    assert subscription.take() == []
