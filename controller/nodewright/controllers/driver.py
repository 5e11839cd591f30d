"""The discrete-event driver of the simulator and the tests (architecture, section 2b).

It runs reconcilers on a `VirtualClock`: every reconcile is a callback in the clock's
queue; after each callback the driver drains the cluster's watch stream, hands each
event to the listeners (the state cache) and makes due, at the current virtual time,
the keys each reconciler's `watches` map the event to. Keys are deduplicated (a key
already due runs once), an exception is retried with exponential backoff (as
controller-runtime's default rate limiter: 5 ms doubling up to 1000 s), and a
`Result.requeue_after` schedules the key again. No threads, no sleeping: the same
inputs always give the same order of work.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from functools import partial

from nodewright.cluster.api import KINDS, ClusterAPI, WatchStream
from nodewright.runtime.clock import VirtualClock
from nodewright.runtime.ratelimit import RECONCILE_BACKOFF
from nodewright.runtime.reconciler import Reconciler, WatchEvent

Listener = Callable[[WatchEvent], None]
KeyMap = Callable[[WatchEvent], Iterable[str]]

log = logging.getLogger(__name__)

# Events are the controllers' output, not their input: nobody watches them.
WATCHED_KINDS = tuple(kind for kind in KINDS if kind != "Event")
# Requeue periods kept as timedeltas: the fixed ones (a few); a period worked out from a
# moment (consolidateAfter running out) is seldom asked for twice.
_PERIODS_KEPT = 64


class VirtualDriver:
    def __init__(
        self,
        clock: VirtualClock,
        cluster: ClusterAPI,
        *,
        raise_errors: bool = False,
        kinds: Iterable[str] = WATCHED_KINDS,
    ) -> None:
        self.clock = clock
        self.cluster = cluster
        self.raise_errors = raise_errors
        self._kinds = tuple(kinds)
        self._reconcilers: list[Reconciler] = []
        # Per kind, the (reconciler, key mapping) pairs its events go to, in the order the
        # reconcilers were added: built at the first delivery after an `add` (a
        # reconciler's watches are fixed when it is built).
        self._routes: dict[str, list[tuple[Reconciler, KeyMap]]] | None = None
        self._listeners: list[Listener] = []
        # By (id of the reconciler, key): `_reconcilers` holds every reconciler for the
        # driver's life, so no other object takes one's id.
        self._due: dict[tuple[int, str], datetime] = {}
        self._failures: dict[tuple[int, str], int] = {}
        # Requeue periods by their seconds: most reconcilers requeue at one of a few.
        self._periods: dict[float, timedelta] = {}
        self._stream: WatchStream | None = None
        self._stopped = False
        self.errors: list[tuple[str, str, BaseException]] = []
        # Told of each failed reconcile (controller name, key, error), as it fails.
        self.on_error: Callable[[str, str, BaseException], None] | None = None

    def add(self, *reconcilers: Reconciler) -> None:
        self._reconcilers.extend(reconcilers)
        self._routes = None

    def _routing(self) -> dict[str, list[tuple[Reconciler, KeyMap]]]:
        if self._routes is None:
            routes: dict[str, list[tuple[Reconciler, KeyMap]]] = {}
            for reconciler in self._reconcilers:
                for watch in reconciler.watches:
                    routes.setdefault(watch.kind, []).append((reconciler, watch.keys))
            self._routes = routes
        return self._routes

    def listen(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def start(self) -> None:
        """Begin watching (the current objects arrive as ADDED events) and deliver."""
        self._stream = self.cluster.watch(self._kinds)
        self.clock.after_each.append(self.deliver)
        self.deliver()

    def stop(self) -> None:
        """Forget everything queued (a controller process that died): callbacks already
        in the clock's queue become no-ops."""
        self._stopped = True
        if self.deliver in self.clock.after_each:
            self.clock.after_each.remove(self.deliver)
        if self._stream is not None:
            self._stream.close()
        self._due.clear()

    def enqueue(self, reconciler: Reconciler, key: str, when: datetime | None = None) -> None:
        if self._stopped:
            return
        now = self.clock.now()
        if when is None or when < now:
            when = now
        slot = (id(reconciler), key)
        current = self._due.get(slot)
        if current is not None and current <= when:
            return
        self._due[slot] = when
        # A partial, not a lambda: a superseded entry stays in the clock's queue until its
        # time comes (a no-op then), and tens of thousands of them wait at 10,000 pods.
        self.clock.call_at(when, partial(self._run, reconciler, key, when))

    def deliver(self) -> None:
        if self._stopped or self._stream is None:
            return
        events = self._stream.poll()
        while events:
            for event in events:
                for listener in self._listeners:
                    listener(event)
                routes = self._routes if self._routes is not None else self._routing()
                for reconciler, keys in routes.get(event.kind, ()):
                    for key in keys(event):
                        self.enqueue(reconciler, key)
            # Listeners may write (rarely); deliver what that caused too.
            events = self._stream.poll()

    def _run(self, reconciler: Reconciler, key: str, when: datetime) -> None:
        slot = (id(reconciler), key)
        if self._stopped or self._due.get(slot) != when:
            return
        del self._due[slot]
        try:
            result = reconciler.reconcile(key)
        except Exception as error:  # a controller bug or a transient API error: retry
            if self.raise_errors:
                raise
            failures = self._failures.get(slot, 0) + 1
            self._failures[slot] = failures
            self.errors.append((reconciler.name, key, error))
            if self.on_error is not None:
                self.on_error(reconciler.name, key, error)
            log.warning("%s: reconcile %r failed (%s); retrying", reconciler.name, key, error)
            delay = RECONCILE_BACKOFF.delay(failures)
            self.enqueue(reconciler, key, self.clock.now() + timedelta(seconds=delay))
            return
        if self._failures:
            self._failures.pop(slot, None)
        after = result.requeue_after
        if after is not None:
            period = self._periods.get(after)
            if period is None:
                period = timedelta(seconds=after)
                if len(self._periods) < _PERIODS_KEPT:
                    self._periods[after] = period
            self.enqueue(reconciler, key, self.clock.now() + period)

    def pending(self) -> int:
        """Keys queued to run."""
        return len(self._due)
