"""client-go's event correlation on the operator's way out: an identical Event patches the
series of the first one; from the 10th different note in 10 minutes similar Events are
combined into one; 25 Events per object, then one every 5 minutes."""

from __future__ import annotations

from typing import Any

from nodewright.cluster.event_correlation import (
    COMBINED_PREFIX,
    EventCorrelator,
    write_correlated,
)
from nodewright.cluster.events import Event, EventRecorder
from nodewright.cluster.memory import InMemoryCluster
from nodewright.operator.events import EventWriter
from nodewright.runtime.clock import VirtualClock
from tests.kube.waiting import eventually

NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "uid": "u1"}}
OTHER = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n2", "uid": "u2"}}


def body(note: str, *, name: str = "n1.1", regarding: dict[str, Any] | None = None,
         reason: str = "Unconsolidatable") -> dict[str, Any]:
    subject = regarding or {"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": "u1"}
    return {"apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": name, "namespace": "default"},
            "eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "karpenter",
            "reportingInstance": "a", "action": reason, "reason": reason, "note": note,
            "type": "Normal", "regarding": subject}


def test_an_identical_event_counts_on_the_first_one() -> None:
    clock = VirtualClock()
    correlator = EventCorrelator(clock.now)
    first = correlator.correlate(body("same", name="n1.1"))
    clock.advance(30)
    second = correlator.correlate(body("same", name="n1.2"))
    third = correlator.correlate(body("same", name="n1.3"))
    assert first is not None and second is not None and third is not None
    assert (first.count, "series" in first.body) == (1, False)
    assert second.body["metadata"]["name"] == "n1.1"
    assert second.body["series"]["count"] == 2
    assert third.body["series"]["count"] == 3
    other = correlator.correlate(body("different", name="n1.4"))
    assert other is not None and other.count == 1


def test_from_the_tenth_different_note_similar_events_are_combined() -> None:
    clock = VirtualClock()
    correlator = EventCorrelator(clock.now)
    notes = []
    for number in range(12):
        found = correlator.correlate(body(f"note {number}", name=f"n1.{number}"))
        assert found is not None
        notes.append((found.body["note"], found.count, found.body["metadata"]["name"]))
    assert notes[8] == ("note 8", 1, "n1.8")
    assert notes[9] == (COMBINED_PREFIX + "note 9", 1, "n1.9")
    # The combined Event counts on (its note stays: events.k8s.io/v1 notes are immutable).
    assert [(count, name) for _, count, name in notes[10:]] == [(2, "n1.9"), (3, "n1.9")]


def test_similar_events_ten_minutes_apart_are_not_combined() -> None:
    clock = VirtualClock()
    correlator = EventCorrelator(clock.now)
    for number in range(12):
        clock.advance(601)
        found = correlator.correlate(body(f"note {number}", name=f"n1.{number}"))
        assert found is not None and found.body["note"] == f"note {number}"


def test_twenty_five_events_about_one_object_then_one_every_five_minutes() -> None:
    clock = VirtualClock()
    correlator = EventCorrelator(clock.now)
    kept = [correlator.correlate(body("same", name=f"n1.{n}")) for n in range(30)]
    assert sum(found is not None for found in kept) == 25
    other = {"apiVersion": "v1", "kind": "Node", "name": "n2", "uid": "u2"}
    assert correlator.correlate(body("same", name="n2.1", regarding=other)) is not None
    clock.advance(299)
    assert correlator.correlate(body("same", name="n1.31")) is None
    clock.advance(1)
    again = correlator.correlate(body("same", name="n1.32"))
    assert again is not None and again.body["series"]["count"] == 32
    assert correlator.filtered == 6


def test_a_repeat_of_an_event_the_api_server_dropped_is_created_again() -> None:
    clock = VirtualClock()
    cluster = InMemoryCluster(clock)
    correlator = EventCorrelator(clock.now)
    first = correlator.correlate(body("same", name="n1.1"))
    assert first is not None and write_correlated(cluster, first)
    second = correlator.correlate(body("same", name="n1.2"))
    assert second is not None and write_correlated(cluster, second)
    (stored,) = cluster.list("Event", "default")
    assert stored["series"]["count"] == 2
    cluster.delete("Event", "n1.1", "default")  # an hour later the API server drops it
    third = correlator.correlate(body("same", name="n1.3"))
    assert third is not None and write_correlated(cluster, third)
    (stored,) = cluster.list("Event", "default")
    assert stored["metadata"]["name"] == "n1.1" and "series" not in stored


def test_the_operator_patches_repeats_instead_of_creating_events() -> None:
    clock = VirtualClock()
    cluster = InMemoryCluster(clock)
    writer = EventWriter(cluster, clock=clock)
    writer.start()
    recorder = EventRecorder(cluster, clock)
    recorder.send_to(writer.submit)
    try:
        for _ in range(5):
            clock.advance(1)
            recorder.publish(Event(NODE, "Normal", "Unconsolidatable", "still needed"))
        recorder.publish(Event(OTHER, "Normal", "Unconsolidatable", "still needed"))
        eventually(lambda: writer.written == 6, "the Events written")
    finally:
        assert writer.stop(timeout=10)
    events = sorted(cluster.list("Event", "default"),
                    key=lambda e: e["regarding"]["name"])
    assert [(e["regarding"]["name"], (e.get("series") or {}).get("count")) for e in events] \
        == [("n1", 5), ("n2", None)]
