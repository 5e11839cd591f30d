"""Karpenter's event recorder suite, ported: kubernetes-sigs/karpenter v1.14.1
pkg/events/suite_test.go. Each test names its Describe and It.

Karpenter builds its events with constructors (NominatePodEvent, EvictPod,
PodFailedToScheduleEvent, NodeFailedToDrain) and publishes them through its recorder,
which drops an event whose dedupe values it saw within the event's dedupe window (two
minutes unless the event says otherwise) and one its rate limiter refuses. Ours are built
where they are published, so the events come from the code that publishes them: the
provisioner (Nominated, FailedScheduling) in a running cluster on a virtual clock, and the
drain's `Evictor` (Evicted, FailedDraining) on the in-memory API server, whose eviction
subresource applies PodDisruptionBudgets. The two tests of the recorder's own rules
(an event's dedupe window, a limiter's smoothing) publish through `EventRecorder`
directly, as Karpenter's do."""

from __future__ import annotations

from typing import Any

from nodewright.cluster.events import Event, EventRecorder
from nodewright.cluster.memory import InMemoryCluster
from nodewright.controllers.node.termination import Evictor
from nodewright.runtime.clock import VirtualClock
from nodewright.runtime.ratelimit import TokenBucket, clock_seconds
from tests.controllers.conftest import WORKSHOP
from tests.harness import World

NODE: dict[str, Any] = {"apiVersion": "v1", "kind": "Node",
                        "metadata": {"name": "node-a", "uid": "node-a-uid"}, "spec": {}}


def karpenters(world: World, reason: str) -> list[dict[str, Any]]:
    """The events Nodewright wrote with this reason (kube-scheduler writes its own
    FailedScheduling)."""
    return [e for e in world.events(reason) if e.get("reportingController") == "karpenter"]


def pending(name: str, cpu: str = "100m") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"nodeSelector": {"type": "karpenter"},
                     "containers": [{"name": "app", "image": "app",
                                     "resources": {"requests": {"cpu": cpu}}}]}}


class Drain:
    """The drain's evictor on an API server, with the recorder it publishes through."""

    def __init__(self) -> None:
        self.clock = VirtualClock()
        self.cluster = InMemoryCluster(self.clock)
        self.recorder = EventRecorder(self.cluster, self.clock)
        self.evictor = Evictor(self.cluster, self.clock, self.recorder)
        self.node = self.cluster.create(NODE)

    def running(self, name: str) -> dict[str, Any]:
        self.cluster.create({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"}},
            "spec": {"nodeName": "node-a", "containers": [{"name": "a", "image": "a"}]}})
        return self.cluster.patch("Pod", name, {"status": {
            "phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}},
            "default", subresource="status")

    def evict(self, pod: dict[str, Any]) -> None:
        self.evictor.remove(pod, None, self.node, "drifted")

    def events(self, reason: str) -> list[dict[str, Any]]:
        return [e for e in self.cluster.list("Event") if e.get("reason") == reason]


# -- Describe("Event Creation") ---------------------------------------------------------------


def test_a_nominated_pod_is_told_where_it_will_go() -> None:
    """Event Creation It("should create a NominatePod event")."""
    world = World()
    world.apply(WORKSHOP, pending("inflate"))
    assert world.run_until(lambda: bool(karpenters(world, "Nominated")), timeout=120)
    (event,) = karpenters(world, "Nominated")
    assert event["regarding"]["name"] == "inflate"
    assert str(event["note"]).startswith("Pod should schedule on: nodeclaim/")


def test_an_evicted_pod_is_told_so() -> None:
    """Event Creation It("should create a EvictPod event")."""
    drain = Drain()
    drain.evict(drain.running("app"))
    (event,) = drain.events("Evicted")
    assert event["regarding"]["name"] == "app"
    assert event["note"] == "Evicted pod: drifted"


def test_a_pod_nothing_can_hold_is_told_it_failed_to_schedule() -> None:
    """Event Creation It("should create a PodFailedToSchedule event")."""
    world = World()
    world.apply(WORKSHOP, pending("huge", cpu="1000"))
    assert world.run_until(lambda: bool(karpenters(world, "FailedScheduling")), timeout=120)
    (event,) = karpenters(world, "FailedScheduling")
    assert event["regarding"]["name"] == "huge"
    assert event["type"] == "Warning"


def test_a_node_whose_pod_a_budget_holds_is_told_it_failed_to_drain() -> None:
    """Event Creation It("should create a NodeFailedToDrain event")."""
    drain = Drain()
    drain.cluster.create({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                          "metadata": {"name": "web", "namespace": "default"},
                          "spec": {"selector": {"matchLabels": {"app": "web"}},
                                   "maxUnavailable": 0}})
    drain.evict(drain.running("app"))
    (event,) = drain.events("FailedDraining")
    assert event["regarding"]["name"] == "node-a"
    assert event["type"] == "Warning"
    assert drain.events("Evicted") == []


# -- Describe("Dedupe") -----------------------------------------------------------------------


def test_a_pod_evicted_again_and_again_is_told_once() -> None:
    """Dedupe It("should only create a single event when many events are created quickly"):
    a StatefulSet's pod, created again under its name each time it goes, evicted 100 times
    in the same instant."""
    drain = Drain()
    for _ in range(100):
        drain.evict(drain.running("web-0"))
        # Its eviction finished: the kubelet stopped it.
        drain.cluster.delete("Pod", "web-0", "default", grace_period_seconds=0)
    assert len(drain.events("Evicted")) == 1


def test_an_event_may_shorten_its_dedupe_window() -> None:
    """Dedupe It("should allow the dedupe timeout to be overridden"): an Evicted event
    deduplicated for two seconds instead of two minutes."""
    clock = VirtualClock()
    cluster = InMemoryCluster(clock)
    recorder = EventRecorder(cluster, clock)
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "app", "namespace": "default", "uid": "app-uid"}}
    event = Event(regarding=pod, type="Normal", reason="Evicted", note="Evicted pod: ",
                  action="Evict", dedupe_values=("app",), dedupe_seconds=2.0)
    for _ in range(10):
        recorder.publish(event)
    assert len(cluster.list("Event")) == 1
    clock.advance(3)
    recorder.publish(event)
    assert len(cluster.list("Event")) == 2


