"""Kubernetes Events (events.k8s.io/v1) written by the actors, such as kube-scheduler's
FailedScheduling, aggregated as client-go's events.EventRecorder does.

Repeats of an event on the same object (same action, reason, reporting controller and
`regarding`; the note is not part of the key) are one Event: the second occurrence
turns it into a series (`series.count` 2, written at once), later ones only count in the
recorder's cache. Every six minutes a series last observed more than six minutes ago is
written with its final count and forgotten (singletons older than that are forgotten
too: their next repeat is a new Event); every thirty minutes the open series are written.
Those two tickers run when the recorder is next used; a timer is armed only while some
series has a count not yet written, so an idle recorder leaves the clock's queue alone.
Events expire an hour after their
last write, as the API server's default event TTL.
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from nodewright.cluster import objects
from nodewright.cluster.api import AlreadyExistsError, NotFoundError
from nodewright.cluster.memory.store import InMemoryCluster
from nodewright.cluster.memory.timestamps import micro_time_text

EVENT_TTL = timedelta(hours=1)
FINISH_SERIES_EVERY = timedelta(minutes=6)
REFRESH_SERIES_EVERY = timedelta(minutes=30)
NORMAL = "Normal"
WARNING = "Warning"

# action, reason, regarding's kind, namespace, name and uid.
IsomorphicKey = tuple[str, str, str, str, str, str]


def micro_time(value: datetime) -> str:
    """MicroTime as Kubernetes writes eventTime."""
    return micro_time_text(value)


@dataclass(slots=True)
class _Cached:
    """An Event the recorder has written, with the repeats seen since."""

    name: str
    namespace: str
    # What recreates it if it expired before the series was written (strings shared).
    what: tuple[str, str, str, str, dict[str, Any]]
    event_time: datetime
    count: int = 1
    written_count: int = 1
    last_observed: datetime | None = None


class EventRecorder:
    def __init__(self, cluster: InMemoryCluster, controller: str) -> None:
        self.cluster = cluster
        self.controller = controller
        self._written: deque[tuple[datetime, str, str]] = deque()
        self._expiry: dict[tuple[str, str], datetime] = {}
        self._cache: dict[IsomorphicKey, _Cached] = {}
        self._next_finish: datetime | None = None
        self._next_refresh: datetime | None = None
        self._armed = False
        self._last_stamp = 0

    def record(
        self,
        regarding: Mapping[str, Any],
        reason: str,
        note: str,
        *,
        event_type: str = NORMAL,
        action: str = "",
    ) -> None:
        now = self.cluster.clock.now()
        self._expire(now)
        self._tick(now)
        action = action or reason
        reference = _reference(regarding)
        key: IsomorphicKey = (action, reason, str(reference["kind"]),
                              str(reference.get("namespace") or ""), str(reference["name"]),
                              str(reference["uid"]))
        cached = self._cache.get(key)
        if cached is None:
            what = (action, reason, event_type, note, reference)
            name = self._create(what, now, None)
            self._cache[key] = _Cached(name, _namespace(reference), what, now)
            return
        cached.count += 1
        cached.last_observed = now
        if cached.count == 2:
            self._write_series(cached, now)
        else:
            self._arm()

    def _arm(self) -> None:
        if self._armed or self._next_finish is None:
            return
        self._armed = True
        self.cluster.clock.call_at(self._next_finish, self._on_timer)

    def _on_timer(self) -> None:
        self._armed = False
        now = self.cluster.clock.now()
        self._expire(now)
        self._tick(now)
        if any(cached.count != cached.written_count for cached in self._cache.values()):
            self._arm()

    def _create(self, what: tuple[str, str, str, str, dict[str, Any]], now: datetime,
                series: dict[str, Any] | None) -> str:
        action, reason, event_type, note, reference = what
        namespace = _namespace(reference)
        meta: dict[str, str] = {"namespace": namespace}
        event: dict[str, Any] = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": meta,
            "eventTime": micro_time(now),
            "reportingController": self.controller,
            "reportingInstance": self.controller,
            "action": action,
            "reason": reason,
            "type": event_type,
            "note": note,
            "regarding": reference,
        }
        if series is not None:
            event["series"] = series
        while True:
            # client-go's name: the object's, a dot, the time in hex nanoseconds (a
            # generateName may not end in a dot); another recorder may have taken it.
            stamp = max(round(now.timestamp() * 1e9), self._last_stamp + 1)
            self._last_stamp = stamp
            meta["name"] = f"{reference['name']}.{stamp:x}"
            try:
                name = self.cluster.insert(event)
            except AlreadyExistsError:
                continue
            break
        self._renew(namespace, name, now)
        return name

    def _write_series(self, cached: _Cached, now: datetime) -> None:
        series = {"count": cached.count, "lastObservedTime": micro_time(
            cached.last_observed or now)}
        cached.written_count = cached.count
        try:
            self.cluster.patch("Event", cached.name, {"series": series}, cached.namespace)
        except NotFoundError:
            # It expired: the series starts a new Event, as client-go creates one then.
            cached.name = self._create(cached.what, now, series)
            return
        self._renew(cached.namespace, cached.name, now)

    def _tick(self, now: datetime) -> None:
        if self._next_finish is None or self._next_refresh is None:
            self._next_finish = now + FINISH_SERIES_EVERY
            self._next_refresh = now + REFRESH_SERIES_EVERY
            return
        if now >= self._next_refresh:
            self._next_refresh = now + REFRESH_SERIES_EVERY
            for cached in self._cache.values():
                if cached.count > 1:
                    self._write_series(cached, now)
        if now >= self._next_finish:
            self._next_finish = now + FINISH_SERIES_EVERY
            self._finish_series(now)

    def _finish_series(self, now: datetime) -> None:
        before = now - FINISH_SERIES_EVERY
        for key, cached in list(self._cache.items()):
            if cached.count > 1:
                assert cached.last_observed is not None
                if cached.last_observed < before:
                    if cached.written_count != cached.count:
                        self._write_series(cached, now)
                    del self._cache[key]
            elif cached.event_time < before:
                del self._cache[key]

    def _renew(self, namespace: str, name: str, now: datetime) -> None:
        expiry = now + EVENT_TTL
        self._expiry[(namespace, name)] = expiry
        self._written.append((expiry, namespace, name))

    def _expire(self, now: datetime) -> None:
        while self._written and self._written[0][0] <= now:
            expiry, namespace, name = self._written.popleft()
            if self._expiry.get((namespace, name)) != expiry:
                continue  # written again since: a later entry expires it
            del self._expiry[(namespace, name)]
            with contextlib.suppress(NotFoundError):
                self.cluster.delete("Event", name, namespace)


def _namespace(reference: Mapping[str, Any]) -> str:
    return str(reference.get("namespace") or "default")


def _reference(obj: Mapping[str, Any]) -> dict[str, Any]:
    reference = {
        "apiVersion": obj.get("apiVersion"),
        "kind": obj.get("kind"),
        "name": objects.name(obj),
        "uid": objects.uid(obj),
    }
    if objects.namespace(obj):
        reference["namespace"] = objects.namespace(obj)
    return reference
