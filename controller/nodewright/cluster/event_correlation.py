"""client-go's event correlation (tools/record's EventCorrelator), for the Events the
operator writes, so a controller repeating itself does not flood the API server.

For each Event, in client-go's order:

1. **Aggregation.** Events about the same object from the same source with the same type
   and reason but different notes are counted per 10 minutes (since the last one); from
   the 10th distinct note on, the Event becomes one "(combined from similar events): ..."
   Event, which step 2 then keeps counting.
2. **Series.** An Event identical to one written before (same source, object, type,
   reason and note; for a combined Event, the same aggregate) is not created again: the
   earlier Event's `series` (events.k8s.io/v1's count and lastObservedTime) is patched.
   As in client-go the memory of written Events is an LRU of 4,096, not a time window;
   an earlier Event the API server has dropped (Events live an hour) is created anew.
3. **Spam filter.** Per source and object a token bucket of 25 with one token back
   every 5 minutes; an Event (new or repeat) that finds it empty is dropped.

`correlate` decides and remembers; writing is the caller's (`write_correlated`).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, TypeVar

from nodewright.cluster.api import ApiError, ClusterAPI, NotFoundError
from nodewright.cluster.events import write_event
from nodewright.cluster.fencing import FencedError
from nodewright.runtime.ratelimit import TokenBucket

log = logging.getLogger(__name__)

K = TypeVar("K")
V = TypeVar("V")

CACHE_ENTRIES = 4096
AGGREGATE_MAX_EVENTS = 10
AGGREGATE_INTERVAL_SECONDS = 600.0
SPAM_BURST = 25
SPAM_QPS = 1.0 / 300.0
COMBINED_PREFIX = "(combined from similar events): "
NOTE_LIMIT = 1024  # events.k8s.io/v1 refuses a longer note


class _Lru(Generic[K, V]):
    def __init__(self, size: int) -> None:
        self._size = size
        self._items: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        value = self._items.get(key)
        if value is not None:
            self._items.move_to_end(key)
        return value

    def put(self, key: K, value: V) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self._size:
            self._items.popitem(last=False)


@dataclass
class _Aggregate:
    notes: set[str] = field(default_factory=set)
    last: float = 0.0


@dataclass(frozen=True)
class _Written:
    name: str
    namespace: str
    count: int


@dataclass(frozen=True)
class Correlated:
    """The Event to write. `count` above 1: a repeat, written by patching the `series` of
    the Event named in `body` (created instead when that Event is gone)."""

    body: dict[str, Any]
    count: int = 1


def _micro_time(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class EventCorrelator:
    def __init__(self, now: Callable[[], datetime], *, cache_entries: int = CACHE_ENTRIES,
                 max_events: int = AGGREGATE_MAX_EVENTS,
                 interval_seconds: float = AGGREGATE_INTERVAL_SECONDS,
                 spam_burst: int = SPAM_BURST, spam_qps: float = SPAM_QPS) -> None:
        self._now = now
        self._max_events = max_events
        self._interval = interval_seconds
        self._spam_burst = spam_burst
        self._spam_qps = spam_qps
        self._aggregates: _Lru[tuple[str, ...], _Aggregate] = _Lru(cache_entries)
        self._written: _Lru[tuple[str, ...], _Written] = _Lru(cache_entries)
        self._spam: _Lru[tuple[str, ...], TokenBucket] = _Lru(cache_entries)
        self.filtered = 0

    def _seconds(self) -> float:
        return self._now().timestamp()

    def correlate(self, body: Mapping[str, Any]) -> Correlated | None:
        """What to write for this Event, or None when the spam filter drops it."""
        now = self._now()
        seconds = now.timestamp()
        regarding = body.get("regarding") or {}
        source = (str(body.get("reportingController", "")),
                  str(body.get("reportingInstance", "")))
        subject = tuple(str(regarding.get(field, "")) for field in
                        ("kind", "namespace", "name", "uid", "apiVersion"))
        aggregate_key = (*source, *subject, str(body.get("type", "")),
                         str(body.get("reason", "")))
        note = str(body.get("note", ""))
        event: dict[str, Any] = dict(body)
        key = (*aggregate_key, note)

        record = self._aggregates.get(aggregate_key)
        if record is None or seconds - record.last > self._interval:
            record = _Aggregate()
        record.notes.add(note)
        record.last = seconds
        self._aggregates.put(aggregate_key, record)
        if len(record.notes) >= self._max_events:
            record.notes.pop()
            event["note"] = (COMBINED_PREFIX + note)[:NOTE_LIMIT]
            key = aggregate_key

        metadata = dict(event.get("metadata") or {})
        earlier = self._written.get(key)
        count = 1
        if earlier is not None:
            count = earlier.count + 1
            metadata["name"] = earlier.name
            metadata["namespace"] = earlier.namespace
            event["series"] = {"count": count, "lastObservedTime": _micro_time(now)}
        event["metadata"] = metadata
        self._written.put(key, _Written(str(metadata.get("name", "")),
                                        str(metadata.get("namespace", "")), count))

        spam_key = (*source, *subject)
        bucket = self._spam.get(spam_key)
        if bucket is None:
            bucket = TokenBucket(self._spam_qps, self._spam_burst, now=self._seconds)
        self._spam.put(spam_key, bucket)
        if not bucket.try_accept():
            self.filtered += 1
            return None
        return Correlated(event, count)


def write_correlated(cluster: ClusterAPI, correlated: Correlated) -> bool:
    """Create the Event, or patch the series of the one it repeats (created afresh when
    the API server no longer has it). Failures are logged, never raised."""
    body = correlated.body
    if correlated.count <= 1:
        return write_event(cluster, body)
    metadata = body.get("metadata") or {}
    try:
        cluster.patch("Event", str(metadata.get("name", "")), {"series": body["series"]},
                      str(metadata.get("namespace", "")) or None)
        return True
    except NotFoundError:
        fresh = {key: value for key, value in body.items() if key != "series"}
        return write_event(cluster, fresh)
    except ApiError as error:
        regarding = body.get("regarding") or {}
        level = logging.DEBUG if isinstance(error, FencedError) else logging.WARNING
        log.log(level, "event %s about %s/%s not updated: %s", body.get("reason"),
                regarding.get("kind"), regarding.get("name"), error)
        return False
