"""Time for controllers: `now()` and timers, never the wall clock or sleep directly.

`Clock` is the one notion of time; two clocks implement it. `SystemClock` is real time
for the operator, `VirtualClock` simulated time for the simulator and the tests.

`VirtualClock` is also the discrete-event queue of the simulator: callbacks are kept in
a heap by due time (ties in the order they were scheduled) and `run_until` executes
them, moving time forward to each one. Nothing sleeps, so an hour of cluster life
takes as long as the work done in it, and the same inputs give the same timeline.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections import deque
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Protocol, runtime_checkable

Callback = Callable[[], None]


@runtime_checkable
class Clock(Protocol):
    """What controllers see of time. Every clock in the package implements it."""

    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""
        ...

    def call_at(self, when: datetime, callback: Callback) -> None:
        """Run `callback` once, at `when` or as soon after as the driver can."""
        ...

    def call_later(self, seconds: float, callback: Callback) -> None:
        """Run `callback` once, `seconds` from now (at once when not positive)."""
        ...


def parse_time(value: str) -> datetime:
    """RFC 3339 as Kubernetes writes it ('2026-01-05T00:00:00Z') to an aware datetime."""
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def format_time(value: datetime) -> str:
    """An aware datetime as Kubernetes writes timestamps (second precision, 'Z')."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class VirtualClock(Clock):
    """Simulated time. `after_each` hooks run after every callback (the driver uses one
    to deliver the watch events the callback caused before anything else happens)."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 1, 5, tzinfo=UTC)
        # The queue: the distinct due times in a heap, and per due time its callbacks in
        # the order they were scheduled. Popping the earliest time's first callback is
        # the order of a heap of (time, sequence) entries; but most callbacks share their
        # time with others (every key a callback makes due is due now, every requeue of a
        # reconcile 10 s after it), so the heap holds a few hundred times instead of tens
        # of thousands of entries, and scheduling at a time already queued is an append.
        self._times: list[datetime] = []
        self._at: dict[datetime, deque[Callback]] = {}
        self.after_each: list[Callback] = []
        self.executed = 0

    def now(self) -> datetime:
        return self._now

    def call_at(self, when: datetime, callback: Callback) -> None:
        if when < self._now:
            when = self._now
        waiting = self._at.get(when)
        if waiting is None:
            self._at[when] = waiting = deque()
            heapq.heappush(self._times, when)
        waiting.append(callback)

    def call_later(self, seconds: float, callback: Callback) -> None:
        self.call_at(self._now + timedelta(seconds=max(0.0, seconds)), callback)

    def next_due(self) -> datetime | None:
        return self._times[0] if self._times else None

    def step(self) -> bool:
        """Run the earliest callback (moving time to it). False when nothing is queued."""
        if not self._times:
            return False
        when = self._times[0]
        waiting = self._at[when]
        callback = waiting.popleft()
        if not waiting:
            # Nothing is ever queued before now, so a time left behind is not queued again.
            heapq.heappop(self._times)
            del self._at[when]
        self._now = max(self._now, when)
        callback()
        self.executed += 1
        for hook in self.after_each:
            hook()
        return True

    def run_until(self, when: datetime) -> None:
        """Run every callback due up to `when`, then stand at `when`."""
        while self._times and self._times[0] <= when:
            self.step()
        self._now = max(self._now, when)

    def advance(self, seconds: float) -> None:
        self.run_until(self._now + timedelta(seconds=seconds))


class SystemClock(Clock):
    """Real time for the operator, with timers that fire on the operator's dispatcher
    thread: they wait in a heap the dispatcher empties (`due_callbacks`) under the state
    lock, so a callback never runs at the same time as a watch listener or an ordinary
    reconcile (the controllers were written for the single-threaded simulator; see
    nodewright.runtime.statelock). `wake` is called when a timer is added, so a sleeping
    dispatcher can look at the new deadline."""

    def __init__(self) -> None:
        self._timers: list[tuple[float, int, Callback]] = []
        self._sequence = itertools.count()
        self._lock = threading.Lock()
        self.wake: Callback = lambda: None

    def now(self) -> datetime:
        return datetime.now(UTC)

    @staticmethod
    def monotonic() -> float:
        return time.monotonic()

    def call_at(self, when: datetime, callback: Callback) -> None:
        self.call_later((when - self.now()).total_seconds(), callback)

    def call_later(self, seconds: float, callback: Callback) -> None:
        with self._lock:
            due = time.monotonic() + max(0.0, seconds)
            heapq.heappush(self._timers, (due, next(self._sequence), callback))
        self.wake()

    def due_callbacks(self, now: float) -> list[Callback]:
        """Pop every timer due at monotonic time `now`, earliest first."""
        ready: list[Callback] = []
        with self._lock:
            while self._timers and self._timers[0][0] <= now:
                ready.append(heapq.heappop(self._timers)[2])
        return ready

    def next_due(self) -> float | None:
        """The monotonic time the earliest timer is due (None: no timer)."""
        with self._lock:
            return self._timers[0][0] if self._timers else None
