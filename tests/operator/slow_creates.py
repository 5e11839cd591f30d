"""An API server whose NodeClaim creates take time, for the stories of creates sent
together.

`SlowCreates` wraps the operator's API client (`RealTimeWorld.operator(client=...)`). Once
`arm(together)` is called, each NodeClaim create waits, holding no lock, until `together`
creates are in flight or `patience` seconds have passed (a slow round trip), then goes on;
every create is written down with the moments it started and ended. Creates sent together
meet at once; creates sent one after another each wait out the patience alone, and their
intervals never overlap. The stories read the intervals, never a duration.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from nodewright.cluster.api import ApiError, ClusterAPI, Object


@dataclass(frozen=True)
class Interval:
    number: int  # in the order the creates reached the server
    started: float
    ended: float
    name: str | None  # the NodeClaim created (None: refused)


class SlowCreates:
    def __init__(self, inner: ClusterAPI, *, patience: float = 5.0) -> None:
        self.inner = inner
        self.patience = patience
        # The refusal for the create of this number (None: it is stored).
        self.refuse: Callable[[int], ApiError | None] = lambda number: None
        self.intervals: list[Interval] = []
        self._changed = threading.Condition()
        self._together = 0
        self._met = True
        self._in_flight = 0
        self._started = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def arm(self, together: int) -> None:
        """From now on creates wait until `together` are in flight (once); the intervals
        written so far are forgotten."""
        with self._changed:
            self._together, self._met = together, False
            self.intervals = []

    def create(self, obj: Object) -> Object:
        if obj.get("kind") != "NodeClaim":
            return self.inner.create(obj)
        with self._changed:
            number = self._started
            self._started += 1
            self._in_flight += 1
            started = time.monotonic()
            self._changed.notify_all()
            self._changed.wait_for(self._meeting, timeout=self.patience)
        refusal = self.refuse(number)
        name: str | None = None
        try:
            if refusal is not None:
                raise refusal
            created = self.inner.create(obj)
            name = str(created["metadata"]["name"])
            return created
        finally:
            ended = time.monotonic()
            with self._changed:
                self._in_flight -= 1
                self.intervals.append(Interval(number, started, ended, name))

    def _meeting(self) -> bool:
        if self._in_flight >= self._together:
            self._met = True
        return self._met

    def most_in_flight(self) -> int:
        """The most creates in flight at one moment, from the intervals written."""
        with self._changed:
            intervals = list(self.intervals)
        return most_overlapping(intervals)

    def created(self) -> list[str]:
        with self._changed:
            return [i.name for i in self.intervals if i.name is not None]


def most_overlapping(intervals: list[Interval]) -> int:
    # At a tie an end comes before a start: touching intervals do not overlap.
    points = sorted([(i.started, 1) for i in intervals] + [(i.ended, -1) for i in intervals])
    most = now = 0
    for _, step in points:
        now += step
        most = max(most, now)
    return most

