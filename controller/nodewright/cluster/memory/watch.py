"""Watch streams of the in-memory API server.

A stream starts with ADDED events for the objects that existed when it was opened (in
resourceVersion order, as an informer's initial list would deliver them), then receives
every later change of its kinds in the order the server made them. The objects in the
events are shared by every stream and must be treated as read-only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from nodewright.runtime.reconciler import WatchEvent


class MemoryWatchStream:
    def __init__(
        self,
        kinds: Iterable[str],
        initial: list[WatchEvent],
        on_close: Callable[[MemoryWatchStream], None],
    ) -> None:
        self.kinds = frozenset(kinds)
        self._events: list[WatchEvent] = list(initial)
        self._initial_left = len(initial)
        self._on_close = on_close
        self.closed = False

    def push(self, event: WatchEvent) -> None:
        if not self.closed:
            self._events.append(event)

    def poll(self) -> list[WatchEvent]:
        events, self._events = self._events, []
        self._initial_left = 0
        return events

    def synced(self) -> bool:
        return self._initial_left == 0

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._events = []
            self._on_close(self)
