"""Batching windows for the provisioner (Karpenter's Batcher), on a clock.

The first trigger opens a window; each trigger for an element not yet in the window
extends it until `idle` seconds pass without one, but never beyond `maximum` seconds
after it opened (Karpenter: batchIdleDuration 1 s, batchMaxDuration 10 s).
"""

from __future__ import annotations

from collections.abc import Hashable
from datetime import datetime, timedelta

from nodewright.runtime.clock import Clock

DEFAULT_IDLE_SECONDS = 1.0
DEFAULT_MAX_SECONDS = 10.0


class Batcher:
    def __init__(
        self,
        clock: Clock,
        idle_seconds: float = DEFAULT_IDLE_SECONDS,
        max_seconds: float = DEFAULT_MAX_SECONDS,
    ) -> None:
        self._clock = clock
        self._idle = timedelta(seconds=idle_seconds)
        self._max = timedelta(seconds=max_seconds)
        self._opened: datetime | None = None
        self._last: datetime | None = None
        self._elements: set[Hashable] = set()

    @property
    def open(self) -> bool:
        return self._opened is not None

    def trigger(self, element: Hashable) -> None:
        if element in self._elements:
            return
        now = self._clock.now()
        self._elements.add(element)
        if self._opened is None:
            self._opened = now
        self._last = now

    def due(self) -> datetime | None:
        """When the open window closes (None when no window is open)."""
        if self._opened is None or self._last is None:
            return None
        return min(self._opened + self._max, self._last + self._idle)

    def seconds_left(self) -> float | None:
        due = self.due()
        if due is None:
            return None
        return max(0.0, (due - self._clock.now()).total_seconds())

    def close(self) -> None:
        self._opened = self._last = None
        self._elements.clear()
