"""Real time for reconcilers, with timers that fire on the operator's dispatcher thread.

`SystemClock` runs timer callbacks on threads of their own; the operator instead keeps
timers in a heap its dispatcher executes under the state lock, so a callback never runs
at the same time as a watch listener or an ordinary reconcile (the controllers were
written for the single-threaded simulator; see nodewright.runtime.statelock)."""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime

Callback = Callable[[], None]


class LoopClock:
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
        with self._lock:
            return self._timers[0][0] if self._timers else None