def test_evictions_of_different_pods_are_each_told() -> None:
    """Dedupe It("should allow events with different entities to be created")."""
    drain = Drain()
    for i in range(100):
        drain.evict(drain.running(f"app-{i}"))
    assert len(drain.events("Evicted")) == 100


# -- Describe("Rate Limiting") ----------------------------------------------------------------


def test_a_hundred_pods_nominated_at_once_are_told_ten_at_most() -> None:
    """Rate Limiting It("should only create max-burst when many events are created
    quickly"): one solve nominates 100 pods in one instant; the Nominated events share a
    bucket of 5 a second with bursts of 10."""
    world = World()
    world.apply(WORKSHOP, *(pending(f"inflate-{i}") for i in range(100)))
    assert world.run_until(lambda: bool(world.nodeclaims()), timeout=120)
    nominated = {str(e["regarding"]["name"]) for e in karpenters(world, "Nominated")}
    assert len(nominated) == 10
    state = world.controllers.state
    assert all(state.pod_nomination(f"default/inflate-{i}") for i in range(100))


def test_nominations_over_time_are_let_through_at_the_buckets_rate() -> None:
    """Rate Limiting It("should allow many events over time due to smoothed rate
    limiting"): five Nominated events a second for three seconds, through a bucket of 5 a
    second with bursts of 10 (the provisioner's), are all written."""
    clock = VirtualClock()
    cluster = InMemoryCluster(clock)
    recorder = EventRecorder(cluster, clock)
    limiter = TokenBucket(5.0, 10, now=clock_seconds(clock))
    for second in range(3):
        for i in range(5):
            pod = {"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": f"p-{second}-{i}", "namespace": "default",
                                "uid": f"uid-{second}-{i}"}}
            recorder.publish(Event(regarding=pod, type="Normal", reason="Nominated",
                                   note="Pod should schedule on: nodeclaim/default-abcde",
                                   action="Nominate", dedupe_values=(f"uid-{second}-{i}",),
                                   rate_limiter=limiter))
        clock.advance(1)
    assert len(cluster.list("Event")) == 15
