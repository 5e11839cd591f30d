"""The event recorder: events.k8s.io/v1 Events about the objects controllers act on.

Like Karpenter's recorder it drops repeats: an event that names `dedupe_values` is written
once per (reason, values) within its dedupe window (two minutes unless it says otherwise),
and an event may carry a token bucket shared by its kind (Karpenter rate-limits the
per-pod Nominated events to 5 a second with bursts of 10). Events are best effort: a
failed write is logged and forgotten, never raised into a reconcile.

What to write is decided where the event is published (dedupe, rate limit, name and time,
all from the controller's clock); writing it is the sink's job. By default the recorder
writes at once (the simulator's virtual-time driver: synchronous and deterministic); the
operator gives it `EventWriter.submit`, which queues the Event and writes it from a
background thread, so a slow or throttled API server never holds a reconcile up for an
Event (as client-go's broadcaster does).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from nodewright.cluster.api import ApiError, ClusterAPI
from nodewright.cluster.fencing import FencedError
from nodewright.runtime.clock import Clock
from nodewright.runtime.ratelimit import TokenBucket

log = logging.getLogger(__name__)

EventType = Literal["Normal", "Warning"]
REPORTING_CONTROLLER = "karpenter"
DEFAULT_DEDUPE_SECONDS = 120.0
# Kubernetes puts events about cluster-scoped objects in this namespace.
CLUSTER_SCOPED_EVENT_NAMESPACE = "default"
_NOTE_LIMIT = 1024
_SWEEP_EVERY = 1000


@dataclass(frozen=True)
class Event:
    """One event to record. `regarding` is the object it is about (wire shape)."""

    regarding: Mapping[str, Any]
    type: EventType
    reason: str
    note: str
    action: str = ""
    dedupe_values: Sequence[str] = ()
    dedupe_seconds: float | None = None
    rate_limiter: TokenBucket | None = None

    def dedupe_key(self) -> tuple[str, ...]:
        return (self.reason.lower(), *self.dedupe_values)


def regarding_reference(obj: Mapping[str, Any]) -> dict[str, str]:
    metadata = obj.get("metadata") or {}
    reference = {
        "apiVersion": str(obj.get("apiVersion", "")),
        "kind": str(obj.get("kind", "")),
        "name": str(metadata.get("name", "")),
    }
    for field in ("namespace", "uid"):
        if metadata.get(field):
            reference[field] = str(metadata[field])
    return reference


Sink = Callable[[dict[str, Any]], None]


def write_event(cluster: ClusterAPI, body: dict[str, Any]) -> bool:
    """Create one Event; a failure is logged, never raised. True when written."""
    try:
        cluster.create(body)
    except ApiError as error:
        regarding = body.get("regarding") or {}
        # A fenced write was logged by the fence, once for all.
        level = logging.DEBUG if isinstance(error, FencedError) else logging.WARNING
        log.log(level, "event %s about %s/%s not written: %s", body.get("reason"),
                regarding.get("kind"), regarding.get("name"), error)
        return False
    return True


class EventRecorder:
    """Writes Events through the ClusterAPI, deduplicated and rate-limited."""

    def __init__(
        self,
        cluster: ClusterAPI,
        clock: Clock,
        *,
        reporting_instance: str = "nodewright",
    ) -> None:
        self._cluster = cluster
        self._sink: Sink | None = None
        self._clock = clock
        self._instance = reporting_instance
        self._seen: dict[tuple[str, ...], datetime] = {}
        self._published = 0
        self._last_stamp = 0
        self.written = 0
        self.dropped = 0
        self._lock = threading.RLock()

    def send_to(self, sink: Sink | None) -> None:
        """Hand the Events to `sink` instead of writing them (None: write at once)."""
        self._sink = sink

    def publish(self, *events: Event) -> None:
        for event in events:
            with self._lock:  # controllers publish from their own threads (the operator)
                if self._should_write(event):
                    self._write(event)
                else:
                    self.dropped += 1

    def _should_write(self, event: Event) -> bool:
        now = self._clock.now()
        self._published += 1
        if self._published % _SWEEP_EVERY == 0:
            self._seen = {key: until for key, until in self._seen.items() if until > now}
        if event.dedupe_values:
            key = event.dedupe_key()
            until = self._seen.get(key)
            if until is not None and until > now:
                return False
            window = event.dedupe_seconds or DEFAULT_DEDUPE_SECONDS
            self._seen[key] = now + timedelta(seconds=window)
        return event.rate_limiter is None or event.rate_limiter.try_accept()

    def _event_name(self, regarding: str, now: datetime) -> str:
        """client-go's name for an event: the object's name, a dot and the time in hex
        nanoseconds (a generateName may not end in a dot). Stamps only move forward, so two
        events in the same instant (a virtual clock's) still get different names."""
        stamp = max(round(now.timestamp() * 1e9), self._last_stamp + 1)
        self._last_stamp = stamp
        return f"{regarding}.{stamp:x}"

    def _write(self, event: Event) -> None:
        reference = regarding_reference(event.regarding)
        namespace = reference.get("namespace") or CLUSTER_SCOPED_EVENT_NAMESPACE
        now = self._clock.now()
        body = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": self._event_name(reference["name"], now),
                         "namespace": namespace},
            "eventTime": now.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "reportingController": REPORTING_CONTROLLER,
            "reportingInstance": self._instance,
            "action": event.action or event.reason,
            "reason": event.reason,
            "note": event.note[:_NOTE_LIMIT],
            "type": event.type,
            "regarding": reference,
        }
        if self._sink is not None:
            self._sink(body)
        elif write_event(self._cluster, body):
            self.written += 1
