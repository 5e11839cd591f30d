"""The runtime contract: a virtual clock that runs callbacks in time order, and the
driver that turns watch events into deduplicated reconciles."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta

import pytest

from nodewright.cluster.api import Object, WatchStream
from nodewright.controllers.driver import VirtualDriver
from nodewright.runtime import Result, VirtualClock, Watch, WatchEvent, format_time, parse_time
from nodewright.runtime.reconciler import singleton_key

START = datetime(2026, 1, 5, tzinfo=UTC)


def test_callbacks_run_in_time_order_then_in_the_order_they_were_scheduled() -> None:
    clock = VirtualClock(START)
    ran: list[tuple[str, float]] = []

    def note(label: str):  # type: ignore[no-untyped-def]
        return lambda: ran.append((label, (clock.now() - START).total_seconds()))

    clock.call_later(10, note("ten"))
    clock.call_later(1, note("one-a"))
    clock.call_later(1, note("one-b"))
    clock.call_later(30, note("thirty"))

    clock.advance(20)

    assert ran == [("one-a", 1.0), ("one-b", 1.0), ("ten", 10.0)]
    assert clock.now() == START + timedelta(seconds=20)
    assert clock.next_due() == START + timedelta(seconds=30)


def test_a_callback_scheduled_in_the_past_runs_now() -> None:
    clock = VirtualClock(START)
    clock.advance(5)
    seen: list[datetime] = []
    clock.call_at(START, lambda: seen.append(clock.now()))
    clock.step()
    assert seen == [START + timedelta(seconds=5)]


def test_kubernetes_timestamps_round_trip() -> None:
    assert format_time(parse_time("2026-01-05T10:20:30Z")) == "2026-01-05T10:20:30Z"
    assert parse_time("2026-01-05T10:20:30Z") == datetime(2026, 1, 5, 10, 20, 30, tzinfo=UTC)


class FakeStream:
    def __init__(self) -> None:
        self.events: list[WatchEvent] = []
        self.closed = False

    def poll(self) -> list[WatchEvent]:
        events, self.events = self.events, []
        return events

    def synced(self) -> bool:
        return True

    def close(self) -> None:
        self.closed = True


class FakeCluster:
    """Only what the driver touches: watch()."""

    def __init__(self) -> None:
        self.stream = FakeStream()

    def watch(self, kinds: Iterable[str]) -> WatchStream:
        return self.stream

    def emit(self, kind: str, name: str, event_type: str = "MODIFIED") -> None:
        obj: Object = {"kind": kind, "metadata": {"name": name}}
        self.stream.events.append(WatchEvent(event_type, obj))  # type: ignore[arg-type]


class Recorder:
    name = "recorder"

    def __init__(self, clock: VirtualClock, *, fail_times: int = 0,
                 requeue: float | None = None) -> None:
        self.clock = clock
        self.calls: list[tuple[str, float]] = []
        self.fail_times = fail_times
        self.requeue = requeue

    @property
    def watches(self) -> Sequence[Watch]:
        return (Watch("Node"), Watch("Pod", singleton_key))

    def reconcile(self, key: str) -> Result:
        self.calls.append((key, (self.clock.now() - START).total_seconds()))
        if self.fail_times:
            self.fail_times -= 1
            raise RuntimeError("transient")
        return Result(self.requeue)


def running(reconciler: Recorder) -> tuple[VirtualClock, FakeCluster, VirtualDriver]:
    clock = reconciler.clock
    cluster = FakeCluster()
    driver = VirtualDriver(clock, cluster)  # type: ignore[arg-type]
    driver.add(reconciler)
    driver.start()
    return clock, cluster, driver


def test_events_make_keys_due_once_however_many_arrive() -> None:
    reconciler = Recorder(VirtualClock(START))
    clock, cluster, driver = running(reconciler)
    seen: list[str] = []
    driver.listen(lambda event: seen.append(event.key))

    cluster.emit("Node", "a")
    cluster.emit("Node", "a")
    cluster.emit("Pod", "p1")
    cluster.emit("Pod", "p2")
    driver.deliver()
    clock.advance(1)

    assert reconciler.calls == [("a", 0.0), ("", 0.0)]
    assert seen == ["a", "a", "p1", "p2"]


def test_failures_are_retried_with_growing_backoff() -> None:
    reconciler = Recorder(VirtualClock(START), fail_times=3)
    clock, cluster, driver = running(reconciler)

    cluster.emit("Node", "a")
    driver.deliver()
    clock.advance(1)

    times = [at for _, at in reconciler.calls]
    assert times == pytest.approx([0.0, 0.005, 0.015, 0.035])
    assert [name for name, _, _ in driver.errors] == ["recorder"] * 3


def test_requeue_after_runs_again_unless_an_event_comes_first() -> None:
    reconciler = Recorder(VirtualClock(START), requeue=10)
    clock, cluster, driver = running(reconciler)

    cluster.emit("Node", "a")
    driver.deliver()
    clock.advance(3)
    cluster.emit("Node", "a")
    driver.deliver()
    clock.advance(10)

    assert [at for _, at in reconciler.calls] == [0.0, 3.0, 13.0]


def test_a_stopped_driver_does_no_more_work() -> None:
    reconciler = Recorder(VirtualClock(START), requeue=10)
    clock, cluster, driver = running(reconciler)
    cluster.emit("Node", "a")
    driver.deliver()
    clock.advance(1)

    driver.stop()
    clock.advance(60)

    assert len(reconciler.calls) == 1
    assert cluster.stream.closed


class CountingWatches(Recorder):
    """A recorder that counts how often its watches are read."""

    def __init__(self, clock: VirtualClock) -> None:
        super().__init__(clock)
        self.watch_reads = 0

    @property
    def watches(self) -> Sequence[Watch]:
        self.watch_reads += 1
        return (Watch("Node"), Watch("Pod", singleton_key))


def test_watches_are_read_once_not_per_event() -> None:
    """A reconciler's watches are fixed when it is built: the driver routes events by
    kind from one reading, instead of asking every reconciler for its watches at every
    event (tens of thousands of events, dozens of reconcilers)."""
    reconciler = CountingWatches(VirtualClock(START))
    clock, cluster, driver = running(reconciler)
    for index in range(20):
        cluster.emit("Node", f"n{index}")
        cluster.emit("Pod", f"p{index}")
        cluster.emit("Namespace", f"ns{index}")
    driver.deliver()
    clock.advance(1)

    assert reconciler.watch_reads == 1
    assert len(reconciler.calls) == 21  # 20 nodes and the singleton


def test_a_reconciler_added_later_gets_the_events_after_it() -> None:
    first = Recorder(VirtualClock(START))
    clock, cluster, driver = running(first)
    cluster.emit("Node", "a")
    driver.deliver()

    second = Recorder(clock)
    second.name = "second"
    driver.add(second)
    cluster.emit("Node", "b")
    driver.deliver()
    clock.advance(1)

    assert [key for key, _ in first.calls] == ["a", "b"]
    assert [key for key, _ in second.calls] == ["b"]
