"""A controller's work queue, with client-go's semantics and controller-runtime's rate limit.

- A key is queued at most once: adding a queued key does nothing; adding a key that is
  being reconciled marks it dirty, and it is queued again when that reconcile is done (so
  one key never runs twice at once and no change is lost).
- `add_after` keeps the earliest time a key is wanted (a requeue, or a retry).
- `add_rate_limited` retries with the controller's limiter (`runtime.ratelimit`): the
  larger of a per-key exponential backoff and an overall token bucket, by default
  controller-runtime's (5 ms doubling to 1000 s; 10 per second, bursts of 100), else what
  the controller declares in `retry_limits`; `forget` resets a key's failures after a
  success.

Not thread-safe on its own: the operator's driver touches each queue under its own lock
(the dispatcher adds keys, the controller's worker takes them).

It exports client-go's `workqueue_*` metrics as controller-runtime registers them (labels
`name` and `controller`, both the controller's name), with client-go's meaning: an add is
counted when a key becomes dirty (a key already waiting is not counted again), the depth
is the keys added and not yet taken, the queue duration runs from that add to the take,
the work duration from the take to `done`; the unfinished work and the longest running
processor are computed when /metrics is read (client-go updates them every 500 ms).
"""

from __future__ import annotations

import heapq
import itertools
import time
from collections import deque
from collections.abc import Callable

from nodewright import metrics
from nodewright.runtime.ratelimit import RateLimiter

__all__ = ["RateLimiter", "WorkQueue"]


class WorkQueue:
    def __init__(self, name: str, limiter: RateLimiter | None = None, *,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.name = name
        self._monotonic = monotonic
        self.limiter = limiter or RateLimiter()
        self._queue: deque[str] = deque()
        self._queued: set[str] = set()
        self._processing: set[str] = set()
        self._dirty: set[str] = set()
        self._waiting: list[tuple[float, int, str]] = []
        self._wanted_at: dict[str, float] = {}
        self._sequence = itertools.count()
        # When each key waiting to be taken was added, and each key taken was taken.
        self._added_at: dict[str, float] = {}
        self._started_at: dict[str, float] = {}
        labels = {"name": name, metrics.CONTROLLER: name}
        self._depth = metrics.WORKQUEUE_DEPTH.labels(priority="", **labels)
        self._adds = metrics.WORKQUEUE_ADDS.labels(**labels)
        self._retries = metrics.WORKQUEUE_RETRIES.labels(**labels)
        self._queue_duration = metrics.WORKQUEUE_QUEUE_DURATION.labels(**labels)
        self._work_duration = metrics.WORKQUEUE_WORK_DURATION.labels(**labels)
        metrics.WORKQUEUE_UNFINISHED_WORK.labels(**labels).set_function(self.unfinished_work)
        metrics.WORKQUEUE_LONGEST_RUNNING_PROCESSOR.labels(**labels).set_function(
            self.longest_running)

    def add(self, key: str) -> None:
        self._wanted_at.pop(key, None)
        if key in self._queued or key in self._dirty:
            return
        self._adds.inc()
        self._added_at.setdefault(key, self._monotonic())
        if key in self._processing:
            self._dirty.add(key)
        else:
            self._queued.add(key)
            self._queue.append(key)
        self._depth.set(self.depth())

    def add_after(self, key: str, delay: float, now: float) -> None:
        if delay <= 0:
            self.add(key)
            return
        when = now + delay
        current = self._wanted_at.get(key)
        if current is not None and current <= when:
            return
        self._wanted_at[key] = when
        heapq.heappush(self._waiting, (when, next(self._sequence), key))

    def add_rate_limited(self, key: str, now: float) -> float:
        delay = self.limiter.when(key, now)
        self._retries.inc()
        self.add_after(key, delay, now)
        return delay

    def forget(self, key: str) -> None:
        self.limiter.forget(key)

    def promote_due(self, now: float) -> None:
        """Move keys whose delay has passed into the queue."""
        while self._waiting and self._waiting[0][0] <= now:
            when, _, key = heapq.heappop(self._waiting)
            if self._wanted_at.get(key) == when:
                self.add(key)

    def next_due(self) -> float | None:
        """The earliest time a delayed key becomes ready (stale entries included)."""
        return self._waiting[0][0] if self._waiting else None

    def get(self) -> str | None:
        """The next ready key, now marked as processing; None when none is ready."""
        if not self._queue:
            return None
        key = self._queue.popleft()
        self._queued.discard(key)
        self._processing.add(key)
        now = self._monotonic()
        added = self._added_at.pop(key, None)
        if added is not None:
            self._queue_duration.observe(max(0.0, now - added))
        self._started_at[key] = now
        self._depth.set(self.depth())
        return key

    def done(self, key: str) -> None:
        self._processing.discard(key)
        started = self._started_at.pop(key, None)
        if started is not None:
            self._work_duration.observe(max(0.0, self._monotonic() - started))
        if key in self._dirty:
            # Added (and counted) while it was processed: queued now, its add time kept.
            self._dirty.discard(key)
            self._queued.add(key)
            self._queue.append(key)
        self._depth.set(self.depth())

    def depth(self) -> int:
        """client-go's depth: keys added and not yet taken (those added while being
        processed included)."""
        return len(self._queue) + len(self._dirty)

    def unfinished_work(self) -> float:
        """Seconds of work in progress not yet observed by the work duration."""
        now = self._monotonic()
        return sum(now - started for started in tuple(self._started_at.values()))

    def longest_running(self) -> float:
        """Seconds the longest reconcile in progress has been running (0 when none)."""
        now = self._monotonic()
        return max((now - started for started in tuple(self._started_at.values())),
                   default=0.0)

    def __len__(self) -> int:
        """Keys ready now plus keys waiting for their time."""
        return len(self._queue) + len(self._wanted_at)

    def ready(self) -> int:
        return len(self._queue)

    def busy(self) -> bool:
        """Keys ready now or being reconciled (waiting keys are not work yet)."""
        return bool(self._queue) or bool(self._processing)
