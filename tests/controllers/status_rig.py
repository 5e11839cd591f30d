"""The status-condition metrics controller alone, over a cluster state fed by hand, with the
Events it records kept in a list: the rig of the operatorpkg status controller ports."""

from __future__ import annotations

from typing import Any

from nodewright.cluster.events import EventRecorder
from nodewright.controllers.metrics.status import StatusConditionMetrics
from nodewright.runtime.clock import VirtualClock
from nodewright.state import ClusterState


class Sink:
    """Where the recorder writes Events."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def create(self, body: dict[str, Any]) -> dict[str, Any]:
        self.events.append(body)
        return body


class StatusRig:
    """A virtual clock, a cluster state and the status controller reading it."""

    def __init__(self) -> None:
        self.clock = VirtualClock()
        self.state = ClusterState(self.clock)
        self.sink = Sink()
        recorder = EventRecorder(self.sink, self.clock)  # type: ignore[arg-type]
        self.controller = StatusConditionMetrics(self.clock, self.state, recorder=recorder)
