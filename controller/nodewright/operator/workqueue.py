"""A controller's work queue, with client-go's semantics and controller-runtime's rate limit.

- A key is queued at most once: adding a queued key does nothing; adding a key that is
  being reconciled marks it dirty, and it is queued again when that reconcile is done (so
  one key never runs twice at once and no change is lost).
- `add_after` keeps the earliest time a key is wanted (a requeue, or a retry).
- `add_rate_limited` retries with controller-runtime's default limiter: the larger of a
  per-key exponential backoff (5 ms doubling to 1000 s) and an overall token bucket
  (10 per second, bursts of 100); `forget` resets a key's failures after a success.

Not thread-safe on its own: the operator's driver touches each queue under its own lock
(the dispatcher adds keys, the controller's worker takes them).
"""

from __future__ import annotations

import heapq
import itertools
from collections import deque

from nodewright import metrics
from nodewright.runtime.ratelimit import RECONCILE_BACKOFF, Backoff, TokenBucket

BACKOFF_BASE = RECONCILE_BACKOFF.initial
BACKOFF_MAX = RECONCILE_BACKOFF.maximum
BUCKET_QPS = 10.0
BUCKET_BURST = 100


class RateLimiter:
    """controller-runtime's DefaultControllerRateLimiter: per-item exponential backoff,
    overall token bucket; `when` gives the delay before a retry of `key` at time `now`."""

    def __init__(self, base: float = BACKOFF_BASE, maximum: float = BACKOFF_MAX,
                 qps: float = BUCKET_QPS, burst: int = BUCKET_BURST) -> None:
        self.backoff = Backoff(initial=base, maximum=maximum)
        self._now = 0.0
        # The bucket reads the time `when` was given.
        self._bucket = TokenBucket(qps, burst, now=lambda: self._now)
        self._failures: dict[str, int] = {}

    def when(self, key: str, now: float) -> float:
        failures = self._failures.get(key, 0) + 1
        self._failures[key] = failures
        self._now = now
        return max(self.backoff.delay(failures), self._bucket.reserve())

    def failures(self, key: str) -> int:
        return self._failures.get(key, 0)

    def forget(self, key: str) -> None:
        self._failures.pop(key, None)


class WorkQueue:
    def __init__(self, name: str, limiter: RateLimiter | None = None) -> None:
        self.name = name
        self.limiter = limiter or RateLimiter()
        self._queue: deque[str] = deque()
        self._queued: set[str] = set()
        self._processing: set[str] = set()
        self._dirty: set[str] = set()
        self._waiting: list[tuple[float, int, str]] = []
        self._wanted_at: dict[str, float] = {}
        self._sequence = itertools.count()
        self._depth = metrics.WORKQUEUE_DEPTH.labels(name=name)
        self._adds = metrics.WORKQUEUE_ADDS.labels(name=name)
        self._retries = metrics.WORKQUEUE_RETRIES.labels(name=name)

    def add(self, key: str) -> None:
        self._wanted_at.pop(key, None)
        if key in self._processing:
            self._dirty.add(key)
            return
        if key in self._queued:
            return
        self._queued.add(key)
        self._queue.append(key)
        self._adds.inc()
        self._depth.set(len(self._queue))

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
        self._depth.set(len(self._queue))
        return key

    def done(self, key: str) -> None:
        self._processing.discard(key)
        if key in self._dirty:
            self._dirty.discard(key)
            self.add(key)

    def __len__(self) -> int:
        """Keys ready now plus keys waiting for their time."""
        return len(self._queue) + len(self._wanted_at)

    def ready(self) -> int:
        return len(self._queue)

    def busy(self) -> bool:
        """Keys ready now or being reconciled (waiting keys are not work yet)."""
        return bool(self._queue) or bool(self._processing)
