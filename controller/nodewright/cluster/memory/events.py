"""Kubernetes Events (events.k8s.io/v1) written by the actors, such as kube-scheduler's
FailedScheduling. Events expire after an hour, as the API server's default event TTL."""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from nodewright.cluster import objects
from nodewright.cluster.api import NotFoundError
from nodewright.cluster.memory.store import InMemoryCluster
from nodewright.cluster.memory.timestamps import micro_time_text

EVENT_TTL = timedelta(hours=1)
NORMAL = "Normal"
WARNING = "Warning"


def micro_time(value: datetime) -> str:
    """MicroTime as Kubernetes writes eventTime."""
    return micro_time_text(value)


class EventRecorder:
    def __init__(self, cluster: InMemoryCluster, controller: str) -> None:
        self.cluster = cluster
        self.controller = controller
        self._written: deque[tuple[datetime, str, str]] = deque()

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
        namespace = objects.namespace(regarding) or "default"
        created = self.cluster.insert({
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"generateName": f"{objects.name(regarding)}.", "namespace": namespace},
            "eventTime": micro_time(now),
            "reportingController": self.controller,
            "reportingInstance": self.controller,
            "action": action or reason,
            "reason": reason,
            "type": event_type,
            "note": note,
            "regarding": _reference(regarding),
        })
        self._written.append((now + EVENT_TTL, namespace, created))

    def _expire(self, now: datetime) -> None:
        while self._written and self._written[0][0] <= now:
            _, namespace, name = self._written.popleft()
            with contextlib.suppress(NotFoundError):
                self.cluster.delete("Event", name, namespace)


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
