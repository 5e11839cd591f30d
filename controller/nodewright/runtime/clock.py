"""Time for controllers: `now()` and timers, never the wall clock or sleep directly.

`VirtualClock` is also the discrete-event queue of the simulator: callbacks are kept in
a heap by due time (ties in the order they were scheduled) and `run_until` executes
them, moving time forward to each one. Nothing sleeps, so an hour of cluster life
takes as long as the work done in it, and the same inputs give the same timeline.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Protocol, runtime_checkable

Callback = Callable[[], None]


@runtime_checkable
class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""
        ...

    def call_at(self, when: datetime, callback: Callback) -> None:
        """Run `callback` once, at `when` or as soon after as the driver can."""
        ...

    def call_later(self, seconds: float, callback: Callback) -> None: ...


def parse_time(value: str) -> datetime:
    """RFC 3339 as Kubernetes writes it ('2026-01-05T00:00:00Z') to an aware datetime."""
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def format_time(value: datetime) -> str:
    """An aware datetime as Kubernetes writes timestamps (second precision, 'Z')."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class VirtualClock:
    """Simulated time. `after_each` hooks run after every callback (the driver uses one
    to deliver the watch events the callback caused before anything else happens)."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 1, 5, tzinfo=UTC)
        self._queue: list[tuple[datetime, int, Callback]] = []
        self._sequence = itertools.count()
        self.after_each: list[Callback] = []
        self.executed = 0

    def now(self) -> datetime:
        return self._now

    def call_at(self, when: datetime, callback: Callback) -> None:
        heapq.heappush(self._queue, (max(when, self._now), next(self._sequence), callback))

    def call_later(self, seconds: float, callback: Callback) -> None:
        self.call_at(self._now + timedelta(seconds=max(0.0, seconds)), callback)

    def next_due(self) -> datetime | None:
        return self._queue[0][0] if self._queue else None

    def step(self) -> bool:
        """Run the earliest callback (moving time to it). False when nothing is queued."""
        if not self._queue:
            return False
        when, _, callback = heapq.heappop(self._queue)
        self._now = max(self._now, when)
        callback()
        self.executed += 1
        for hook in self.after_each:
            hook()
        return True

    def run_until(self, when: datetime) -> None:
        """Run every callback due up to `when`, then stand at `when`."""
        while self._queue and self._queue[0][0] <= when:
            self.step()
        self._now = max(self._now, when)

    def advance(self, seconds: float) -> None:
        self.run_until(self._now + timedelta(seconds=seconds))


class SystemClock:
    """Real time for the operator. Timers run on daemon threads; callers that must not
    run concurrently with their reconcilers hand the callback to their own queue."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    def call_at(self, when: datetime, callback: Callback) -> None:
        self.call_later((when - self.now()).total_seconds(), callback)

    def call_later(self, seconds: float, callback: Callback) -> None:
        timer = threading.Timer(max(0.0, seconds), callback)
        timer.daemon = True
        timer.start()
